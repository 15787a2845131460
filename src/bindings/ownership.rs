//! `WasmOwnership`, the core of js/ownership.js's `S3Ownership`: every `#[wasm_bindgen]` method of it, over
//! the protocol's `ownership::S3Ownership<WebEnv>`. Operations are Promises (wasm-bindgen-futures runs
//! them; each is [`Guarded`]); the renewal loop for long-lived runtimes; authority for js/authority.js's
//! signals (`authority`, `watch`); `metrics`; the listings. Each method reads its arguments with
//! `convert`, calls the core's method of the same name, and converts what it returns (a claim:
//! `claim` -> `S3Ownership::claim_with` -> ... -> the conditional PUT in `ownership::cas`). No protocol
//! logic here, and no panics.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, spawn_local};

use super::convert;
use super::error::{ended_error, js_error, use_error_class};
use super::events::WebObserver;
use super::inspector::run_on;
use super::listing::{cells_out, nodes_out};
use super::metrics::metrics_out;
use super::trap::{Guarded, Hooks};
use super::web::WebEnv;
use crate::error::Error;
use crate::ownership::{Inspector, S3Ownership};

/// The protocol and this instance's renewal loop.
pub(super) struct Core {
    pub(super) ownership: S3Ownership<WebEnv>,
    /// Hears its events (metrics, the authority watcher, `onEvent`).
    events: Rc<WebObserver>,
    /// The running renewal loop's id (0: none); a loop finishing after a newer one started leaves it.
    renewing: Cell<u32>,
    last_loop: Cell<u32>,
    /// `listCells` / `listNodes`' inspector, made at the first listing (bindings/listing.rs).
    pub(super) inspector: RefCell<Option<Rc<Inspector<WebEnv>>>>,
}

/// The wasm half of `S3Ownership`.
#[wasm_bindgen]
pub struct WasmOwnership {
    pub(super) core: Rc<Core>,
    pub(super) hooks: Hooks,
}

