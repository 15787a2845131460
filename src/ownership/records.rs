//! The records in the bucket (SPEC §2), wire-compatible with celld v0.3-v0.6: what they look like on the
//! wire, how they decode (serde_json; unknown fields ignored; anything else malformed is `corrupt-record`
//! naming the key, never "absent", never a panic), the guard/outcome vocabulary of conditional writes, and
//! the one fact of celld's folded node log that ownership depends on (`awaits_recovery`).

use std::string::ToString;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Failure, Result};
use crate::ownership::clock::LeaseTerms;

/// Largest epoch we write or accept: JS numbers hold integers exactly only up to 2^53 - 1.
pub const MAX_EPOCH: u64 = (1 << 53) - 1;

/// `cells/<cell>/own.json`. `node` is empty when the cell is released (the epoch is kept). Serialized as JS
/// sees it (`node` null when released; not the wire form, which `OwnerWire` is).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OwnerRecord {
    #[serde(serialize_with = "node_or_null")]
    pub node: String,
    pub epoch: u64,
    /// The token to guard the next write with, exactly as the store sent it.
    pub etag: String,
    /// The writer's nonce, when this library wrote the record (celld writes none).
    #[serde(skip)]
    pub nonce: Option<String>,
}

impl OwnerRecord {
    pub fn is_released(&self) -> bool {
        self.node.is_empty()
    }
}

/// A record's node for JS: `null` when it names none (released).
pub(crate) fn node_or_null<S: serde::Serializer>(node: &str, s: S) -> core::result::Result<S::Ok, S::Error> {
    if node.is_empty() { s.serialize_none() } else { s.serialize_some(node) }
}

/// `nodes/<node>.json`: the node's lease, valid until `expires_ms` on the store's clock (`clock: "store"`)
/// or on the writer's wall clock (celld's leases, earlier releases', and ours before any `Date` was seen).
/// Serialized as JS sees it (`readNodeLease`), not in the wire form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeLeaseRecord {
    pub node: String,
    pub expires_ms: u64,
    pub addr: String,
    pub etag: String,
    #[serde(skip)]
    pub nonce: Option<String>,
    /// celld's node log, folded into its lease (celld >= 0.3); never written by this library.
    #[serde(skip)]
    pub log: Option<NodeLog>,
    /// `ttl_ms`: how long after sending this write its writer may act (its `leaseTtlMs`), which the
    /// clock-proof peer rule counts on; only this library writes it.
    #[serde(skip)]
    pub ttl_ms: Option<u64>,
    /// `clock: "store"`: `expires_ms` is on the store's clock, as its writer learnt it from `Date` headers.
    #[serde(skip)]
    pub store_clock: bool,
}

impl NodeLeaseRecord {
    /// What the peer rule judges the lease by (`clock::judge`).
    pub fn terms(&self) -> LeaseTerms {
        LeaseTerms { expires_ms: self.expires_ms, ttl_ms: self.ttl_ms, store_clock: self.store_clock }
    }
}

/// celld's folded node log (`log` in its lease): the writes the node acknowledged that may live only in
/// its log until the log is `sealed`. Decoded as celld decodes it, so that a lease celld would refuse to
/// read is refused here too.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NodeLog {
    /// `open`, `recovering` or `sealed` (any other value is treated as not sealed).
    pub state: String,
    pub epoch: u64,
    pub ensemble: Vec<String>,
    pub tiered: u64,
    #[serde(default)]
    pub active: bool,
    /// The node recovering the log, while `recovering` (celld >= 0.6).
    #[serde(default)]
    pub claimant: Option<String>,
    /// That node's last heartbeat on the recovery, Unix ms.
    #[serde(default)]
    pub claimed_ms: Option<u64>,
}

/// The node-log gate (SPEC §2): a dead holder whose lease carries a log that is not `sealed` is not
/// taken over until celld recovers that log; taking over first would skip writes the holder acknowledged.
/// A lease without a log (every edge lease, celld before its first fleet open) does not wait.
pub fn awaits_recovery(lease: &NodeLeaseRecord) -> bool {
    lease.log.as_ref().is_some_and(|log| log.state != "sealed")
}

