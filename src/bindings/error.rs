//! Every JS error the wasm throws or rejects with is built here: a `CelldEdgeError` (js/error.js, handed
//! over by the constructors of this instance's classes) with `code`, and where known `key`, `status`,
//! `s3Code` and `cause` (SPEC §4.2). `cause` is the runtime's own value behind a fault (what `fetch` or a
//! credentials function threw), carried untouched in the `crate::Error`'s source. Decides nothing.

use std::cell::RefCell;

use js_sys::{Array, Function, Reflect};
use wasm_bindgen::JsValue;

use crate::env::Lost;

thread_local! {
    /// js/error.js's `CelldEdgeError`, handed over by the constructors of this instance's classes (a
    /// fresh instance after a trap gets it again from the objects re-created in it).
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Makes this instance build its errors with `class` (`CelldEdgeError`).
pub(super) fn use_error_class(class: Function) {
    ERROR_CLASS.with(|c| *c.borrow_mut() = Some(class));
}

/// What a JS error carries besides its message (SPEC §4.2): `code`, and where known the key, the store's
/// status and S3 code, and the runtime's error as `cause`.
#[derive(Default)]
pub(super) struct Details<'a> {
    pub(super) code: &'a str,
    pub(super) key: Option<&'a str>,
    pub(super) status: u16,
    pub(super) s3_code: &'a str,
    pub(super) cause: Option<&'a JsValue>,
}

/// A `CelldEdgeError` (a plain `Error` with the same fields before js/error.js's class was handed over).
pub(super) fn error_with(message: &str, d: Details<'_>) -> JsValue {
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
pub(super) fn coded_error(code: &str, message: &str) -> JsValue {
    error_with(message, Details { code, ..Details::default() })
}

/// `e` as a JS error: its code and message, key, the store's status and S3 code, and the runtime's error.
pub(super) fn js_error(e: crate::Error) -> JsValue {
    let fault = e.fault();
    let cause = fault.source.as_ref().and_then(|s| s.get::<JsValue>());
    error_with(&e.message(), Details { code: e.code(), key: e.key(), status: fault.status, s3_code: &fault.code, cause })
}

/// The abort reason of a claim that ended: `released` when this instance gave it up, else `fenced`,
/// with `cell`, `epoch` and `lost` (the core's why, `Lost::as_str`).
pub(super) fn lost_error(cell: &str, epoch: u64, lost: Lost, detail: &str) -> JsValue {
    let code = match lost {
        Lost::Released => "released",
        // As every operation of a closed instance fails.
        Lost::Closed => "not-leased",
        _ => "fenced",
    };
    let detail = if detail.is_empty() { String::new() } else { format!(": {detail}") };
    let message = format!("authority over cell {cell:?} at epoch {epoch} ended ({}){detail}", lost.as_str());
    let err = coded_error(code, &message);
    // Data properties on a fresh, extensible Error: these cannot fail.
    let _ = Reflect::set(&err, &JsValue::from_str("cell"), &JsValue::from_str(cell));
    let _ = Reflect::set(&err, &JsValue::from_str("epoch"), &JsValue::from_f64(epoch as f64));
    let _ = Reflect::set(&err, &JsValue::from_str("lost"), &JsValue::from_str(lost.as_str()));
    err
}

/// `lost_error`, or for a claim whose end is no longer known (`lost: None`) a `fenced` error with `cell`
/// and `epoch` alone.
pub(super) fn ended_error(cell: &str, epoch: u64, lost: Option<Lost>, detail: &str) -> JsValue {
    let Some(lost) = lost else {
        let err = coded_error("fenced", &format!("authority over cell {cell:?} at epoch {epoch} ended: {detail}"));
        let _ = Reflect::set(&err, &JsValue::from_str("cell"), &JsValue::from_str(cell));
        let _ = Reflect::set(&err, &JsValue::from_str("epoch"), &JsValue::from_f64(epoch as f64));
        return err;
    };
    lost_error(cell, epoch, lost, detail)
}

/// What an operation rejects with after a trap (`why`: the panic's message, or the trap's).
pub(super) fn trapped_error(why: &str) -> JsValue {
    coded_error(
        "internal",
        &format!("internal error: celld-edge trapped ({why}); the wasm instance is replaced, and a write in flight may or may not have landed"),
    )
}

/// What a thrown JS value says (an Error's message, else its string form).
pub(crate) fn describe(e: &JsValue) -> String {
    let message = js_sys::Reflect::get(e, &JsValue::from_str("message")).ok().and_then(|m| m.as_string());
    message.or_else(|| e.as_string()).unwrap_or_else(|| format!("{e:?}"))
}
