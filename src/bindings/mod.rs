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

use wasm_bindgen::JsValue;

/// A JS `Error` whose `message` is `message` and whose `code` is `code`, the shape SPEC §4 promises every
/// thrown error has.
pub(crate) fn coded_error(code: &str, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    // Setting a data property on a fresh, extensible Error cannot fail, so the Result carries nothing.
    let _ = js_sys::Reflect::set(&err, &JsValue::from_str("code"), &JsValue::from_str(code));
    err.into()
}

/// `e` as a coded JS `Error`.
pub(crate) fn js_error(e: crate::Error) -> JsValue {
    coded_error(e.code(), &e.message())
}