#[wasm_bindgen]
impl WasmOwnership {
    /// `options` as `new S3Ownership(options)` got them; `hooks` from js/instance.js.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, hooks: Hooks) -> Result<WasmOwnership, JsValue> {
        use_error_class(hooks.error_class());
        let o = convert::options(options).map_err(js_error)?;
        let mut env = WebEnv::new(o.fetch, hooks.clone());
        env.provider = o.credentials;
        env.r2 = o.r2;
        let events = Rc::new(WebObserver::new(o.on_event));
        let ownership = S3Ownership::new(o.config, env).map_err(js_error)?.observed_by(events.clone());
        Ok(WasmOwnership { core: Rc::new(Core { ownership, events, renewing: Cell::new(0), last_loop: Cell::new(0), inspector: RefCell::default() }), hooks })
    }

    /// Runs one operation as a Promise: `Ok` resolves, a `crate::Error` rejects with its code, a trap
    /// rejects with `internal`.
    pub(super) fn run<F>(&self, op: impl FnOnce(Rc<Core>) -> F) -> Promise
    where
        F: Future<Output = Result<JsValue, Error>> + 'static,
    {
        // One Guarded and one future_to_promise for every operation.
        let op: Pin<Box<dyn Future<Output = Result<JsValue, Error>>>> = Box::pin(op(self.core.clone()));
        let guarded = Guarded::new(self.hooks.clone(), op);
        future_to_promise(async move { guarded.await?.map_err(js_error) })
    }

    #[wasm_bindgen(js_name = readOwner)]
    pub fn read_owner(&self, cell: JsValue) -> Promise {
        self.run(|c| async move { convert::owner_record(c.ownership.read_owner_and_judge(&convert::id(&cell, "cell")?).await?) })
    }

    #[wasm_bindgen(js_name = casOwner)]
    pub fn cas_owner(&self, cell: JsValue, guard: JsValue, epoch: JsValue) -> Promise {
        self.run(|c| async move {
            let (cell, guard, epoch) = (convert::id(&cell, "cell")?, convert::guard(guard)?, convert::epoch(&epoch)?);
            Ok(convert::cas_outcome(c.ownership.cas_owner(&cell, &guard, epoch).await?))
        })
    }

    #[wasm_bindgen(js_name = releaseOwner)]
    pub fn release_owner(&self, cell: JsValue, epoch: JsValue) -> Promise {
        self.run(|c| async move {
            let (cell, epoch) = (convert::id(&cell, "cell")?, convert::epoch(&epoch)?);
            Ok(convert::cas_outcome(c.ownership.release_owner(&cell, epoch).await?))
        })
    }

    #[wasm_bindgen(js_name = readNodeLease)]
    pub fn read_node_lease(&self, node: JsValue) -> Promise {
        self.run(|c| async move { convert::node_lease(c.ownership.read_node_lease(&convert::id(&node, "node")?).await?) })
    }

    #[wasm_bindgen(js_name = casNodeLease)]
    pub fn cas_node_lease(&self, guard: JsValue, expires_ms: JsValue) -> Promise {
        self.run(|c| async move {
            let (guard, expires_ms) = (convert::guard(guard)?, convert::expires_ms(&expires_ms)?);
            convert::cas_node_lease(c.ownership.cas_node_lease(&guard, expires_ms).await?)
        })
    }

    #[wasm_bindgen(js_name = acquireLease)]
    pub fn acquire_lease(&self) -> Promise {
        self.run(|c| async move { c.ownership.acquire_lease().await.map(|()| JsValue::UNDEFINED) })
    }

    #[wasm_bindgen(js_name = renewLease)]
    pub fn renew_lease(&self) -> Promise {
        self.run(|c| async move { c.ownership.renew_lease().await.map(|()| JsValue::UNDEFINED) })
    }

    /// `claim(cell, { expectNew, wait, signal })`: with `wait`, the core's `claim_waiting`, cancelled by the
    /// `AbortSignal` (its `abort` event resolves the cancel future; the listener is removed afterwards).
    pub fn claim(&self, cell: JsValue, options: JsValue) -> Promise {
        self.run(|c| async move {
            let (cell, claim) = (convert::id(&cell, "cell")?, convert::claim_options(options)?);
            if !claim.wait {
                return convert::claim_outcome(c.ownership.claim_with(&cell, claim.options).await?);
            }
            let Some(mut signal) = claim.signal else {
                return convert::claim_outcome(c.ownership.claim_waiting(&cell, claim.options, std::future::pending()).await?);
            };
            let aborted = signal.aborted();
            let env = c.ownership.env();
            let cancel = async {
                if let Some(aborted) = &aborted {
                    let _ = env.hooks.wait(aborted).await;
                }
            };
            let outcome = c.ownership.claim_waiting(&cell, claim.options, cancel).await;
            signal.forget();
            convert::claim_outcome(outcome?)
        })
    }

    /// `removeDeadLease(node, { cells })`: the core's conditional clean-up of a dead node's lease.
    #[wasm_bindgen(js_name = removeDeadLease)]
    pub fn remove_dead_lease(&self, node: JsValue, options: JsValue) -> Promise {
        self.run(|c| async move {
            let (node, cells) = (convert::id(&node, "node")?, convert::remove_options(options)?);
            let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
            convert::lease_removal(c.ownership.remove_dead_lease(&node, &cells).await?)
        })
    }

    /// The cells this instance holds under its current lease: `[{ cell, epoch }]`, none without a valid
    /// lease (and none once closed).
    pub fn claimed(&self) -> Result<JsValue, JsValue> {
        convert::claimed(self.core.ownership.claimed()).map_err(js_error)
    }

    /// `close({ release })`: authority ends now (synchronously, before the Promise is returned), the
    /// renewal loop and every sleep end; then the core retires the lease. Bad options throw at once
    /// (`invalid-input`), with nothing changed, so that js/ownership.js marks the instance closed only
    /// once a close was accepted.
    pub fn close(&self, options: JsValue) -> Result<Promise, JsValue> {
        let options = convert::close_options(options).map_err(js_error)?;
        self.core.renewing.set(0);
        self.core.ownership.shut();
        self.core.ownership.env().wake_sleepers();
        Ok(self.run(|c| async move { convert::closed(c.ownership.close(options).await?) }))
    }

    pub fn release(&self, cell: JsValue) -> Promise {
        self.run(|c| async move { Ok(convert::cas_outcome(c.ownership.release(&convert::id(&cell, "cell")?).await?)) })
    }

    pub fn owner(&self, cell: JsValue) -> Promise {
        self.run(|c| async move { convert::owner_info(c.ownership.owner(&convert::id(&cell, "cell")?).await?) })
    }

    pub fn verify(&self, cell: JsValue, epoch: JsValue) -> Promise {
        self.run(|c| async move {
            let (cell, epoch) = (convert::id(&cell, "cell")?, convert::epoch(&epoch)?);
            Ok(JsValue::from_bool(c.ownership.verify(&cell, epoch).await?))
        })
    }

    pub fn probe(&self) -> Promise {
        self.run(|c| async move { convert::probe(c.ownership.probe().await?) })
    }

    /// This node's id: the `node` option, or the one the instance made up without it.
    #[wasm_bindgen(getter)]
    pub fn node(&self) -> String {
        self.core.ownership.config().node.clone()
    }

    #[wasm_bindgen(js_name = leaseValid)]
    pub fn lease_valid(&self) -> bool {
        self.core.ownership.lease_valid()
    }

    /// Runs the core's renewal loop (`renew_until_stopped`: every ttl/3, promptly again after a failed
    /// attempt while authority remains) until `stopRenewing`. Every failure goes to `on_error` (a
    /// function, or anything else for none); `fenced` or `not-leased` ends the loop. A second call while
    /// a loop runs does nothing; the core retires an older loop when a newer one starts.
    #[wasm_bindgen(js_name = startRenewing)]
    pub fn start_renewing(&self, on_error: JsValue) {
        let core = self.core.clone();
        if core.renewing.get() != 0 {
            return;
        }
        let id = core.last_loop.get().wrapping_add(1).max(1);
        core.last_loop.set(id);
        core.renewing.set(id);
        let on_error = on_error.dyn_into::<Function>().ok();
        let report = move |e: &Error| {
            if let Some(f) = &on_error {
                let _ = f.call1(&JsValue::UNDEFINED, &js_error(e.clone()));
            }
        };
        let run = async move {
            let mut report = report;
            if let Err(e) = core.ownership.renew_until_stopped(&|| false, &mut report).await {
                report(&e);
            }
            if core.renewing.get() == id {
                core.renewing.set(0);
            }
        };
        let guarded = Guarded::new(self.hooks.clone(), run);
        // A trap is reported by js/ownership.js, which hears of every trap, wherever it happened.
        spawn_local(async move {
            let _ = guarded.await;
        });
    }

    #[wasm_bindgen(js_name = stopRenewing)]
    pub fn stop_renewing(&self) {
        self.core.renewing.set(0);
        self.core.ownership.stop_renewing();
        self.core.ownership.env().wake_sleepers();
    }

    /// `[epoch, msLeft]` while this instance holds `cell` under a valid lease (`msLeft`: until the nearer
    /// of the lease's deadlines); otherwise throws why not (`fenced`, `not-leased`). Asking fences a
    /// lapsed lease, which `watch`'s function hears of first.
    pub fn authority(&self, cell: JsValue) -> Result<Box<[f64]>, JsValue> {
        let cell = convert::id(&cell, "cell").map_err(js_error)?;
        let (epoch, left) = self.core.ownership.authority(&cell).map_err(js_error)?;
        Ok(Box::new([epoch as f64, left]))
    }

    /// SPEC §4.4, the check at send (js/authority.js, the scope's `fetch`): how long this instance may still
    /// act for `cell` at `epoch` (ms), or throws why not, named as a signal's abort reason is (`released`,
    /// `fenced` with `lost`, `not-leased` after close).
    #[wasm_bindgen(js_name = authorityAt)]
    pub fn authority_at(&self, cell: JsValue, epoch: JsValue) -> Result<f64, JsValue> {
        let (cell, epoch) = (convert::id(&cell, "cell").map_err(js_error)?, convert::epoch(&epoch).map_err(js_error)?);
        self.core.ownership.authority_at(&cell, epoch).map_err(|e| ended_error(&cell, epoch, e.lost, &e.detail))
    }

    /// Renews this instance's lease when it is due (the core's `renew_if_due`, which every operation of the
    /// core makes first); resolves either way: a renewal that failed leaves the lease to the next check.
    #[wasm_bindgen(js_name = renewIfDue)]
    pub fn renew_if_due(&self) -> Promise {
        self.run(|c| async move {
            c.ownership.renew_if_due().await;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Calls `f(cell, epoch, reason)` for every claim of this instance that ends, the moment the core
    /// knows (`reason`: the error its signal aborts with). One watcher per instance; `undefined` removes it
    /// (js/authority.js watches only while a signal is live: each reason is an Error built).
    pub fn watch(&self, f: JsValue) {
        *self.core.events.watcher.borrow_mut() = f.dyn_into::<Function>().ok();
    }

    /// This instance's counters since it was made, as a fresh plain object.
    pub fn metrics(&self) -> JsValue {
        metrics_out(&self.core.events.metrics.borrow())
    }

    #[wasm_bindgen(js_name = listCells)]
    pub fn list_cells(&self) -> Promise {
        self.run_listing(|i| async move { cells_out(i.list_cells().await?) })
    }

    #[wasm_bindgen(js_name = listNodes)]
    pub fn list_nodes(&self) -> Promise {
        self.run_listing(|i| async move { nodes_out(i.list_nodes().await?) })
    }
}

/// The inspector over an `S3Ownership`'s configuration and fetch, made at its first listing and kept (so a
/// credentials function is asked when its keys need it, not at every listing): an `Inspector<WebEnv>` like
/// `S3Inspector`'s (not the core's `S3Ownership::list_cells`, whose `Inspector<&WebEnv>` would put a
/// second copy of the listing in the wasm).
fn inspector_of(c: &Core) -> Result<Rc<Inspector<WebEnv>>, Error> {
    if let Some(kept) = c.inspector.borrow().clone() {
        return Ok(kept);
    }
    let env = c.ownership.env();
    let mut own = WebEnv::new(env.fetch.clone(), env.hooks.clone());
    own.provider = env.provider.clone();
    own.r2 = env.r2.clone();
    // Its requests go to `onEvent`, not to this instance's metrics.
    let events = WebObserver::new(c.events.on_event.clone());
    let inspector = Rc::new(Inspector::new(c.ownership.config(), own)?.observed_by(events));
    *c.inspector.borrow_mut() = Some(inspector.clone());
    Ok(inspector)
}

impl WasmOwnership {
    fn run_listing<F>(&self, op: impl FnOnce(Rc<Inspector<WebEnv>>) -> F) -> Promise
    where
        F: Future<Output = Result<JsValue, Error>> + 'static,
    {
        match inspector_of(&self.core) {
            Ok(inspector) => run_on(&self.hooks, inspector, op),
            Err(e) => Promise::reject(&js_error(e)),
        }
    }
}
