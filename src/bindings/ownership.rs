//! The `S3Ownership` surface for JS: a wasm class over `ownership::S3Ownership<JsEnv>`, where `JsEnv` is
//! the small host object `js/ownership.js` builds around the injected `fetch` (plus clocks, randomness,
//! timers). Results cross as JSON text that the JS wrapper parses; errors as JS `Error`s with `code`.
//! No protocol logic here, and no panics: every value from JS is checked.

use std::rc::Rc;

use serde::Deserialize;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::js_error;
use crate::env::{Env, Event, HttpRequest, HttpResponse, TransportError};
use crate::error::Error;
use crate::ownership::{CasGuard, CasOutcome, ClaimOutcome, Config, OwnerInfo, OwnerRecord, S3Ownership};

#[wasm_bindgen]
extern "C" {
    /// What `js/ownership.js` passes in; see `makeHost` there.
    pub type Host;

    /// Resolves to `[status, etag | null, body: Uint8Array, error: string | null, timedOut: boolean]`;
    /// status 0 means no answer (then `error` says why). Never rejects.
    #[wasm_bindgen(method)]
    fn send(this: &Host, method: &str, url: &str, headers: Vec<String>, body: &[u8], timeout_ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(method)]
    fn wall(this: &Host) -> f64;
    #[wasm_bindgen(method)]
    fn mono(this: &Host) -> f64;
    /// A uniformly random integer in [0, 2^32).
    #[wasm_bindgen(method)]
    fn random32(this: &Host) -> f64;
    #[wasm_bindgen(method)]
    fn sleep(this: &Host, ms: u32) -> js_sys::Promise;
    /// True when the caller passed `onEvent`.
    #[wasm_bindgen(method, getter)]
    fn events(this: &Host) -> bool;
    /// Hands one event, as JSON, to `onEvent`.
    #[wasm_bindgen(method)]
    fn event(this: &Host, json: &str);
}

pub struct JsEnv(Host);

fn network(detail: impl Into<String>) -> TransportError {
    TransportError::Network(detail.into())
}

impl Env for JsEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        let headers = req.headers.into_iter().flat_map(|(n, v)| [n, v]).collect::<Vec<_>>();
        let promise = self.0.send(req.method, &req.url, headers, &req.body, timeout_ms.unwrap_or(0));
        let answer = JsFuture::from(promise).await.map_err(|e| network(format!("{e:?}")))?;
        let field = |i: u32| js_sys::Reflect::get_u32(&answer, i).unwrap_or(JsValue::UNDEFINED);
        if field(4).as_bool() == Some(true) {
            return Err(TransportError::TimedOut);
        }
        let status = field(0).as_f64().unwrap_or(0.0);
        if !(100.0..=599.0).contains(&status) {
            return Err(network(field(3).as_string().unwrap_or_else(|| "fetch failed".into())));
        }
        let body = field(2).dyn_into::<js_sys::Uint8Array>().map(|b| b.to_vec()).unwrap_or_default();
        Ok(HttpResponse { status: status as u16, etag: field(1).as_string(), body })
    }
    fn wall_ms(&self) -> u64 {
        let ms = self.0.wall();
        if ms.is_finite() && ms > 0.0 { ms as u64 } else { 0 }
    }
    fn mono_ms(&self) -> f64 {
        self.0.mono()
    }
    fn random_u64(&self) -> u64 {
        let word = || self.0.random32() as u64 & 0xffff_ffff;
        (word() << 32) | word()
    }
    async fn sleep(&self, ms: u32) {
        // A timer that fails to fire only shortens a read backoff.
        let _ = JsFuture::from(self.0.sleep(ms)).await;
    }
    fn observe(&self, event: Event<'_>) {
        if self.0.events() {
            self.0.event(&event_json(&event).to_string());
        }
    }
}

fn event_json(event: &Event<'_>) -> Value {
    match *event {
        Event::LeaseAcquired { node, expires_ms, ms } => json!({ "type": "lease-acquired", "node": node, "expiresMs": expires_ms, "ms": ms }),
        Event::LeaseRenewed { node, expires_ms, ms } => json!({ "type": "lease-renewed", "node": node, "expiresMs": expires_ms, "ms": ms }),
        Event::Fenced { node, reason } => json!({ "type": "fenced", "node": node, "reason": reason }),
        Event::ClaimApplied { cell, epoch, took_over, ms } => {
            json!({ "type": if took_over { "claim-took-over" } else { "claim-applied" }, "cell": cell, "epoch": epoch, "ms": ms })
        }
        Event::ClaimRejected { cell, owner, epoch, ms } => json!({ "type": "claim-rejected", "cell": cell, "owner": owner, "epoch": epoch, "ms": ms }),
        Event::AmbiguousSettled { key, outcome, readbacks } => json!({ "type": "ambiguous-settled", "key": key, "outcome": outcome, "readbacks": readbacks }),
        Event::ReadRetried { key, attempt, backoff_ms, detail } => {
            json!({ "type": "read-retried", "key": key, "attempt": attempt, "backoffMs": backoff_ms, "detail": detail })
        }
    }
}

