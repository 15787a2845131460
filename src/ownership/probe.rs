//! The store probe (SPEC §6): before trusting a store with ownership, check on a scratch `probe/` key that
//! it honours conditional writes — alone and under a burst of concurrent writers — and note the variants
//! the rest of the library copes with (404 vs 412 for `If-Match` on a missing key, conditional DELETE,
//! ETag quoting). A violation is `store-violation` naming the step; ambiguity is retried on fresh keys a
//! few times and then reported as `transport`, never as a pass.
//!
//! It is a pure machine: [`Probe::step`] takes the answers to the requests it last asked for and says
//! what to send next, or the verdict. It must never do I/O, read a clock or draw randomness: the driver
//! (`S3Ownership::probe`) sends the requests and the nonces come in as data.

use crate::prelude::*;

use crate::error::{msg, Error, Failure, Result};
use crate::ownership::records::CasGuard;
use crate::s3::PutAnswer;

/// Concurrent writers in each burst.
pub const BURST: usize = 16;
/// Bursts of each kind: a racy store must produce exactly one winner every time, and one lucky burst
/// must not qualify it.
pub const BURST_ROUNDS: usize = 5;
/// Attempts on fresh keys before ambiguity is reported as `transport`: one nonce each.
pub const ATTEMPTS: usize = 3;

/// What the probe learnt about a store that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    /// Status for `If-Match` on a missing key (404 on AWS, 412 on some stores).
    pub if_match_missing_status: u16,
    /// The store refused a DELETE whose `If-Match` did not hold.
    pub conditional_delete: bool,
    /// ETags come back in double quotes.
    pub etag_quoted: bool,
}

/// One request the probe asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// A conditional PUT.
    Put { key: String, guard: CasGuard, body: Vec<u8> },
    /// A GET; only the ETag matters.
    Get { key: String },
    /// A DELETE, conditional when guarded.
    Delete { key: String, guard: Option<CasGuard> },
}

/// The answer to one [`Request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// To a PUT or DELETE: the HTTP status (0 when there was none) and the answer classified.
    Written(u16, PutAnswer),
    /// To a GET: the ETag, or `None` when the key is absent.
    Read(Result<Option<String>>),
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Send these concurrently, then hand [`Probe::step`] their answers in the same order.
    Send(Vec<Request>),
    /// The store passed. The probe is over.
    Done(ProbeReport),
    /// The verdict is this error. The probe is over.
    Failed(Error),
}

/// Where an attempt stands: each phase waits for the answers to the requests it sent.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// `If-None-Match` on the fresh key: must apply.
    Create,
    /// The same again: must not.
    CreateAgain,
    /// `If-Match` the create's ETag: must apply.
    UpdateCurrent,
    /// `If-Match` the create's ETag again, now stale: must not.
    UpdateStale,
    /// A round's concurrent creates on a fresh key: exactly one may apply.
    Creates(usize),
    /// The read of that key, for its ETag.
    Read(usize),
    /// The round's concurrent updates `If-Match` that ETag: exactly one may apply.
    Updates(usize),
    /// `If-Match` on a missing key: must not apply; its status is reported.
    IfMatchMissing,
    /// DELETE `If-Match` a stale ETag: reported.
    ConditionalDelete,
    /// Best-effort DELETE of every key written (a leftover costs bytes, not safety).
    Cleanup,
}

/// Why one attempt stopped: the store lied (final), refused (final), or answered ambiguously (worth a
/// fresh attempt).
enum Stop {
    Violation(Error),
    Ambiguous(String),
    Refused(Error),
}

/// The probe of one store, under one prefix (keys `probe/cas-<nonce>-*`).
#[derive(Debug)]
pub struct Probe {
    prefix: String,
    /// One per attempt; those of attempts begun are taken.
    nonces: [String; ATTEMPTS],
    attempts: usize,
    /// This attempt's nonce, in its keys and in every body it writes. The bodies written to one key differ
    /// by their tags: a store gives equal bodies equal ETags.
    nonce: String,
    phase: Phase,
    /// The first create's ETag, the guard of the single updates and of the checks after the bursts.
    first: String,
    etag_quoted: bool,
    if_match_missing_status: u16,
    conditional_delete: bool,
}

