use super::fake::*;
use super::*;
use crate::error::{Error, Fault};
use crate::ownership::records::CasGuard;
use crate::s3::PutAnswer;

const L: Layout = Layout::DEFAULT;

/// Racers of one round: 8 on the first key, 2 on each of two more.
const RACES: usize = 12;
/// The n-th request of the creates' batch that is not a race.
const CREATE_A: usize = RACES;
const MISSING: usize = RACES + 1;
const NEVER: usize = RACES + 2;

#[test]
fn an_honest_store_passes_within_the_budget_and_the_script_is_as_specified() {
    let mut store = fake();
    let report = run(&mut store).unwrap();
    assert_eq!(report, ProbeReport { if_match_missing_status: 404, conditional_delete: true, etag_quoted: true });
    let races = RACES;
    assert_eq!((0..L.keys).map(|k| L.writers_of(k)).collect::<Vec<_>>(), [8, 2, 2]);
    assert_eq!(store.batches, [races + 3, 1 + races, 1, 3, 2, L.keys + 1]);
    assert_eq!(store.sent.len(), L.requests());
    assert_eq!(L.requests(), 38);
    // The first raced key is deleted, then written on its last ETag and created again.
    let after = races + 3 + 1 + races + 1;
    assert_eq!(store.sent[after + 2], Request::Delete { key: "t/probe/cas-n0-r0".into(), guard: None });
    assert!(matches!(&store.sent[after + 3], Request::Put { key, guard: CasGuard::Match(e), .. }
        if key == "t/probe/cas-n0-r0" && e == "\"e5\""));
    assert!(matches!(&store.sent[after + 4], Request::Put { key, guard: CasGuard::Absent, .. } if key == "t/probe/cas-n0-r0"));
    assert_eq!(
        store.sent[CREATE_A],
        Request::Put {
            key: "t/probe/cas-n0-a".into(),
            guard: CasGuard::Absent,
            body: br#"{"probe":"create","nonce":"n0"}"#.to_vec()
        }
    );
    // The writers of one key leave side by side, on the key's own guard.
    assert_eq!(
        store.sent[0],
        Request::Put {
            key: "t/probe/cas-n0-r0".into(),
            guard: CasGuard::Absent,
            body: br#"{"probe":"create-0-0","nonce":"n0"}"#.to_vec()
        }
    );
    assert_eq!(key_of(&store.sent[7]), "t/probe/cas-n0-r0");
    assert_eq!(key_of(&store.sent[8]), "t/probe/cas-n0-r1");
    assert_eq!(store.sent[NEVER], Request::Get { key: "t/probe/cas-n0-n".into() });
    // The updates race on the ETag their key's winning create was answered with (the first writer's).
    let first_update = races + 4;
    assert!(matches!(&store.sent[first_update], Request::Put { key, guard: CasGuard::Match(e), .. }
        if key == "t/probe/cas-n0-r0" && e == "\"e1\""));
    let bodies: std::collections::BTreeSet<_> = store
        .sent
        .iter()
        .filter_map(|r| match r {
            Request::Put { key, body, .. } => Some((key.clone(), body.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        bodies.len(),
        store.sent.iter().filter(|r| matches!(r, Request::Put { .. })).count(),
        "no two writes to a key are equal"
    );
    assert!(store.objects.is_empty(), "every probe key was deleted: {:?}", store.objects);
}

#[test]
fn the_variants_are_reported_not_failed() {
    let mut store = fake();
    store.if_match_missing = 412;
    store.quoted = false;
    store.fault = |_, r| match r {
        // A store that deletes whatever the condition says.
        Request::Delete { guard: Some(_), .. } => Some(put(204, PutAnswer::Applied { etag: String::new() })),
        _ => None,
    };
    let report = run(&mut store).unwrap();
    assert_eq!(report, ProbeReport { if_match_missing_status: 412, conditional_delete: false, etag_quoted: false });
}

#[test]
fn a_store_letting_two_writers_win_a_race_is_a_violation_and_the_keys_are_cleaned_up() {
    let mut store = fake();
    store.winners = 2;
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "store-violation");
    assert_eq!(
        err.to_string(),
        "store violates conditional writes at step concurrent-create: 2 of 8 concurrent conditional writes to one key applied; at most 1 may"
    );
    // The creates, create-again (rejected: conditions are checked, just not atomically), the cleanup.
    assert_eq!(store.batches, [RACES + 3, 1, L.keys + 1]);
    assert!(store.objects.is_empty(), "{:?}", store.objects);
}

#[test]
fn one_racing_key_of_the_last_round_is_enough() {
    let mut store = fake();
    // Honest except the last key's updates: both apply.
    store.fault = |n, r| {
        let last_update = RACES + 3 + 1 + RACES - 1;
        (n == last_update && is_race(r)).then(|| put(200, PutAnswer::Applied { etag: "\"x\"".into() }))
    };
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.to_string(), "store violates conditional writes at step concurrent-update: 2 of 2 concurrent conditional writes to one key applied; at most 1 may");
}

#[test]
fn a_store_ignoring_conditions_fails_at_create_again() {
    let mut store = fake();
    store.ignore_conditions = true;
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.to_string(), "store violates conditional writes at step create-again: If-None-Match: * on a key that exists was applied (ETag \"e15\"): the store ignores If-None-Match on PUT (GCS's S3-compatible XML API does; its preconditions are x-goog-if-generation-match, which this library does not send)");
}

