//! Qualifying a bucket once, not every instance (SPEC §6, changed 2026-12-01). The probe's verdict is
//! recorded at `<prefix>probe/qualified.json` and a later instance trusts it, for `probe_trust_ms`, from
//! one GET. Here: the record's codec, the rule for whether a record read is trusted (`judge`), the
//! sequence that reads, probes and records (`qualify`), and `Qualification`, which keeps an instance's
//! verdict and makes its concurrent callers share one qualification in flight.
//!
//! What it must never do: trust a record it cannot fully read or that another endpoint, bucket, prefix or
//! probe revision wrote; replace a record without a condition; keep a failure that is not proof (a refusal
//! or a transport error is reported to the callers that shared the attempt, and the next caller tries
//! again). A recorded refusal outranks a pass: one instance's lucky pass of a racy store must not
//! overwrite another's proof that it races.

use std::borrow::Cow;
use serde::{Deserialize, Serialize};
use core::cell::RefCell;
use core::future::Future;

use crate::env::Env;
use crate::error::{Error, Failure, Result};
use crate::ownership::cas::{Budget, Store};
use crate::ownership::flight::{Joined, Share, Single};
use crate::ownership::join::join_all;
use crate::ownership::probe::{Answer, Next, Probe, ProbeReport, Request};
use crate::ownership::records::{corrupt, decode_object, CasGuard};
use crate::ownership::throttle::full_jitter_ms;
use crate::s3::PutAnswer;

/// The record's own format.
const FORMAT: u64 = 1;
/// What a pass proves changes with the probe's script: a record of another revision is not trusted.
/// 1 was the bursts of 16 writers on one key; 2 is many small races on fresh keys; 3 also writes a key
/// again after deleting it; 4 races 8 writers on one key beside three pairs and checks If-Match's quoting.
pub const PROBE_REVISION: u64 = 4;
const LIBRARY: &str = concat!("celld-edge ", env!("CARGO_PKG_VERSION"));

/// Where a verdict holds: a record names all three, and is trusted only where all three are ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Here<'a> {
    /// As configured, without a trailing `/`.
    pub endpoint: &'a str,
    pub bucket: &'a str,
    pub prefix: &'a str,
}

/// What a qualification concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Qualified(ProbeReport),
    /// The store broke conditional writes at `step` (a `store-violation`).
    Refused { step: String, detail: String },
}

/// `<prefix>probe/qualified.json` as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QualifiedRecord {
    pub verdict: Verdict,
    /// Wall clock when the verdict was reached.
    pub at_ms: u64,
    pub library: String,
    pub probe_revision: u64,
    pub endpoint: String,
    pub bucket: String,
    pub prefix: String,
    pub etag: String,
}

pub fn record_key(prefix: &str) -> String {
    format!("{prefix}probe/qualified.json")
}

/// The record's shape on the wire: the fields of both verdicts, each present only with its verdict.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    format: u64,
    verdict: Cow<'a, str>,
    at_ms: u64,
    library: Cow<'a, str>,
    probe_revision: u64,
    endpoint: Cow<'a, str>,
    bucket: Cow<'a, str>,
    prefix: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    if_match_missing_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conditional_delete: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    etag_quoted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    races: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<Cow<'a, str>>,
}

/// The record of `verdict`, reached at `at_ms` against `here`; `races` is how many races the probe ran.
pub fn encode_record(verdict: &Verdict, at_ms: u64, here: &Here<'_>, races: u64) -> Vec<u8> {
    let mut wire = Wire {
        format: FORMAT,
        verdict: Cow::Borrowed("qualified"),
        at_ms,
        library: Cow::Borrowed(LIBRARY),
        probe_revision: PROBE_REVISION,
        endpoint: Cow::Borrowed(here.endpoint),
        bucket: Cow::Borrowed(here.bucket),
        prefix: Cow::Borrowed(here.prefix),
        if_match_missing_status: None,
        conditional_delete: None,
        etag_quoted: None,
        races: None,
        step: None,
        detail: None,
    };
    match verdict {
        Verdict::Qualified(r) => {
            wire.if_match_missing_status = Some(r.if_match_missing_status);
            wire.conditional_delete = Some(r.conditional_delete);
            wire.etag_quoted = Some(r.etag_quoted);
            wire.races = Some(races);
        }
        Verdict::Refused { step, detail } => {
            wire.verdict = Cow::Borrowed("refused");
            wire.step = Some(Cow::Borrowed(step));
            wire.detail = Some(Cow::Borrowed(detail));
        }
    }
    // A struct of strings, numbers and booleans always serializes.
    serde_json::to_vec(&wire).unwrap_or_default()
}

