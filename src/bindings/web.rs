//! [`WebEnv`]: the protocol's [`Env`] in a JS runtime. Requests go out through the injected `fetch` as one
//! `Request`, or through `globalThis.fetch` as `fetch(url, init)` ([`Fetch`]), built with web-sys
//! (`RequestInit` with the headers as a plain object, an `AbortController` for the timeout, `cache:
//! "no-store"` where the runtime has it) and awaited with wasm-bindgen-futures; clocks are
//! `Date.now()` and `performance.now()`, randomness `crypto.getRandomValues` (drawn 64 words at a time:
//! each call crosses into JS and allocates there), sleeping the global `setTimeout`. It only sends and
//! reads: it never retries a request and never decides anything.

use std::cell::{Cell, RefCell};

use js_sys::{Function, Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, Request, RequestCache, RequestInit, Response};

use super::error::describe;
use super::trap::Hooks;
use crate::env::{Env, HttpRequest, HttpResponse, NetworkError, TransportError, Unsent};
use crate::error::{Fault, Source};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = performance)]
    static PERFORMANCE: web_sys::Performance;
    #[wasm_bindgen(thread_local_v2, js_name = crypto)]
    static CRYPTO: web_sys::Crypto;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &Function, ms: f64) -> JsValue;
    /// `setTimeout(f, ms, arg)`: `f(arg)` after `ms`.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout_with(f: &Function, ms: f64, arg: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
    /// A request's headers as the plain object `RequestInit.headers` takes, filled by `[name] = value`
    /// (a fresh object of ours: the assignment cannot throw, so no `Reflect.set` with its catch).
    #[wasm_bindgen(extends = js_sys::Object)]
    type HeaderFields;
    #[wasm_bindgen(method, indexing_setter)]
    fn put(this: &HeaderFields, name: &JsValue, value: &JsValue);
    /// A `Response`'s `Headers`, read with the name as a JS string (made once: `js_name`).
    type AnswerHeaders;
    #[wasm_bindgen(method, catch, js_name = get)]
    fn header(this: &AnswerHeaders, name: &JsValue) -> Result<Option<String>, JsValue>;
}

thread_local! {
    /// Whether this runtime's `Request` takes `cache: "no-store"` (some refuse the option at
    /// construction: then requests are built without it), once found out (`no_store`).
    static NO_STORE: Cell<Option<bool>> = const { Cell::new(None) };
    /// Random words drawn ahead, used from the back.
    static RANDOM: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    /// The names every request hands JS (header and property names) as JS strings, made once per instance
    /// of the module (`js_name`) instead of decoded from wasm memory at every request.
    static NAMES: RefCell<Vec<(String, JsValue)>> = const { RefCell::new(Vec::new()) };
    /// `AbortController.prototype.abort` bound as `Function.prototype.call`'s `this`: `setTimeout(it, ms,
    /// ctrl)` aborts `ctrl`, with no function bound per request. `None` until made (`abort_call`);
    /// `Some(None)` where the runtime's `AbortController` does not offer it that way.
    static ABORT_CALL: RefCell<Option<Option<Function>>> = const { RefCell::new(None) };
}

/// Names kept by `js_name`: the protocol's requests use fewer (their signed headers, `body`, `etag`, `date`).
const NAMES_KEPT: usize = 24;

/// `name` as a JS string, made once per instance of the module for the first `NAMES_KEPT` names asked for.
fn js_name(name: &str) -> JsValue {
    NAMES.with_borrow_mut(|names| {
        if let Some((_, v)) = names.iter().find(|(n, _)| n == name) {
            return v.clone();
        }
        let v = JsValue::from_str(name);
        if names.len() < NAMES_KEPT {
            names.push((name.to_owned(), v.clone()));
        }
        v
    })
}

