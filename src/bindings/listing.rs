//! Seeing the bucket from JS (SPEC §4.2): `WasmInspector`, the core of js/inspector.js's `S3Inspector`
//! (no node id, no lease: `listCells`, `listNodes`, `probe`), the same `listCells` / `listNodes` on
//! `WasmOwnership`, and the entries out in the shapes js/ownership.d.ts declares (`CellEntry`,
//! `NodeEntry`) through serde-wasm-bindgen. Options are checked in `convert`; conversion only here, no
//! protocol logic, no panics. Times go out as JS numbers (f64), so no value a store sends can make a
//! listing unrepresentable.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::Promise;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::convert::{self, INSPECTOR};
use super::js_error;
use super::ownership::{Core, WasmOwnership};
use super::trap::{Guarded, Hooks};
use super::web::WebEnv;
use crate::error::Error;
use crate::ownership::{CellEntry, Inspector, LeaseView, NodeEntry};

const OUT: serde_wasm_bindgen::Serializer = serde_wasm_bindgen::Serializer::json_compatible();

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, Error> {
    value.serialize(&OUT).map_err(|e| Error::invalid(format!("listing not representable in JS: {e}")))
}

/// `to - from` in ms, negative when `to` is earlier (an expired lease; a store clock ahead of ours).
fn signed_ms(to: u64, from: u64) -> f64 {
    to as f64 - from as f64
}

#[derive(Serialize)]
struct ErrorOut<'a> {
    code: &'a str,
    message: String,
}

fn error_out(e: Option<&Error>) -> Option<ErrorOut<'_>> {
    e.map(|e| ErrorOut { code: e.code(), message: e.message() })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeOut<'a> {
    node: &'a str,
    key: &'a str,
    lease: &'static str,
    live: bool,
    expires_ms: Option<f64>,
    expires_in_ms: Option<f64>,
    age_ms: Option<f64>,
    modified_ms: Option<f64>,
    addr: &'a str,
    etag: &'a str,
    awaiting_recovery: bool,
    error: Option<ErrorOut<'a>>,
}

impl<'a> From<&'a NodeEntry> for NodeOut<'a> {
    fn from(n: &'a NodeEntry) -> Self {
        let expires = n.lease.expires_ms();
        NodeOut {
            node: &n.node,
            key: &n.key,
            lease: n.lease.name(),
            live: matches!(n.lease, LeaseView::Live { .. } | LeaseView::Undecided { .. }),
            expires_ms: expires.map(|e| e as f64),
            expires_in_ms: expires.map(|e| signed_ms(e, n.judged_at_ms)),
            age_ms: n.modified_ms.map(|m| signed_ms(n.judged_at_ms, m)),
            modified_ms: n.modified_ms.map(|m| m as f64),
            addr: &n.addr,
            etag: &n.etag,
            awaiting_recovery: n.awaiting_recovery,
            error: error_out(n.lease.error()),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CellOut<'a> {
    cell: &'a str,
    key: &'a str,
    status: &'static str,
    node: Option<&'a str>,
    epoch: Option<f64>,
    etag: Option<&'a str>,
    released: bool,
    modified_ms: Option<f64>,
    lease: Option<&'static str>,
    lease_expires_ms: Option<f64>,
    lease_expires_in_ms: Option<f64>,
    lease_age_ms: Option<f64>,
    addr: Option<&'a str>,
    awaiting_recovery: bool,
    error: Option<ErrorOut<'a>>,
}

impl<'a> From<&'a CellEntry> for CellOut<'a> {
    fn from(c: &'a CellEntry) -> Self {
        let owner = c.record.as_ref().ok();
        let lease = c.lease();
        let expires = lease.and_then(|l| l.lease.expires_ms());
        CellOut {
            cell: &c.cell,
            key: &c.key,
            status: c.status(),
            node: owner.and_then(|o| o.node.as_deref()),
            epoch: owner.map(|o| o.epoch as f64),
            etag: owner.map(|o| o.etag.as_str()),
            released: owner.is_some_and(|o| o.node.is_none()),
            modified_ms: c.modified_ms.map(|m| m as f64),
            lease: lease.map(|l| l.lease.name()),
            lease_expires_ms: expires.map(|e| e as f64),
            lease_expires_in_ms: lease.zip(expires).map(|(l, e)| signed_ms(e, l.judged_at_ms)),
            lease_age_ms: lease.and_then(|l| l.modified_ms.map(|m| signed_ms(l.judged_at_ms, m))),
            addr: lease.map(|l| l.addr.as_str()),
            awaiting_recovery: lease.is_some_and(|l| l.awaiting_recovery),
            error: error_out(c.error()),
        }
    }
}

