//! Values across the boundary, through serde-wasm-bindgen: the `S3Ownership` options and the arguments of
//! its methods in (checked here, the one place; bad ones are `invalid-input` naming them), results and
//! events out, in the shapes js/ownership.d.ts declares (JS numbers for epochs and times, `null` where
//! a value is absent). Never panics on anything JS passes.

use serde::{Deserialize, Serialize};
use wasm_bindgen::{JsCast, JsValue};

use super::option_names::OPTION_NAMES;
use super::web::Fetch;
use crate::error::{Error, Quoted};
use crate::ownership::{
    CasGuard, CasOutcome, ClaimOptions, ClaimOutcome, CloseOptions, Closed, Config, IdSet, LeaseRemoval, NodeLeaseRecord,
    OwnerInfo, OwnerRecord, ProbePolicy, ProbeReport,
};

/// `null` for absent values, plain objects: what the JSON results of earlier versions gave.
const OUT: serde_wasm_bindgen::Serializer = serde_wasm_bindgen::Serializer::json_compatible();

/// What `onEvent` receives: the core's `Event`, serialized as it derives.
pub(crate) fn event(event: &crate::env::Event<'_>) -> Result<JsValue, Error> {
    to_js(event)
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, Error> {
    value.serialize(&OUT).map_err(|e| Error::invalid(format!("result not representable in JS: {e}")))
}

/// `new S3Ownership(options)`, as JS passes it (unknown keys are refused by `unknown_key`). Optional everywhere so that a missing required option
/// gets this crate's message ("endpoint is required"); `undefined` counts as absent.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct OptionsIn {
    endpoint: Option<String>,
    bucket: Option<String>,
    region: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
    node: Option<String>,
    addr: Option<String>,
    prefix: Option<String>,
    lease_ttl_ms: Option<u64>,
    max_clock_skew_ms: Option<u64>,
    request_timeout_ms: Option<u32>,
    path_style: Option<bool>,
    /// `true` (a recorded verdict, or a probe), `"always"`, or `false`.
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    probe: JsValue,
    probe_trust_ms: Option<u64>,
    /// `"celld"` (celld's id sets) or `"utf8"` (wider ids, for buckets no celld node shares).
    ids: Option<String>,
    /// `true`: a celld v0.6 fleet shares the bucket (an uninitialised one is refused).
    celld: Option<bool>,
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    fetch: JsValue,
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    on_event: JsValue,
    /// An async function giving `{ accessKeyId, secretAccessKey, sessionToken, expiration }`, instead of
    /// the static keys.
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    credentials: JsValue,
    /// A Workers R2 bucket binding (`env.CELLS`), instead of an endpoint, keys and fetch.
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    r2: JsValue,
}

/// `inspectorOptionNames()`: the options `new S3Inspector(...)` takes, for the check of js/ownership.d.ts.
#[wasm_bindgen::prelude::wasm_bindgen(js_name = inspectorOptionNames)]
pub fn inspector_option_names() -> Vec<String> {
    INSPECTOR.options.iter().map(|&n| n.to_owned()).collect()
}

/// The options `new S3Inspector(...)` takes (src/bindings/listing.rs): the connection's, no node, lease or
/// probe policy (an inspector holds none).
pub(crate) const INSPECTOR_OPTION_NAMES: [&str; 14] = [
    "endpoint", "bucket", "region", "accessKeyId", "secretAccessKey", "sessionToken", "prefix", "maxClockSkewMs",
    "requestTimeoutMs", "pathStyle", "fetch", "onEvent", "credentials", "r2",
];

/// Which class the options are for: its name (for messages) and the options it takes.
#[derive(Clone, Copy)]
pub(crate) struct Class {
    pub(crate) name: &'static str,
    pub(crate) options: &'static [&'static str],
}

const OWNERSHIP: Class = Class { name: "S3Ownership", options: &OPTION_NAMES };
pub(crate) const INSPECTOR: Class = Class { name: "S3Inspector", options: &INSPECTOR_OPTION_NAMES };