/// The options object as JSON (the JS wrapper drops `fetch` and checks types first).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Options {
    endpoint: String,
    bucket: String,
    #[serde(default = "default_region")]
    region: String,
    access_key_id: String,
    secret_access_key: String,
    #[serde(default)]
    session_token: Option<String>,
    node: String,
    #[serde(default)]
    addr: String,
    #[serde(default)]
    prefix: String,
    #[serde(default = "default_ttl")]
    lease_ttl_ms: u64,
    #[serde(default = "default_skew")]
    max_clock_skew_ms: u64,
    #[serde(default = "default_true")]
    path_style: bool,
    #[serde(default = "default_timeout")]
    request_timeout_ms: u32,
    #[serde(default = "default_true")]
    probe: bool,
}

fn default_region() -> String {
    "us-east-1".into()
}
fn default_ttl() -> u64 {
    10_000
}
fn default_skew() -> u64 {
    1_000
}
fn default_true() -> bool {
    true
}
fn default_timeout() -> u32 {
    10_000
}

type Shared = Rc<S3Ownership<JsEnv>>;

/// The wasm half of `S3Ownership`; `js/ownership.js` is the public class.
#[wasm_bindgen]
pub struct WasmOwnership {
    inner: Shared,
}

fn owner_record_json(r: &OwnerRecord) -> Value {
    let node = if r.is_released() { Value::Null } else { Value::from(r.node.as_str()) };
    json!({ "node": node, "epoch": r.epoch, "etag": r.etag })
}

fn owner_info_json(o: &OwnerInfo) -> Value {
    let node = if o.node.is_empty() { Value::Null } else { Value::from(o.node.as_str()) };
    json!({ "node": node, "epoch": o.epoch, "addr": o.addr, "live": o.live })
}

fn outcome_json(o: CasOutcome) -> Value {
    Value::from(match o {
        CasOutcome::Applied => "applied",
        CasOutcome::Rejected => "rejected",
    })
}

/// Epochs cross as JS numbers: positive safe integers only.
fn epoch(e: f64) -> Result<u64, Error> {
    if e.fract() == 0.0 && (1.0..=9_007_199_254_740_991.0).contains(&e) {
        Ok(e as u64)
    } else {
        Err(Error::invalid(format!("epoch {e} is not a positive safe integer")))
    }
}

/// Runs `op` on the shared instance and resolves with its JSON, or rejects with a coded `Error`.
fn run<F, Fut>(inner: &Shared, op: F) -> js_sys::Promise
where
    F: FnOnce(Shared) -> Fut + 'static,
    Fut: std::future::Future<Output = Result<Value, Error>> + 'static,
{
    let inner = inner.clone();
    future_to_promise(async move {
        match op(inner).await {
            Ok(v) => Ok(JsValue::from_str(&v.to_string())),
            Err(e) => Err(js_error(e)),
        }
    })
}