/// `Function.prototype.call.bind(AbortController.prototype.abort)`, made once (`ABORT_CALL`).
fn abort_call() -> Option<Function> {
    ABORT_CALL.with_borrow_mut(|kept| {
        kept.get_or_insert_with(|| {
            let get = |v: &JsValue, name: &str| js_sys::Reflect::get(v, &JsValue::from_str(name)).ok();
            let abort = get(&get(&js_sys::global(), "AbortController")?, "prototype").and_then(|p| get(&p, "abort"))?;
            let call: Function = get(&abort, "call")?.dyn_into().ok()?;
            Some(call.bind0(&abort))
        })
        .clone()
    })
}

/// A timer that aborts `ctrl` after `ms`.
fn abort_after(ctrl: &AbortController, ms: u32) -> JsValue {
    if let Some(abort) = abort_call() {
        return set_timeout_with(&abort, f64::from(ms), ctrl);
    }
    let abort: Function = js_sys::Reflect::get(ctrl, &JsValue::from_str("abort"))
        .map(|f| f.unchecked_into::<Function>().bind0(ctrl))
        .unwrap_or_else(|_| Function::from(JsValue::UNDEFINED));
    set_timeout(&abort, f64::from(ms))
}

/// Words drawn per `crypto.getRandomValues` call (512 bytes; the call takes at most 65,536).
const RANDOM_BATCH: usize = 64;

/// The function requests go out through, and how it is called (always with `globalThis` as `this`).
#[derive(Clone)]
pub(crate) enum Fetch {
    /// The `fetch` option: called as `fetch(request)` with one `Request`, its documented contract.
    Injected(Function),
    /// No `fetch` option: `globalThis.fetch`, called as every caller calls it, `fetch(url, init)`. A
    /// runtime's fetch builds a `Request` from what it is given, a given `Request` included (Node's copies
    /// it: +50 µs a request, bench/README.md), so it is handed the URL and the init alone.
    Global(Function),
}

impl Fetch {
    fn function(&self) -> &Function {
        match self {
            Fetch::Injected(f) | Fetch::Global(f) => f,
        }
    }
}

pub(crate) struct WebEnv {
    pub(crate) fetch: Fetch,
    pub(crate) hooks: Hooks,
    /// The timers of this instance's sleeps in progress, so that `stopRenewing` can end the renewal
    /// loop's sleep at once (a pending timer would keep Node from exiting).
    pub(crate) sleeping: RefCell<Vec<(JsValue, Function)>>,
    /// The `credentials` option: called for fresh keys (`Env::credentials`).
    pub(crate) provider: Option<Function>,
    /// The `r2` option: every request goes through this binding instead of `fetch`.
    pub(crate) r2: Option<super::r2::R2Binding>,
}

/// Forgets a sleep's timer once the sleep is over or dropped.
struct Asleep<'a> {
    env: &'a WebEnv,
    id: Option<JsValue>,
}

impl Drop for Asleep<'_> {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            self.env.sleeping.borrow_mut().retain(|(i, _)| i != id);
            // A sleep given up before its timer fired (a wait aborted, a loop ended by close()): its timer
            // must not keep the runtime alive. Clearing a timer that fired does nothing.
            clear_timeout(id);
        }
    }
}

/// A failed fetch's description: its message and those of its `cause` chain (a few deep), each with its
/// `code`. Node says only "fetch failed" and puts the reason (`ECONNREFUSED: connect ECONNREFUSED
/// 127.0.0.1:9`, `ENOTFOUND: getaddrinfo ENOTFOUND host`) in the cause; Deno and browsers say it in the
/// message (browsers say nothing more than "Failed to fetch", by design).
fn describe_failure(e: &JsValue) -> String {
    let get = |v: &JsValue, name: &str| js_sys::Reflect::get(v, &JsValue::from_str(name)).ok().filter(|v| !v.is_undefined() && !v.is_null());
    let mut out = describe(e);
    let mut at = get(e, "cause");
    for _ in 0..3 {
        let Some(cause) = at else { break };
        let text = describe(&cause);
        let code = get(&cause, "code").and_then(|c| c.as_string()).filter(|c| !text.contains(c.as_str()));
        let part = match (code, text.is_empty()) {
            (Some(code), true) => code,
            (Some(code), false) => format!("{code}: {text}"),
            (None, _) => text,
        };
        if !part.is_empty() {
            out = format!("{out} ({part})");
        }
        at = get(&cause, "cause");
    }
    out
}

