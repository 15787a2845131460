//! Listings out (SPEC §4.2): the entries of `listCells` / `listNodes` (on `WasmInspector` and
//! `WasmOwnership` alike) in the shapes js/ownership.d.ts declares (`CellEntry`, `NodeEntry`), through
//! serde-wasm-bindgen. Conversion only, no protocol logic, no panics. Times go out as JS numbers (f64), so
//! no value a store sends can make a listing unrepresentable.

use serde::Serialize;
use wasm_bindgen::JsValue;

use crate::error::Error;
use crate::ownership::records::Recovery;
use crate::ownership::{CellEntry, LeaseView, NodeEntry};

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
    recovery: Option<&'a Recovery>,
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
            recovery: n.recovery.as_ref(),
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
    recovery: Option<&'a Recovery>,
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
            recovery: lease.and_then(|l| l.recovery.as_ref()),
            error: error_out(c.error()),
        }
    }
}

pub(super) fn cells_out(cells: Vec<CellEntry>) -> Result<JsValue, Error> {
    to_js(&cells.iter().map(CellOut::from).collect::<Vec<_>>())
}

pub(super) fn nodes_out(nodes: Vec<NodeEntry>) -> Result<JsValue, Error> {
    to_js(&nodes.iter().map(NodeOut::from).collect::<Vec<_>>())
}
