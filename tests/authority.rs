//! When this instance's authority for a cell ends, as the core decides it (SPEC 4.2, §5): `authority()`
//! (the epoch and how long it lasts: `ttl - skew` since the anchor, counted by whichever clock advanced
//! more, and nothing once the two clocks' offset moved) and the one
//! `AuthorityLost` event per claim that ends — lease lapsed or lost, takeover seen by a read, release
//! begun, re-claim sent. The abort signals of the JS API are armed on exactly these.
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

mod support;

use celld_edge::env::{Lost, TransportError};
use celld_edge::ownership::clock::RATE;
use celld_edge::ownership::{ClaimOutcome, Config, ProbePolicy, S3Ownership};
use support::mem::{block_on, Fault, MemEnv, BUCKET, ENDPOINT};

const TTL: u64 = 10_000;
const SKEW: u64 = 1_000;

fn leased(env: &MemEnv, id: &str) -> S3Ownership<MemEnv> {
    let mut config = Config::new(ENDPOINT, BUCKET, id, "AKIDEXAMPLE", "secret");
    config.lease_ttl_ms = TTL;
    config.max_clock_skew_ms = SKEW;
    config.probe = ProbePolicy::Off;
    let n = S3Ownership::new(config, env.clone()).unwrap().observed_by(env.clone());
    block_on(n.acquire_lease()).unwrap();
    n
}

fn claim(n: &S3Ownership<MemEnv>, cell: &str) -> u64 {
    match block_on(n.claim(cell)).unwrap() {
        ClaimOutcome::Applied { epoch, .. } => epoch,
        other => panic!("expected applied, got {other:?}"),
    }
}

/// The `AuthorityLost` events since event `from`, as (cell, epoch, why).
fn lost_since(env: &MemEnv, from: usize) -> Vec<(String, u64, Lost)> {
    env.0.borrow().lost[from..].iter().map(|(c, e, why, _)| (c.clone(), *e, *why)).collect()
}

fn lost(cell: &str, epoch: u64, why: Lost) -> (String, u64, Lost) {
    (cell.to_owned(), epoch, why)
}

fn code<T: std::fmt::Debug>(r: celld_edge::Result<T>) -> &'static str {
    r.unwrap_err().code()
}

/// `ttl - skew` less `elapsed` ms counted as the core counts them (`1 + RATE` times over, issue 25).
fn left(elapsed: f64) -> f64 {
    (TTL - SKEW) as f64 - elapsed * (1.0 + RATE)
}

#[test]
fn authority_lasts_until_either_clock_has_counted_ttl_minus_skew() {
    let env = MemEnv::new();
    let a = leased(&env, "a");
    assert_eq!(claim(&a, "c"), 1);
    assert_eq!(a.authority("c").unwrap(), (1, (TTL - SKEW) as f64), "the write took no time");
    env.advance(4_000);
    assert_eq!(a.authority("c").unwrap(), (1, left(4_000.0)));
    // The wall clock ran 20 ms ahead (within the clocks' resolution): its advance counts.
    env.0.borrow_mut().wall += 20;
    assert_eq!(a.authority("c").unwrap(), (1, left(4_020.0)), "the wall clock's advance counts");
    assert!(lost_since(&env, 0).is_empty());
    // The machine slept: the monotonic clock stood still, the wall clock (and the peers) went on. The
    // clocks' offset moved (issue 34 A): authority ends at once, however long the sleep.
    env.0.borrow_mut().wall += 1_000;
    assert_eq!(code(a.authority("c")), "fenced", "the clocks' offset moved: authority has ended");
    assert_eq!(lost_since(&env, 0), [lost("c", 1, Lost::LeaseLost)]);
    assert_eq!(code(a.authority("c")), "fenced");
    assert_eq!(lost_since(&env, 0).len(), 1, "said once per claim");
}