impl Probe {
    /// A probe under `prefix`, with one random nonce per attempt; also the first requests to send.
    pub fn new(prefix: &str, nonces: [String; ATTEMPTS]) -> (Probe, Next) {
        let mut probe = Probe {
            prefix: prefix.to_owned(),
            nonces,
            attempts: 0,
            nonce: String::new(),
            phase: Phase::Create,
            first: String::new(),
            etag_quoted: false,
            if_match_missing_status: 0,
            conditional_delete: false,
        };
        let next = probe.begin(String::new());
        (probe, next)
    }

    /// Takes the answers to the last [`Next::Send`], in its order; a missing answer counts as no answer
    /// (ambiguous). After `Done` or `Failed` the probe is over: do not step it again.
    pub fn step(&mut self, answers: Vec<Answer>) -> Next {
        match self.advance(answers) {
            Ok(next) => next,
            Err(Stop::Violation(e) | Stop::Refused(e)) => Next::Failed(e),
            Err(Stop::Ambiguous(detail)) => self.begin(detail),
        }
    }

    /// A fresh attempt on fresh keys, or `transport` when none is left (`last`: why the previous stopped).
    fn begin(&mut self, last: String) -> Next {
        let Some(nonce) = self.nonces.get_mut(self.attempts).map(core::mem::take) else {
            let detail = msg!("probe stayed ambiguous after ", ATTEMPTS, " attempts; last: ", last);
            return Next::Failed(Error::transport(msg!(self.prefix, "probe/"), detail));
        };
        self.attempts += 1;
        self.nonce = nonce;
        self.send_put(Phase::Create, "-a", CasGuard::Absent, "create")
    }

    fn key(&self, suffix: &str) -> String {
        msg!(self.prefix, "probe/cas-", self.nonce, suffix)
    }

    fn burst_key(&self, round: usize) -> String {
        self.key(&msg!("-b", round))
    }

    fn put(&self, suffix: &str, guard: CasGuard, tag: &str) -> Request {
        let body = msg!("{\"probe\":\"", tag, "\",\"nonce\":\"", self.nonce, "\"}").into_bytes();
        Request::Put { key: self.key(suffix), guard, body }
    }

    fn send_put(&mut self, phase: Phase, suffix: &str, guard: CasGuard, tag: &str) -> Next {
        self.phase = phase;
        Next::Send(vec![self.put(suffix, guard, tag)])
    }

    fn on_first(&self) -> CasGuard {
        CasGuard::Match(self.first.clone())
    }

    /// A round's burst: `guard` absent for its creates, the read ETag for its updates.
    fn send_burst(&mut self, phase: Phase, round: usize, guard: CasGuard, tag: &str) -> Next {
        self.phase = phase;
        let suffix = msg!("-b", round);
        let mut writes = Vec::with_capacity(BURST);
        for i in 0..BURST {
            writes.push(self.put(&suffix, guard.clone(), &msg!(tag, "-", i)));
        }
        Next::Send(writes)
    }