/// How often celld's recovering node beats on its claim (`claimed_ms`).
pub const RECOVERY_HEARTBEAT_MS: u64 = 5_000;

/// How long celld's recovery claim holds without a heartbeat; then any celld node may take it over.
pub const RECOVERY_CLAIM_TTL_MS: u64 = 30_000;

/// Who is recovering a dead celld node's log, as its lease says (SPEC §2.1): what a rejected claim, an
/// owner and the inspector report instead of only "awaiting recovery".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recovery {
    /// The celld node that claimed the recovery; `None` while no celld node has.
    pub claimant: Option<String>,
    /// Its last heartbeat (`claimed_ms`), Unix ms on celld's clock.
    pub heartbeat_ms: Option<u64>,
    /// How long ago that was on this clock (0 when it is ahead of this clock).
    pub heartbeat_age_ms: Option<u64>,
    /// No claimant, no heartbeat, or none for 30 s: celld reads such a claim as stale (any of its nodes
    /// may take the recovery over).
    pub stale: bool,
}

impl NodeLog {
    /// The recovery claim on this log at wall time `now_ms`.
    pub fn recovery(&self, now_ms: u64) -> Recovery {
        let age = self.claimed_ms.map(|at| now_ms.saturating_sub(at));
        let stale = self.claimant.is_none() || age.is_none_or(|age| age >= RECOVERY_CLAIM_TTL_MS);
        Recovery { claimant: self.claimant.clone(), heartbeat_ms: self.claimed_ms, heartbeat_age_ms: age, stale }
    }
}

/// A write's precondition is a store condition (`crate::s3::CasGuard`); named here too, where the
/// records' writes use it.
pub use crate::s3::CasGuard;

/// How a conditional write ended, once settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasOutcome {
    Applied,
    Rejected,
}

pub(crate) fn corrupt(key: &str, detail: impl Into<String>) -> Error {
    Error::CorruptRecord(Box::new(Failure::new(key, detail)))
}

/// Decodes `body` as one JSON object of shape `T`. serde accepts an array for a struct too; a record
/// is an object, so anything else is refused before serde sees it.
pub(crate) fn decode_object<T: DeserializeOwned>(key: &str, body: &[u8]) -> Result<T> {
    let start = body.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if start.is_none_or(|i| body[i] != b'{') {
        return Err(corrupt(key, "not a JSON object"));
    }
    serde_json::from_slice(body).map_err(|e| corrupt(key, e.to_string()))
}

#[derive(Serialize)]
struct OwnerOut<'a> {
    node: &'a str,
    epoch: u64,
    nonce: &'a str,
}

#[derive(Serialize)]
struct LeaseOut<'a> {
    node: &'a str,
    expires_ms: u64,
    addr: &'a str,
    nonce: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clock: Option<&'a str>,
}

/// A lease in a bucket a celld v0.6 fleet shares (SPEC §2.1): what celld needs to read it as a live
/// node that is never a target. No `peer_protocol` (celld routes, places and hands off only to its own
/// protocol), no `log` (it would gate takeovers on a recovery only celld can do), no `probe_public_key`.
#[derive(Serialize)]
struct CelldLeaseOut<'a> {
    /// Our lease's fields, `ttl_ms` and `clock` included: edge peers judge it by them (celld ignores
    /// fields it does not know).
    #[serde(flatten)]
    lease: LeaseOut<'a>,
    /// celld's planner stops every move in the fleet while a live lease lacks it.
    paced_handoff: bool,
    load: CelldLoadOut,
}

/// celld's `load` block, complete: one lease whose `load` does not decode breaks placement, readiness
/// and drains on every celld node, and one without `owned_cells` / `placement_weight` halts rebalancing.
/// `rebalance_paused` and `restoring` are left out (celld reads them as false and 0); `pressured` is a
/// field celld requires, always false (true would hold back every joining celld node's readiness).
#[derive(Serialize)]
struct CelldLoadOut {
    /// Fresh at every write: celld's planner halts on a live lease sampled longer ago than its ttl.
    sampled_ms: u64,
    /// This node takes part in no balancing: it owns nothing celld counts and weighs the least.
    owned_cells: u64,
    placement_weight: u64,
    /// The bucket format celld v0.6 reads; lower (or absent) makes celld clone instead of page.
    bucket_format: u16,
    resident_cells: u64,
    host_websockets: u64,
    rss_bytes: u64,
    cpu_percent_x100: u64,
    open_fds: u64,
    fd_limit: u64,
    pressured: bool,
    shed_cells: u64,
    /// celld sends a draining node no cells.
    draining: bool,
}

