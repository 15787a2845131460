//! The R2 transport: sends the store's requests through a Workers R2 binding (`env.CELLS`) instead of the
//! injected `fetch`. `s3::r2` says which binding call a request means and what S3 answer the call's result
//! is; this file only makes the call on the JS object, awaits it with wasm-bindgen-futures (through the
//! instance's gate, like a fetch) and reads what it resolved to. A call still pending when the request's
//! timeout ends is `TimedOut` (a write may have landed); a thrown error without an R2 code is a request
//! without an answer, with the thrown value kept as the cause.

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::error::describe;
use super::trap::Hooks;
use crate::env::{HttpRequest, HttpResponse, NetworkError, TransportError};
use crate::error::Source;
use crate::s3::r2::{self, Call, ListedObject, OnlyIf};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// The methods a binding must have: the check made when the option is read.
const METHODS: [&str; 4] = ["get", "put", "delete", "list"];

/// An R2 bucket binding (the `r2` option).
#[derive(Clone)]
pub(crate) struct R2Binding(Object);

impl R2Binding {
    /// `value` when it is a binding (an object with `get`, `put`, `delete` and `list`); else what is
    /// missing, for the `invalid-input` error.
    pub(crate) fn new(value: JsValue) -> Result<Self, String> {
        // Not `instanceof Object`: a binding may be a Proxy from another realm (Miniflare's, in Node).
        if !(value.is_object() || value.is_function()) {
            return Err("r2 must be an R2 bucket binding (env.<BINDING>), not a value".to_owned());
        }
        let object: Object = value.unchecked_into();
        for name in METHODS {
            let method = Reflect::get(&object, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
            if !method.is_function() {
                return Err(format!("r2 must be an R2 bucket binding (env.<BINDING>): it has no {name}() method"));
            }
        }
        Ok(R2Binding(object))
    }

    /// What stands for `fetch` in an environment whose requests all go through the binding: never called
    /// (the binding's own `get`, so that nothing is compiled from a string, which workerd refuses).
    pub(crate) fn unused_fetch(&self) -> Function {
        Reflect::get(&self.0, &JsValue::from_str("get")).map(|f| f.unchecked_into()).unwrap_or_else(|_| Function::from(JsValue::UNDEFINED))
    }

    /// Sends `req` through the binding: at most one call, never retried.
    pub(crate) async fn send(&self, hooks: &Hooks, req: &HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        let call = match r2::call(req) {
            Ok(call) => call,
            Err(answer) => return Ok(answer),
        };
        let deadline = Deadline::new(timeout_ms);
        let answer = self.exchange(hooks, &call, &deadline).await;
        deadline.clear();
        match answer {
            Ok(res) => Ok(res),
            Err(Failed::TimedOut) => Err(TransportError::TimedOut),
            Err(Failed::Threw(e)) => {
                let message = describe(&e);
                match r2::answer_thrown(&message) {
                    Some(answer) => Ok(answer),
                    None => Err(TransportError::Network(NetworkError { detail: format!("the R2 binding threw: {message}"), source: Some(Source::new(e)) })),
                }
            }
        }
    }

    async fn exchange(&self, hooks: &Hooks, call: &Call, deadline: &Deadline) -> Result<HttpResponse, Failed> {
        match call {
            Call::Get { key } => {
                let object = deadline.wait(hooks, self.invoke("get", &[JsValue::from_str(key)])?).await?;
                if object.is_null() || object.is_undefined() {
                    return Ok(r2::answer_get(None));
                }
                let etag = string_at(&object, "etag");
                let read = Reflect::get(&object, &JsValue::from_str("arrayBuffer")).map_err(Failed::Threw)?;
                let read: Function = read.dyn_into().map_err(|_| Failed::Threw(JsValue::from_str("get resolved to an object without arrayBuffer()")))?;
                let buffer = deadline.wait(hooks, Promise::resolve(&read.call0(&object).map_err(Failed::Threw)?)).await?;
                Ok(r2::answer_get(Some((&etag, Uint8Array::new(&buffer).to_vec()))))
            }
            Call::Put { key, only_if, body } => {
                let options = Object::new();
                let metadata = Object::new();
                set(&metadata, "contentType", &JsValue::from_str("application/json"));
                set(&options, "httpMetadata", &metadata);
                if let Some(only_if) = only_if {
                    let condition = Object::new();
                    match only_if {
                        OnlyIf::Absent => set(&condition, "etagDoesNotMatch", &JsValue::from_str("*")),
                        OnlyIf::Matches(etag) => set(&condition, "etagMatches", &JsValue::from_str(etag)),
                    }
                    set(&options, "onlyIf", &condition);
                }
                // A copy in JS memory: the binding may read it after wasm memory moved on.
                let value = Uint8Array::from(&body[..]);
                let written = deadline.wait(hooks, self.invoke("put", &[JsValue::from_str(key), value.into(), options.into()])?).await?;
                if written.is_null() || written.is_undefined() {
                    return Ok(r2::answer_put(None));
                }
                Ok(r2::answer_put(Some((&string_at(&written, "etag"), uploaded_ms(&written)))))
            }
            Call::Delete { key } => {
                deadline.wait(hooks, self.invoke("delete", &[JsValue::from_str(key)])?).await?;
                Ok(r2::answer_delete())
            }
            Call::List { prefix, delimiter, cursor, limit } => {
                let options = Object::new();
                set(&options, "prefix", &JsValue::from_str(prefix));
                set(&options, "limit", &JsValue::from(*limit));
                if let Some(delimiter) = delimiter {
                    set(&options, "delimiter", &JsValue::from_str(delimiter));
                }
                if let Some(cursor) = cursor {
                    set(&options, "cursor", &JsValue::from_str(cursor));
                }
                let page = deadline.wait(hooks, self.invoke("list", &[options.into()])?).await?;
                let objects = Reflect::get(&page, &JsValue::from_str("objects")).unwrap_or(JsValue::UNDEFINED);
                let objects: Array = objects.dyn_into().map_err(|_| Failed::Threw(JsValue::from_str("list resolved without an objects array")))?;
                let listed: Vec<ListedObject> = objects
                    .iter()
                    .map(|o| ListedObject { key: string_at(&o, "key"), uploaded_ms: uploaded_ms(&o) })
                    .collect();
                let truncated = Reflect::get(&page, &JsValue::from_str("truncated")).ok().and_then(|t| t.as_bool()).unwrap_or(false);
                let cursor = Reflect::get(&page, &JsValue::from_str("cursor")).ok().and_then(|c| c.as_string());
                Ok(r2::answer_list(&listed, truncated, cursor.as_deref()))
            }
        }
    }

    /// Calls `binding[name](...args)`; what it returns (a Promise, or a value) as a Promise.
    fn invoke(&self, name: &str, args: &[JsValue]) -> Result<Promise, Failed> {
        let method: Function = Reflect::get(&self.0, &JsValue::from_str(name)).map_err(Failed::Threw)?.unchecked_into();
        let args: Array = args.iter().collect();
        let value = Reflect::apply(&method, &self.0, &args).map_err(Failed::Threw)?;
        Ok(Promise::resolve(&value))
    }
}

enum Failed {
    TimedOut,
    Threw(JsValue),
}

/// One request's timeout: a promise that resolves to a value of its own once `ms` have passed, raced
/// against each call of the request (a binding call cannot be aborted, only no longer waited for).
struct Deadline {
    timer: Option<(JsValue, Promise)>,
    /// What the timer resolves to: no binding call resolves to this very object.
    expired: Object,
}

impl Deadline {
    fn new(timeout_ms: Option<u32>) -> Self {
        let expired = Object::new();
        let timer = timeout_ms.filter(|&ms| ms > 0).map(|ms| {
            let mut id = JsValue::UNDEFINED;
            let promise = Promise::new(&mut |resolve, _| {
                let fire: Function = resolve.bind1(&JsValue::NULL, &expired).unchecked_into();
                id = set_timeout(&fire, f64::from(ms));
            });
            (id, promise)
        });
        Deadline { timer, expired }
    }

