//! js/ownership.d.ts declares the shapes the wasm hands JS; the core's outcome types carry the serde
//! attributes that make those shapes (src/bindings/convert.rs only serializes them). This serializes each
//! type (serde_json: the same names serde-wasm-bindgen gives) and compares its keys with the members the
//! .d.ts declares, so that a field added on one side only fails here. (Option names: tests/node/shapes.test.mjs.)

use celld_edge::env::{Event, Lost};
use celld_edge::ownership::records::Recovery;
use celld_edge::ownership::{ClaimOutcome, Closed, LeaseRemoval, NodeLeaseRecord, OwnerInfo, OwnerRecord, ProbeReport};
use serde::Serialize;

fn dts() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/js/ownership.d.ts")).expect("js/ownership.d.ts")
}

/// The member names of a `{ ... }` body, members separated by `;` or new lines (comments skipped).
fn members(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut comment = false;
    for part in body.split(['\n', ';']) {
        let line = part.trim();
        if comment || line.starts_with("/*") {
            comment = !line.contains("*/");
            continue;
        }
        if line.starts_with("//") || line.starts_with('*') {
            continue;
        }
        if let Some((name, _)) = line.split_once(':') {
            let name = name.trim().trim_end_matches('?');
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()) {
                out.push(name.to_owned());
            }
        }
    }
    out.sort();
    out
}

