//! The wasm-bindgen shell: the only place where Rust meets JS values. `ownership` is the `S3Ownership`
//! core class (async methods, each a Promise), `listing` the `S3Inspector` core and the listings, `web`
//! the [`crate::env::Env`] over the injected `fetch`, `convert` the options in and the results and events out (serde-wasm-bindgen), `trap` what keeps a
//! wasm trap from hanging callers, and `sign` the signer's fast path. This layer converts and checks
//! inputs and turns `crate::Error` into JS errors; it must never hold protocol logic, and never panic on
//! anything JS hands it.

mod authority;
mod convert;
mod credentials;
mod listing;
mod metrics;
mod ownership;
mod sign;
mod trap;
mod web;

use std::cell::RefCell;

use js_sys::{Array, Function, Reflect};
use wasm_bindgen::JsValue;

thread_local! {
    /// js/error.js's `CelldEdgeError`, handed over by the constructors of this instance's classes (a
    /// fresh instance after a trap gets it again from the objects re-created in it).
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Makes this instance build its errors with `class` (`CelldEdgeError`).
pub(crate) fn use_error_class(class: Function) {
    ERROR_CLASS.with(|c| *c.borrow_mut() = Some(class));
}

/// What a JS error carries besides its message (SPEC §4.2): `code`, and where known the key, the store's
/// status and S3 code, and the runtime's error as `cause`.
#[derive(Default)]
pub(crate) struct Details<'a> {
    pub(crate) code: &'a str,
    pub(crate) key: Option<&'a str>,
    pub(crate) status: u16,
    pub(crate) s3_code: &'a str,
    pub(crate) cause: Option<&'a JsValue>,
}

/// A `CelldEdgeError` (a plain `Error` with the same fields before js/error.js's class was handed over).
pub(crate) fn error_with(message: &str, d: Details<'_>) -> JsValue {
    let class = ERROR_CLASS.with(|c| c.borrow().clone());
    let err = match class.and_then(|c| Reflect::construct(&c, &Array::of1(&JsValue::from_str(message))).ok()) {
        Some(err) => err,
        None => js_sys::Error::new(message).into(),
    };
    // Setting data properties on a fresh, extensible Error cannot fail, so the Results carry nothing.
    let set = |name: &str, value: &JsValue| {
        let _ = Reflect::set(&err, &JsValue::from_str(name), value);
    };
    set("code", &JsValue::from_str(d.code));
    if let Some(key) = d.key {
        set("key", &JsValue::from_str(key));
    }
    if d.status != 0 {
        set("status", &JsValue::from(d.status));
    }
    if !d.s3_code.is_empty() {
        set("s3Code", &JsValue::from_str(d.s3_code));
    }
    if let Some(cause) = d.cause {
        set("cause", cause);
    }
    err
}

/// A JS error with only a `code` and a message.
pub(crate) fn coded_error(code: &str, message: &str) -> JsValue {
    error_with(message, Details { code, ..Details::default() })
}

/// `e` as a JS error: its code and message, key, the store's status and S3 code, and the runtime's error.
pub(crate) fn js_error(e: crate::Error) -> JsValue {
    let fault = e.fault();
    let cause = fault.source.as_ref().and_then(|s| s.get::<JsValue>());
    error_with(&e.message(), Details { code: e.code(), key: e.key(), status: fault.status, s3_code: &fault.code, cause })
}
