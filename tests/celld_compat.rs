//! Sharing a bucket with celld v0.3-v0.6 (SPEC §2, docs/protocol.md "Sharing a bucket with celld"):
//! records as celld writes them decode, the fleet marker is read before the first write (never created,
//! refused when it names another backend, with nothing written), a dead celld owner whose node log
//! is not sealed is not taken over, and ids default to celld's sets, encoded once. A celld v0.6 fleet
//! (`wake/format.json`, SPEC §2.1): `celld: true` refuses a bucket celld has not initialised, every lease
//! written decodes under a restatement of celld v0.6's lease (`support/celld_v06.rs`) and keeps its planner
//! running, nothing is written under celld's prefixes, `removeDeadLease` leaves celld's leases alone,
//! `ids: "utf8"` is refused, and who recovers a dead celld node's log is reported.
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

#[allow(dead_code)] // the helpers other tests use
mod support;
#[path = "support/celld_v06.rs"]
mod v06;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};

use celld_edge::env::Env;
use celld_edge::ownership::control::{MARKER_KEY, WAKE_FORMAT_KEY};
use celld_edge::ownership::clock::LeaseTerms;
use celld_edge::ownership::records::{awaits_recovery, decode_lease, decode_owner, encode_celld_lease, UNDIALABLE_ADDR};
use celld_edge::ownership::{CasGuard, ClaimOutcome, Config, IdSet, LeaseRemoval, S3Ownership};
use celld_edge::s3::Bucket;
use support::mem::{block_on, MemEnv, BUCKET, ENDPOINT};
use support::overlap::{run_all, Yielding};

const TTL: u64 = 10_000;
const SKEW: u64 = 1_000;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/data/celld/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn config(id: &str) -> Config {
    let mut config = Config::new(ENDPOINT, BUCKET, id, "AKIDEXAMPLE", "secret");
    config.lease_ttl_ms = TTL;
    config.max_clock_skew_ms = SKEW;
    config.addr = format!("{id}.edge:7000");
    config.probe = celld_edge::ownership::ProbePolicy::Off;
    config
}

fn node<E: Env>(env: E, id: &str) -> S3Ownership<E> {
    S3Ownership::new(config(id), env).unwrap()
}

fn leased(env: &MemEnv, id: &str) -> S3Ownership<MemEnv> {
    let n = node(env.clone(), id);
    block_on(n.acquire_lease()).unwrap();
    n
}

fn writes(env: &MemEnv) -> Vec<String> {
    env.0.borrow().writes.iter().map(|(k, _)| k.clone()).collect()
}

// ---- records as celld writes them ----

#[test]
fn celld_records_of_every_version_decode() {
    let owner = decode_owner("cells/c/own.json", fixture("owner.json").as_bytes(), "\"e\"").unwrap();
    assert_eq!((owner.node.as_str(), owner.epoch, owner.nonce), ("celld-a", 41, None));
    assert!(decode_owner("k", fixture("owner-released.json").as_bytes(), "t").unwrap().is_released());
    let expect = [
        ("lease-v0.3-no-log.json", "celld-a", None, false),
        ("lease-v0.3-open.json", "celld-a", Some("open"), true),
        ("lease-v0.6-open.json", "celld-b", Some("open"), true),
        ("lease-v0.6-recovering.json", "celld-b", Some("recovering"), true),
        ("lease-v0.6-sealed.json", "celld-b", Some("sealed"), false),
        ("lease-v0.6-tombstone.json", "celld-b", Some("sealed"), false),
    ];
    for (name, node, state, waits) in expect {
        let lease = decode_lease("nodes/x.json", fixture(name).as_bytes(), "t").unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(lease.node, node, "{name}");
        assert!(lease.addr.starts_with("10.0.0."), "{name}");
        assert_eq!(lease.log.as_ref().map(|l| l.state.as_str()), state, "{name}");
        assert_eq!(awaits_recovery(&lease), waits, "{name}");
    }
    let recovering = decode_lease("k", fixture("lease-v0.6-recovering.json").as_bytes(), "t").unwrap();
    let log = recovering.log.unwrap();
    assert_eq!((log.epoch, log.tiered, log.claimant.as_deref()), (6, 90211, Some("celld-c")));
    assert_eq!(decode_lease("k", fixture("lease-v0.6-tombstone.json").as_bytes(), "t").unwrap().expires_ms, 0);
}

// ---- the leases this library writes in a celld fleet, as celld v0.6 reads them ----

