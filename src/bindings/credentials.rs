//! The `cause` of an `auth` error that a credentials function's failure produced (SPEC 4.2): the core
//! carries only the failure's text (it holds no JS values), so the value the function threw is kept in
//! the `WebEnv` and attached here. Decides nothing.

use wasm_bindgen::JsValue;

use super::js_error;
use super::web::WebEnv;
use crate::error::Error;

/// `e` as a coded JS error; an `auth` error from the provider gets what it threw as `cause`.
pub(crate) fn with_cause(env: &WebEnv, e: Error) -> JsValue {
    let from_provider = matches!(&e, Error::Auth(r) if r.status == 0);
    let err = js_error(e);
    if from_provider {
        if let Some(cause) = env.provider_error.borrow().clone() {
            // A data property on a fresh, extensible Error: this cannot fail.
            let _ = js_sys::Reflect::set(&err, &JsValue::from_str("cause"), &cause);
        }
    }
    err
}