/// celld v0.6's bucket format (`load.bucket_format`).
pub const CELLD_BUCKET_FORMAT: u16 = 2;

/// The `addr` written in a celld fleet when none is configured. celld reads a lease with an empty `addr`
/// as dead (and takes that node's cells), and may recruit any live lease as a node-log follower, POSTing
/// cell data to `http://<addr>/peer/log/append`: this one is no URL authority (the port is not a number)
/// under a name that never resolves (`.invalid`, RFC 6761), so that request fails before it is sent.
pub const UNDIALABLE_ADDR: &str = "celld-edge.invalid:no-peer-protocol";

/// The `addr` a lease carries in a celld fleet: the configured one, or `UNDIALABLE_ADDR`.
pub fn celld_addr(addr: &str) -> &str {
    if addr.is_empty() {
        UNDIALABLE_ADDR
    } else {
        addr
    }
}

#[derive(Deserialize)]
struct OwnerIn {
    node: String,
    epoch: u64,
    #[serde(default)]
    nonce: Option<String>,
}

#[derive(Deserialize)]
struct LeaseIn {
    node: String,
    expires_ms: u64,
    #[serde(default)]
    addr: String,
    #[serde(default)]
    nonce: Option<String>,
    #[serde(default)]
    log: Option<NodeLog>,
    #[serde(default)]
    ttl_ms: Option<u64>,
    #[serde(default)]
    clock: Option<String>,
}

/// The `clock` a lease's `expires_ms` is on, when it is the store's.
const STORE_CLOCK: &str = "store";

#[derive(Deserialize)]
struct NonceIn {
    #[serde(default)]
    nonce: Option<String>,
}

/// serde_json cannot fail on these shapes (string keys, strings and integers only).
fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// `{"node":"…","epoch":N,"nonce":"…"}`.
pub fn encode_owner(node: &str, epoch: u64, nonce: &str) -> Vec<u8> {
    to_json(&OwnerOut { node, epoch, nonce })
}

/// `{"node":"…","expires_ms":N,"addr":"…","nonce":"…","ttl_ms":N,"clock":"store"}`: `ttl_ms` when
/// `terms` has one, `clock` when `expires_ms` is on the store's clock.
pub fn encode_lease(node: &str, terms: LeaseTerms, addr: &str, nonce: &str) -> Vec<u8> {
    to_json(&lease_out(node, terms, addr, nonce))
}

fn lease_out<'a>(node: &'a str, terms: LeaseTerms, addr: &'a str, nonce: &'a str) -> LeaseOut<'a> {
    let clock = terms.store_clock.then_some(STORE_CLOCK);
    LeaseOut { node, expires_ms: terms.expires_ms, addr, nonce, ttl_ms: terms.ttl_ms, clock }
}

/// The lease body in a bucket a celld v0.6 fleet shares: `encode_lease`'s fields (with `celld_addr`),
/// `paced_handoff: true` and a complete `load` block sampled at `sampled_ms` (the wall clock when the
/// write is sent), draining, weighing 1 and owning nothing. For acquisitions, renewals and retirements
/// (`expires_ms: 0`) alike.
pub fn encode_celld_lease(node: &str, terms: LeaseTerms, addr: &str, nonce: &str, sampled_ms: u64) -> Vec<u8> {
    let load = CelldLoadOut {
        sampled_ms,
        owned_cells: 0,
        placement_weight: 1,
        bucket_format: CELLD_BUCKET_FORMAT,
        resident_cells: 0,
        host_websockets: 0,
        rss_bytes: 0,
        cpu_percent_x100: 0,
        open_fds: 0,
        fd_limit: 0,
        pressured: false,
        shed_cells: 0,
        draining: true,
    };
    to_json(&CelldLeaseOut { lease: lease_out(node, terms, celld_addr(addr), nonce), paced_handoff: true, load })
}