/// Decodes the record read from `key`; anything short of a complete record of a known verdict is
/// `corrupt-record` (and so not trusted).
pub fn decode_record(key: &str, body: &[u8], etag: &str) -> Result<QualifiedRecord> {
    let wire: Wire<'_> = decode_object(key, body)?;
    let missing = |name: &str| corrupt(key, format!("missing field {name}"));
    if wire.format != FORMAT {
        return Err(corrupt(key, format!("format is not {FORMAT}")));
    }
    let verdict = match &*wire.verdict {
        "qualified" => Verdict::Qualified(ProbeReport {
            if_match_missing_status: wire.if_match_missing_status.ok_or_else(|| missing("if_match_missing_status"))?,
            conditional_delete: wire.conditional_delete.ok_or_else(|| missing("conditional_delete"))?,
            etag_quoted: wire.etag_quoted.ok_or_else(|| missing("etag_quoted"))?,
        }),
        "refused" => Verdict::Refused {
            step: wire.step.ok_or_else(|| missing("step"))?.into_owned(),
            detail: wire.detail.ok_or_else(|| missing("detail"))?.into_owned(),
        },
        other => return Err(corrupt(key, format!("unknown verdict {other}"))),
    };
    Ok(QualifiedRecord {
        verdict,
        at_ms: wire.at_ms,
        library: wire.library.into_owned(),
        probe_revision: wire.probe_revision,
        endpoint: wire.endpoint.into_owned(),
        bucket: wire.bucket.into_owned(),
        prefix: wire.prefix.into_owned(),
        etag: etag.to_owned(),
    })
}

/// What a record read says to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// Trust it until `until_ms` (wall).
    Trusted { verdict: Verdict, until_ms: u64 },
    /// Qualify; record the verdict under this guard (absent, or the untrusted record's ETag).
    Qualify { replace: CasGuard, why: &'static str },
}

/// Whether the record read (`None`: absent; `Err`: it did not decode, under that ETag) is trusted at
/// wall time `now_ms`, for `trust_ms` after it was written, by an instance at `here` whose wall clock
/// may be `skew_ms` behind the writer's.
pub fn judge(read: Option<(Result<QualifiedRecord>, String)>, here: &Here<'_>, now_ms: u64, trust_ms: u64, skew_ms: u64) -> Judged {
    let (record, etag) = match read {
        None => return Judged::Qualify { replace: CasGuard::Absent, why: "no record" },
        Some((Err(_), etag)) => return Judged::Qualify { replace: CasGuard::Match(etag), why: "corrupt" },
        Some((Ok(record), etag)) => (record, etag),
    };
    let replace = CasGuard::Match(etag);
    let why = if record.probe_revision != PROBE_REVISION {
        "another probe revision"
    } else if record.endpoint != here.endpoint || record.bucket != here.bucket || record.prefix != here.prefix {
        "foreign"
    } else if record.at_ms > now_ms.saturating_add(skew_ms) {
        "from the future"
    } else if now_ms >= record.at_ms.saturating_add(trust_ms) {
        "expired"
    } else {
        return Judged::Trusted { verdict: record.verdict, until_ms: record.at_ms.saturating_add(trust_ms) };
    };
    Judged::Qualify { replace, why }
}

/// The `store-violation` a refused verdict stands for.
pub fn violation(step: &str, detail: &str) -> Error {
    Error::StoreViolation(Box::new(Failure::new(step, detail)))
}

/// How a qualification ended, for [`Qualification`].
#[derive(Debug, Clone)]
pub enum Outcome {
    Qualified { report: ProbeReport, until_ms: u64 },
    /// Proof the store breaks conditional writes: kept, like a pass.
    Refused { error: Error, until_ms: u64 },
    /// Not proof of anything (transport, auth, "not an S3 API"): reported, not kept.
    Failed(Error),
}

/// Whose verdict counts (`qualify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A trusted record's verdict; a probe (recorded) only when there is none.
    Trust,
    /// This instance's own probe (`probe: "always"`); recorded, except over a trusted refusal: one
    /// instance's pass does not erase another's proof.
    Always,
    /// An explicit `probe()`: this probe's verdict replaces whatever is recorded.
    Explicit,
}