#[test]
fn no_winner_of_a_race_is_a_violation_too() {
    let mut store = fake();
    store.fault = |n, r| (n < 2 && is_race(r)).then(|| put(412, PutAnswer::Rejected));
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.to_string(), "store violates conditional writes at step concurrent-create: none of 8 concurrent conditional writes applied, yet the key was absent");
}

#[test]
fn ambiguity_is_transport_after_one_attempt_never_a_pass() {
    let mut store = fake();
    store.fault =
        |n, _| (n == CREATE_A).then(|| put(503, PutAnswer::Ambiguous("503 SlowDown".into())));
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "transport");
    assert_eq!(
        err.to_string(),
        "transport failure on t/probe/: probe inconclusive (it is tried again on the next write): create: 503 SlowDown"
    );
    // One attempt, then the cleanup of what it may have written.
    assert_eq!(store.batches, [RACES + 3, L.keys + 1]);
    assert!(store.objects.is_empty());
}

#[test]
fn a_few_open_races_are_tolerated_most_are_not() {
    // Two races answered 409 by both writers (R2 answers 409 under concurrent conditional writes).
    let mut store = fake();
    store.fault = |n, r| {
        (n < 4 && is_race(r)).then(|| put(409, PutAnswer::Conflict { code: "ConditionalRequestConflict".into() }))
    };
    assert!(run(&mut store).is_ok());
    // A lost answer beside a winner could hide a second winner: that race is open too.
    let mut store = fake();
    store.fault =
        |n, r| (n == 1 && is_race(r)).then(|| put(0, PutAnswer::Ambiguous("timed out".into())));
    assert!(run(&mut store).is_ok());
    // Every race of the creates open: nothing proven.
    let mut store = fake();
    store.fault = |_, r| {
        matches!(r, Request::Put { guard: CasGuard::Absent, key, .. } if key.contains("-r"))
            .then(|| put(409, PutAnswer::Conflict { code: "OperationAborted".into() }))
    };
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "transport");
    assert!(err.to_string().ends_with("only 0 of 6 races were decided (409s or answers lost); the rest proves nothing"), "{err}");
}

#[test]
fn a_409_on_a_single_write_is_inconclusive() {
    let mut store = fake();
    store.fault =
        |n, _| (n == CREATE_A).then(|| put(409, PutAnswer::Conflict { code: "ConditionalRequestConflict".into() }));
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "transport");
    assert!(err.to_string().ends_with("create: 409 ConditionalRequestConflict"), "{err}");
}