/// JS `v[name]` as a string, if it is one.
fn string_at(v: &JsValue, name: &str) -> Option<String> {
    js_sys::Reflect::get(v, &JsValue::from_str(name)).ok().and_then(|s| s.as_string())
}

/// The page's origin when `url` is another origin's: a browser (a page or a web worker), where a request
/// goes through CORS. Node, Deno (without `--location`) and workerd have no `location`.
fn cross_origin_page(url: &str) -> Option<String> {
    let page = string_at(&js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("location")).ok()?, "origin")?;
    // The request's origin: scheme and authority of the URL the signer built, without a default port.
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?.to_ascii_lowercase();
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    let target = format!("{scheme}://{}", authority.strip_suffix(default_port).unwrap_or(&authority));
    (page != target).then_some(page)
}

/// A 2xx that should carry an `ETag` (a record read or a write; not a listing, not a DELETE) that a
/// browser gave without one: the bucket's CORS rule does not expose it, and no retry can change that.
fn hidden_etag(req: &HttpRequest, res: &HttpResponse, response_type: Option<&str>) -> Option<TransportError> {
    let needs_etag = req.method == "PUT" || (req.method == "GET" && !req.url.contains('?'));
    let hidden = response_type == Some("cors") && (200..300).contains(&res.status) && res.etag.is_none() && needs_etag;
    hidden.then(|| TransportError::Unreadable {
        status: res.status,
        detail: format!("{} without a readable ETag: the browser hides it because the bucket's CORS rule does not expose it; add ETag to the rule's ExposeHeaders", res.status),
    })
}

/// The detail of a failed `https://` request whose port answered in plain HTTP (Node: OpenSSL's "wrong
/// version number"; Deno: rustls's "InvalidContentType"), instead of the TLS library's own text.
fn no_tls(url: &str, detail: &str) -> Option<String> {
    let plain = ["WRONG_VERSION_NUMBER", "wrong version number", "InvalidContentType"].iter().any(|s| detail.contains(s));
    (plain && url.starts_with("https://")).then(|| "the endpoint does not speak TLS; use http://".to_owned())
}

impl WebEnv {
    /// Whether a browser's CORS rule refuses `header` on requests to `url`, found with two reads that
    /// cannot write (unsigned GETs, nothing about them but the header): a plain GET (no preflight) is
    /// answered, whatever its status, and a GET carrying `header: value` fails before any answer.
    async fn preflight_refused(&self, url: &str, header: &str, value: &str, timeout_ms: Option<u32>) -> bool {
        self.answers(url, None, timeout_ms).await && !self.answers(url, Some((header, value)), timeout_ms).await
    }

    /// Whether an unsigned GET of `url` with at most one header gets an answer (any status) in time.
    async fn answers(&self, url: &str, header: Option<(&str, &str)>, timeout_ms: Option<u32>) -> bool {
        let Ok(ctrl) = AbortController::new() else { return false };
        let headers = js_sys::Object::new();
        if let Some((name, value)) = header {
            let _ = js_sys::Reflect::set(&headers, &JsValue::from_str(name), &JsValue::from_str(value));
        }
        let init = RequestInit::new();
        init.set_method("GET");
        init.set_headers(&headers);
        init.set_signal(Some(&ctrl.signal()));
        // From the store, not from the HTTP cache: a cached answer says nothing about the network now.
        init.set_cache(RequestCache::NoStore);
        let Ok(request) = Request::new_with_str_and_init(url, &init) else { return false };
        let timer = abort_after(&ctrl, timeout_ms.unwrap_or(5_000).max(1));
        let answered = match self.fetch.function().call1(&js_sys::global(), &request) {
            Ok(sent) => self.hooks.wait(&sent).await.is_ok_and(|res| res.is_instance_of::<Response>()),
            Err(_) => false,
        };
        clear_timeout(&timer);
        answered
    }

    pub(crate) fn new(fetch: Fetch, hooks: Hooks) -> Self {
        WebEnv { fetch, hooks, sleeping: RefCell::default(), provider: None, r2: None }
    }