/// Reads the record (unless `read` is the record as read already, beside an instance's other first reads),
/// then, unless a trusted record settles it (`Mode::Trust`), probes and records the verdict. Every request
/// is under `budget`. Requests: 1 when a trusted record is read; else 1 + the probe + 1 (2 more when a
/// refusal must replace a pass recorded meanwhile).
#[allow(clippy::too_many_arguments)]
pub async fn qualify<E: Env>(store: &Store<E>, here: &Here<'_>, mode: Mode, trust_ms: u64, skew_ms: u64, budget: Budget, read: Option<RecordRead>) -> Outcome {
    let key = record_key(here.prefix);
    let read = match read {
        Some(read) => read,
        None => read_record(store, &key, budget).await,
    };
    let read = match read {
        Ok(read) => read,
        Err(e) => return Outcome::Failed(e),
    };
    let etag = read.as_ref().map(|(_, etag)| etag.clone());
    let now = store.env.wall_ms();
    let (replace, trusted_refusal) = match judge(read, here, now, trust_ms, skew_ms) {
        Judged::Trusted { verdict, until_ms } if mode == Mode::Trust => return kept(verdict, until_ms, &key),
        Judged::Trusted { verdict, .. } => {
            (CasGuard::Match(etag.unwrap_or_default()), matches!(verdict, Verdict::Refused { .. }))
        }
        Judged::Qualify { replace, .. } => (replace, false),
    };
    let (verdict, races) = match run_probe(store, here.prefix, budget).await {
        (Ok(report), races) => (Verdict::Qualified(report), races),
        (Err(Error::StoreViolation(f)), races) => (Verdict::Refused { step: f.key, detail: f.fault.detail }, races),
        (Err(e), _) => return Outcome::Failed(e),
    };
    // When the verdict was reached (the probe took a while): the start of its trust.
    let at = store.env.wall_ms();
    let keep_theirs = mode == Mode::Always && trusted_refusal && matches!(verdict, Verdict::Qualified(_));
    if !keep_theirs {
        record_verdict(store, &key, &verdict, at, here, races, replace, budget).await;
    }
    match verdict {
        Verdict::Qualified(report) => Outcome::Qualified { report, until_ms: at.saturating_add(trust_ms) },
        Verdict::Refused { step, detail } => {
            Outcome::Refused { error: violation(&step, &detail), until_ms: at.saturating_add(trust_ms) }
        }
    }
}

/// A trusted record's verdict, as this instance keeps it.
fn kept(verdict: Verdict, until_ms: u64, key: &str) -> Outcome {
    match verdict {
        Verdict::Qualified(report) => Outcome::Qualified { report, until_ms },
        Verdict::Refused { step, detail } => {
            let detail = format!("{detail} (recorded in {key}; probe() qualifies the store again)");
            Outcome::Refused { error: violation(&step, &detail), until_ms }
        }
    }
}

/// A GET of the record: `None` when absent, else what it decodes to and its ETag.
pub type RecordRead = Result<Option<(Result<QualifiedRecord>, String)>>;

/// GET of the record at `key` (`record_key`).
pub async fn read_record<E: Env>(store: &Store<E>, key: &str, budget: Budget) -> RecordRead {
    Ok(store.get(key, budget).await?.map(|(body, etag)| (decode_record(key, &body, &etag), etag)))
}

/// Writes the verdict's record under `guard`. Best effort: the verdict holds for this instance whether or
/// not it is recorded. When someone else's record got there first, theirs stands, except that a refusal
/// replaces a pass (conditionally, on the ETag just read).
#[allow(clippy::too_many_arguments)]
async fn record_verdict<E: Env>(
    store: &Store<E>,
    key: &str,
    verdict: &Verdict,
    at_ms: u64,
    here: &Here<'_>,
    races: u64,
    guard: CasGuard,
    budget: Budget,
) {
    let body = encode_record(verdict, at_ms, here, races);
    if !matches!(store.put_cas(key, &guard, body.clone(), budget).await, PutAnswer::Rejected) {
        return;
    }
    if !matches!(verdict, Verdict::Refused { .. }) {
        return;
    }
    if let Ok(Some((Ok(current), etag))) = read_record(store, key, budget).await {
        if matches!(current.verdict, Verdict::Qualified(_)) {
            store.put_cas(key, &CasGuard::Match(etag), body, budget).await;
        }
    }
}

