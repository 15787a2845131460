//! A wasm trap (a bug: a panic, which `panic = "abort"` turns into a trap, or a raw `unreachable`) must not
//! hang callers. With wasm-bindgen-futures an operation's Rust code runs inside microtask polls that no
//! wrapper of ours calls, so every future this crate hands to wasm-bindgen-futures is wrapped in
//! [`Guarded`]: each poll runs inside the loader's `hooks.poll(f)` (js/instance.js), a JS frame that
//! catches the `WebAssembly.RuntimeError`. The trapped operation then rejects with code `internal`, the
//! trap never reaches the runtime's uncaught-error handling, and the loader takes over: it rejects every
//! other pending operation, closes the old instance's promises (`hooks.gate`) and re-instantiates the
//! module (`scheduleReinit`, wasm-bindgen's reinit). docs/packaging.md ("Traps") has the whole mechanism.
//! Never panics itself.

use std::cell::Cell;
#[cfg(feature = "ownership")]
use std::future::Future;
#[cfg(feature = "ownership")]
use std::pin::Pin;
#[cfg(feature = "ownership")]
use std::task::{Context, Poll};

#[cfg(feature = "ownership")]
use js_sys::Promise;
use wasm_bindgen::prelude::*;

#[cfg(feature = "ownership")]
use super::error::trapped_error;

// The hooks and `Guarded` serve the ownership classes alone (the signing-only wasm, feature `ownership`
// off, has the panic hook, `lastPanic`, `scheduleReinit` and the test trap, and names no js-sys:
// src/bindings/mod.rs).
#[cfg(feature = "ownership")]
#[wasm_bindgen]
extern "C" {
    /// What js/instance.js passes to every `WasmOwnership` (`hooks` there).
    #[derive(Clone)]
    pub type Hooks;

    /// Calls `f`; answers the message of what it threw (a trap), or nothing when it returned.
    #[wasm_bindgen(method)]
    fn poll(this: &Hooks, f: &mut dyn FnMut()) -> Option<String>;

    /// A promise that settles as `p` does (`p` a promise or a value, `Promise.resolve`d), unless this
    /// instance trapped meanwhile: then it never settles, so no callback of the old instance runs after
    /// the module was re-instantiated.
    #[wasm_bindgen(method)]
    pub fn gate(this: &Hooks, p: &JsValue) -> Promise;

    /// The class errors are built with (js/error.js's `CelldEdgeError`).
    #[wasm_bindgen(method, getter, js_name = errorClass)]
    pub fn error_class(this: &Hooks) -> js_sys::Function;
}

#[cfg(feature = "ownership")]
impl Hooks {
    /// Awaits a promise (or a value: `Promise.resolve`d by the gate) through the instance's gate.
    pub(crate) async fn wait(&self, p: &JsValue) -> Result<JsValue, JsValue> {
        wasm_bindgen_futures::JsFuture::from(self.gate(p)).await
    }
}

thread_local! {
    /// The last panic's message, kept by the panic hook for the error the trapped operation rejects with.
    static PANIC: Cell<Option<String>> = const { Cell::new(None) };
    /// Test-only (`__celldTestTrap`): how the next guarded poll traps.
    #[cfg(feature = "ownership")]
    static ARMED: Cell<Option<TestTrap>> = const { Cell::new(None) };
}

/// Installed once per instance (and again in each fresh one): remember the message, then std aborts.
#[wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let text = payload.downcast_ref::<&str>().copied().or(payload.downcast_ref::<String>().map(String::as_str)).unwrap_or("panic");
        // Written piece by piece: the signing-only wasm has no other use for `format!`'s machinery.
        let mut message = String::from(text);
        if let Some(at) = info.location() {
            message.push_str(" at ");
            message.push_str(at.file());
            message.push(':');
            crate::sigv4::push_decimal(&mut message, at.line().into());
        }
        PANIC.set(Some(message));
    }));
}

/// Asks wasm-bindgen to re-instantiate the module at the next call into it (js/instance.js calls this
/// once the trapped instance has gone quiet).
#[wasm_bindgen(js_name = scheduleReinit)]
pub fn schedule_reinit() {
    wasm_bindgen::handler::schedule_reinit();
}

/// The last panic's message, once (js/instance.js asks while it handles a trap).
#[wasm_bindgen(js_name = lastPanic)]
pub fn last_panic() -> Option<String> {
    PANIC.take()
}

/// The error an operation rejects with after a trap.
#[cfg(feature = "ownership")]
pub(crate) fn trap_error(what: &str) -> JsValue {
    trapped_error(&last_panic().unwrap_or_else(|| what.to_owned()))
}

/// A future whose every poll runs inside `hooks.poll`; after a trap it is `Err` (the inner future is
/// leaked, never polled or dropped again: its state is whatever the trap left).
#[cfg(feature = "ownership")]
pub(crate) struct Guarded<F> {
    hooks: Hooks,
    inner: Option<Pin<Box<F>>>,
}

#[cfg(feature = "ownership")]
impl<F: Future> Guarded<F> {
    pub(crate) fn new(hooks: Hooks, inner: F) -> Self {
        Guarded { hooks, inner: Some(Box::pin(inner)) }
    }
}

#[cfg(feature = "ownership")]
impl<F: Future> Future for Guarded<F> {
    type Output = Result<F::Output, JsValue>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else { return Poll::Ready(Err(trap_error("polled after a trap"))) };
        let mut out = Poll::Pending;
        let trapped = this.hooks.poll(&mut || {
            if let Some(kind) = ARMED.take() {
                kind.fire();
            }
            out = inner.as_mut().poll(cx);
        });
        match trapped {
            None => out.map(Ok),
            Some(what) => {
                std::mem::forget(this.inner.take());
                Poll::Ready(Err(trap_error(&what)))
            }
        }
    }
}

/// How a test trap fires: a panic (the panic hook runs first) or a bare `unreachable` (it does not).
#[cfg(feature = "ownership")]
#[derive(Clone, Copy)]
enum TestTrap {
    Panic,
    Unreachable,
}

#[cfg(feature = "ownership")]
impl TestTrap {
    fn fire(self) {
        match self {
            TestTrap::Panic => panic!("test trap"),
            TestTrap::Unreachable => core::arch::wasm32::unreachable(),
        }
    }
}

/// **Tests only** (not part of the package's API, which never re-exports it): the next guarded poll of
/// any operation traps (`"panic"` or `"unreachable"`), or, with `"now"`, this call panics at once. Only in
/// the full wasm, whose tests use it (tests/common/trap.mjs).
#[cfg(feature = "ownership")]
#[wasm_bindgen(js_name = __celldTestTrap)]
pub fn test_trap(kind: &str) {
    match kind {
        "panic" => ARMED.set(Some(TestTrap::Panic)),
        "unreachable" => ARMED.set(Some(TestTrap::Unreachable)),
        "now" => TestTrap::Panic.fire(),
        _ => {}
    }
}
