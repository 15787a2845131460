//! Sharing a bucket with celld, against the real local servers `scripts/test` starts
//! (`scripts/lib/servers.sh`): ministack (conditional writes honoured, atomically) for the marker and the
//! node-log gate over records planted as celld writes them (no Content-Type, so
//! `application/octet-stream`), and moto with signature checks on for celld's ids (`:` and `$`
//! percent-encoded once and signed as sent), and versitygw for a celld v0.6 fleet laid out from the
//! fixtures (SPEC §2.1: `celld: true`, the leases celld reads, `removeDeadLease`, ids, who recovers a log).
//! Skipped, saying so, when the servers' variables are unset (a plain `cargo test` without them).
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

#[path = "support/http.rs"]
mod http;
#[path = "support/celld_v06.rs"]
mod v06;

use celld_edge::env::Env;
use celld_edge::ownership::control::{BUCKET_MARKER, MARKER_KEY};
use celld_edge::ownership::clock::LeaseTerms;
use celld_edge::ownership::records::{encode_celld_lease, CasGuard};
use celld_edge::ownership::{ClaimOutcome, Config, IdSet, LeaseRemoval, S3Ownership};
use celld_edge::s3::{classify_get, classify_put, Bucket, GetAnswer, PutAnswer};
use http::{block_on, HttpEnv};

struct Server {
    endpoint: String,
    bucket: String,
    key_id: String,
    secret: String,
}

fn server(kind: &str) -> Option<Server> {
    let var = |name: &str| std::env::var(format!("CELLD_TEST_{kind}_{name}")).ok();
    let found = Server { endpoint: var("ENDPOINT")?, bucket: var("BUCKET")?, key_id: var("KEY_ID")?, secret: var("SECRET")? };
    Some(found)
}

/// A fresh prefix per test run, so runs never see each other's records.
fn prefix(test: &str) -> String {
    format!("celld-compat/{test}-{}/", HttpEnv::new().random_u64() % 1_000_000_000)
}

fn node(s: &Server, prefix: &str, id: &str) -> S3Ownership<HttpEnv> {
    let mut c = Config::new(&s.endpoint, &s.bucket, id, &s.key_id, &s.secret);
    c.prefix = prefix.to_owned();
    c.addr = format!("{id}.edge:7000");
    c.lease_ttl_ms = 5_000;
    c.max_clock_skew_ms = 500;
    c.probe = celld_edge::ownership::ProbePolicy::Off;
    S3Ownership::new(c, HttpEnv::new()).unwrap()
}

fn bucket(s: &Server) -> Bucket {
    Bucket::new(&s.endpoint, &s.bucket, "us-east-1", true, &s.key_id, &s.secret, None).unwrap()
}

/// Creates `key` as celld does: a conditional create with no Content-Type (ministack checks no signature).
fn plant(s: &Server, key: &str, body: &str) {
    let env = HttpEnv::new();
    let mut req = bucket(s).put(key, &CasGuard::Absent, body.as_bytes().to_vec(), env.wall_ms()).unwrap();
    req.headers.retain(|(name, _)| name != "content-type");
    let answer = classify_put(key, block_on(env.send(req, Some(5_000))));
    assert!(matches!(answer, PutAnswer::Applied { .. }), "planting {key}: {answer:?}");
}