/// Every lease body this library writes in a celld fleet: acquire and renew (`expires_ms` a ttl after the
/// sample), and retire (`expires_ms: 0`), with and without a configured `addr`.
fn celld_fleet_bodies(now: u64) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("acquire", encode_celld_lease("edge-7", LeaseTerms { expires_ms: now + TTL, ttl_ms: Some(10_000), store_clock: true }, "", "n1", now)),
        ("renew", encode_celld_lease("edge-7", LeaseTerms { expires_ms: now + 3_333 + TTL, ttl_ms: Some(10_000), store_clock: true }, "", "n2", now + 3_333)),
        ("retire", encode_celld_lease("edge-7", LeaseTerms { expires_ms: 0, ttl_ms: Some(10_000), store_clock: true }, "", "n3", now + 5_000)),
        ("acquire with addr", encode_celld_lease("edge-7", LeaseTerms { expires_ms: now + TTL, ttl_ms: Some(10_000), store_clock: true }, "edge-7.internal:7000", "n4", now)),
    ]
}

/// What celld v0.6 must conclude from one of our live leases, at `nodes/<key_node>.json`, read at `view`
/// (celld's wall clock): a live node (so it takes none of our cells and routes none of its requests to
/// us), never a placement, hand-off or rebalance target, and nothing that halts its planner, readiness or
/// paging.
fn judged_as_celld_needs(name: &str, key_node: &str, lease: &v06::Lease, view: u64) {
    assert!(lease.live_to_celld(key_node, view), "{name}: celld must see a live owner");
    assert!(!lease.placement_target(view) && !lease.handoff_target(view), "{name}: never a target");
    assert!(!lease.receives_cells(), "{name}: never a rebalance receiver");
    assert!(lease.keeps_planner_running(view, 0), "{name}: the planner must go on");
    assert!(lease.lets_readiness_pass() && lease.keeps_paging_open(), "{name}");
    assert!(!lease.kept_by_cleanup(), "{name}: celld's clean-up may remove it once dead");
}

#[test]
fn every_lease_this_library_writes_in_a_celld_fleet_decodes_as_celld_v06_reads_it() {
    let now = 1_800_000_000_000;
    for (name, body) in celld_fleet_bodies(now) {
        let lease = v06::decode(&body).unwrap_or_else(|e| panic!("{name}: celld v0.6 cannot read it: {e}"));
        assert_eq!((lease.peer_protocol, lease.log.is_none(), lease.probe_public_key.as_str()), (0, true, ""), "{name}");
        assert!(!lease.addr.is_empty(), "{name}: an empty addr reads as dead");
        assert!(lease.paced_handoff && lease.load.draining == Some(true), "{name}");
        assert_eq!((lease.load.owned_cells, lease.load.placement_weight), (Some(0), Some(1)), "{name}");
        assert_eq!((lease.load.rebalance_paused, lease.load.pressured, lease.load.restoring), (None, false, 0), "{name}");
        if lease.expires_ms == 0 {
            // Retired: dead to celld at once, and still nothing that stops its fleet.
            assert!(!lease.live_to_celld("edge-7", now) && lease.keeps_planner_running(now, 0), "{name}");
            continue;
        }
        // Throughout the lease's life, whenever celld reads it.
        for view in [lease.load.sampled_ms, lease.load.sampled_ms + TTL / 2, lease.expires_ms - 1] {
            judged_as_celld_needs(name, "edge-7", &lease, view);
        }
        assert!(!lease.live_to_celld("edge-7", lease.expires_ms), "{name}: dead to celld at its expiry");
    }
    let placeholder = v06::decode(&celld_fleet_bodies(now)[0].1).unwrap();
    assert_eq!(placeholder.addr, UNDIALABLE_ADDR);
}