/// Steps the probe's machine: sends what it asks for (each batch concurrently) and hands it the answers.
/// Also gives the number of races it ran, for the record.
pub async fn run_probe<E: Env>(store: &Store<E>, prefix: &str, budget: Budget) -> (Result<ProbeReport>, u64) {
    let (mut probe, mut next) = Probe::new(prefix, store.nonce());
    loop {
        let requests = match next {
            Next::Send(requests) => requests,
            // Turned away (429, 503 SlowDown): not applied; sent again after a pause, never at once.
            Next::Resend { attempt, requests } => {
                store.env.sleep(full_jitter_ms(attempt, store.env.random_u64(), u64::MAX)).await;
                requests
            }
            Next::Done(report) => return (Ok(report), probe.decided_races()),
            Next::Failed(e) => return (Err(e), probe.decided_races()),
        };
        let answers = join_all(requests.into_iter().map(|request| async move {
            match request {
                Request::Put { key, guard, body } => {
                    let (status, answer) = store.put_cas_status(&key, &guard, body, budget).await;
                    Answer::Written(status, answer)
                }
                Request::Get { key } => Answer::Read(store.get(&key, budget).await.map(|found| found.map(|(_, etag)| etag))),
                Request::Delete { key, guard } => {
                    let (status, answer) = store.delete(&key, guard.as_ref(), budget).await;
                    Answer::Written(status, answer)
                }
            }
        }));
        next = probe.step(answers.await);
    }
}

/// This instance's qualification: the verdict it keeps (a pass or a proven refusal, until its trust
/// expires) and the one qualification in flight, whose outcome every caller that waited for it shares (a
/// `join::Flight`, as lease writes, claims and the fleet marker use).
#[derive(Default)]
pub struct Qualification {
    /// The kept verdict and the wall time it expires at.
    kept: RefCell<Option<(Result<ProbeReport>, u64)>>,
    running: Single<Outcome>,
}

impl Qualification {
    /// The store's report from a pass this instance keeps and still trusts at `now_ms`, without asking the
    /// store (`None`: no pass kept, e.g. `probe: false`).
    pub fn kept(&self, now_ms: u64) -> Option<ProbeReport> {
        match &*self.kept.borrow() {
            Some((Ok(report), until_ms)) if now_ms < *until_ms => Some(report.clone()),
            _ => None,
        }
    }