/// The checked options: the core's `Config` plus the JS functions.
pub(crate) struct Options {
    pub(crate) config: Config,
    pub(crate) fetch: Fetch,
    pub(crate) on_event: Option<js_sys::Function>,
    pub(crate) credentials: Option<js_sys::Function>,
    /// The `r2` option: requests go through this binding instead of `fetch`.
    pub(crate) r2: Option<super::r2::R2Binding>,
}

/// The options that name the store over the S3 API: none of them goes with `r2`.
const S3_ONLY: [&str; 10] =
    ["endpoint", "bucket", "region", "accessKeyId", "secretAccessKey", "sessionToken", "pathStyle", "fetch", "credentials", "r2"];

fn invalid_option(class: Class, why: impl std::fmt::Display) -> Error {
    Error::invalid(format!("{} options: {why}", class.name))
}

/// The first own key of `object` that is not in `known`. (serde-wasm-bindgen reads a struct's fields by
/// name, so `deny_unknown_fields` never sees the others.)
fn unknown_key(object: &JsValue, known: &[&str]) -> Option<String> {
    let keys = js_sys::Object::keys(object.unchecked_ref::<js_sys::Object>());
    keys.iter().filter_map(|k| k.as_string()).find(|k| !known.contains(&k.as_str()))
}

/// Usual names for an option under another spelling (other S3 clients' names, shortenings).
const OPTION_SYNONYMS: [(&str, &str); 12] = [
    ("secretkey", "secretAccessKey"), ("secret", "secretAccessKey"), ("accesskey", "accessKeyId"), ("keyid", "accessKeyId"),
    ("token", "sessionToken"), ("ttl", "leaseTtlMs"), ("leasettl", "leaseTtlMs"), ("url", "endpoint"),
    ("endpointurl", "endpoint"), ("forcepathstyle", "pathStyle"), ("timeoutms", "requestTimeoutMs"), ("nodeid", "node"),
];

/// The option an unknown key was probably meant to be: one of `known` differing only in case, a usual
/// synonym, or at most two edits away (case aside).
fn suggestion(key: &str, known: &'static [&'static str]) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let synonym = OPTION_SYNONYMS.iter().find(|(k, _)| *k == lower).map(|(_, v)| *v);
    known.iter().copied().find(|k| k.eq_ignore_ascii_case(key)).or(synonym.filter(|s| known.contains(s))).or_else(|| {
        known.iter().copied().map(|k| (edits(&lower, &k.to_ascii_lowercase()), k)).filter(|(d, _)| *d <= 2).min_by_key(|(d, _)| *d).map(|(_, k)| k)
    })
}