#[test]
fn the_restatement_of_celld_v06_catches_every_incomplete_lease() {
    // The tooth: a body missing one field celld requires never decodes. If the restatement accepted it,
    // this test (and the one above) could not fail.
    let now = 1_800_000_000_000;
    let body: serde_json::Value = serde_json::from_slice(&encode_celld_lease("edge-7", LeaseTerms { expires_ms: now + TTL, ttl_ms: Some(10_000), store_clock: true }, "", "n", now)).unwrap();
    for field in v06::REQUIRED_LOAD {
        let mut broken = body.clone();
        broken["load"].as_object_mut().unwrap().remove(field);
        assert!(v06::decode(broken.to_string().as_bytes()).is_err(), "a load without {field} must not decode");
    }
    for field in ["node", "expires_ms"] {
        let mut broken = body.clone();
        broken.as_object_mut().unwrap().remove(field);
        assert!(v06::decode(broken.to_string().as_bytes()).is_err(), "{field}");
    }
    let mut wrong = body.clone();
    wrong["load"]["bucket_format"] = 70_000.into();
    assert!(v06::decode(wrong.to_string().as_bytes()).is_err(), "bucket_format is a u16");
    // Bodies that decode but stop celld's fleet, each caught by one rule.
    let halts = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = body.clone();
        edit(&mut v);
        let lease = v06::decode(v.to_string().as_bytes()).unwrap();
        lease.keeps_planner_running(now, 0) && lease.lets_readiness_pass() && lease.keeps_paging_open() && lease.live_to_celld("edge-7", now)
    };
    assert!(halts(&|_| ()), "the body as written passes");
    let edits: [(&str, &dyn Fn(&mut serde_json::Value)); 9] = [
        ("no load", &|v| drop(v.as_object_mut().unwrap().remove("load"))),
        ("no paced_handoff", &|v| drop(v.as_object_mut().unwrap().remove("paced_handoff"))),
        ("no owned_cells", &|v| drop(v["load"].as_object_mut().unwrap().remove("owned_cells"))),
        ("no placement_weight", &|v| drop(v["load"].as_object_mut().unwrap().remove("placement_weight"))),
        ("stale sample", &|v| v["load"]["sampled_ms"] = (now - v06::CELLD_TTL_MS - 1).into()),
        ("paused", &|v| v["load"]["rebalance_paused"] = true.into()),
        ("pressured", &|v| v["load"]["pressured"] = true.into()),
        ("old format", &|v| drop(v["load"].as_object_mut().unwrap().remove("bucket_format"))),
        ("empty addr", &|v| v["addr"] = "".into()),
    ];
    for (name, edit) in edits {
        assert!(!halts(edit), "{name} must be caught");
    }
}