    fn advance(&mut self, mut answers: Vec<Answer>) -> core::result::Result<Next, Stop> {
        // Taken from the back: the first asked is the first taken.
        answers.reverse();
        Ok(match self.phase {
            Phase::Create => {
                self.first = applied("create", written(answers.pop()).1)?;
                self.send_put(Phase::CreateAgain, "-a", CasGuard::Absent, "again")
            }
            Phase::CreateAgain => {
                rejected("create-again", written(answers.pop()).1)?;
                self.send_put(Phase::UpdateCurrent, "-a", self.on_first(), "update")
            }
            Phase::UpdateCurrent => {
                self.etag_quoted = applied("update-current", written(answers.pop()).1)?.starts_with('"');
                self.send_put(Phase::UpdateStale, "-a", self.on_first(), "stale")
            }
            Phase::UpdateStale => {
                rejected("update-stale", written(answers.pop()).1)?;
                self.send_burst(Phase::Creates(0), 0, CasGuard::Absent, "create")
            }
            Phase::Creates(round) => {
                count_burst("concurrent-create", &mut answers)?;
                self.phase = Phase::Read(round);
                Next::Send(vec![Request::Get { key: self.burst_key(round) }])
            }
            Phase::Read(round) => match answers.pop() {
                Some(Answer::Read(Ok(Some(etag)))) => {
                    self.send_burst(Phase::Updates(round), round, CasGuard::Match(etag), "update")
                }
                Some(Answer::Read(Ok(None))) => {
                    return Err(violation("concurrent-create", "a create applied, yet the key reads as absent".into()))
                }
                Some(Answer::Read(Err(e))) => return Err(Stop::Ambiguous(msg!("read after concurrent-create: ", e))),
                _ => return Err(Stop::Ambiguous("read after concurrent-create: no answer".into())),
            },
            Phase::Updates(round) => {
                count_burst("concurrent-update", &mut answers)?;
                if round + 1 < BURST_ROUNDS {
                    self.send_burst(Phase::Creates(round + 1), round + 1, CasGuard::Absent, "create")
                } else {
                    self.send_put(Phase::IfMatchMissing, "-missing", self.on_first(), "missing")
                }
            }
            Phase::IfMatchMissing => {
                self.if_match_missing_status = match written(answers.pop()) {
                    (status, PutAnswer::Rejected) => status,
                    // Unlike the single writes, no 501 rule here: conditional writes already passed.
                    (_, other) => return Err(unexpected("if-match-missing", other, "If-Match on a missing key was ")),
                };
                self.phase = Phase::ConditionalDelete;
                Next::Send(vec![Request::Delete { key: self.key("-a"), guard: Some(self.on_first()) }])
            }
            Phase::ConditionalDelete => {
                self.conditional_delete = matches!(written(answers.pop()).1, PutAnswer::Rejected);
                self.phase = Phase::Cleanup;
                let mut deletes = vec![Request::Delete { key: self.key("-a"), guard: None }];
                for round in 0..BURST_ROUNDS {
                    deletes.push(Request::Delete { key: self.burst_key(round), guard: None });
                }
                deletes.push(Request::Delete { key: self.key("-missing"), guard: None });
                Next::Send(deletes)
            }
            // The verdict was known before the cleanup: its answers change nothing.
            Phase::Cleanup => Next::Done(ProbeReport {
                if_match_missing_status: self.if_match_missing_status,
                conditional_delete: self.conditional_delete,
                etag_quoted: self.etag_quoted,
            }),
        })
    }
}

fn violation(step: &str, detail: String) -> Stop {
    Stop::Violation(Error::StoreViolation(Box::new(Failure { key: step.to_owned(), detail })))
}

fn describe(a: &PutAnswer) -> String {
    match a {
        PutAnswer::Applied { etag } => msg!("applied (ETag ", etag, ")"),
        PutAnswer::Rejected => "rejected".into(),
        PutAnswer::Conflict { code } => msg!("409 ", code),
        PutAnswer::Ambiguous { detail } => msg!("ambiguous (", detail, ")"),
        PutAnswer::Refused(e) => msg!("refused (", e, ")"),
    }
}

/// A write's answer; a missing one (or a read's) is no answer, which is ambiguous.
fn written(answer: Option<Answer>) -> (u16, PutAnswer) {
    match answer {
        Some(Answer::Written(status, answer)) => (status, answer),
        _ => (0, PutAnswer::Ambiguous { detail: "no answer".into() }),
    }
}

/// A single write that must apply: its ETag.
fn applied(step: &str, answer: PutAnswer) -> core::result::Result<String, Stop> {
    match answer {
        PutAnswer::Applied { etag } => Ok(etag),
        other => Err(single_failed(step, other, "a write that must apply was ")),
    }
}

/// A single write whose condition did not hold.
fn rejected(step: &str, answer: PutAnswer) -> core::result::Result<(), Stop> {
    match answer {
        PutAnswer::Rejected => Ok(()),
        other => Err(single_failed(step, other, "a write whose condition did not hold was ")),
    }
}