/// `export interface <name> { ... }`'s members.
fn interface(dts: &str, name: &str) -> Vec<String> {
    let start = dts.find(&format!("export interface {name} {{\n")).unwrap_or_else(|| panic!("interface {name} in js/ownership.d.ts"));
    let body = &dts[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    members(body)
}

/// The members of the arm of `export type <name> = | { outcome: "<outcome>" ... } | ...` naming `outcome`.
fn arm(dts: &str, name: &str, outcome: &str) -> Vec<String> {
    let start = dts.find(&format!("export type {name} =")).unwrap_or_else(|| panic!("type {name} in js/ownership.d.ts"));
    let decl = &dts[start..start + dts[start..].find(";\n\n").unwrap()];
    let arm = decl.split('{').skip(1).map(|a| &a[..a.find('}').unwrap()]).find(|a| a.contains(&format!("\"{outcome}\""))).unwrap_or_else(|| panic!("{name}: no arm for {outcome}"));
    members(arm)
}

fn keys<T: Serialize>(value: &T) -> Vec<String> {
    let serde_json::Value::Object(map) = serde_json::to_value(value).unwrap() else { panic!("not an object") };
    let mut keys: Vec<String> = map.keys().cloned().collect();
    keys.sort();
    keys
}

fn owner_record() -> OwnerRecord {
    OwnerRecord { node: "n".into(), epoch: 3, etag: "\"e\"".into(), nonce: Some("x".into()) }
}

fn recovery() -> Recovery {
    Recovery { claimant: Some("celld-c".into()), heartbeat_ms: Some(1), heartbeat_age_ms: Some(2), stale: false }
}

/// With every optional member present (`recovery` is left out while there is none).
fn owner_info() -> OwnerInfo {
    OwnerInfo { node: "n".into(), epoch: 3, addr: "a".into(), live: false, awaiting_recovery: true, recovery: Some(recovery()), held: false }
}

#[test]
fn records_and_reports_have_the_members_the_dts_declares() {
    let d = dts();
    assert_eq!(keys(&owner_record()), interface(&d, "OwnerRecord"), "OwnerRecord");
    assert_eq!(keys(&owner_info()), interface(&d, "OwnerInfo"), "OwnerInfo");
    assert_eq!(keys(&recovery()), interface(&d, "Recovery"), "Recovery");
    let routing = OwnerInfo { recovery: None, ..owner_info() };
    assert!(!keys(&routing).contains(&"recovery".to_owned()), "no recovery member while none is going on");
    let lease = NodeLeaseRecord {
        node: "n".into(),
        expires_ms: 1,
        addr: "a".into(),
        etag: "e".into(),
        nonce: None,
        log: None,
        ttl_ms: Some(3_000),
        store_clock: true,
    };
    assert_eq!(keys(&lease), interface(&d, "NodeLease"), "NodeLease");
    assert_eq!(keys(&Closed::default()), interface(&d, "CloseResult"), "CloseResult");
    let probe = ProbeReport { if_match_missing_status: 404, conditional_delete: true, etag_quoted: true };
    assert_eq!(keys(&probe), interface(&d, "ProbeReport"), "ProbeReport");
}

#[test]
fn outcomes_have_the_members_of_their_dts_arm() {
    let d = dts();
    let applied = ClaimOutcome::Applied { epoch: 4, took_over: true, prior: Some(owner_record()) };
    assert_eq!(keys(&applied), arm(&d, "ClaimResult", "applied"), "ClaimResult applied");
    assert_eq!(keys(&ClaimOutcome::Rejected { owner: owner_info() }), arm(&d, "ClaimResult", "rejected"), "ClaimResult rejected");
    assert_eq!(keys(&LeaseRemoval::Needed { cell: Some("c".into()) }), arm(&d, "LeaseRemoval", "needed"), "LeaseRemoval needed");
    assert_eq!(keys(&LeaseRemoval::Removed), arm(&d, "LeaseRemoval", "removed"), "LeaseRemoval removed");
    assert_eq!(keys(&LeaseRemoval::Celld), arm(&d, "LeaseRemoval", "celld"), "LeaseRemoval celld");
}

#[test]
fn released_records_name_no_node_and_outcomes_are_tagged() {
    let released = OwnerRecord { node: String::new(), ..owner_record() };
    assert_eq!(serde_json::to_value(&released).unwrap()["node"], serde_json::Value::Null);
    let applied = ClaimOutcome::Applied { epoch: 4, took_over: false, prior: None };
    assert_eq!(serde_json::to_string(&applied).unwrap(), r#"{"outcome":"applied","epoch":4,"tookOver":false,"prior":null}"#);
    assert_eq!(serde_json::to_string(&LeaseRemoval::Needed { cell: None }).unwrap(), r#"{"outcome":"needed"}"#);
}

/// One of each event, as the core emits it.
fn every_event() -> Vec<Event<'static>> {
    vec![
        Event::LeaseAcquired { node: "n", expires_ms: 1, ms: 1.0 },
        Event::LeaseRenewed { node: "n", expires_ms: 1, ms: 1.0 },
        Event::Fenced { node: "n", reason: "r" },
        Event::Closed { node: "n" },
        Event::LeaseRetired { node: "n", deleted: true, ms: 1.0 },
        Event::ClaimApplied { cell: "c", epoch: 1, ms: 1.0 },
        Event::ClaimTookOver { cell: "c", epoch: 2, ms: 1.0 },
        Event::ClaimRejected { cell: "c", owner: "o", epoch: 1, ms: 1.0 },
        Event::AmbiguousSettled { key: "k", outcome: "applied", readbacks: 1 },
        Event::ReadRetried { key: "k", attempt: 1, backoff_ms: 5, detail: "d" },
        Event::AuthorityLost { cell: "c", epoch: 1, lost: Lost::TakenOver, detail: "d" },
        Event::Request { key: "k", op: "read", record: "owner", outcome: "found", status: 200, ms: 1.0 },
        Event::CredentialsRefreshed { expires_ms: 1, ms: 1.0 },
        Event::CredentialsFailed { detail: "d" },
    ]
}

#[test]
fn events_have_the_type_and_members_of_their_dts_arm() {
    let d = dts();
    for event in every_event() {
        let kind = serde_json::to_value(&event).unwrap()["type"].as_str().expect("a type").to_owned();
        assert_eq!(keys(&event), arm(&d, "OwnershipEvent", &kind), "{kind}");
    }
    let lost = serde_json::to_value(Event::AuthorityLost { cell: "c", epoch: 1, lost: Lost::LeaseLost, detail: "" }).unwrap();
    assert_eq!(lost["reason"], "lease-lost", "the reason is named as the AuthorityLost type says");
    for reason in [Lost::LeaseLost, Lost::TakenOver, Lost::Reclaimed, Lost::Released, Lost::Closed] {
        assert_eq!(serde_json::to_value(reason).unwrap(), reason.as_str());
        assert!(d.contains(&format!("\"{}\"", reason.as_str())), "{reason:?} in js/ownership.d.ts");
    }
}