    /// What `p` resolves to, unless the deadline passes first.
    async fn wait(&self, hooks: &Hooks, p: Promise) -> Result<JsValue, Failed> {
        let raced = match &self.timer {
            Some((_, timer)) => Promise::race(&Array::of2(&p, timer)),
            None => p,
        };
        let value = hooks.wait(&raced).await.map_err(Failed::Threw)?;
        if Object::is(&value, &self.expired) { Err(Failed::TimedOut) } else { Ok(value) }
    }

    fn clear(&self) {
        if let Some((id, _)) = &self.timer {
            clear_timeout(id);
        }
    }
}

fn set(target: &Object, name: &str, value: &JsValue) {
    // Data properties on a fresh plain object: cannot fail.
    let _ = Reflect::set(target, &JsValue::from_str(name), value);
}

fn string_at(v: &JsValue, name: &str) -> String {
    Reflect::get(v, &JsValue::from_str(name)).ok().and_then(|s| s.as_string()).unwrap_or_default()
}

/// An object's `uploaded` Date as Unix ms.
fn uploaded_ms(v: &JsValue) -> Option<u64> {
    let uploaded = Reflect::get(v, &JsValue::from_str("uploaded")).ok()?.dyn_into::<js_sys::Date>().ok()?;
    let ms = uploaded.get_time();
    (ms.is_finite() && ms >= 0.0).then_some(ms as u64)
}