#[test]
fn a_501_is_the_stores_refusal_wherever_it_comes() {
    // B2 answers 501 NotImplemented to conditional headers: the classified refusal (which says the
    // store has no conditional writes) is the verdict, whichever write met it first.
    let mut store = fake();
    store.fault = |n, _| (n == CREATE_A).then(|| put(501, refused(501, "NotImplemented")));
    let err = run(&mut store).unwrap_err();
    assert_eq!((err.code(), err.to_string().as_str()), ("request", "store refused request for k: 501 NotImplemented: m"));
    let mut store = fake();
    store.fault = |_, r| is_race(r).then(|| put(501, refused(501, "NotImplemented")));
    assert_eq!(run(&mut store).unwrap_err().code(), "request");
    assert_eq!(store.batches.len(), 1, "a refusal is final");
}

#[test]
fn a_store_that_still_counts_a_deleted_object_is_a_violation() {
    // versitygw's versioned buckets: after a DELETE the ETag still matches and the key is not absent.
    let mut store = fake();
    store.remember_deleted = true;
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "store-violation");
    assert_eq!(
        err.to_string(),
        "store violates conditional writes at step stale-after-delete: If-Match with the ETag of a deleted object was applied (ETag \"e9\")"
    );
    assert!(store.objects.is_empty(), "cleaned up: {:?}", store.objects);
    // Only If-None-Match: * refused on the deleted key.
    let mut store = fake();
    store.fault = |_, r| {
        matches!(r, Request::Put { guard: CasGuard::Absent, body, .. } if body.starts_with(br#"{"probe":"create-after-delete""#))
            .then(|| put(412, PutAnswer::Rejected))
    };
    assert_eq!(
        run(&mut store).unwrap_err().to_string(),
        "store violates conditional writes at step create-after-delete: If-None-Match: * on a key just deleted was rejected"
    );
}

#[test]
fn the_raced_key_deleted_is_one_whose_updates_were_decided_and_its_delete_must_apply() {
    let mut store = fake();
    // The first key's updates left open: the second key is deleted and written again.
    store.fault = |n, r| (n == RACES + 4 && is_race(r)).then(|| put(0, PutAnswer::Ambiguous("timed out".into())));
    run(&mut store).unwrap();
    let deleted = store.sent.iter().position(|r| matches!(r, Request::Delete { key, guard: None } if key.contains("-r"))).unwrap();
    assert_eq!(key_of(&store.sent[deleted]), "t/probe/cas-n0-r1");
    assert!(matches!(&store.sent[deleted + 1], Request::Put { key, guard: CasGuard::Match(e), .. } if key == "t/probe/cas-n0-r1" && e == "\"e6\""));
    // A refused DELETE is the verdict (deleting is part of the protocol); a lost one proves nothing.
    let mut store = fake();
    store.fault = |_, r| matches!(r, Request::Delete { guard: None, .. }).then(|| put(403, refused(403, "AccessDenied")));
    assert_eq!(run(&mut store).unwrap_err().code(), "auth");
    let mut store = fake();
    store.fault = |_, r| matches!(r, Request::Delete { guard: None, .. }).then(|| put(0, PutAnswer::Ambiguous("reset".into())));
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "transport");
    assert!(err.to_string().ends_with("delete of a raced key: 0 ambiguous (reset)"), "{err}");
}

