//! Authority for JS (SPEC 4.2, "losing authority is a signal"): what js/authority.js arms its
//! AbortSignals on. `authority(cell)` asks the core how long this instance may still act for a cell;
//! `watch(f)` has every `Event::AuthorityLost` the core emits passed to `f` as it happens, with the
//! coded error the signal aborts with. Decides nothing: the core says when a claim ends and why.

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;

use super::ownership::WasmOwnership;
use super::{coded_error, js_error};
use crate::env::Lost;

#[wasm_bindgen]
impl WasmOwnership {
    /// `[epoch, msLeft]` while this instance holds `cell` under a valid lease (`msLeft`: until the nearer
    /// of the lease's deadlines); otherwise throws why not (`fenced`, `not-leased`). Asking fences a
    /// lapsed lease, which `watch`'s function hears of first.
    pub fn authority(&self, cell: JsValue) -> Result<Box<[f64]>, JsValue> {
        let cell = super::convert::id(&cell, "cell").map_err(js_error)?;
        let (epoch, left) = self.core.ownership.authority(&cell).map_err(js_error)?;
        Ok(Box::new([epoch as f64, left]))
    }

    /// Calls `f(cell, epoch, reason)` for every claim of this instance that ends, the moment the core
    /// knows (`reason`: the error its signal aborts with). One watcher per instance; `undefined` removes it.
    pub fn watch(&self, f: JsValue) {
        *self.core.ownership.env().watcher.borrow_mut() = f.dyn_into::<Function>().ok();
    }
}

/// The abort reason of a claim that ended: `released` when this instance gave it up, else `fenced`,
/// with `cell`, `epoch` and `lost` (the core's why, `Lost::as_str`).
pub(crate) fn lost_error(cell: &str, epoch: u64, lost: Lost, detail: &str) -> JsValue {
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