/// Levenshtein distance between two short ASCII names (by bytes).
fn edits(a: &str, b: &str) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, y) in b.bytes().enumerate() {
            let next = (diagonal + usize::from(x != y)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The options that are durations.
const MS_OPTIONS: [&str; 4] = ["leaseTtlMs", "maxClockSkewMs", "requestTimeoutMs", "probeTrustMs"];

/// The fields that carry keys. serde's type error quotes the value it got (`{ SecretString: "..." }` from a
/// secrets manager, `["..."]`), so these are checked before serde sees them, and named with the value's
/// type only.
const SECRET_FIELDS: [&str; 3] = ["accessKeyId", "secretAccessKey", "sessionToken"];

/// The first secret field of `object` holding something other than a string (absent, `undefined` and
/// `null` count as absent), as "<field> must be a string, got <type>"; nothing of the value is quoted.
fn mistyped_secret(object: &JsValue) -> Option<String> {
    SECRET_FIELDS.iter().find_map(|&name| {
        let value = js_sys::Reflect::get(object, &JsValue::from_str(name)).ok()?;
        let string_or_absent = value.is_undefined() || value.is_null() || value.is_string();
        (!string_or_absent).then(|| format!("{name} must be a string, got {}", describe(&value)))
    })
}

/// serde does not name a mistyped field: find it by reading each field alone.
fn name_mistyped(class: Class, options: &JsValue, e: serde_wasm_bindgen::Error) -> Error {
    for &name in class.options {
        let Ok(value) = js_sys::Reflect::get(options, &JsValue::from_str(name)) else { continue };
        let single = js_sys::Object::new();
        if js_sys::Reflect::set(&single, &JsValue::from_str(name), &value).is_ok() {
            if let Err(e) = serde_wasm_bindgen::from_value::<OptionsIn>(single.into()) {
                if SECRET_FIELDS.contains(&name) {
                    // A getter that answered differently the second time: still never quote it.
                    return invalid_option(class, format!("{name} must be a string, got {}", describe(&value)));
                }
                if MS_OPTIONS.contains(&name) {
                    // A string of digits is named with the number to pass; other values by their type only.
                    let got = match value.as_string().filter(|v| v.parse::<u64>().is_ok()) {
                        Some(digits) => format!("the string \"{digits}\" (pass the number {digits})"),
                        None => describe(&value),
                    };
                    return invalid_option(class, format!("{name} must be a whole number of milliseconds, got {got}"));
                }
                return invalid_option(class, format!("{name}: {e}"));
            }
        }
    }
    invalid_option(class, e)
}

/// The options of `new S3Ownership(options)`.
pub(crate) fn options(js: JsValue) -> Result<Options, Error> {
    options_for(OWNERSHIP, js)
}

/// The options of `new <class>(options)`; an inspector's have no node (its `Config` gets an empty one).
pub(crate) fn options_for(class: Class, js: JsValue) -> Result<Options, Error> {
    let invalid_option = |why: String| invalid_option(class, why);
    if !js.is_object() {
        return Err(Error::invalid(format!("new {}() needs an options object", class.name)));
    }
    if let Some(k) = unknown_key(&js, class.options) {
        let why = match suggestion(&k, class.options) {
            _ if OPTION_NAMES.contains(&k.as_str()) => " (an S3Ownership option: an inspector has no node or lease)".to_owned(),
            Some(meant) => format!(": did you mean {meant}?"),
            None => String::new(),
        };
        return Err(invalid_option(format!("unknown option {}{why}", Quoted(&k))));
    }
    if let Some(why) = mistyped_secret(&js) {
        return Err(invalid_option(why));
    }
    let mut o: OptionsIn = serde_wasm_bindgen::from_value(js.clone()).map_err(|e| name_mistyped(class, &js, e))?;
    if !o.r2.is_undefined() {
        return r2_options(class, &js, o);
    }
    let required = |v: Option<String>, name: &str| v.ok_or_else(|| invalid_option(format!("{name} is required")));
    let endpoint = required(o.endpoint.take(), "endpoint")?;
    let bucket = required(o.bucket.take(), "bucket")?;
    let credentials = match std::mem::replace(&mut o.credentials, JsValue::UNDEFINED) {
        v if v.is_undefined() || v.is_null() => None,
        v => Some(v.dyn_into::<js_sys::Function>().map_err(|_| {
            invalid_option("credentials must be an async function returning { accessKeyId, secretAccessKey, sessionToken, expiration }".into())
        })?),
    };
    let static_keys = [&o.access_key_id, &o.secret_access_key, &o.session_token].iter().any(|k| k.is_some());
    if credentials.is_some() && static_keys {
        return Err(invalid_option("give either credentials (a function) or accessKeyId/secretAccessKey/sessionToken, not both".into()));
    }
    let (access_key_id, secret_access_key) = match credentials {
        Some(_) => (String::new(), String::new()),
        None => {
            let keys = |v: Option<String>, name: &str| {
                v.ok_or_else(|| invalid_option(format!("{name} is required (or give credentials: an async function returning short-lived keys)")))
            };
            (keys(o.access_key_id.take(), "accessKeyId")?, keys(o.secret_access_key.take(), "secretAccessKey")?)
        }
    };
    let mut config = Config::new(&endpoint, &bucket, "", &access_key_id, &secret_access_key);
    config.credentials_provider = credentials.is_some();
    config.session_token = o.session_token.take().filter(|t| !t.is_empty());
    config.region = o.region.take().unwrap_or(config.region);
    config.path_style = o.path_style.unwrap_or(config.path_style);
    let fetch = if o.fetch.is_undefined() {
        let global = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("fetch")).unwrap_or_default();
        Fetch::Global(global.dyn_into().map_err(|_| invalid_option("fetch must be a function (none given and no globalThis.fetch)".into()))?)
    } else {
        Fetch::Injected(o.fetch.clone().dyn_into().map_err(|_| invalid_option("fetch must be a function".into()))?)
    };
    finish(class, config, o, fetch, credentials, None)
}

/// The options with `r2`: the binding is the store, so nothing that names a store over the S3 API goes
/// with it (an endpoint or keys beside it would be ignored, which would hide a mistake).
fn r2_options(class: Class, js: &JsValue, o: OptionsIn) -> Result<Options, Error> {
    let given = |name: &str| js_sys::Reflect::get(js, &JsValue::from_str(name)).is_ok_and(|v| !v.is_undefined());
    if let Some(name) = S3_ONLY.iter().copied().find(|&n| n != "r2" && given(n)) {
        return Err(invalid_option(class, format!("{name} does not go with r2 (an R2 binding needs no endpoint, keys or fetch)")));
    }
    let binding = super::r2::R2Binding::new(o.r2.clone()).map_err(|why| invalid_option(class, why))?;
    let mut config = Config::new("", "", "", "", "");
    config.r2_binding = true;
    let fetch = Fetch::Injected(binding.unused_fetch());
    finish(class, config, o, fetch, None, Some(binding))
}

/// The options both stores share.
fn finish(class: Class, mut config: Config, o: OptionsIn, fetch: Fetch, credentials: Option<js_sys::Function>, r2: Option<super::r2::R2Binding>) -> Result<Options, Error> {
    let invalid_option = |why: String| invalid_option(class, why);
    if class.options.contains(&"node") {
        match o.node {
            Some(node) => config.node = node,
            // None given: the instance makes one up (S3Ownership::new), and says which (`own.node`).
            None => config.made_up_node = true,
        }
    }
    config.addr = o.addr.unwrap_or_default();
    config.prefix = o.prefix.unwrap_or_default();
    config.lease_ttl_ms = o.lease_ttl_ms.unwrap_or(config.lease_ttl_ms);
    config.max_clock_skew_ms = o.max_clock_skew_ms.unwrap_or(config.max_clock_skew_ms);
    config.request_timeout_ms = o.request_timeout_ms.unwrap_or(config.request_timeout_ms);
    config.probe = match (o.probe.as_bool(), o.probe.as_string().as_deref()) {
        _ if o.probe.is_undefined() => config.probe,
        (Some(true), _) => ProbePolicy::Recorded,
        (Some(false), _) => ProbePolicy::Off,
        (_, Some("always")) => ProbePolicy::Always,
        _ => return Err(invalid_option(format!(r#"probe must be true, false or "always", got {}"#, describe(&o.probe)))),
    };
    config.probe_trust_ms = o.probe_trust_ms.unwrap_or(config.probe_trust_ms);
    config.ids = match o.ids.as_deref() {
        None | Some("celld") => IdSet::Celld,
        Some("utf8") => IdSet::Utf8,
        Some(other) => return Err(invalid_option(format!(r#"ids must be "celld" or "utf8", got {}"#, Quoted(other)))),
    };
    config.celld = o.celld.unwrap_or(config.celld);
    let on_event = match o.on_event {
        v if v.is_undefined() || v.is_null() => None,
        v => Some(v.dyn_into().map_err(|_| invalid_option("onEvent must be a function".into()))?),
    };
    Ok(Options { config, fetch, on_event, credentials, r2 })
}

/// What a credentials function resolved to (SPEC 4.2). `expiration` is a `Date`, an ISO-8601 string or
/// Unix ms; absent or `null`: the keys do not expire.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProvidedIn {
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    expiration: JsValue,
}

/// The keys a credentials function gave, or why they are unusable. Unknown keys are refused, except
/// the ones AWS SDK credential providers add (`credentialScope`, `accountId`, `$source`), so that such a
/// provider can be passed as it is.
pub(crate) fn provided_credentials(v: JsValue) -> Result<crate::env::Credentials, String> {
    let bad = |why: &str| format!("the credentials function resolved to {why}");
    if !v.is_object() {
        return Err(bad(&format!("{}, not {{ accessKeyId, secretAccessKey, sessionToken, expiration }}", describe(&v))));
    }
    const KNOWN: [&str; 7] = ["accessKeyId", "secretAccessKey", "sessionToken", "expiration", "credentialScope", "accountId", "$source"];
    if let Some(k) = unknown_key(&v, &KNOWN) {
        return Err(bad(&format!("an object with the unknown key {k:?}")));
    }
    if let Some(why) = mistyped_secret(&v) {
        return Err(format!("the credentials function's answer: {why}"));
    }
    let p: ProvidedIn = serde_wasm_bindgen::from_value(v).map_err(|_| bad("a malformed object"))?;
    let (Some(access_key_id), Some(secret_access_key)) = (p.access_key_id.filter(|k| !k.is_empty()), p.secret_access_key.filter(|k| !k.is_empty())) else {
        return Err(bad("an object without accessKeyId and secretAccessKey"));
    };
    let expires_ms = match &p.expiration {
        e if e.is_undefined() || e.is_null() => None,
        e => {
            let ms = if let Some(n) = e.as_f64() {
                n
            } else if let Some(s) = e.as_string() {
                js_sys::Date::parse(&s)
            } else if let Some(d) = e.dyn_ref::<js_sys::Date>() {
                d.get_time()
            } else {
                f64::NAN
            };
            if !ms.is_finite() || ms < 0.0 {
                return Err(bad("an expiration that is not a Date, an ISO-8601 string or Unix ms"));
            }
            Some(ms as u64)
        }
    };
    Ok(crate::env::Credentials { access_key_id, secret_access_key, session_token: p.session_token.filter(|t| !t.is_empty()), expires_ms })
}

/// A cell or node id argument.
pub(crate) fn id(v: &JsValue, what: &str) -> Result<String, Error> {
    v.as_string().ok_or_else(|| Error::invalid(format!("{what} must be a string")))
}

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// A whole JS number in `min..=2^53-1`.
fn safe_integer(v: &JsValue, what: &str, min: u8) -> Result<u64, Error> {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && (f64::from(min)..=MAX_SAFE).contains(&n) => Ok(n as u64),
        _ => Err(Error::invalid(format!("{what} must be an integer in {min}..=2^53-1, got {}", describe(v)))),
    }
}

pub(crate) fn epoch(v: &JsValue) -> Result<u64, Error> {
    safe_integer(v, "epoch", 1)
}

pub(crate) fn expires_ms(v: &JsValue) -> Result<u64, Error> {
    safe_integer(v, "expiresMs", 0)
}

/// A bad argument for a message: a number as JS prints it, else its type.
pub(crate) fn describe(v: &JsValue) -> String {
    if let Some(n) = v.as_f64() {
        return js_sys::Number::from(n).to_string_with_radix(10).map(String::from).unwrap_or_default();
    }
    v.js_typeof().as_string().unwrap_or_default()
}

/// `{ match: etag }`.
#[derive(Deserialize)]
struct MatchIn {
    #[serde(rename = "match")]
    etag: String,
}

/// `"absent"` or `{ match: etag }` (a non-empty ETag).
pub(crate) fn guard(v: JsValue) -> Result<CasGuard, Error> {
    let bad = || Error::invalid(r#"guard must be "absent" or { match: etag }"#);
    if v.as_string().as_deref() == Some("absent") {
        return Ok(CasGuard::Absent);
    }
    if !v.is_object() || unknown_key(&v, &["match"]).is_some() {
        return Err(bad());
    }
    match serde_wasm_bindgen::from_value::<MatchIn>(v) {
        Ok(m) if !m.etag.is_empty() => Ok(CasGuard::Match(m.etag)),
        _ => Err(bad()),
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ClaimOptionsIn {
    expect_new: Option<bool>,
    wait: Option<bool>,
    #[serde(default, with = "serde_wasm_bindgen::preserve")]
    signal: JsValue,
}

/// `claim`'s options as checked: the core's, whether to wait, and the signal that ends the wait.
pub(crate) struct Claim {
    pub(crate) options: ClaimOptions,
    pub(crate) wait: bool,
    pub(crate) signal: Option<Signal>,
}

/// An `AbortSignal` (anything with a boolean `aborted` and `addEventListener`/`removeEventListener`,
/// as every runtime's is): its `abort` event, as a Promise, and the listener to remove afterwards.
pub(crate) struct Signal {
    target: JsValue,
    listener: Option<js_sys::Function>,
}

impl Signal {
    /// A Promise that resolves when the signal aborts (`None` when it already has: then nothing is sent).
    pub(crate) fn aborted(&mut self) -> Option<js_sys::Promise> {
        let get = |name: &str| js_sys::Reflect::get(&self.target, &JsValue::from_str(name)).unwrap_or_default();
        if get("aborted").as_bool() == Some(true) {
            return None;
        }
        let add: js_sys::Function = get("addEventListener").unchecked_into();
        let mut listener = None;
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            let _ = add.call2(&self.target, &JsValue::from_str("abort"), &resolve);
            listener = Some(resolve);
        });
        self.listener = listener;
        Some(promise)
    }

    /// Removes the listener `aborted` added, if any: a long-lived signal must not collect one per wait.
    pub(crate) fn forget(&self) {
        let remove = js_sys::Reflect::get(&self.target, &JsValue::from_str("removeEventListener"));
        if let (Some(listener), Ok(remove)) = (&self.listener, remove) {
            let remove: js_sys::Function = remove.unchecked_into();
            let _ = remove.call2(&self.target, &JsValue::from_str("abort"), listener);
        }
    }
}

/// `claim`'s options: absent, or `{ expectNew, wait, signal }` (`signal` only with `wait: true`).
pub(crate) fn claim_options(v: JsValue) -> Result<Claim, Error> {
    let none = Claim { options: ClaimOptions::default(), wait: false, signal: None };
    if v.is_undefined() {
        return Ok(none);
    }
    if !v.is_object() {
        return Err(Error::invalid("claim options must be an object"));
    }
    if let Some(k) = unknown_key(&v, &["expectNew", "wait", "signal"]) {
        return Err(Error::invalid(format!("unknown claim option {}", Quoted(&k))));
    }
    let o: ClaimOptionsIn = serde_wasm_bindgen::from_value(v).map_err(|e| Error::invalid(format!("claim options: {e}")))?;
    let wait = o.wait.unwrap_or(false);
    let signal = match o.signal {
        s if s.is_undefined() || s.is_null() => None,
        _ if !wait => return Err(Error::invalid("claim option signal needs wait: true (it cancels the wait)")),
        s => {
            let has = |name: &str| js_sys::Reflect::get(&s, &JsValue::from_str(name)).is_ok_and(|f| f.is_function());
            let aborted = js_sys::Reflect::get(&s, &JsValue::from_str("aborted")).ok().and_then(|a| a.as_bool());
            if !s.is_object() || aborted.is_none() || !has("addEventListener") || !has("removeEventListener") {
                return Err(Error::invalid("claim option signal must be an AbortSignal"));
            }
            Some(Signal { target: s, listener: None })
        }
    };
    Ok(Claim { options: ClaimOptions { expect_new: o.expect_new.unwrap_or(false) }, wait, signal })
}

// The results below are the core's own types, `Serialize`d in the shapes js/ownership.d.ts declares (the
// serde attributes are on the types: ownership::records, driver, probe).

#[derive(Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
enum CasNodeLeaseOut<'a> {
    Applied { etag: Option<&'a str> },
    Rejected,
}

pub(crate) fn owner_record(r: Option<OwnerRecord>) -> Result<JsValue, Error> {
    to_js(&r)
}

pub(crate) fn owner_info(o: Option<OwnerInfo>) -> Result<JsValue, Error> {
    to_js(&o)
}

pub(crate) fn node_lease(l: Option<NodeLeaseRecord>) -> Result<JsValue, Error> {
    to_js(&l)
}

pub(crate) fn cas_outcome(o: CasOutcome) -> JsValue {
    JsValue::from_str(match o {
        CasOutcome::Applied => "applied",
        CasOutcome::Rejected => "rejected",
    })
}

pub(crate) fn cas_node_lease((o, etag): (CasOutcome, Option<String>)) -> Result<JsValue, Error> {
    to_js(&match o {
        CasOutcome::Applied => CasNodeLeaseOut::Applied { etag: etag.as_deref() },
        CasOutcome::Rejected => CasNodeLeaseOut::Rejected,
    })
}

pub(crate) fn claim_outcome(c: ClaimOutcome) -> Result<JsValue, Error> {
    to_js(&c)
}

#[derive(Serialize)]
struct ClaimedOut<'a> {
    cell: &'a str,
    epoch: u64,
}

pub(crate) fn claimed(cells: Vec<(String, u64)>) -> Result<JsValue, Error> {
    to_js(&cells.iter().map(|(cell, epoch)| ClaimedOut { cell, epoch: *epoch }).collect::<Vec<_>>())
}

#[derive(Deserialize)]
struct CloseOptionsIn {
    release: Option<bool>,
}

/// `close`'s options: absent, or `{ release }`.
pub(crate) fn close_options(v: JsValue) -> Result<CloseOptions, Error> {
    if v.is_undefined() {
        return Ok(CloseOptions::default());
    }
    if !v.is_object() {
        return Err(Error::invalid("close options must be an object"));
    }
    if let Some(k) = unknown_key(&v, &["release"]) {
        return Err(Error::invalid(format!("unknown close option {k:?}")));
    }
    let o: CloseOptionsIn = serde_wasm_bindgen::from_value(v).map_err(|e| Error::invalid(format!("close options: {e}")))?;
    Ok(CloseOptions { release: o.release.unwrap_or(false) })
}

pub(crate) fn closed(c: Closed) -> Result<JsValue, Error> {
    to_js(&c)
}

#[derive(Deserialize)]
struct RemoveOptionsIn {
    cells: Option<Vec<String>>,
}

/// `removeDeadLease`'s options: `{ cells }`, the cells whose records must not name the node (required:
/// without them nothing says that no record needs the lease).
pub(crate) fn remove_options(v: JsValue) -> Result<Vec<String>, Error> {
    let bad = || Error::invalid("removeDeadLease needs { cells: [...] }: the cells whose records must not name the node");
    if !v.is_object() {
        return Err(bad());
    }
    if let Some(k) = unknown_key(&v, &["cells"]) {
        return Err(Error::invalid(format!("unknown removeDeadLease option {k:?}")));
    }
    let o: RemoveOptionsIn = serde_wasm_bindgen::from_value(v).map_err(|e| Error::invalid(format!("removeDeadLease options: {e}")))?;
    o.cells.ok_or_else(bad)
}

pub(crate) fn lease_removal(r: LeaseRemoval) -> Result<JsValue, Error> {
    to_js(&r)
}

pub(crate) fn probe(r: ProbeReport) -> Result<JsValue, Error> {
    to_js(&r)
}