fn single_failed(step: &str, answer: PutAnswer, lead: &str) -> Stop {
    match answer {
        PutAnswer::Refused(Error::Request(r)) if r.status == 501 => {
            violation(step, msg!("the store does not implement conditional writes: 501 ", r.code, ": ", r.message))
        }
        other => unexpected(step, other, lead),
    }
}

/// Not the answer wanted: ambiguity and 409 are inconclusive, a refusal is final, anything else a lie.
fn unexpected(step: &str, answer: PutAnswer, lead: &str) -> Stop {
    match answer {
        PutAnswer::Ambiguous { detail } => Stop::Ambiguous(msg!(step, ": ", detail)),
        // 409 is "not applied, try again" (R2 answers it under concurrent conditional writes): inconclusive.
        PutAnswer::Conflict { code } => Stop::Ambiguous(msg!(step, ": 409 ", code)),
        PutAnswer::Refused(e) => Stop::Refused(e),
        other => violation(step, msg!(lead, describe(&other))),
    }
}

/// How many answers of a burst applied must be exactly one; ambiguity stops the attempt (it might hide
/// a second winner).
fn count_burst(step: &str, answers: &mut Vec<Answer>) -> core::result::Result<(), Stop> {
    let (mut applied, mut conflicts) = (0usize, 0usize);
    for _ in 0..BURST {
        match written(answers.pop()).1 {
            PutAnswer::Applied { .. } => applied += 1,
            PutAnswer::Rejected => {}
            PutAnswer::Conflict { .. } => conflicts += 1,
            PutAnswer::Ambiguous { detail } => return Err(Stop::Ambiguous(msg!(step, ": ", detail))),
            PutAnswer::Refused(e) => return Err(Stop::Refused(e)),
        }
    }
    // No winner because the store said "conflict, try again" is not a lie, just no answer.
    if applied == 0 && conflicts > 0 {
        return Err(Stop::Ambiguous(msg!(step, ": no write applied, ", conflicts, " answered 409")));
    }
    if applied != 1 {
        return Err(violation(
            step,
            msg!(applied, " of ", BURST, " concurrent conditional writes applied; exactly 1 may"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Refusal;
    use std::collections::BTreeMap;

    /// A store in memory that answers the probe's requests: honest unless told otherwise.
    struct Fake {
        /// key → ETag
        objects: BTreeMap<String, String>,
        writes: u32,
        /// Writers of one concurrent batch that win when their guard held before the batch (1: honest).
        winners: usize,
        ignore_conditions: bool,
        if_match_missing: u16,
        quoted: bool,
        /// Replaces the answer to the n-th request (counted from 0 over the whole probe).
        fault: fn(usize, &Request) -> Option<Answer>,
        sent: Vec<Request>,
        batches: Vec<usize>,
    }

    fn fake() -> Fake {
        Fake {
            objects: BTreeMap::new(),
            writes: 0,
            winners: 1,
            ignore_conditions: false,
            if_match_missing: 404,
            quoted: true,
            fault: |_, _| None,
            sent: Vec::new(),
            batches: Vec::new(),
        }
    }

    fn put(status: u16, answer: PutAnswer) -> Answer {
        Answer::Written(status, answer)
    }

    fn refused(status: u16, code: &str) -> PutAnswer {
        let r = Box::new(Refusal { key: "k".into(), status, code: code.into(), message: "m".into() });
        PutAnswer::Refused(if status == 403 { Error::Auth(r) } else { Error::Request(r) })
    }

    impl Fake {
        fn holds(&self, key: &str, guard: &CasGuard) -> bool {
            self.ignore_conditions
                || match guard {
                    CasGuard::Absent => !self.objects.contains_key(key),
                    CasGuard::Match(etag) => self.objects.get(key) == Some(etag),
                }
        }

        fn answer(&mut self, requests: Vec<Request>) -> Vec<Answer> {
            self.batches.push(requests.len());
            // A racy store checks every writer of a batch against the state before it.
            let before = self.objects.clone();
            let mut won = 0;
            let mut answers = Vec::new();
            for request in requests {
                let n = self.sent.len();
                self.sent.push(request.clone());
                let answer = match &request {
                    Request::Put { key, guard, .. } => {
                        let racy = self.winners > 1 && won < self.winners;
                        let held = if racy {
                            let now = core::mem::replace(&mut self.objects, before.clone());
                            let held = self.holds(key, guard);
                            self.objects = now;
                            held
                        } else {
                            self.holds(key, guard)
                        };
                        if held {
                            won += 1;
                            self.writes += 1;
                            let etag =
                                if self.quoted { format!("\"e{}\"", self.writes) } else { format!("e{}", self.writes) };
                            self.objects.insert(key.clone(), etag.clone());
                            put(200, PutAnswer::Applied { etag })
                        } else if !self.objects.contains_key(key) && matches!(guard, CasGuard::Match(_)) {
                            put(self.if_match_missing, PutAnswer::Rejected)
                        } else {
                            put(412, PutAnswer::Rejected)
                        }
                    }
                    Request::Get { key } => Answer::Read(Ok(self.objects.get(key).cloned())),
                    Request::Delete { key, guard } => {
                        if guard.as_ref().is_none_or(|g| self.holds(key, g)) {
                            self.objects.remove(key);
                            put(204, PutAnswer::Applied { etag: String::new() })
                        } else {
                            put(412, PutAnswer::Rejected)
                        }
                    }
                };
                answers.push((self.fault)(n, &request).unwrap_or(answer));
            }
            answers
        }
    }

    fn nonces() -> [String; ATTEMPTS] {
        ["n0".into(), "n1".into(), "n2".into()]
    }

    /// Steps the probe against `store` to its verdict.
    fn run(store: &mut Fake) -> Result<ProbeReport> {
        let (mut probe, mut next) = Probe::new("t/", nonces());
        loop {
            next = match next {
                Next::Send(requests) => probe.step(store.answer(requests)),
                Next::Done(report) => return Ok(report),
                Next::Failed(e) => return Err(e),
            };
        }
    }

    fn is_first_create(request: &Request) -> bool {
        matches!(request, Request::Put { key, guard: CasGuard::Absent, body } if key.ends_with("-a") && body.starts_with(b"{\"probe\":\"create\""))
    }

    fn key_of(request: &Request) -> &str {
        match request {
            Request::Put { key, .. } | Request::Get { key } | Request::Delete { key, .. } => key,
        }
    }

    #[test]
    fn an_honest_store_passes_and_the_script_is_as_specified() {
        let mut store = fake();
        let report = run(&mut store).unwrap();
        assert_eq!(report, ProbeReport { if_match_missing_status: 404, conditional_delete: true, etag_quoted: true });
        // Four single writes, then per round a burst, a read and a burst, then If-Match-missing, the
        // conditional DELETE and one concurrent cleanup of every key written.
        let mut batches = vec![1, 1, 1, 1];
        for _ in 0..BURST_ROUNDS {
            batches.extend([BURST, 1, BURST]);
        }
        batches.extend([1, 1, 2 + BURST_ROUNDS]);
        assert_eq!(store.batches, batches);
        assert_eq!(
            store.sent[0],
            Request::Put {
                key: "t/probe/cas-n0-a".into(),
                guard: CasGuard::Absent,
                body: br#"{"probe":"create","nonce":"n0"}"#.to_vec()
            }
        );
        assert_eq!(
            store.sent[2],
            Request::Put {
                key: "t/probe/cas-n0-a".into(),
                guard: CasGuard::Match("\"e1\"".into()),
                body: br#"{"probe":"update","nonce":"n0"}"#.to_vec(),
            }
        );
        assert_eq!(store.sent[4 + BURST], Request::Get { key: "t/probe/cas-n0-b0".into() });
        // The updates race on the ETag the read returned (the winning create's).
        assert!(matches!(&store.sent[5 + BURST], Request::Put { guard: CasGuard::Match(e), .. } if e == "\"e3\""));
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
    fn a_store_letting_two_writers_win_a_burst_is_a_violation() {
        let mut store = fake();
        store.winners = 2;
        let err = run(&mut store).unwrap_err();
        assert_eq!(err.code(), "store-violation");
        assert_eq!(
            err.to_string(),
            "store violates conditional writes at step concurrent-create: 2 of 16 concurrent conditional writes applied; exactly 1 may"
        );
        assert_eq!(store.batches.len(), 5, "stopped at the first burst, with no retry and no cleanup");
    }

    #[test]
    fn a_lucky_first_round_does_not_qualify_a_racy_store() {
        let mut store = fake();
        // Honest until the last round's updates.
        store.fault = |n, _| {
            let last_updates = 4 + (BURST_ROUNDS - 1) * (2 * BURST + 1) + BURST + 1;
            (n == last_updates + 3).then(|| put(200, PutAnswer::Applied { etag: "\"x\"".into() }))
        };
        let err = run(&mut store).unwrap_err();
        assert_eq!(err.to_string(), "store violates conditional writes at step concurrent-update: 2 of 16 concurrent conditional writes applied; exactly 1 may");
    }

    #[test]
    fn a_store_ignoring_conditions_fails_at_create_again() {
        let mut store = fake();
        store.ignore_conditions = true;
        let err = run(&mut store).unwrap_err();
        assert_eq!(err.to_string(), "store violates conditional writes at step create-again: a write whose condition did not hold was applied (ETag \"e2\")");
    }

    #[test]
    fn ambiguity_is_retried_on_fresh_keys_and_a_clean_attempt_passes() {
        let mut store = fake();
        store.fault = |n, r| {
            (n == 0 && is_first_create(r)).then(|| put(503, PutAnswer::Ambiguous { detail: "503 SlowDown".into() }))
        };
        assert!(run(&mut store).is_ok());
        assert_eq!(key_of(&store.sent[1]), "t/probe/cas-n1-a", "the second attempt starts on its own keys");
        assert!(store.sent[1..].iter().all(|r| key_of(r).starts_with("t/probe/cas-n1-")));
        // The first attempt's key (its create did land here) is left: cleanup follows a pass only.
        assert_eq!(store.objects.keys().collect::<Vec<_>>(), ["t/probe/cas-n0-a"]);
    }

    #[test]
    fn ambiguity_on_every_attempt_is_transport_never_a_pass() {
        let mut store = fake();
        store.fault = |_, r| is_first_create(r).then(|| put(0, PutAnswer::Ambiguous { detail: "timed out".into() }));
        let err = run(&mut store).unwrap_err();
        assert_eq!(err.code(), "transport");
        assert_eq!(
            err.to_string(),
            "transport failure on t/probe/: probe stayed ambiguous after 3 attempts; last: create: timed out"
        );
        assert_eq!(store.sent.len(), ATTEMPTS);
    }

    #[test]
    fn a_409_is_inconclusive_and_retried() {
        // On a single write.
        let mut store = fake();
        store.fault =
            |n, _| (n == 1).then(|| put(409, PutAnswer::Conflict { code: "ConditionalRequestConflict".into() }));
        assert!(run(&mut store).is_ok());
        assert_eq!(key_of(store.sent.last().unwrap()), "t/probe/cas-n1-missing");
        // A whole burst answering 409: no winner is no answer, not a lie.
        let mut store = fake();
        store.fault = |n, r| {
            ((4..4 + BURST).contains(&n) && key_of(r).starts_with("t/probe/cas-n0-b0"))
                .then(|| put(409, PutAnswer::Conflict { code: "OperationAborted".into() }))
        };
        assert!(run(&mut store).is_ok());
        assert!(store.sent.iter().any(|r| key_of(r).starts_with("t/probe/cas-n1-")));
        // Three times over: the last detail is the 409.
        let mut store = fake();
        store.fault =
            |_, r| is_first_create(r).then(|| put(409, PutAnswer::Conflict { code: "OperationAborted".into() }));
        assert_eq!(run(&mut store).unwrap_err().to_string(), "transport failure on t/probe/: probe stayed ambiguous after 3 attempts; last: create: 409 OperationAborted");
        let mut store = fake();
        store.fault = |_, r| match r {
            Request::Put { key, .. } if key.ends_with("-b0") => {
                Some(put(409, PutAnswer::Conflict { code: "OperationAborted".into() }))
            }
            _ => None,
        };
        assert_eq!(
            run(&mut store).unwrap_err().to_string(),
            "transport failure on t/probe/: probe stayed ambiguous after 3 attempts; last: concurrent-create: no write applied, 16 answered 409"
        );
    }

    #[test]
    fn a_501_on_a_single_write_is_a_violation_elsewhere_a_refusal() {
        let mut store = fake();
        store.fault = |n, _| (n == 0).then(|| put(501, refused(501, "NotImplemented")));
        let err = run(&mut store).unwrap_err();
        assert_eq!(err.code(), "store-violation");
        assert_eq!(err.to_string(), "store violates conditional writes at step create: the store does not implement conditional writes: 501 NotImplemented: m");
        // In a burst or on If-Match-missing the refusal is reported as it came.
        for at in ["-b0", "-missing"] {
            let mut store = fake();
            store.fault = if at == "-b0" {
                |_, r| {
                    matches!(r, Request::Put { key, .. } if key.ends_with("-b0"))
                        .then(|| put(501, refused(501, "NotImplemented")))
                }
            } else {
                |_, r| {
                    matches!(r, Request::Put { key, .. } if key.ends_with("-missing"))
                        .then(|| put(501, refused(501, "NotImplemented")))
                }
            };
            assert_eq!(run(&mut store).unwrap_err().code(), "request", "{at}");
        }
    }

    #[test]
    fn a_refusal_is_final_not_retried() {
        let mut store = fake();
        store.fault = |n, _| (n == 2).then(|| put(403, refused(403, "AccessDenied")));
        assert_eq!(run(&mut store).unwrap_err().code(), "auth");
        assert_eq!(store.sent.len(), 3);
    }

    #[test]
    fn if_match_on_a_missing_key_must_not_apply() {
        let mut store = fake();
        store.fault = |_, r| match r {
            Request::Put { key, .. } if key.ends_with("-missing") => {
                Some(put(200, PutAnswer::Applied { etag: "\"m\"".into() }))
            }
            _ => None,
        };
        assert_eq!(
            run(&mut store).unwrap_err().to_string(),
            "store violates conditional writes at step if-match-missing: If-Match on a missing key was applied (ETag \"m\")"
        );
    }

    #[test]
    fn the_read_after_a_burst_decides_too() {
        // The key reads as absent after a create applied: a lie.
        let mut store = fake();
        store.fault = |_, r| matches!(r, Request::Get { .. }).then(|| Answer::Read(Ok(None)));
        assert_eq!(
            run(&mut store).unwrap_err().to_string(),
            "store violates conditional writes at step concurrent-create: a create applied, yet the key reads as absent"
        );
        // The read failed: ambiguous, so a fresh attempt.
        let mut store = fake();
        store.fault = |n, r| {
            (n < 40 && matches!(r, Request::Get { .. }))
                .then(|| Answer::Read(Err(Error::transport("k".into(), "reset".into()))))
        };
        assert!(run(&mut store).is_ok());
        assert!(store.sent.iter().any(|r| key_of(r).starts_with("t/probe/cas-n1-")));
    }

    #[test]
    fn missing_answers_count_as_no_answer() {
        let (mut probe, next) = Probe::new("t/", nonces());
        assert!(matches!(next, Next::Send(ref r) if r.len() == 1));
        // No answer to the create, nor a read's in its place: each a fresh attempt, then transport.
        assert!(matches!(probe.step(Vec::new()), Next::Send(ref r) if key_of(&r[0]) == "t/probe/cas-n1-a"));
        assert!(
            matches!(probe.step(vec![Answer::Read(Ok(None))]), Next::Send(ref r) if key_of(&r[0]) == "t/probe/cas-n2-a")
        );
        match probe.step(Vec::new()) {
            Next::Failed(e) => assert_eq!(
                e.to_string(),
                "transport failure on t/probe/: probe stayed ambiguous after 3 attempts; last: create: no answer"
            ),
            other => panic!("{other:?}"),
        }
    }
}