#[test]
fn celld_v06_records_decode_under_the_restatement() {
    for name in ["lease-v0.3-no-log.json", "lease-v0.3-open.json", "lease-v0.6-no-log.json", "lease-v0.6-open.json",
        "lease-v0.6-open-inactive.json", "lease-v0.6-recovering.json", "lease-v0.6-sealed.json", "lease-v0.6-tombstone.json",
        "lease-v0.6-unknown-state.json"]
    {
        let lease = v06::decode(fixture(name).as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(lease.peer_protocol != 0 && !lease.probe_public_key.is_empty(), "{name}: written by celld");
    }
}

// ---- the fleet marker ----

#[test]
fn the_marker_and_wake_format_are_read_at_once_before_the_first_write_and_never_created() {
    let env = MemEnv::new();
    let a = node(env.clone(), "a");
    block_on(a.acquire_lease()).unwrap();
    let wire = env.wire_since(0);
    assert_eq!(wire[..2], ["GET fleet/control.json", "GET wake/format.json"], "{wire:?}");
    assert_eq!(env.body(MARKER_KEY), None, "the marker is read, never created");
    assert!(writes(&env).iter().all(|k| !k.starts_with("fleet/") && !k.starts_with("wake/")), "{:?}", writes(&env));
    // Once per instance: claims and renewals send no marker request.
    let from = env.sent_count();
    block_on(a.claim("c")).unwrap();
    block_on(a.renew_lease()).unwrap();
    block_on(a.claim("d")).unwrap();
    assert!(env.wire_since(from).iter().all(|w| !w.contains(MARKER_KEY) && !w.contains(WAKE_FORMAT_KEY)), "{:?}", env.wire_since(from));
    // A second instance reads both again, and writes neither.
    let from = env.sent_count();
    let b = leased(&env, "b");
    let wire = env.wire_since(from);
    assert_eq!(wire[..2], ["GET fleet/control.json", "GET wake/format.json"], "{wire:?}");
    assert!(writes(&env).iter().all(|k| !k.starts_with("fleet/")));
    drop(b);
}

#[test]
fn a_bucket_marker_celld_wrote_lets_the_instance_proceed() {
    let env = MemEnv::new();
    env.put_raw(MARKER_KEY, &fixture("marker-bucket.json"));
    let a = leased(&env, "a");
    assert!(matches!(block_on(a.claim("c")).unwrap(), ClaimOutcome::Applied { epoch: 1, .. }));
    assert!(!writes(&env).contains(&MARKER_KEY.to_owned()));
}

#[test]
fn a_dynamodb_fleet_is_refused_naming_the_backend_and_nothing_is_written() {
    let env = MemEnv::new();
    env.put_raw(MARKER_KEY, &fixture("marker-dynamodb.json"));
    let a = node(env.clone(), "a");
    let e = block_on(a.acquire_lease()).unwrap_err();
    assert_eq!(e.code(), "unsupported-backend");
    let text = e.to_string();
    assert!(text.contains("fleet/control.json") && text.contains("\"dynamodb\"") && text.contains("celld-control"), "{text}");
    for e in [block_on(a.acquire_lease()).unwrap_err(), block_on(a.cas_node_lease(&CasGuard::Absent, 1)).unwrap_err()] {
        assert_eq!(e.code(), "unsupported-backend");
    }
    // An owner-record write needs a lease first, which the refused fleet never gave.
    assert_eq!(block_on(a.cas_owner("c", &CasGuard::Absent, 1)).unwrap_err().code(), "not-leased");
    assert!(writes(&env).is_empty(), "{:?}", writes(&env));
    // The verdict is kept: one read of each for all four refusals.
    assert_eq!(env.wire_since(0), ["GET fleet/control.json", "GET wake/format.json"]);
}

#[test]
fn the_marker_is_read_under_the_prefix() {
    let env = MemEnv::new();
    env.put_raw("tenant/fleet/control.json", &fixture("marker-dynamodb.json"));
    let mut c = config("a");
    c.prefix = "tenant/".into();
    let a = S3Ownership::new(c, env.clone()).unwrap();
    assert_eq!(block_on(a.acquire_lease()).unwrap_err().code(), "unsupported-backend");
    // Another prefix is another fleet.
    let b = node(env.clone(), "b");
    block_on(b.acquire_lease()).unwrap();
    assert_eq!(env.body(MARKER_KEY), None, "read, never created");
}

#[test]
fn a_corrupt_marker_is_corrupt_record_nothing_is_written_and_it_is_read_again_later() {
    let env = MemEnv::new();
    env.put_raw(MARKER_KEY, r#"{"format":1,"backend":"bucket","extra":1}"#);
    let a = node(env.clone(), "a");
    let e = block_on(a.acquire_lease()).unwrap_err();
    assert_eq!(e.code(), "corrupt-record");
    assert!(e.to_string().contains("fleet/control.json"), "{e}");
    assert!(writes(&env).is_empty());
    // An operator repairs it: the same instance goes on (a corrupt marker is not kept as the verdict).
    env.put_raw(MARKER_KEY, &fixture("marker-bucket.json"));
    block_on(a.acquire_lease()).unwrap();
}

#[test]
fn concurrent_first_writes_share_one_marker_check() {
    let mem = MemEnv::new();
    let env = Yielding(mem.clone());
    let a = node(env, "a");
    // Low-level lease writes need no lease of their own: four at once, each this instance's first write.
    let expiries = [1, 2, 3, 4];
    let outcomes =
        run_all(expiries.iter().map(|e| Box::pin(a.cas_node_lease(&CasGuard::Absent, *e)) as Pin<Box<dyn Future<Output = _>>>).collect());
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    let wire = mem.wire_since(0);
    let fleet_reads = wire.iter().filter(|w| w.contains(MARKER_KEY) || w.contains(WAKE_FORMAT_KEY)).count();
    assert_eq!(fleet_reads, 2, "one GET of each: {wire:?}");
    assert_eq!(wire[..2], ["GET fleet/control.json", "GET wake/format.json"]);
}

#[test]
fn a_cancelled_check_is_taken_up_by_the_next_caller() {
    let mem = MemEnv::new();
    let env = Yielding(mem.clone());
    let a = node(env.clone(), "a");
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut first = Box::pin(a.cas_node_lease(&CasGuard::Absent, 1));
        assert!(first.as_mut().poll(&mut cx).is_pending(), "waiting on the marker's GET");
        let mut second = Box::pin(a.cas_node_lease(&CasGuard::Absent, 2));
        assert!(second.as_mut().poll(&mut cx).is_pending(), "waiting for the first caller's check");
        drop(first); // the leader's operation is cancelled mid-check
        let out: Vec<celld_edge::Result<_>> = run_all(vec![second as Pin<Box<dyn Future<Output = _>>>]);
        assert!(out[0].is_ok(), "{out:?}");
    }
    let lease: serde_json::Value = serde_json::from_str(&mem.body("nodes/a.json").expect("the second write landed")).unwrap();
    assert_eq!(lease["expires_ms"], 2, "the cancelled first write never went out");
    assert_eq!(mem.body(MARKER_KEY), None);
}

// ---- the node-log gate ----

/// A bucket where celld-b owned `c` at epoch 41 and its lease (from `fixture`) has been dead for a while.
fn dead_celld_owner(lease_fixture: &str) -> (MemEnv, S3Ownership<MemEnv>) {
    let env = MemEnv::new();
    env.put_raw("nodes/celld-b.json", &fixture(lease_fixture));
    env.put_raw("cells/c/own.json", r#"{"node":"celld-b","epoch":41}"#);
    env.advance(TTL + SKEW + 1); // past the fixtures' expires_ms + skew
    let a = leased(&env, "a");
    (env, a)
}

#[test]
fn a_dead_owner_with_an_unsealed_log_is_not_taken_over() {
    for lease in ["lease-v0.6-open.json", "lease-v0.6-recovering.json"] {
        let (env, a) = dead_celld_owner(lease);
        match block_on(a.claim("c")).unwrap() {
            ClaimOutcome::Rejected { owner } => {
                assert_eq!((owner.node.as_str(), owner.epoch, owner.addr.as_str()), ("celld-b", 41, "10.0.0.8:9000"), "{lease}");
                assert!(owner.awaiting_recovery && !owner.live, "{lease}: {owner:?}");
            }
            other => panic!("{lease}: {other:?}"),
        }
        assert!(!writes(&env).iter().any(|k| k.starts_with("cells/")), "{lease}: nothing written to the cell");
        let seen = block_on(a.owner("c")).unwrap().unwrap();
        assert!(seen.awaiting_recovery && !seen.live, "{seen:?}");
        assert_eq!(env.body("cells/c/own.json").unwrap(), r#"{"node":"celld-b","epoch":41}"#);
    }
}

#[test]
fn a_dead_owner_whose_log_is_sealed_or_absent_is_taken_over() {
    for lease in ["lease-v0.6-sealed.json", "lease-v0.6-tombstone.json", "lease-v0.3-no-log.json"] {
        let (env, a) = dead_celld_owner(lease);
        match block_on(a.claim("c")).unwrap() {
            ClaimOutcome::Applied { epoch, took_over, .. } => assert_eq!((epoch, took_over), (42, true), "{lease}"),
            other => panic!("{lease}: {other:?}"),
        }
        assert!(env.body("cells/c/own.json").unwrap().contains(r#""node":"a","epoch":42"#));
    }
}

#[test]
fn a_live_celld_owner_with_an_open_log_is_routed_to() {
    let env = MemEnv::new();
    env.put_raw("nodes/celld-b.json", &fixture("lease-v0.6-open.json"));
    env.put_raw("cells/c/own.json", &fixture("owner.json").replace("celld-a", "celld-b"));
    let a = leased(&env, "a");
    match block_on(a.claim("c")).unwrap() {
        ClaimOutcome::Rejected { owner } => {
            assert!(owner.live && !owner.awaiting_recovery, "{owner:?}");
            assert_eq!(owner.addr, "10.0.0.8:9000");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn celld_cleanup_tombstoning_our_lease_fences_the_renewal() {
    let env = MemEnv::new();
    let a = leased(&env, "a");
    assert!(matches!(block_on(a.claim("c")).unwrap(), ClaimOutcome::Applied { .. }));
    // celld's dead-node clean-up judged our lease dead (its clock ran ahead, or we slept): it writes the
    // record back with `expires_ms: 0` and every other field kept, our nonce included.
    let mut lease: serde_json::Value = serde_json::from_str(&env.body("nodes/a.json").unwrap()).unwrap();
    lease["expires_ms"] = 0.into();
    env.put_raw("nodes/a.json", &lease.to_string());
    assert_eq!(block_on(a.renew_lease()).unwrap_err().code(), "fenced", "the tombstone is not our renewal");
    assert!(!block_on(a.verify("c", 1)).unwrap());
}

// ---- ids ----

#[test]
fn ids_outside_celld_sets_are_refused_before_any_request() {
    let env = MemEnv::new();
    assert_eq!(S3Ownership::new(config("edge 7"), env.clone()).err().unwrap().code(), "invalid-input");
    let a = node(env.clone(), "a");
    for cell in ["a b", "a#b", "ü", "a/b", ".."] {
        let e = block_on(a.claim(cell)).unwrap_err();
        assert_eq!(e.code(), "invalid-input", "{cell}");
        assert_eq!(block_on(a.read_owner(cell)).unwrap_err().code(), "invalid-input");
    }
    assert_eq!(block_on(a.read_node_lease("a:b")).unwrap_err().code(), "invalid-input");
    assert_eq!(env.sent_count(), 0);
}

#[test]
fn celld_ids_are_the_same_object_keys_encoded_once() {
    let env = MemEnv::new();
    let a = leased(&env, "edge-7.a_b");
    let cell = "Counter:room-1.$x_y";
    assert!(matches!(block_on(a.claim(cell)).unwrap(), ClaimOutcome::Applied { epoch: 1, .. }));
    assert!(env.body(&format!("cells/{cell}/own.json")).is_some(), "the key celld uses for the same cell");
    let bucket = Bucket::new(ENDPOINT, BUCKET, "us-east-1", true, "k", "s", None).unwrap();
    let url = bucket.url(&format!("cells/{cell}/own.json"));
    assert!(url.ends_with("/cells/Counter%3Aroom-1.%24x_y/own.json"), "{url}");
}

#[test]
fn wider_ids_only_behind_the_option() {
    let env = MemEnv::new();
    let mut c = config("edge 7");
    c.ids = IdSet::Utf8;
    let a = S3Ownership::new(c, env.clone()).unwrap();
    block_on(a.acquire_lease()).unwrap();
    assert!(matches!(block_on(a.claim("tenant 42 ü")).unwrap(), ClaimOutcome::Applied { .. }));
    assert!(env.body("cells/tenant 42 ü/own.json").is_some());
}

// ---- a celld v0.6 fleet (SPEC §2.1, issue 26) ----

/// A bucket a celld v0.6 fleet initialised: `wake/format.json`, the fleet's peer secret, a seeded wake-up.
fn celld_fleet() -> MemEnv {
    let env = MemEnv::new();
    env.put_raw(WAKE_FORMAT_KEY, &fixture("wake-format.json"));
    env.put_raw("fleet/peer-auth.json", &fixture("fleet-peer-auth.json"));
    env.put_raw("wake/entries/1970-01-01T00:00/Counter:a/migration", &fixture("wake-entry-migration-seed.json"));
    env
}

fn celld_config(id: &str) -> Config {
    let mut c = config(id);
    c.celld = true;
    c.addr = String::new(); // the default: no addr
    c
}

/// Every body written to `key`, in order.
fn bodies(env: &MemEnv, key: &str) -> Vec<Vec<u8>> {
    env.0.borrow().writes.iter().filter(|(k, _)| k == key).map(|(_, b)| b.clone()).collect()
}

#[test]
fn celld_true_refuses_a_bucket_no_celld_node_initialised_and_writes_nothing() {
    for wake in [None, Some("wake-format-migrating.json")] {
        let env = MemEnv::new();
        if let Some(name) = wake {
            env.put_raw(WAKE_FORMAT_KEY, &fixture(name));
        }
        let a = S3Ownership::new(celld_config("a"), env.clone()).unwrap();
        let e = block_on(a.acquire_lease()).unwrap_err();
        assert_eq!((e.code(), e.key()), ("uninitialized-fleet", Some(WAKE_FORMAT_KEY)), "{wake:?}: {e}");
        assert!(e.to_string().contains(if wake.is_none() { "start a celld node first" } else { "migrating" }), "{e}");
        assert_eq!(block_on(a.cas_node_lease(&CasGuard::Absent, 1)).unwrap_err().code(), "uninitialized-fleet");
        assert!(writes(&env).is_empty(), "{wake:?}: nothing at all is written: {:?}", writes(&env));
        // The two first reads went out together, and nothing else.
        assert_eq!(env.wire_since(0)[..2], ["GET fleet/control.json", "GET wake/format.json"]);
        assert!(env.wire_since(0).iter().all(|w| w.starts_with("GET ")), "{:?}", env.wire_since(0));
        // Not kept: once celld has initialised the bucket, the same instance goes on.
        env.put_raw(WAKE_FORMAT_KEY, &fixture("wake-format.json"));
        block_on(a.acquire_lease()).unwrap();
    }
    // Without the option an uninitialised bucket is not a celld fleet: plain leases.
    let env = MemEnv::new();
    leased(&env, "a");
    assert!(v06::decode(&bodies(&env, "nodes/a.json")[0]).unwrap().load.sampled_ms == 0, "no load block");
}

#[test]
fn every_lease_written_in_a_celld_fleet_is_one_celld_v06_reads_as_a_live_node_never_a_target() {
    // Found by wake/format.json alone, or said by the option.
    for with_option in [false, true] {
        let env = celld_fleet();
        let mut c = if with_option { celld_config("edge-7") } else { config("edge-7") };
        c.addr = String::new();
        let a = S3Ownership::new(c, env.clone()).unwrap();
        block_on(a.acquire_lease()).unwrap();
        assert!(matches!(block_on(a.claim("Counter:a")).unwrap(), ClaimOutcome::Applied { epoch: 1, .. }));
        env.advance(3_400);
        block_on(a.renew_lease()).unwrap();
        env.advance(3_400);
        block_on(a.renew_lease()).unwrap();
        let closed = block_on(a.close(Default::default())).unwrap();
        assert!(closed.retired);
        let written = bodies(&env, "nodes/edge-7.json");
        assert_eq!(written.len(), 4, "acquire, two renewals, the retirement");
        for (i, body) in written.iter().enumerate() {
            let lease = v06::decode(body).unwrap_or_else(|e| panic!("write {i}: celld v0.6 cannot read it: {e}"));
            assert_eq!((lease.peer_protocol, lease.log.is_none()), (0, true), "write {i}");
            assert_eq!(lease.addr, UNDIALABLE_ADDR, "write {i}");
            if i == 3 {
                assert_eq!(lease.expires_ms, 0, "retired");
                assert!(lease.keeps_planner_running(lease.load.sampled_ms, 0) && lease.lets_readiness_pass());
                continue;
            }
            // Sampled at the instant the expiry counts from (the store's clock): fresh through the lease's life.
            assert_eq!(lease.expires_ms - lease.load.sampled_ms, TTL, "write {i}");
            for view in [lease.load.sampled_ms, lease.expires_ms - 1] {
                judged_as_celld_needs(&format!("write {i}"), "edge-7", &lease, view);
            }
        }
    }
}

#[test]
fn a_made_up_node_ids_lease_is_created_unread_and_celld_shaped_in_a_celld_fleet() {
    let env = celld_fleet();
    let mut c = config("");
    c.made_up_node = true;
    c.addr = String::new();
    let a = S3Ownership::new(c, env.clone()).unwrap();
    let key = format!("nodes/{}.json", a.config().node);
    block_on(a.acquire_lease()).unwrap();
    // Found a celld fleet by the first reads, then created the lease without reading it (SPEC §8).
    assert_eq!(env.wire_since(0), ["GET fleet/control.json", "GET wake/format.json", format!("PUT {key} if-none-match").as_str()]);
    let written = bodies(&env, &key);
    let lease = v06::decode(&written[0]).unwrap_or_else(|e| panic!("celld v0.6 cannot read it: {e}"));
    assert_eq!((lease.peer_protocol, lease.log.is_none(), lease.addr.as_str()), (0, true, UNDIALABLE_ADDR));
    assert_eq!(lease.expires_ms - lease.load.sampled_ms, TTL);
    judged_as_celld_needs("the created lease", &a.config().node, &lease, lease.load.sampled_ms);
}

#[test]
fn nothing_is_written_under_a_prefix_celld_reserves() {
    let env = celld_fleet();
    let mut c = celld_config("edge-7");
    c.probe = celld_edge::ownership::ProbePolicy::Recorded;
    let a = S3Ownership::new(c, env.clone()).unwrap();
    block_on(a.acquire_lease()).unwrap();
    for cell in ["Counter:a", "Counter:b"] {
        block_on(a.claim(cell)).unwrap();
    }
    block_on(a.release("Counter:b")).unwrap();
    block_on(a.probe()).unwrap();
    block_on(a.close(celld_edge::ownership::CloseOptions { release: true })).unwrap();
    let keys: std::collections::BTreeSet<String> = writes(&env).into_iter().collect();
    assert!(keys.contains("nodes/edge-7.json") && keys.contains("cells/Counter:a/own.json"), "{keys:?}");
    for key in &keys {
        let ours = key.starts_with("cells/") && key.ends_with("/own.json") || key == "nodes/edge-7.json" || key.starts_with("probe/");
        assert!(ours, "wrote {key}");
    }
    for reserved in ["fleet/", "wake/", "log/", "drain/", "deploy/", "deploy-blobs/", "node-cells/", "telemetry/"] {
        assert!(keys.iter().all(|k| !k.starts_with(reserved)), "{reserved}: {keys:?}");
    }
    assert_eq!(env.body("fleet/peer-auth.json").unwrap(), fixture("fleet-peer-auth.json"), "celld's objects untouched");
}

#[test]
fn remove_dead_lease_leaves_every_lease_celld_wrote_and_removes_ours() {
    let env = celld_fleet();
    let celld = ["lease-v0.6-sealed.json", "lease-v0.6-tombstone.json", "lease-v0.3-no-log.json", "lease-v0.6-no-log.json", "lease-v0.6-open.json"];
    for (i, name) in celld.iter().enumerate() {
        env.put_raw(&format!("nodes/celld-{i}.json"), &fixture(name));
    }
    // One of ours, dead (its instance crashed).
    let crashed = leased(&env, "crashed");
    drop(crashed);
    env.advance(60_000);
    let mut c = celld_config("cleaner");
    c.probe = celld_edge::ownership::ProbePolicy::Recorded; // a verified conditional DELETE
    let cleaner = S3Ownership::new(c, env.clone()).unwrap();
    for i in 0..celld.len() {
        let key = format!("nodes/celld-{i}.json");
        let before = env.body(&key);
        assert_eq!(block_on(cleaner.remove_dead_lease(&format!("celld-{i}"), &[])).unwrap(), LeaseRemoval::Celld, "{}", celld[i]);
        assert_eq!(env.body(&key), before, "{} left as it was", celld[i]);
    }
    assert_eq!(block_on(cleaner.remove_dead_lease("crashed", &[])).unwrap(), LeaseRemoval::Removed);
    assert_eq!(env.body("nodes/crashed.json"), None);
}

#[test]
fn utf8_ids_are_refused_in_a_celld_fleet() {
    // Said up front: refused before anything is sent.
    let mut c = celld_config("a");
    c.ids = IdSet::Utf8;
    let env = MemEnv::new();
    assert_eq!(S3Ownership::new(c, env.clone()).err().unwrap().code(), "invalid-input");
    // Found by wake/format.json: refused at the first write, with nothing written.
    let env = celld_fleet();
    let mut c = config("a");
    c.ids = IdSet::Utf8;
    let a = S3Ownership::new(c, env.clone()).unwrap();
    let e = block_on(a.acquire_lease()).unwrap_err();
    assert!(e.code() == "invalid-input" && e.to_string().contains("wake/format.json"), "{e}");
    assert!(writes(&env).is_empty());
}

/// The recovering fixture, with celld-c's last heartbeat `ago` ms before `env`'s clock.
fn recovering_since(env: &MemEnv, ago: u64) -> String {
    let at = env.0.borrow().wall - ago;
    fixture("lease-v0.6-recovering.json").replace("1800000012000", &at.to_string())
}

#[test]
fn owner_and_a_rejected_claim_say_who_recovers_a_dead_celld_log() {
    let (env, a) = dead_celld_owner("lease-v0.6-recovering.json");
    env.put_raw("nodes/celld-b.json", &recovering_since(&env, 4_000));
    let ClaimOutcome::Rejected { owner } = block_on(a.claim("c")).unwrap() else { panic!("claimable") };
    let r = owner.recovery.clone().expect("who recovers");
    assert!(owner.awaiting_recovery);
    // Aged on the store's clock, known to a whole second from `Date`.
    assert_eq!((r.claimant.as_deref(), r.heartbeat_age_ms.map(|ms| ms / 1000 * 1000), r.stale), (Some("celld-c"), Some(4_000), false));
    let seen = block_on(a.owner("c")).unwrap().unwrap();
    assert_eq!(seen.recovery.as_ref().map(|r| r.claimant.as_deref()), Some(Some("celld-c")));
    // 30 s without a heartbeat: stale.
    env.put_raw("nodes/celld-b.json", &recovering_since(&env, 30_000));
    let r = block_on(a.owner("c")).unwrap().unwrap().recovery.unwrap();
    assert!(r.stale && r.heartbeat_age_ms.is_some_and(|ms| (30_000..31_000).contains(&ms)));
    // An open log: nobody recovering yet.
    env.put_raw("nodes/celld-b.json", &fixture("lease-v0.6-open.json"));
    let r = block_on(a.owner("c")).unwrap().unwrap().recovery.unwrap();
    assert!(r.claimant.is_none() && r.stale);
    // Nothing to report for a live owner or one that can be taken over.
    env.put_raw("nodes/celld-b.json", &fixture("lease-v0.6-sealed.json"));
    assert_eq!(block_on(a.owner("c")).unwrap().unwrap().recovery, None);
}

#[test]
fn a_waiting_claim_on_a_log_awaiting_recovery_looks_again_on_celld_heartbeat() {
    let (env, a) = dead_celld_owner("lease-v0.6-recovering.json");
    env.put_raw("nodes/celld-b.json", &recovering_since(&env, 1_000));
    let start = env.0.borrow().wall;
    // celld seals the log 5 s into the wait (seen by the wait's own check of its signal).
    let sealer = env.clone();
    let sealed = std::cell::Cell::new(false);
    let cancel = std::future::poll_fn(|_| {
        if !sealed.get() && sealer.0.borrow().wall >= start + 5_000 {
            sealer.put_raw("nodes/celld-b.json", &fixture("lease-v0.6-sealed.json"));
            sealed.set(true);
        }
        std::task::Poll::<()>::Pending
    });
    let won = block_on(a.claim_waiting("c", Default::default(), cancel)).unwrap();
    assert!(matches!(won, ClaimOutcome::Applied { epoch: 42, took_over: true, .. }), "{won:?}");
    let waited = env.0.borrow().wall - start;
    assert_eq!(waited, 5_000, "one heartbeat, not a whole ttl ({TTL} ms)");
}