#[test]
fn a_429_is_a_write_turned_away_never_a_verdict() {
    // R2 answers 429 to more than one write per second per key: in a race, the other writer's loss.
    let mut store = fake();
    store.fault = |n, r| (n % 2 == 1 && n < RACES && is_race(r)).then(|| put(429, PutAnswer::Throttled(Fault::new("429 TooManyRequests"))));
    run(&mut store).unwrap();
    assert_eq!(store.sent.len(), L.requests(), "a racer beside its key's winner is not sent again");
    // On a single write: sent again, alone, and the probe goes on.
    let mut store = fake();
    store.fault = |n, _| (n == CREATE_A).then(|| put(429, PutAnswer::Throttled(Fault::new("429 TooManyRequests"))));
    assert!(run(&mut store).is_ok());
    assert_eq!(store.batches[..2], [RACES + 3, 1]);
    assert_eq!(store.sent[RACES + 3], store.sent[CREATE_A]);
    // Turned away every time: throttled after eight resends, never a verdict on conditions.
    let mut store = fake();
    store.fault = |_, r| {
        matches!(r, Request::Put { key, guard: CasGuard::Absent, .. } if key.ends_with("-a"))
            .then(|| put(429, PutAnswer::Throttled(Fault { detail: "429 TooManyRequests".into(), status: 429, code: "TooManyRequests".into(), source: None })))
    };
    let err = run(&mut store).unwrap_err();
    assert_eq!((err.code(), err.fault().status, err.fault().code.as_str()), ("throttled", 429, "TooManyRequests"));
    assert!(err.to_string().ends_with("create: 429 TooManyRequests (throttled)"), "{err}");
    assert_eq!(store.batches, [RACES + 3, 1, 1, 1, 1, 1, 1, 1, 1, L.keys + 1]);
    // A 503 SlowDown may have landed (a store or proxy may apply, then answer it): never sent again by the
    // probe, whose resend would meet its own write; inconclusive, as any ambiguity.
    let mut store = fake();
    store.fault = |n, _| (n == CREATE_A).then(|| put(503, PutAnswer::Throttled(Fault::new("503 SlowDown"))));
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "transport");
    assert!(err.to_string().ends_with("create: 503 SlowDown"), "{err}");
    assert_eq!(store.batches, [RACES + 3, L.keys + 1]);
}

#[test]
fn resends_wait_longer_each_time_and_keep_the_other_answers() {
    let (mut probe, next) = Probe::new("t/", "n0".into());
    let Next::Send(batch) = next else { panic!() };
    let mut store = fake();
    // The create and If-Match on a missing key turned away once, then the create once more.
    store.fault = |n, _| [CREATE_A, MISSING, RACES + 3].contains(&n).then(|| put(429, PutAnswer::Throttled(Fault::new("429"))));
    let mut next = probe.step(store.answer(batch.clone()));
    let Next::Resend { attempt: 1, requests } = next else { panic!("{next:?}") };
    assert_eq!(requests, [batch[CREATE_A].clone(), batch[MISSING].clone()]);
    next = probe.step(store.answer(requests));
    let Next::Resend { attempt: 2, requests } = next else { panic!("{next:?}") };
    assert_eq!(requests, [batch[CREATE_A].clone()]);
    next = probe.step(store.answer(requests));
    // The race answers of the first send were kept: the updates' batch follows.
    assert!(matches!(next, Next::Send(ref r) if r.len() == 1 + RACES), "{next:?}");
}

#[test]
fn an_r2_like_store_passes_by_sending_turned_away_writes_again() {
    let mut store = fake();
    store.r2 = true;
    let report = run(&mut store).unwrap();
    assert!(report.conditional_delete);
    assert!(store.sent.len() > L.requests(), "some writes were sent again: {:?}", store.batches);
}

#[test]
fn a_store_letting_eight_creators_win_is_refused_with_the_count() {
    // Tigris before April 2026: concurrent If-None-Match: * creates of one key all applied.
    let mut store = fake();
    store.winners = 8;
    let err = run(&mut store).unwrap_err();
    assert_eq!(
        err.to_string(),
        "store violates conditional writes at step concurrent-create: 8 of 8 concurrent conditional writes to one key applied; at most 1 may"
    );
}

