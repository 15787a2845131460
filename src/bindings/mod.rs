//! The wasm-bindgen shell: the only place where Rust meets JS values. Each submodule exposes one JS-facing
//! surface (`sign`: signRequest/presignUrl; `ownership`: the S3Ownership core) as low-level functions
//! that `js/api.js` wraps. This layer converts and checks inputs and turns `crate::Error` into JS errors;
//! it must never hold protocol logic, and never panic on anything JS hands it (a panic kills the instance).

mod ownership;
mod sign;

use wasm_bindgen::JsValue;

/// A JS `Error` whose `message` is the error's text and whose `code` is its stable code
/// (`invalid-input`, `auth`, ...), the shape SPEC §4 promises every thrown error has.
pub(crate) fn js_error(e: crate::Error) -> JsValue {
    let err = js_sys::Error::new(&e.message());
    // Setting a data property on a fresh, extensible Error cannot fail, so the Result carries nothing.
    let _ = js_sys::Reflect::set(&err, &JsValue::from_str("code"), &JsValue::from_str(e.code()));
    err.into()
}

/// Whether a number JS passed is whole (`f64::fract` is std-only). Exact for |x| < 2^63; beyond, the
/// saturating cast makes whole numbers read as not whole, which no caller's range admits anyway.
pub(crate) fn is_whole(x: f64) -> bool {
    x == (x as i64) as f64
}