#[wasm_bindgen]
impl WasmOwnership {
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str, host: Host) -> Result<WasmOwnership, JsValue> {
        let o: Options = serde_json::from_str(options_json)
            .map_err(|e| js_error(Error::invalid(format!("S3Ownership options: {e}"))))?;
        let config = Config {
            endpoint: o.endpoint,
            bucket: o.bucket,
            region: o.region,
            access_key_id: o.access_key_id,
            secret_access_key: o.secret_access_key,
            session_token: o.session_token.filter(|t| !t.is_empty()),
            node: o.node,
            addr: o.addr,
            prefix: o.prefix,
            lease_ttl_ms: o.lease_ttl_ms,
            max_clock_skew_ms: o.max_clock_skew_ms,
            path_style: o.path_style,
            request_timeout_ms: o.request_timeout_ms,
            probe: o.probe,
        };
        let inner = S3Ownership::new(config, JsEnv(host)).map_err(js_error)?;
        Ok(WasmOwnership { inner: Rc::new(inner) })
    }

    #[wasm_bindgen(js_name = readOwner)]
    pub fn read_owner(&self, cell: String) -> js_sys::Promise {
        run(&self.inner, |o| async move { Ok(o.read_owner(&cell).await?.as_ref().map_or(Value::Null, owner_record_json)) })
    }

    /// `guard_etag` undefined means "absent".
    #[wasm_bindgen(js_name = casOwner)]
    pub fn cas_owner(&self, cell: String, guard_etag: Option<String>, e: f64) -> js_sys::Promise {
        run(&self.inner, move |o| async move {
            let guard = guard_etag.map_or(CasGuard::Absent, CasGuard::Match);
            Ok(outcome_json(o.cas_owner(&cell, &guard, epoch(e)?).await?))
        })
    }

    #[wasm_bindgen(js_name = releaseOwner)]
    pub fn release_owner(&self, cell: String, e: f64) -> js_sys::Promise {
        run(&self.inner, move |o| async move { Ok(outcome_json(o.release_owner(&cell, epoch(e)?).await?)) })
    }

    #[wasm_bindgen(js_name = readNodeLease)]
    pub fn read_node_lease(&self, node: String) -> js_sys::Promise {
        run(&self.inner, |o| async move {
            Ok(match o.read_node_lease(&node).await? {
                Some(l) => json!({ "node": l.node, "expiresMs": l.expires_ms, "addr": l.addr, "etag": l.etag }),
                None => Value::Null,
            })
        })
    }

    #[wasm_bindgen(js_name = casNodeLease)]
    pub fn cas_node_lease(&self, guard_etag: Option<String>, expires_ms: f64) -> js_sys::Promise {
        run(&self.inner, move |o| async move {
            if !(expires_ms.fract() == 0.0 && (0.0..=9_007_199_254_740_991.0).contains(&expires_ms)) {
                return Err(Error::invalid(format!("expiresMs {expires_ms} is not a non-negative safe integer")));
            }
            let guard = guard_etag.map_or(CasGuard::Absent, CasGuard::Match);
            Ok(match o.cas_node_lease(&guard, expires_ms as u64).await? {
                (CasOutcome::Applied, etag) => json!({ "outcome": "applied", "etag": etag }),
                (CasOutcome::Rejected, _) => json!({ "outcome": "rejected" }),
            })
        })
    }

    #[wasm_bindgen(js_name = acquireLease)]
    pub fn acquire_lease(&self) -> js_sys::Promise {
        run(&self.inner, |o| async move { o.acquire_lease().await.map(|()| Value::Null) })
    }

    #[wasm_bindgen(js_name = renewLease)]
    pub fn renew_lease(&self) -> js_sys::Promise {
        run(&self.inner, |o| async move { o.renew_lease().await.map(|()| Value::Null) })
    }

    #[wasm_bindgen(js_name = leaseValid)]
    pub fn lease_valid(&self) -> bool {
        self.inner.lease_valid()
    }

    pub fn claim(&self, cell: String) -> js_sys::Promise {
        run(&self.inner, |o| async move {
            Ok(match o.claim(&cell).await? {
                ClaimOutcome::Applied { epoch, took_over, prior } => json!({
                    "outcome": "applied", "epoch": epoch, "tookOver": took_over,
                    "prior": prior.as_ref().map_or(Value::Null, owner_record_json),
                }),
                ClaimOutcome::Rejected { owner } => json!({ "outcome": "rejected", "owner": owner_info_json(&owner) }),
            })
        })
    }

    pub fn release(&self, cell: String) -> js_sys::Promise {
        run(&self.inner, |o| async move { Ok(outcome_json(o.release(&cell).await?)) })
    }

    pub fn owner(&self, cell: String) -> js_sys::Promise {
        run(&self.inner, |o| async move { Ok(o.owner(&cell).await?.as_ref().map_or(Value::Null, owner_info_json)) })
    }

    pub fn verify(&self, cell: String, e: f64) -> js_sys::Promise {
        run(&self.inner, move |o| async move { Ok(Value::from(o.verify(&cell, epoch(e)?).await?)) })
    }

    pub fn probe(&self) -> js_sys::Promise {
        run(&self.inner, |o| async move {
            let r = o.probe().await?;
            Ok(json!({
                "ifMatchMissingStatus": r.if_match_missing_status,
                "conditionalDelete": r.conditional_delete,
                "etagQuoted": r.etag_quoted,
            }))
        })
    }

    /// Milliseconds between renewals (ttl / 3).
    #[wasm_bindgen(js_name = renewIntervalMs)]
    pub fn renew_interval_ms(&self) -> f64 {
        crate::ownership::lease::renew_interval_ms(self.inner.config().lease_ttl_ms) as f64
    }
}
