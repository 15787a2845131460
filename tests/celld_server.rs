//! Sharing a bucket with celld, against the real local servers `scripts/test` starts
//! (`scripts/lib/servers.sh`): ministack (conditional writes honoured, atomically) for the marker and the
//! node-log gate over records planted as celld writes them (no Content-Type, so
//! `application/octet-stream`), and moto with signature checks on for celld's ids (`:` and `$`
//! percent-encoded once and signed as sent). Skipped, saying so, when the servers' variables are unset
//! (a plain `cargo test` without them).
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

#[path = "support/http.rs"]
mod http;

use celld_edge::env::Env;
use celld_edge::ownership::control::{BUCKET_MARKER, MARKER_KEY};
use celld_edge::ownership::records::CasGuard;
use celld_edge::ownership::{ClaimOutcome, Config, S3Ownership};
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
    // Absent: the first instance creates it, byte for byte as celld does; the second follows it.
    let p = prefix("marker");
    block_on(node(&s, &p, "a").acquire_lease()).unwrap();
    assert_eq!(get(&s, &format!("{p}{MARKER_KEY}")).as_deref(), Some(BUCKET_MARKER));
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