    /// The store's verdict at wall time `now()`: a kept verdict still current, else the outcome of the
    /// qualification in flight (a failure that is not proof is its waiters' answer too; after a pass or a
    /// refusal they look again at what is kept), else this caller's own `run`. With `fresh` (an explicit
    /// `probe()`) nothing kept is enough: the caller runs its own, after any in flight.
    pub async fn share<F: Future<Output = Outcome>>(&self, now: impl Fn() -> u64, fresh: bool, run: impl FnOnce() -> F) -> Result<ProbeReport> {
        let joined = |_: &(), joined: Joined<Outcome>| match joined {
            Joined::Done(Outcome::Failed(e)) if !fresh => Some(Err(e)),
            // A pass or a refusal is kept: look at it again. `Abandoned`: its leader was cancelled.
            Joined::Done(_) | Joined::Abandoned | Joined::Impatient => None,
        };
        let ready = || {
            let kept = self.kept.borrow();
            let (verdict, until_ms) = kept.as_ref().filter(|_| !fresh)?;
            (now() < *until_ms).then(|| verdict.clone())
        };
        let lead = || async {
            // What was kept goes now, so that a cancelled lead leaves nothing kept.
            self.kept.borrow_mut().take();
            let outcome = run().await;
            let (kept, answer) = match &outcome {
                Outcome::Qualified { report, until_ms } => (Some((Ok(report.clone()), *until_ms)), Ok(report.clone())),
                Outcome::Refused { error, until_ms } => (Some((Err(error.clone()), *until_ms)), Err(error.clone())),
                Outcome::Failed(error) => (None, Err(error.clone())),
            };
            *self.kept.borrow_mut() = kept;
            (outcome, answer)
        };
        self.running.share((), Share { joined, ready, patience: core::future::pending }, lead).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;
    use core::pin::Pin;
    use core::task::{Context, Poll, Waker};

    const HERE: Here<'static> = Here { endpoint: "https://s3.example", bucket: "cells", prefix: "p/" };
    const DAY: u64 = 86_400_000;

    fn report() -> ProbeReport {
        ProbeReport { if_match_missing_status: 404, conditional_delete: true, etag_quoted: true }
    }

    fn read(body: &[u8]) -> Option<(Result<QualifiedRecord>, String)> {
        Some((decode_record("p/probe/qualified.json", body, "\"r\""), "\"r\"".into()))
    }

    #[test]
    fn a_record_round_trips_and_names_what_it_learnt() {
        let body = encode_record(&Verdict::Qualified(report()), 1_000, &HERE, 12);
        let text = String::from_utf8(body.clone()).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"format":1,"verdict":"qualified","at_ms":1000,"library":"celld-edge "#,
                env!("CARGO_PKG_VERSION"),
                r#"","probe_revision":4,"endpoint":"https://s3.example","bucket":"cells","prefix":"p/","#,
                r#""if_match_missing_status":404,"conditional_delete":true,"etag_quoted":true,"races":12}"#
            )
        );
        let rec = decode_record("k", &body, "\"r\"").unwrap();
        assert_eq!((rec.verdict, rec.at_ms, rec.etag.as_str()), (Verdict::Qualified(report()), 1_000, "\"r\""));
        let refused = Verdict::Refused { step: "concurrent-create".into(), detail: "2 of 2".into() };
        let rec = decode_record("k", &encode_record(&refused, 5, &HERE, 3), "\"r\"").unwrap();
        assert_eq!(rec.verdict, refused);
    }

    #[test]
    fn the_trust_rule() {
        let qualified = encode_record(&Verdict::Qualified(report()), 10 * DAY, &HERE, 12);
        let trusted = |now| judge(read(&qualified), &HERE, now, 7 * DAY, 1_000);
        assert_eq!(trusted(10 * DAY), Judged::Trusted { verdict: Verdict::Qualified(report()), until_ms: 17 * DAY });
        assert_eq!(trusted(17 * DAY - 1), Judged::Trusted { verdict: Verdict::Qualified(report()), until_ms: 17 * DAY });
        let replace = CasGuard::Match("\"r\"".into());
        assert_eq!(trusted(17 * DAY), Judged::Qualify { replace: replace.clone(), why: "expired" });
        // A reader whose clock is a little behind the writer's still trusts it; far behind, not.
        assert!(matches!(trusted(10 * DAY - 1_000), Judged::Trusted { .. }));
        assert_eq!(trusted(10 * DAY - 1_001), Judged::Qualify { replace: replace.clone(), why: "from the future" });
        // Elsewhere, it proves nothing here.
        for here in [
            Here { endpoint: "https://other.example", ..HERE },
            Here { bucket: "other", ..HERE },
            Here { prefix: "", ..HERE },
        ] {
            assert_eq!(judge(read(&qualified), &here, 10 * DAY, 7 * DAY, 0), Judged::Qualify { replace: replace.clone(), why: "foreign" });
        }
        let old = String::from_utf8(qualified.clone()).unwrap().replace("\"probe_revision\":4", "\"probe_revision\":3");
        assert_eq!(judge(read(old.as_bytes()), &HERE, 10 * DAY, 7 * DAY, 0).clone(), Judged::Qualify { replace: replace.clone(), why: "another probe revision" });
        assert_eq!(judge(None, &HERE, 0, 7 * DAY, 0), Judged::Qualify { replace: CasGuard::Absent, why: "no record" });
        // No trust period: never trusted.
        assert!(matches!(judge(read(&qualified), &HERE, 10 * DAY, 0, 0), Judged::Qualify { why: "expired", .. }));
    }

    #[test]
    fn anything_short_of_a_whole_record_is_corrupt_and_replaced_on_its_etag() {
        let full = String::from_utf8(encode_record(&Verdict::Qualified(report()), 10, &HERE, 12)).unwrap();
        let bad = [
            "".to_owned(),
            "<html></html>".to_owned(),
            "{}".to_owned(),
            full.replace("\"format\":1", "\"format\":2"),
            full.replace("qualified", "maybe"),
            full.replace(",\"etag_quoted\":true", ""),
            full.replace("404", "70000"),
            full.replace("\"at_ms\":10", "\"at_ms\":\"10\""),
            full.replace("\"bucket\":\"cells\"", "\"bucket\":\"cells\",\"bucket\":\"cells\""),
            full[..full.len() - 1].to_owned(),
        ];
        for body in bad {
            assert_eq!(decode_record("k", body.as_bytes(), "\"r\"").unwrap_err().code(), "corrupt-record", "{body}");
            assert_eq!(
                judge(read(body.as_bytes()), &HERE, 10, DAY, 0),
                Judged::Qualify { replace: CasGuard::Match("\"r\"".into()), why: "corrupt" }
            );
        }
        // Unknown fields are fine (a later library may add some).
        let more = full.replace("{\"format\":1", "{\"format\":1,\"note\":{\"x\":[1]}");
        assert!(decode_record("k", more.as_bytes(), "\"r\"").is_ok());
    }

    fn noop() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    /// A qualification that counts its runs and ends when the test hands it `outcome`.
    fn run<'a>(runs: &'a Cell<u32>, outcome: &'a RefCell<Option<Outcome>>) -> impl FnOnce() -> Pin<Box<dyn Future<Output = Outcome> + 'a>> {
        move || {
            runs.set(runs.get() + 1);
            Box::pin(core::future::poll_fn(move |_| match outcome.borrow_mut().take() {
                Some(o) => Poll::Ready(o),
                None => Poll::Pending,
            }))
        }
    }

    #[test]
    fn one_flight_at_a_time_its_failure_shared_then_retried() {
        let (q, now, runs, outcome) = (Qualification::default(), Cell::new(0), Cell::new(0), RefCell::new(None));
        let mut lead = Box::pin(q.share(|| now.get(), false, run(&runs, &outcome)));
        let mut waiter = Box::pin(q.share(|| now.get(), false, run(&runs, &outcome)));
        assert!(lead.as_mut().poll(&mut noop()).is_pending());
        assert!(waiter.as_mut().poll(&mut noop()).is_pending());
        assert_eq!(runs.get(), 1, "the second caller waits for the first");
        let e = Error::transport("k".into(), "reset");
        *outcome.borrow_mut() = Some(Outcome::Failed(e.clone()));
        assert_eq!(lead.as_mut().poll(&mut noop()), Poll::Ready(Err(e.clone())));
        assert_eq!(waiter.as_mut().poll(&mut noop()), Poll::Ready(Err(e)), "the waiter gets that flight's failure");
        // A caller that did not wait for it tries again.
        *outcome.borrow_mut() = Some(Outcome::Qualified { report: report(), until_ms: 100 });
        assert_eq!(Box::pin(q.share(|| now.get(), false, run(&runs, &outcome))).as_mut().poll(&mut noop()), Poll::Ready(Ok(report())));
        assert_eq!(runs.get(), 2);
        now.set(99);
        assert_eq!(Box::pin(q.share(|| now.get(), false, run(&runs, &outcome))).as_mut().poll(&mut noop()), Poll::Ready(Ok(report())));
        assert_eq!(runs.get(), 2, "kept until it expires");
        // `fresh` runs anyway; so does anyone once the verdict expired.
        assert!(Box::pin(q.share(|| now.get(), true, run(&runs, &outcome))).as_mut().poll(&mut noop()).is_pending());
        assert_eq!(runs.get(), 3);
        now.set(100);
        assert!(Box::pin(q.share(|| now.get(), false, run(&runs, &outcome))).as_mut().poll(&mut noop()).is_pending());
        assert_eq!(runs.get(), 4);
    }

    #[test]
    fn a_refusal_is_kept_and_a_dropped_leader_hands_the_lead_on() {
        let (q, now, runs, outcome) = (Qualification::default(), Cell::new(0), Cell::new(0), RefCell::new(None));
        let e = violation("concurrent-create", "2 of 2");
        *outcome.borrow_mut() = Some(Outcome::Refused { error: e.clone(), until_ms: 50 });
        assert_eq!(Box::pin(q.share(|| now.get(), false, run(&runs, &outcome))).as_mut().poll(&mut noop()), Poll::Ready(Err(e.clone())));
        now.set(10);
        assert_eq!(Box::pin(q.share(|| now.get(), false, run(&runs, &outcome))).as_mut().poll(&mut noop()), Poll::Ready(Err(e)));
        assert_eq!(runs.get(), 1);
        now.set(60);
        let mut lead = Box::pin(q.share(|| now.get(), false, run(&runs, &outcome)));
        let mut waiter = Box::pin(q.share(|| now.get(), false, run(&runs, &outcome)));
        assert!(lead.as_mut().poll(&mut noop()).is_pending());
        assert!(waiter.as_mut().poll(&mut noop()).is_pending());
        drop(lead);
        // An abandoned flight reports nothing: the waiter leads.
        assert!(waiter.as_mut().poll(&mut noop()).is_pending());
        assert_eq!(runs.get(), 3);
        *outcome.borrow_mut() = Some(Outcome::Qualified { report: report(), until_ms: 200 });
        assert_eq!(waiter.as_mut().poll(&mut noop()), Poll::Ready(Ok(report())));
    }
}