#[test]
fn a_lapse_on_the_monotonic_clock_ends_every_claim_once() {
    let env = MemEnv::new();
    let a = leased(&env, "a");
    claim(&a, "c1");
    claim(&a, "c2");
    let last = ((TTL - SKEW) as f64 / (1.0 + RATE)).ceil() as u64 - 1;
    env.advance(last);
    assert_eq!(a.authority("c2").unwrap(), (1, left(last as f64)));
    env.advance(1);
    assert_eq!(code(a.authority("c1")), "fenced");
    assert_eq!(lost_since(&env, 0), [lost("c1", 1, Lost::LeaseLost), lost("c2", 1, Lost::LeaseLost)]);
    assert_eq!(code(block_on(a.renew_lease())), "fenced");
    block_on(a.acquire_lease()).unwrap();
    assert_eq!(lost_since(&env, 0).len(), 2, "nothing more was held to lose");
    assert_eq!(code(a.authority("c1")), "not-leased", "the fresh lease holds no claim");
}

#[test]
fn a_lapse_nobody_asked_about_is_said_when_a_fresh_lease_replaces_it() {
    let env = MemEnv::new();
    let a = leased(&env, "a");
    claim(&a, "c");
    env.advance(TTL + SKEW);
    assert!(!a.lease_valid());
    block_on(a.acquire_lease()).unwrap();
    assert_eq!(lost_since(&env, 0), [lost("c", 1, Lost::LeaseLost)]);
}

#[test]
fn no_authority_without_a_claim_or_a_lease() {
    let env = MemEnv::new();
    let mut config = Config::new(ENDPOINT, BUCKET, "a", "AKIDEXAMPLE", "secret");
    config.probe = ProbePolicy::Off;
    let a = S3Ownership::new(config, env.clone()).unwrap().observed_by(env.clone());
    assert_eq!(code(a.authority("c")), "not-leased");
    block_on(a.acquire_lease()).unwrap();
    let err = a.authority("c").unwrap_err();
    assert_eq!(err.code(), "not-leased");
    assert!(err.message().contains("no claim of cell \"c\""), "{err}");
}