    /// Ends every sleep of this instance now: the renewal loop wakes and sees it was stopped; a read's
    /// backoff is only cut short.
    pub(crate) fn wake_sleepers(&self) {
        let sleeping = std::mem::take(&mut *self.sleeping.borrow_mut());
        for handle in &sleeping {
            wake(handle);
        }
    }

    /// Whether requests carry `cache: "no-store"`: found once per instance of the module by building a
    /// `Request` with it (constructing sends nothing), since a fetch that refuses it may have sent nothing
    /// or something.
    fn no_store() -> bool {
        if let Some(known) = NO_STORE.get() {
            return known;
        }
        let init = RequestInit::new();
        init.set_cache(RequestCache::NoStore);
        let known = Request::new_with_str_and_init("http://localhost/", &init).is_ok();
        NO_STORE.set(Some(known));
        known
    }

    /// The answer, and its `Response.type` (`"cors"` for a cross-origin answer in a browser).
    async fn exchange(&self, req: &HttpRequest, ctrl: &AbortController) -> Result<(HttpResponse, Option<String>), JsValue> {
        // A plain object: a `Headers` built here would be copied again by `Request` (the names are
        // lower-case and unique, as the signer made them).
        let headers: HeaderFields = js_sys::Object::new().unchecked_into();
        for (name, value) in &req.headers {
            headers.put(&js_name(name), &JsValue::from_str(value));
        }
        let init = RequestInit::new();
        init.set_method(req.method);
        init.set_headers(&headers);
        init.set_signal(Some(&ctrl.signal()));
        if !req.body.is_empty() {
            // A copy in JS memory: the fetch may read it after wasm memory moved on.
            init.set_body(&Uint8Array::from(&req.body[..]));
        }
        if Self::no_store() {
            init.set_cache(RequestCache::NoStore);
        }
        // Called once: a fetch that threw or rejected may have sent the request.
        let sent = match &self.fetch {
            Fetch::Injected(fetch) => fetch.call1(&js_sys::global(), &Request::new_with_str_and_init(&req.url, &init)?.into())?,
            Fetch::Global(fetch) => fetch.call2(&js_sys::global(), &JsValue::from_str(&req.url), &init)?,
        };
        let res = self.hooks.wait(&sent).await?;
        let res: Response = res.dyn_into().map_err(|_| JsValue::from_str("fetch did not resolve to a Response"))?;
        let status = res.status();
        let headers: AnswerHeaders = res.headers().unchecked_into();
        let etag = headers.header(&js_name("etag"))?;
        // The store's clock (docs/protocol.md, Clocks); hidden from a browser unless CORS exposes it.
        let date = headers.header(&js_name("date"))?;
        // Read only where `hidden_etag` looks at it: a 2xx without an ETag.
        let response_type = if etag.is_none() && (200..300).contains(&status) { string_at(&res, "type") } else { None };
        // No body (`null`): nothing to read, and no stream to drain.
        let body = match js_sys::Reflect::get(&res, &js_name("body")) {
            Ok(b) if b.is_null() => Vec::new(),
            _ => {
                let buffer = res.array_buffer()?;
                Uint8Array::new(&self.hooks.wait(&buffer).await?).to_vec()
            }
        };
        Ok((HttpResponse { status, etag, date, body }, response_type))
    }
}