/// Decodes `own.json` read from `key` with token `etag`.
pub fn decode_owner(key: &str, body: &[u8], etag: &str) -> Result<OwnerRecord> {
    let rec: OwnerIn = decode_object(key, body)?;
    if rec.epoch > MAX_EPOCH {
        return Err(corrupt(key, format!("epoch {} exceeds 2^53 - 1", rec.epoch)));
    }
    Ok(OwnerRecord { node: rec.node, epoch: rec.epoch, etag: etag.to_owned(), nonce: rec.nonce })
}

/// Decodes `nodes/<node>.json` read from `key` with token `etag`.
pub fn decode_lease(key: &str, body: &[u8], etag: &str) -> Result<NodeLeaseRecord> {
    let rec: LeaseIn = decode_object(key, body)?;
    Ok(NodeLeaseRecord {
        node: rec.node,
        expires_ms: rec.expires_ms,
        addr: rec.addr,
        etag: etag.to_owned(),
        nonce: rec.nonce,
        log: rec.log,
        ttl_ms: rec.ttl_ms,
        store_clock: rec.clock.as_deref() == Some(STORE_CLOCK),
    })
}

/// What only celld writes into a lease: its node log (sealed included), its probe key, its peer protocol.
#[derive(Deserialize)]
struct CelldMarks {
    #[serde(default)]
    log: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    probe_public_key: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    peer_protocol: Option<serde::de::IgnoredAny>,
}

/// Whether a lease body (`key`) was written by celld, not by this library: celld's dead-lease clean-up
/// keeps a lease with a log on purpose (its log clean-up needs the record) and is the one to remove the
/// others, so `remove_dead_lease` leaves every such lease alone.
pub fn written_by_celld(key: &str, body: &[u8]) -> Result<bool> {
    let marks: CelldMarks = decode_object(key, body)?;
    Ok(marks.log.is_some() || marks.probe_public_key.is_some() || marks.peer_protocol.is_some())
}