#[test]
fn reads_verify_and_claims_that_see_another_owner_end_the_claim() {
    let env = MemEnv::new();
    let (a, b) = (leased(&env, "a"), leased(&env, "b"));
    claim(&a, "c");
    // Another writer (a peer that judged a dead on its own clock, or an operator) moves the record on.
    env.put_raw("cells/c/own.json", r#"{"node":"b","epoch":2}"#);
    assert_eq!(a.authority("c").unwrap().0, 1, "not seen yet");
    let from = env.0.borrow().lost.len();
    assert!(!block_on(a.verify("c", 1)).unwrap());
    assert_eq!(lost_since(&env, from), [lost("c", 1, Lost::TakenOver)]);
    assert_eq!(code(a.authority("c")), "not-leased");
    // The same through claim() and owner(), on other cells.
    claim(&a, "d");
    claim(&a, "e");
    env.put_raw("cells/d/own.json", r#"{"node":"b","epoch":7}"#);
    env.put_raw("cells/e/own.json", r#"{"node":"","epoch":1}"#);
    block_on(a.owner("e")).unwrap();
    // A claim of "d" starts by writing over the version this instance saw (its own): epoch 1 ends as that
    // write is sent, before the store refuses it and the read finds b.
    assert!(matches!(block_on(a.claim("d")).unwrap(), ClaimOutcome::Rejected { .. }));
    assert_eq!(lost_since(&env, from + 1), [lost("e", 1, Lost::TakenOver), lost("d", 1, Lost::Reclaimed)]);
    // A record that vanished after the claim was made ends it too.
    claim(&a, "f");
    env.0.borrow_mut().objects.remove("cells/f/own.json");
    // celld's `read_owner` only reads: the claim stands until a judged read (JS `readOwner`) sees it gone.
    assert!(block_on(a.read_owner("f")).unwrap().is_none());
    assert!(lost_since(&env, from + 3).is_empty());
    assert!(block_on(a.read_owner_and_judge("f")).unwrap().is_none());
    assert_eq!(lost_since(&env, from + 3), [lost("f", 1, Lost::TakenOver)]);
    let _ = b;
}

#[test]
fn a_release_ends_the_claim_before_its_write_is_sent() {
    let env = MemEnv::new();
    let a = leased(&env, "a");
    claim(&a, "c");
    let before = env.sent_count();
    // The release's write is lost in transit: it may have landed, so the claim is over either way.
    env.push(Fault::Drop(Err(TransportError::Network("connection reset".into()))));
    let _ = block_on(a.release("c"));
    let said = env.0.borrow().lost.clone();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!((said[0].0.as_str(), said[0].1, said[0].2, said[0].3), ("c", 1, Lost::Released, before));
    assert_eq!(env.wire_since(before)[0], "PUT cells/c/own.json if-match", "said before the write was sent");
    assert_eq!(code(a.authority("c")), "not-leased");
    // Whatever the lost write did, releasing again leaves the record released, and says nothing more.
    block_on(a.release("c")).unwrap();
    assert!(env.body("cells/c/own.json").unwrap().contains(r#""node":"""#));
    assert_eq!(env.0.borrow().lost.len(), 1);
}

#[test]
fn claiming_again_ends_the_older_epoch_when_the_new_claim_is_sent() {
    let env = MemEnv::new();
    let a = leased(&env, "a");
    assert_eq!(claim(&a, "c"), 1);
    // The re-claim's write is lost in transit: epoch 1 is over even so (epoch 2 may have landed).
    env.push(Fault::Drop(Err(TransportError::TimedOut)));
    env.push(Fault::Drop(Err(TransportError::TimedOut)));
    env.push(Fault::Drop(Err(TransportError::TimedOut)));
    env.push(Fault::Drop(Err(TransportError::TimedOut)));
    env.push(Fault::Drop(Err(TransportError::TimedOut)));
    let _ = block_on(a.claim("c"));
    assert_eq!(lost_since(&env, 0), [lost("c", 1, Lost::Reclaimed)]);
    env.0.borrow_mut().script.clear();
    let epoch = claim(&a, "c");
    assert!(epoch >= 2);
    assert_eq!(a.authority("c").unwrap().0, epoch);
    assert_eq!(lost_since(&env, 0).len(), 1, "the new claim replaced nothing it still held");
}

#[test]
fn a_replaced_lease_fences_and_ends_every_claim() {
    let env = MemEnv::new();
    let a = leased(&env, "a");
    claim(&a, "c");
    env.put_raw("nodes/a.json", r#"{"node":"a","expires_ms":1,"addr":""}"#);
    assert_eq!(code(block_on(a.renew_lease())), "fenced");
    assert_eq!(lost_since(&env, 0), [lost("c", 1, Lost::LeaseLost)]);
}

/// SPEC §4.4, the check every fenced send makes: `authority_at(cell, epoch)` says yes while that very claim
/// holds, and otherwise why not, by how the claim ended — also after a fresh lease, a re-claim, a close.
#[test]
fn the_check_at_send_names_how_the_claim_ended() {
    let env = MemEnv::new();
    let (a, b) = (leased(&env, "a"), leased(&env, "b"));
    let why = |cell: &str, epoch| a.authority_at(cell, epoch).unwrap_err().lost;
    claim(&a, "released");
    assert_eq!(a.authority_at("released", 1), Ok((TTL - SKEW) as f64));
    block_on(a.release("released")).unwrap();
    assert_eq!(why("released", 1), Some(Lost::Released));

    assert_eq!(claim(&a, "again"), 1);
    assert_eq!(claim(&a, "again"), 2);
    assert_eq!(why("again", 1), Some(Lost::Reclaimed));
    assert!(a.authority_at("again", 2).is_ok());

    claim(&a, "taken");
    let rec = block_on(b.read_owner("taken")).unwrap().unwrap();
    block_on(b.cas_owner("taken", &celld_edge::ownership::CasGuard::Match(rec.etag), 2)).unwrap();
    assert!(!block_on(a.verify("taken", 1)).unwrap());
    assert_eq!(why("taken", 1), Some(Lost::TakenOver));

    assert_eq!(why("never", 1), None, "a cell never held: no reason remembered, and nothing kept of it");

    // The lease lapses: every claim ends with it, and a released one still says it was released.
    env.advance(TTL);
    assert_eq!(why("again", 2), Some(Lost::LeaseLost));
    assert_eq!(why("released", 1), Some(Lost::Released));
    block_on(a.acquire_lease()).unwrap();
    assert_eq!(why("again", 2), Some(Lost::LeaseLost), "after a fresh lease too");
    claim(&a, "closing");
    a.shut();
    assert_eq!(why("closing", 1), Some(Lost::Closed));
}
