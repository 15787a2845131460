//! [`WebObserver`]: what hears the core's events in a JS runtime, beside the [`super::web::WebEnv`] (which
//! only sends, reads clocks, sleeps and asks for credentials). Three listeners, each for its reason:
//! - the counters of `own.metrics()`: plain Rust, folded at once; no JS runs;
//! - the authority watcher (`watch`, js/authority.js, which aborts the claims' `AbortSignal`s): called
//!   synchronously, because the contract is that a claim's signal is aborted before the operation that
//!   learnt its end returns, and a synchronous `authority()` that fences must have aborted them when it
//!   throws. That is safe inside the operation: the core emits with no state of the instance borrowed,
//!   and what a listener then calls cannot change the step under way (the simulation's re-entrant hooks
//!   call back into the instance at these very moments, tests/sim/workload.rs);
//! - the user's `onEvent`: queued, and called after the core's current step, from a task of its own
//!   (wasm-bindgen-futures' queue runs it before any promise the operation resolves is seen by its
//!   awaiter, so the order users see is unchanged). A user's function never runs with the core on the
//!   stack, and one that throws or is slow affects neither the operation nor the other listeners.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::spawn_local;

use crate::env::{Event, Observer};
use crate::metrics::Metrics;

pub(crate) struct WebObserver {
    /// Every event counted, for `own.metrics()`.
    pub(crate) metrics: RefCell<Metrics>,
    /// Hears of every claim that ends (`watch`).
    pub(crate) watcher: RefCell<Option<Function>>,
    /// The `onEvent` option.
    pub(crate) on_event: Option<Function>,
    /// Events `onEvent` has not been given yet, in the order they happened.
    pending: Rc<RefCell<Vec<JsValue>>>,
}

impl WebObserver {
    pub(crate) fn new(on_event: Option<Function>) -> Self {
        WebObserver { metrics: RefCell::default(), watcher: RefCell::default(), on_event, pending: Rc::default() }
    }
}

impl Observer for WebObserver {
    fn observe(&self, event: Event<'_>) {
        self.metrics.borrow_mut().record(&event);
        if let Event::AuthorityLost { cell, epoch, lost, detail } = event {
            // Cloned out: the watcher's abort listeners may call back into this instance.
            let watcher = self.watcher.borrow().clone();
            if let Some(f) = watcher {
                let reason = super::error::lost_error(cell, epoch, lost, detail);
                let _ = f.call3(&JsValue::UNDEFINED, &JsValue::from_str(cell), &JsValue::from_f64(epoch as f64), &reason);
            }
        }
        let Some(f) = &self.on_event else { return };
        // Converted now: the event borrows from the operation under way.
        let Ok(value) = super::convert::event(&event) else { return };
        let first = {
            let mut pending = self.pending.borrow_mut();
            pending.push(value);
            pending.len() == 1
        };
        if first {
            let (f, pending) = (f.clone(), self.pending.clone());
            spawn_local(async move {
                let events = std::mem::take(&mut *pending.borrow_mut());
                for value in &events {
                    // A throwing observer must not stop the others: call1 catches.
                    let _ = f.call1(&JsValue::UNDEFINED, value);
                }
            });
        }
    }
}