/// The writer nonce of any record this library wrote, to recognise "my write landed" on readback.
pub fn decode_nonce(key: &str, body: &[u8]) -> Result<Option<String>> {
    decode_object::<NonceIn>(key, body).map(|r| r.nonce)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(expires_ms: u64) -> LeaseTerms {
        LeaseTerms { expires_ms, ttl_ms: Some(10_000), store_clock: true }
    }

    #[test]
    fn owner_round_trip_and_celld_shapes() {
        let body = encode_owner("edge-7", 3, "n1");
        assert_eq!(body, br#"{"node":"edge-7","epoch":3,"nonce":"n1"}"#);
        let r = decode_owner("k", &body, "\"e\"").unwrap();
        assert_eq!((r.node.as_str(), r.epoch, r.nonce.as_deref()), ("edge-7", 3, Some("n1")));
        // What celld writes: no nonce; released is an empty node.
        let r = decode_owner("k", br#"{"node":"","epoch":9}"#, "t").unwrap();
        assert!(r.is_released());
        assert_eq!((r.epoch, r.nonce, r.etag.as_str()), (9, None, "t"));
        // Unknown fields are ignored.
        let r = decode_owner("k", br#"{"epoch":2,"x":[1,{"y":null}],"node":"a"}"#, "t").unwrap();
        assert_eq!(r.node, "a");
        // Escapes survive.
        let body = encode_owner("q\"\\\u{1}é", 1, "n");
        assert_eq!(decode_owner("k", &body, "t").unwrap().node, "q\"\\\u{1}é");
    }

    #[test]
    fn lease_round_trip_and_celld_extras() {
        let terms = LeaseTerms { expires_ms: 1_700_000_000_000, ttl_ms: None, store_clock: false };
        let body = encode_lease("n", terms, "10.0.0.1:7000", "z");
        let r = decode_lease("k", &body, "t").unwrap();
        assert_eq!((r.expires_ms, r.addr.as_str(), r.log.as_ref()), (1_700_000_000_000, "10.0.0.1:7000", None));
        let celld = br#"{"node":"n","expires_ms":5,"addr":"a:1","load":{"sampled_ms":1},"peer_protocol":2,
            "probe_public_key":"abc","ownership_index_generation":"g7","paced_handoff":true}"#;
        assert_eq!(decode_lease("k", celld, "t").unwrap().addr, "a:1");
        let r = decode_lease("k", br#"{"node":"n","expires_ms":5,"nonce":null,"log":null}"#, "t").unwrap();
        assert_eq!((r.addr.as_str(), r.nonce, r.log), ("", None, None));
    }

    #[test]
    fn the_folded_log_decodes_as_celld_decodes_it_and_gates_takeover() {
        let lease = |log: &str| decode_lease("k", format!(r#"{{"node":"n","expires_ms":5,"log":{log}}}"#).as_bytes(), "t");
        let open = lease(r#"{"state":"open","epoch":3,"ensemble":["a","b"],"tiered":7,"active":true}"#).unwrap();
        let log = open.log.as_ref().unwrap();
        assert_eq!((log.state.as_str(), log.epoch, log.ensemble.len(), log.tiered, log.active), ("open", 3, 2, 7, true));
        assert!(awaits_recovery(&open));
        let recovering =
            lease(r#"{"state":"recovering","epoch":3,"ensemble":[],"tiered":0,"claimant":"m","claimed_ms":9}"#).unwrap();
        let log = recovering.log.as_ref().unwrap();
        assert_eq!((log.claimant.as_deref(), log.claimed_ms), (Some("m"), Some(9)));
        assert!(awaits_recovery(&recovering));
        // A state this release does not know is not sealed: wait rather than guess.
        assert!(awaits_recovery(&lease(r#"{"state":"fencing","epoch":1,"ensemble":[],"tiered":0}"#).unwrap()));
        let sealed = lease(r#"{"state":"sealed","epoch":3,"ensemble":["a"],"tiered":7,"future":1}"#).unwrap();
        assert!(!awaits_recovery(&sealed));
        assert!(!awaits_recovery(&decode_lease("k", br#"{"node":"n","expires_ms":5}"#, "t").unwrap()));
        // A log celld itself could not read makes the whole lease corrupt, never "no log".
        for bad in [r#"{"epoch":3,"ensemble":[],"tiered":0}"#, r#"{"state":"open"}"#, r#""sealed""#, "7", r#"{"state":1,"epoch":1,"ensemble":[],"tiered":0}"#] {
            let e = lease(bad).unwrap_err();
            assert_eq!(e.code(), "corrupt-record", "{bad}");
            assert!(e.to_string().contains("corrupt record at k"), "{e}");
        }
    }

    #[test]
    fn a_celld_fleet_lease_is_complete_and_never_a_target() {
        let body = encode_celld_lease("edge-7", terms(1_800_000_010_000), "", "n1", 1_800_000_000_000);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!((v["node"].as_str(), v["expires_ms"].as_u64(), v["nonce"].as_str()), (Some("edge-7"), Some(1_800_000_010_000), Some("n1")));
        assert_eq!(v["addr"], UNDIALABLE_ADDR, "never empty: celld reads an empty addr as dead");
        assert_eq!(v["paced_handoff"], true);
        for absent in ["peer_protocol", "log", "probe_public_key", "ownership_index_generation"] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
        let load = v["load"].as_object().unwrap();
        assert_eq!(load["sampled_ms"], 1_800_000_000_000u64);
        assert_eq!((load["draining"].as_bool(), load["pressured"].as_bool()), (Some(true), Some(false)));
        assert_eq!((load["owned_cells"].as_u64(), load["placement_weight"].as_u64(), load["bucket_format"].as_u64()), (Some(0), Some(1), Some(2)));
        for never in ["rebalance_paused", "restoring", "memory_headroom"] {
            assert!(!load.contains_key(never), "{never}");
        }
        // A configured addr is kept; the body still decodes as a lease of ours.
        let body = encode_celld_lease("edge-7", terms(0), "10.1.0.7:7000", "n2", 5);
        let r = decode_lease("k", &body, "t").unwrap();
        assert_eq!((r.addr.as_str(), r.expires_ms, r.nonce.as_deref(), r.log), ("10.1.0.7:7000", 0, Some("n2"), None));
        assert_eq!(decode_nonce("k", &body).unwrap().as_deref(), Some("n2"));
    }

    #[test]
    fn the_placeholder_addr_is_no_url_authority() {
        // celld POSTs to `http://{addr}/peer/log/append`: the port must not parse, the host never resolve.
        let (host, port) = UNDIALABLE_ADDR.rsplit_once(':').unwrap();
        assert!(host.ends_with(".invalid"));
        assert!(!port.is_empty() && port.parse::<u16>().is_err());
        assert_eq!(celld_addr(""), UNDIALABLE_ADDR);
        assert_eq!(celld_addr("h:1"), "h:1");
    }

    #[test]
    fn who_is_recovering_a_celld_log() {
        let log = |claimant: Option<&str>, claimed_ms: Option<u64>| NodeLog {
            state: "recovering".into(),
            epoch: 1,
            ensemble: vec![],
            tiered: 0,
            active: false,
            claimant: claimant.map(Into::into),
            claimed_ms,
        };
        let fresh = log(Some("celld-c"), Some(100_000)).recovery(129_999);
        assert_eq!(fresh, Recovery { claimant: Some("celld-c".into()), heartbeat_ms: Some(100_000), heartbeat_age_ms: Some(29_999), stale: false });
        assert!(log(Some("celld-c"), Some(100_000)).recovery(130_000).stale, "stale after 30 s");
        // A heartbeat ahead of this clock is 0 old.
        assert_eq!(log(Some("c"), Some(5_000)).recovery(1_000).heartbeat_age_ms, Some(0));
        // celld reads a claim without a heartbeat as stale; no claimant is nobody recovering.
        assert!(log(Some("c"), None).recovery(0).stale);
        let nobody = log(None, None).recovery(0);
        assert!(nobody.stale && nobody.claimant.is_none() && nobody.heartbeat_age_ms.is_none());
    }

    #[test]
    fn leases_celld_wrote_are_told_from_ours() {
        for ours in [encode_lease("a", terms(0), "", "n"), encode_celld_lease("a", terms(0), "", "n", 1)] {
            assert_eq!(written_by_celld("k", &ours), Ok(false));
        }
        // celld's clean-up tombstone of an edge lease keeps its fields: still ours.
        assert_eq!(written_by_celld("k", br#"{"node":"a","expires_ms":0,"addr":"x","nonce":"n"}"#), Ok(false));
        for celld in [
            r#"{"node":"a","expires_ms":0,"log":{"state":"sealed","epoch":1,"ensemble":[],"tiered":0}}"#,
            r#"{"node":"a","expires_ms":0,"probe_public_key":"k"}"#,
            r#"{"node":"a","expires_ms":0,"peer_protocol":5}"#,
        ] {
            assert_eq!(written_by_celld("k", celld.as_bytes()), Ok(true), "{celld}");
        }
        assert_eq!(written_by_celld("k", b"[]").unwrap_err().code(), "corrupt-record");
    }

    #[test]
    fn a_lease_says_its_ttl_and_the_clock_its_expiry_is_on() {
        let terms = LeaseTerms { expires_ms: 5, ttl_ms: Some(3_000), store_clock: true };
        let body = encode_lease("n", terms, "a", "z");
        assert_eq!(body, br#"{"node":"n","expires_ms":5,"addr":"a","nonce":"z","ttl_ms":3000,"clock":"store"}"#);
        assert_eq!(decode_lease("k", &body, "t").unwrap().terms(), terms);
        let ours = decode_lease("k", br#"{"node":"n","expires_ms":5,"addr":"a","nonce":"z","ttl_ms":3000,"clock":"store"}"#, "t").unwrap();
        assert_eq!(ours.terms(), LeaseTerms { expires_ms: 5, ttl_ms: Some(3_000), store_clock: true });
        let celld = decode_lease("k", br#"{"node":"n","expires_ms":5,"addr":"a"}"#, "t").unwrap();
        assert_eq!(celld.terms(), LeaseTerms { expires_ms: 5, ttl_ms: None, store_clock: false });
        let walled = decode_lease("k", br#"{"node":"n","expires_ms":5,"ttl_ms":10,"clock":"wall"}"#, "t").unwrap();
        assert!(!walled.store_clock, "any other clock is not the store's");
        for bad in [r#"{"node":"n","expires_ms":5,"ttl_ms":"3000"}"#, r#"{"node":"n","expires_ms":5,"clock":1}"#] {
            assert_eq!(decode_lease("k", bad.as_bytes(), "t").unwrap_err().code(), "corrupt-record", "{bad}");
        }
    }

    #[test]
    fn nonces_of_any_record() {
        assert_eq!(decode_nonce("k", &encode_owner("a", 1, "n1")).unwrap().as_deref(), Some("n1"));
        let terms = LeaseTerms { expires_ms: 1, ttl_ms: None, store_clock: false };
        assert_eq!(decode_nonce("k", &encode_lease("a", terms, "x", "n2")).unwrap().as_deref(), Some("n2"));
        assert_eq!(decode_nonce("k", br#"{"node":"a","epoch":1}"#).unwrap(), None);
        assert_eq!(decode_nonce("k", br#"{"nonce":null,"z":{}}"#).unwrap(), None);
        for body in [&b"[]"[..], b"", br#"{"nonce":1}"#, br#"{"nonce":"a","nonce":"b"}"#] {
            assert_eq!(decode_nonce("k", body).unwrap_err().code(), "corrupt-record");
        }
    }

    #[test]
    fn malformed_records_are_corrupt_naming_the_key() {
        let cases: &[&[u8]] = &[
            b"",
            b"  ",
            b"<html>",
            b"{}",
            br#"{"node":"a"}"#,
            br#"{"node":1,"epoch":1}"#,
            br#"{"node":"a","epoch":-1}"#,
            br#"{"node":"a","epoch":1.5}"#,
            br#"{"node":"a","epoch":1e3}"#,
            br#"{"node":"a","epoch":9007199254740992}"#,
            br#"{"node":"a","epoch":18446744073709551616}"#,
            br#"{"node":"a","epoch":1"#,
            br#"{"node":"a","epoch":1}x"#,
            br#"{"node":"a","epoch":1,}"#,
            b"\xff\xfe",
            b"{\"node\":\"\xff\",\"epoch\":1}",
            br#"[1,2]"#,
            br#"{"node":"a","epoch":1,"nonce":5}"#,
            br#"{"node":"a","epoch":1,"epoch":2}"#,
            br#"["a",1]"#,
            br#"  ["a",1]"#,
        ];
        for body in cases {
            let e = decode_owner("cells/c/own.json", body, "t").unwrap_err();
            assert_eq!(e.code(), "corrupt-record", "{:?}", String::from_utf8_lossy(body));
            assert!(e.to_string().contains("cells/c/own.json"), "{e}");
        }
        for body in [
            &b"{}"[..],
            br#"{"node":"n","expires_ms":"soon"}"#,
            br#"{"node":"n","expires_ms":-5}"#,
            br#"{"node":"n","expires_ms":5,"addr":null}"#,
            br#"{"node":"n","expires_ms":5,"node":"m"}"#,
            br#"["n",5]"#,
        ] {
            assert_eq!(decode_lease("nodes/n.json", body, "t").unwrap_err().code(), "corrupt-record");
        }
        // Hostile nesting never exhausts the stack: serde_json skips an ignored field without recursing,
        // and bounds nesting in the fields it decodes.
        let deep = format!("{{\"node\":\"a\",\"epoch\":1,\"x\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(decode_owner("k", deep.as_bytes(), "t").unwrap().node, "a");
        let unclosed = format!("{{\"node\":\"a\",\"epoch\":1,\"x\":{}}}", "[".repeat(100_000));
        assert_eq!(decode_owner("k", unclosed.as_bytes(), "t").unwrap_err().code(), "corrupt-record");
        let log = format!("{{\"node\":\"n\",\"expires_ms\":1,\"log\":{{\"state\":{}}}}}", "[".repeat(100_000));
        assert_eq!(decode_lease("k", log.as_bytes(), "t").unwrap_err().code(), "corrupt-record");
    }
}