#[test]
fn if_match_honoured_in_one_quoting_only_is_refused_with_the_reason() {
    let mut store = fake();
    store.if_match_quoting = Some(false);
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "store-violation");
    assert!(
        err.to_string().starts_with("store violates conditional writes at step if-match-quoting: If-Match is honoured only unquoted: the ETag sent back exactly as the store gave it (\"e4\") did not match, the same ETag as e4 did"),
        "{err}"
    );
    assert!(store.objects.is_empty(), "cleaned up: {:?}", store.objects);
    let mut store = fake();
    store.quoted = false;
    store.if_match_quoting = Some(true);
    let err = run(&mut store).unwrap_err();
    assert!(err.to_string().contains("If-Match is honoured only quoted: the ETag sent back exactly as the store gave it (e4) did not match, the same ETag as \"e4\" did"), "{err}");
    // A store that honours neither form: the updates' violation stands.
    let mut store = fake();
    store.fault = |_, r| matches!(r, Request::Put { guard: CasGuard::Match(_), .. }).then(|| put(412, PutAnswer::Rejected));
    let err = run(&mut store).unwrap_err();
    assert!(err.to_string().contains("step concurrent-update: none of 8 concurrent conditional writes applied, yet the ETag was current"), "{err}");
}

#[test]
fn a_put_ignoring_if_none_match_is_refused_naming_it() {
    // GCS's S3-compatible XML API: If-Match honoured, If-None-Match ignored on PUT.
    let mut store = fake();
    store.ignore_if_none_match = true;
    let err = run(&mut store).unwrap_err();
    assert!(err.to_string().starts_with("store violates conditional writes at step create-again: If-None-Match: * on a key that exists was applied"), "{err}");
    assert!(err.to_string().contains("the store ignores If-None-Match on PUT"), "{err}");
}

#[test]
fn a_refusal_is_final_with_no_cleanup() {
    let mut store = fake();
    store.fault = |n, _| (n == CREATE_A).then(|| put(403, refused(403, "AccessDenied")));
    assert_eq!(run(&mut store).unwrap_err().code(), "auth");
    assert_eq!(store.batches.len(), 1);
}

#[test]
fn if_match_on_a_missing_key_must_not_apply() {
    let mut store = fake();
    store.fault =
        |n, _| (n == MISSING).then(|| put(200, PutAnswer::Applied { etag: "\"m\"".into() }));
    assert_eq!(
        run(&mut store).unwrap_err().to_string(),
        "store violates conditional writes at step if-match-missing: If-Match on a missing key was applied (ETag \"m\")"
    );
}

#[test]
fn a_key_never_written_that_reads_as_present_is_not_an_s3_api() {
    let mut store = fake();
    store.fault = |n, _| (n == NEVER).then(|| Answer::Read(Ok(Some("\"page\"".into()))));
    let err = run(&mut store).unwrap_err();
    assert_eq!(err.code(), "request");
    assert!(err.to_string().contains("not an S3 API"), "{err}");
    // It outranks what the same batch says about conditions.
    let mut store = fake();
    store.ignore_conditions = true;
    store.fault = |n, _| (n == NEVER).then(|| Answer::Read(Ok(Some("\"page\"".into()))));
    assert_eq!(run(&mut store).unwrap_err().code(), "request");
    // A failed read of it is inconclusive.
    let mut store = fake();
    store.fault = |n, _| (n == NEVER).then(|| Answer::Read(Err(Error::transport("k".into(), "reset"))));
    assert_eq!(run(&mut store).unwrap_err().code(), "transport");
}

#[test]
fn missing_answers_count_as_no_answer() {
    let (mut probe, next) = Probe::new("t/", "n0".into());
    assert!(matches!(next, Next::Send(ref r) if r.len() == RACES + 3));
    // No answer at all: inconclusive, cleanup, then transport.
    assert!(matches!(probe.step(Vec::new()), Next::Send(ref r) if r.len() == L.keys + 1));
    match probe.step(Vec::new()) {
        Next::Failed(e) => assert_eq!(e.code(), "transport", "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn layouts_scale_the_script() {
    let layout = Layout { keys: 3, writers: 4, wide: 4, pad: 10 };
    assert_eq!(layout.requests(), 2 * 12 + 8 + 3 + 3);
    let (_, next) = Probe::with_layout("", "n".into(), layout);
    let Next::Send(batch) = next else { panic!() };
    assert_eq!(batch.len(), 12 + 3);
    assert!(matches!(&batch[0], Request::Put { body, .. } if body.ends_with(br#","pad":".........."}"#)));
}