impl Env for WebEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        if let Some(r2) = &self.r2 {
            return r2.send(&self.hooks, &req, timeout_ms).await;
        }
        let ctrl = AbortController::new().map_err(|e| TransportError::Network(describe(&e).into()))?;
        let timer = timeout_ms.filter(|&ms| ms > 0).map(|ms| abort_after(&ctrl, ms));
        let answer = self.exchange(&req, &ctrl).await;
        if let Some(timer) = &timer {
            clear_timeout(timer);
        }
        match answer {
            Ok((res, kind)) if (100..=599).contains(&res.status) => match hidden_etag(&req, &res, kind.as_deref()) {
                Some(hidden) => Err(hidden),
                None => Ok(res),
            },
            Ok((res, _)) => Err(TransportError::Network(format!("fetch answered status {}", res.status).into())),
            // Only our timer aborts this controller.
            Err(_) if ctrl.signal().aborted() => Err(TransportError::TimedOut),
            // The runtime's error itself travels on, as the caller's error's `cause`.
            Err(e) => {
                let mut detail = describe_failure(&e);
                if let Some(unsent) = no_tls(&req.url, &detail) {
                    return Err(TransportError::Unsent(Unsent::NoTls, NetworkError { detail: unsent, source: Some(Source::new(e)) }));
                }
                // A browser says only "Failed to fetch" when the preflight is refused; a conditional write
                // is the request whose preflight asks for if-match / if-none-match.
                let condition = ["if-match", "if-none-match"].into_iter().find_map(|h| Some((h, req.header(h)?)));
                if let (Some(page), Some((header, value))) = (cross_origin_page(&req.url), condition) {
                    if self.preflight_refused(&req.url, header, value, timeout_ms).await {
                        let detail = format!("it does not allow the header {header} from {page} (the preflight of a GET with {header} was refused while a plain GET was answered; the {} was never sent): add if-match and if-none-match to the rule's AllowedHeaders, beside authorization, content-type and x-amz-*", req.method);
                        return Err(TransportError::Unsent(Unsent::Cors, NetworkError { detail, source: Some(Source::new(e)) }));
                    }
                    detail = format!("{detail}; no answer came to a conditional write from {page}: if this persists, check that the bucket's CORS rule allows this origin and the method {}", req.method);
                }
                Err(TransportError::Network(NetworkError { detail, source: Some(Source::new(e)) }))
            }
        }
    }

    fn wall_ms(&self) -> u64 {
        let ms = js_sys::Date::now();
        if ms.is_finite() && ms > 0.0 { ms as u64 } else { 0 }
    }

    fn mono_ms(&self) -> f64 {
        PERFORMANCE.with(|p| p.now())
    }

    fn random_u64(&self) -> u64 {
        RANDOM.with_borrow_mut(|words| {
            if words.is_empty() {
                let mut bytes = [0u8; RANDOM_BATCH * 8];
                // getRandomValues fails only for more than 65536 bytes.
                let _ = CRYPTO.with(|c| c.get_random_values_with_u8_array(&mut bytes));
                words.extend(bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())));
            }
            words.pop().unwrap_or_default()
        })
    }

    async fn sleep(&self, ms: u32) {
        let mut handle = None;
        let done = timer(ms, &mut handle);
        let asleep = Asleep { env: self, id: handle.as_ref().map(|(id, _)| id.clone()) };
        self.sleeping.borrow_mut().extend(handle);
        let _ = self.hooks.wait(&done).await;
        drop(asleep);
    }

    async fn credentials(&self) -> Result<crate::env::Credentials, Fault> {
        let Some(provider) = &self.provider else { return Err("no credentials provider".into()) };
        let answer = match provider.call0(&JsValue::UNDEFINED) {
            Ok(v) => self.hooks.wait(&v).await,
            Err(e) => Err(e),
        };
        // What it threw travels on, as the `auth` error's `cause` (as a failed fetch's error does).
        let answer = answer.map_err(|e| Fault {
            detail: format!("the credentials function failed: {}", describe(&e)),
            source: Some(Source::new(e)),
            ..Fault::default()
        })?;
        super::convert::provided_credentials(answer).map_err(Fault::from)
    }
}

/// A promise that resolves after `ms`; `handle` receives the timer's id and the resolve function, so a
/// sleeper can be woken early (the renewal loop's stop).
pub(crate) fn timer(ms: u32, handle: &mut Option<(JsValue, Function)>) -> Promise {
    Promise::new(&mut |resolve, _| {
        let id = set_timeout(&resolve, f64::from(ms));
        *handle = Some((id, resolve));
    })
}

/// Wakes a `timer` early: clears it and resolves it now.
pub(crate) fn wake((id, resolve): &(JsValue, Function)) {
    clear_timeout(id);
    let _ = resolve.call0(&JsValue::UNDEFINED);
}