fn cells_out(cells: Vec<CellEntry>) -> Result<JsValue, Error> {
    to_js(&cells.iter().map(CellOut::from).collect::<Vec<_>>())
}

fn nodes_out(nodes: Vec<NodeEntry>) -> Result<JsValue, Error> {
    to_js(&nodes.iter().map(NodeOut::from).collect::<Vec<_>>())
}

/// The wasm half of `S3Inspector`.
#[wasm_bindgen]
pub struct WasmInspector {
    inspector: Rc<Inspector<WebEnv>>,
    hooks: Hooks,
}

#[wasm_bindgen]
impl WasmInspector {
    /// `options` as `new S3Inspector(options)` got them; `hooks` from js/instance.js.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, hooks: Hooks) -> Result<WasmInspector, JsValue> {
        super::use_error_class(hooks.error_class());
        let o = convert::options_for(INSPECTOR, options).map_err(js_error)?;
        let mut env = WebEnv::new(o.fetch, o.on_event, hooks.clone());
        env.provider = o.credentials;
        let inspector = Inspector::new(&o.config, env).map_err(js_error)?;
        Ok(WasmInspector { inspector: Rc::new(inspector), hooks })
    }

    fn run<F>(&self, op: impl FnOnce(Rc<Inspector<WebEnv>>) -> F) -> Promise
    where
        F: Future<Output = Result<JsValue, Error>> + 'static,
    {
        run_on(&self.hooks, self.inspector.clone(), op)
    }

    #[wasm_bindgen(js_name = listCells)]
    pub fn list_cells(&self) -> Promise {
        self.run(|i| async move { cells_out(i.list_cells().await?) })
    }

    #[wasm_bindgen(js_name = listNodes)]
    pub fn list_nodes(&self) -> Promise {
        self.run(|i| async move { nodes_out(i.list_nodes().await?) })
    }

    pub fn probe(&self) -> Promise {
        self.run(|i| async move { convert::probe(i.probe().await?) })
    }
}

/// One listing operation as a Promise, [`Guarded`] like every `WasmOwnership` operation; an `auth` error
/// from the inspector's credentials function keeps what it threw as `cause`.
fn run_on<F>(hooks: &Hooks, inspector: Rc<Inspector<WebEnv>>, op: impl FnOnce(Rc<Inspector<WebEnv>>) -> F) -> Promise
where
    F: Future<Output = Result<JsValue, Error>> + 'static,
{
    let op: Pin<Box<dyn Future<Output = Result<JsValue, Error>>>> = Box::pin(op(inspector.clone()));
    let guarded = Guarded::new(hooks.clone(), op);
    future_to_promise(async move { guarded.await?.map_err(|e| super::credentials::with_cause(inspector.env(), e)) })
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
    let mut own = WebEnv::new(env.fetch.clone(), env.on_event.clone(), env.hooks.clone());
    own.provider = env.provider.clone();
    let inspector = Rc::new(Inspector::new(c.ownership.config(), own)?);
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

#[wasm_bindgen]
impl WasmOwnership {
    #[wasm_bindgen(js_name = listCells)]
    pub fn list_cells(&self) -> Promise {
        self.run_listing(|i| async move { cells_out(i.list_cells().await?) })
    }

    #[wasm_bindgen(js_name = listNodes)]
    pub fn list_nodes(&self) -> Promise {
        self.run_listing(|i| async move { nodes_out(i.list_nodes().await?) })
    }
}