fn get(s: &Server, key: &str) -> Option<Vec<u8>> {
    let env = HttpEnv::new();
    let req = bucket(s).get(key, env.wall_ms()).unwrap();
    match classify_get(key, block_on(env.send(req, Some(5_000)))) {
        GetAnswer::Found { body, .. } => Some(body),
        GetAnswer::Missing => None,
        other => panic!("GET {key}: {other:?}"),
    }
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/celld/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn the_marker_on_ministack() {
    let Some(s) = server("ATOMIC") else { return eprintln!("skipped: CELLD_TEST_ATOMIC_* unset (scripts/test sets them)") };
    // Absent: read, never created (it is a celld fork's marker, under a prefix celld reserves).
    let p = prefix("marker");
    block_on(node(&s, &p, "a").acquire_lease()).unwrap();
    assert_eq!(get(&s, &format!("{p}{MARKER_KEY}")), None);
    // A fork's bucket marker: followed.
    plant(&s, &format!("{p}{MARKER_KEY}"), std::str::from_utf8(BUCKET_MARKER).unwrap());
    block_on(node(&s, &p, "b").acquire_lease()).unwrap();
    // A fleet marked for DynamoDB by celld: refused, and nothing written.
    let p = prefix("dynamodb");
    plant(&s, &format!("{p}{MARKER_KEY}"), &fixture("marker-dynamodb.json"));
    let a = node(&s, &p, "a");
    let e = block_on(a.acquire_lease()).unwrap_err();
    assert_eq!(e.code(), "unsupported-backend", "{e}");
    assert_eq!(block_on(a.cas_node_lease(&CasGuard::Absent, 1)).unwrap_err().code(), "unsupported-backend");
    // An owner-record write needs a lease first, which the refused fleet never gave.
    assert_eq!(block_on(a.cas_owner("c", &CasGuard::Absent, 1)).unwrap_err().code(), "not-leased");
    assert_eq!(get(&s, &format!("{p}nodes/a.json")), None);
    assert_eq!(get(&s, &format!("{p}cells/c/own.json")), None);
}

#[test]
fn the_node_log_gate_on_ministack() {
    let Some(s) = server("ATOMIC") else { return eprintln!("skipped: CELLD_TEST_ATOMIC_* unset (scripts/test sets them)") };
    // celld-b owned c at epoch 41; its lease (as celld v0.6 writes it) expired long ago.
    let dead = |lease: &str| fixture(lease).replace("\"expires_ms\":1800000010000", "\"expires_ms\":1000");
    let p = prefix("log-open");
    plant(&s, &format!("{p}{MARKER_KEY}"), &fixture("marker-bucket.json"));
    plant(&s, &format!("{p}nodes/celld-b.json"), &dead("lease-v0.6-open.json"));
    plant(&s, &format!("{p}cells/c/own.json"), r#"{"node":"celld-b","epoch":41}"#);
    let a = node(&s, &p, "a");
    block_on(a.acquire_lease()).unwrap();
    match block_on(a.claim("c")).unwrap() {
        ClaimOutcome::Rejected { owner } => {
            assert_eq!((owner.node.as_str(), owner.epoch), ("celld-b", 41));
            assert!(owner.awaiting_recovery && !owner.live, "{owner:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(get(&s, &format!("{p}cells/c/own.json")).unwrap(), br#"{"node":"celld-b","epoch":41}"#);
    // Once celld sealed it, the dead owner's cell is taken over at the next epoch.
    let p = prefix("log-sealed");
    plant(&s, &format!("{p}nodes/celld-b.json"), &dead("lease-v0.6-sealed.json"));
    plant(&s, &format!("{p}cells/c/own.json"), r#"{"node":"celld-b","epoch":41}"#);
    let a = node(&s, &p, "a");
    block_on(a.acquire_lease()).unwrap();
    assert!(matches!(block_on(a.claim("c")).unwrap(), ClaimOutcome::Applied { epoch: 42, took_over: true, .. }));
}

#[test]
fn celld_ids_are_signed_as_sent_on_moto() {
    let Some(s) = server("STRICT") else { return eprintln!("skipped: CELLD_TEST_STRICT_* unset (scripts/test sets them)") };
    let p = prefix("ids");
    let a = node(&s, &p, "edge-7.a_b");
    block_on(a.acquire_lease()).unwrap();
    let cell = "Counter:room-1.$x_y";
    assert!(matches!(block_on(a.claim(cell)).unwrap(), ClaimOutcome::Applied { epoch: 1, .. }));
    assert!(block_on(a.verify(cell, 1)).unwrap());
    let body = get(&s, &format!("{p}cells/{cell}/own.json")).expect("the object celld names the same way");
    assert!(String::from_utf8(body).unwrap().contains(r#""node":"edge-7.a_b","epoch":1"#));
}

#[test]
fn a_refused_connection_keeps_the_runtimes_error_as_its_source() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let s = Server { endpoint: format!("http://127.0.0.1:{port}"), bucket: "cells".into(), key_id: "k".into(), secret: "s".into() };
    let e = block_on(node(&s, "", "edge-1").read_owner("c")).unwrap_err();
    assert_eq!((e.code(), e.key()), ("transport", Some("cells/c/own.json")));
    let fault = e.fault();
    let source = fault.source.as_ref().and_then(|s| s.get::<std::io::Error>()).expect("the io::Error");
    assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused);
    assert_eq!(fault.status, 0, "no answer came");
}

#[test]
fn a_wrong_secret_is_auth_with_the_stores_status_and_code_on_moto() {
    let Some(mut s) = server("STRICT") else { return eprintln!("skipped: CELLD_TEST_STRICT_* unset (scripts/test sets them)") };
    s.secret.push('x');
    let e = block_on(node(&s, &prefix("wrong-secret"), "edge-1").read_owner("c")).unwrap_err();
    assert_eq!(e.code(), "auth", "{e}");
    let fault = e.fault();
    assert_eq!((fault.status, fault.code.as_str()), (403, "SignatureDoesNotMatch"), "{e}");
}

// ---- a celld v0.6 fleet on versitygw (SPEC §2.1, issue 26) ----

/// Writes `key` over whatever is there (a signed PUT guarded by the ETag read, or a create), keeping the
/// Content-Type: versitygw checks every signature.
fn put_signed(s: &Server, key: &str, body: &str) {
    let env = HttpEnv::new();
    let guard = {
        let req = bucket(s).get(key, env.wall_ms()).unwrap();
        match classify_get(key, block_on(env.send(req, Some(5_000)))) {
            GetAnswer::Found { etag, .. } => CasGuard::Match(etag),
            _ => CasGuard::Absent,
        }
    };
    let req = bucket(s).put(key, &guard, body.as_bytes().to_vec(), env.wall_ms()).unwrap();
    let answer = classify_put(key, block_on(env.send(req, Some(5_000))));
    assert!(matches!(answer, PutAnswer::Applied { .. }), "writing {key}: {answer:?}");
}

/// A fresh prefix laid out as a celld v0.6 fleet lays out its bucket: `wake/format.json`, the peer secret,
/// a seeded wake-up.
fn celld_fleet(s: &Server, test: &str) -> String {
    let p = prefix(test);
    put_signed(s, &format!("{p}wake/format.json"), &fixture("wake-format.json"));
    put_signed(s, &format!("{p}fleet/peer-auth.json"), &fixture("fleet-peer-auth.json"));
    put_signed(s, &format!("{p}wake/entries/1970-01-01T00:00/Counter:a/migration"), &fixture("wake-entry-migration-seed.json"));
    p
}

fn celld_node(s: &Server, prefix: &str, id: &str, probe: bool) -> S3Ownership<HttpEnv> {
    let mut c = Config::new(&s.endpoint, &s.bucket, id, &s.key_id, &s.secret);
    c.prefix = prefix.to_owned();
    c.celld = true;
    c.lease_ttl_ms = 10_000;
    c.max_clock_skew_ms = 500;
    c.probe = if probe { celld_edge::ownership::ProbePolicy::Recorded } else { celld_edge::ownership::ProbePolicy::Off };
    S3Ownership::new(c, HttpEnv::new()).unwrap()
}

fn real() -> Option<Server> {
    server("REAL")
}

#[test]
fn celld_true_refuses_an_uninitialised_bucket_on_versitygw() {
    let Some(s) = real() else { return eprintln!("skipped: CELLD_TEST_REAL_* unset (scripts/test sets them)") };
    let p = prefix("uninitialised");
    let a = celld_node(&s, &p, "edge-1", true);
    let e = block_on(a.acquire_lease()).unwrap_err();
    assert_eq!((e.code(), e.key()), ("uninitialized-fleet", Some(format!("{p}wake/format.json").as_str())), "{e}");
    for key in ["nodes/edge-1.json", "probe/qualified.json", "fleet/control.json"] {
        assert_eq!(get(&s, &format!("{p}{key}")), None, "{key}: nothing written");
    }
    put_signed(&s, &format!("{p}wake/format.json"), &fixture("wake-format-migrating.json"));
    assert_eq!(block_on(a.acquire_lease()).unwrap_err().code(), "uninitialized-fleet", "mid-migration");
    put_signed(&s, &format!("{p}wake/format.json"), &fixture("wake-format.json"));
    block_on(a.acquire_lease()).unwrap();
}

#[test]
fn leases_in_a_celld_fleet_read_as_celld_v06_reads_them_on_versitygw() {
    let Some(s) = real() else { return eprintln!("skipped: CELLD_TEST_REAL_* unset (scripts/test sets them)") };
    let p = celld_fleet(&s, "leases");
    let a = celld_node(&s, &p, "edge-1", false);
    let key = format!("{p}nodes/edge-1.json");
    let read = || v06::decode(&get(&s, &key).expect("the lease")).unwrap_or_else(|e| panic!("celld v0.6 cannot read it: {e}"));
    block_on(a.acquire_lease()).unwrap();
    let acquired = read();
    block_on(a.renew_lease()).unwrap();
    let renewed = read();
    for (what, lease) in [("acquired", &acquired), ("renewed", &renewed)] {
        let now = HttpEnv::new().wall_ms();
        assert!(lease.live_to_celld("edge-1", now), "{what}: live to celld");
        assert!(!lease.placement_target(now) && !lease.handoff_target(now) && !lease.receives_cells(), "{what}: never a target");
        assert!(lease.keeps_planner_running(now, 0) && lease.lets_readiness_pass() && lease.keeps_paging_open(), "{what}");
        assert!(lease.log.is_none() && lease.peer_protocol == 0 && !lease.addr.is_empty(), "{what}");
    }
    assert!(renewed.load.sampled_ms >= acquired.load.sampled_ms, "sampled at each write");
    assert!(block_on(a.close(Default::default())).unwrap().retired);
    let retired = read();
    assert_eq!(retired.expires_ms, 0);
    assert!(retired.keeps_planner_running(HttpEnv::new().wall_ms(), 0) && retired.lets_readiness_pass());
    assert_eq!(get(&s, &format!("{p}{MARKER_KEY}")), None, "nothing under fleet/ but celld's own");
}

#[test]
fn remove_dead_lease_leaves_celld_leases_and_removes_ours_on_versitygw() {
    let Some(s) = real() else { return eprintln!("skipped: CELLD_TEST_REAL_* unset (scripts/test sets them)") };
    let p = celld_fleet(&s, "remove");
    let celld = ["lease-v0.6-sealed.json", "lease-v0.6-tombstone.json", "lease-v0.3-no-log.json", "lease-v0.6-no-log.json"];
    for (i, name) in celld.iter().enumerate() {
        put_signed(&s, &format!("{p}nodes/celld-{i}.json"), &fixture(name).replace("\"expires_ms\":1800000010000", "\"expires_ms\":1000"));
    }
    // A lease of ours whose process crashed long ago.
    let ours = encode_celld_lease("crashed", LeaseTerms { expires_ms: 1_000, ttl_ms: Some(10_000), store_clock: true }, "", "n-1", 1);
    put_signed(&s, &format!("{p}nodes/crashed.json"), std::str::from_utf8(&ours).unwrap());
    let cleaner = celld_node(&s, &p, "cleaner", true); // qualified: a verified conditional DELETE
    for (i, name) in celld.iter().enumerate() {
        let removal = block_on(cleaner.remove_dead_lease(&format!("celld-{i}"), &[])).unwrap();
        assert_eq!(removal, LeaseRemoval::Celld, "{name}");
        assert!(get(&s, &format!("{p}nodes/celld-{i}.json")).is_some(), "{name}");
    }
    assert_eq!(block_on(cleaner.remove_dead_lease("crashed", &[])).unwrap(), LeaseRemoval::Removed);
    assert_eq!(get(&s, &format!("{p}nodes/crashed.json")), None);
}

#[test]
fn utf8_ids_are_refused_in_a_celld_fleet_on_versitygw() {
    let Some(s) = real() else { return eprintln!("skipped: CELLD_TEST_REAL_* unset (scripts/test sets them)") };
    let p = celld_fleet(&s, "utf8");
    let mut c = Config::new(&s.endpoint, &s.bucket, "edge-1", &s.key_id, &s.secret);
    c.prefix = p.clone();
    c.ids = IdSet::Utf8;
    c.probe = celld_edge::ownership::ProbePolicy::Off;
    let a = S3Ownership::new(c, HttpEnv::new()).unwrap();
    let e = block_on(a.acquire_lease()).unwrap_err();
    assert!(e.code() == "invalid-input" && e.to_string().contains("wake/format.json"), "{e}");
    assert_eq!(get(&s, &format!("{p}nodes/edge-1.json")), None);
}

#[test]
fn who_recovers_a_dead_celld_log_and_a_waiting_claim_on_its_heartbeat_on_versitygw() {
    let Some(s) = real() else { return eprintln!("skipped: CELLD_TEST_REAL_* unset (scripts/test sets them)") };
    let p = celld_fleet(&s, "recovery");
    let lease_key = format!("{p}nodes/celld-b.json");
    let now = HttpEnv::new().wall_ms();
    let recovering = fixture("lease-v0.6-recovering.json")
        .replace("\"expires_ms\":1800000010000", "\"expires_ms\":1000")
        .replace("1800000012000", &(now - 10_000).to_string());
    put_signed(&s, &lease_key, &recovering);
    put_signed(&s, &format!("{p}cells/c/own.json"), r#"{"node":"celld-b","epoch":41}"#);
    let a = celld_node(&s, &p, "edge-1", false);
    block_on(a.acquire_lease()).unwrap();
    let ClaimOutcome::Rejected { owner } = block_on(a.claim("c")).unwrap() else { panic!("claimable before the log is sealed") };
    let r = owner.recovery.expect("who recovers");
    assert_eq!((r.claimant.as_deref(), r.stale), (Some("celld-c"), false));
    // Aged on the store's clock (estimated from `Date` headers: the middle of a 2 s span), the heartbeat on
    // this machine's: 10 s, give or take a second and the time the claim took.
    assert!((8_000..13_000).contains(&r.heartbeat_age_ms.unwrap()), "{r:?}");
    assert_eq!(block_on(a.owner("c")).unwrap().unwrap().recovery.and_then(|r| r.claimant), Some("celld-c".into()));
    // celld seals the log 4 s into the wait: the waiting claim sees it at its next look, 5 s in (celld's
    // heartbeat), not a ttl (10 s) later. The wait checks its signal before each look: the seal goes there.
    let started = std::time::Instant::now();
    let sealed = std::cell::Cell::new(false);
    let sealer = std::future::poll_fn(|_| {
        if !sealed.get() && started.elapsed() >= std::time::Duration::from_secs(4) {
            let body = fixture("lease-v0.6-sealed.json").replace("\"expires_ms\":1800000010000", "\"expires_ms\":1000");
            put_signed(&s, &lease_key, &body);
            sealed.set(true);
        }
        std::task::Poll::<()>::Pending
    });
    let won = block_on(a.claim_waiting("c", Default::default(), sealer)).unwrap();
    let waited = started.elapsed();
    assert!(matches!(won, ClaimOutcome::Applied { epoch: 42, took_over: true, .. }), "{won:?}");
    assert!(waited >= std::time::Duration::from_secs(5) && waited < std::time::Duration::from_secs(8), "{waited:?}");
}
