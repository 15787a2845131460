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
    /// One per attempt not yet begun.
    nonces: core::array::IntoIter<String, ATTEMPTS>,
    /// This attempt's nonce, in its keys and in every body it writes (so no two bodies are equal).
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
            nonces: nonces.into_iter(),
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
    #[inline(never)]
    pub fn step(&mut self, answers: Vec<Answer>) -> Next {
        match self.advance(answers) {
            Ok(next) => next,
            Err(Stop::Violation(e) | Stop::Refused(e)) => Next::Failed(e),
            Err(Stop::Ambiguous(detail)) => self.begin(detail),
        }
    }

    /// A fresh attempt on fresh keys, or `transport` when none is left (`last`: why the previous stopped).
    fn begin(&mut self, last: String) -> Next {
        let Some(nonce) = self.nonces.next() else {
            let detail = msg!("probe stayed ambiguous after ", ATTEMPTS, " attempts; last: ", last);
            return Next::Failed(Error::transport(msg!(self.prefix, "probe/"), detail));
        };
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
        Next::Send((0..BURST).map(|i| self.put(&suffix, guard.clone(), &msg!(tag, "-", i))).collect())
    }

    fn advance(&mut self, answers: Vec<Answer>) -> core::result::Result<Next, Stop> {
        let mut answers = answers.into_iter();
        Ok(match self.phase {
            Phase::Create => {
                self.first = applied("create", written(answers.next()).1)?;
                self.send_put(Phase::CreateAgain, "-a", CasGuard::Absent, "again")
            }
            Phase::CreateAgain => {
                rejected("create-again", written(answers.next()).1)?;
                self.send_put(Phase::UpdateCurrent, "-a", self.on_first(), "update")
            }
            Phase::UpdateCurrent => {
                self.etag_quoted = applied("update-current", written(answers.next()).1)?.starts_with('"');
                self.send_put(Phase::UpdateStale, "-a", self.on_first(), "stale")
            }
            Phase::UpdateStale => {
                rejected("update-stale", written(answers.next()).1)?;
                self.send_burst(Phase::Creates(0), 0, CasGuard::Absent, "create")
            }
            Phase::Creates(round) => {
                count_burst("concurrent-create", answers)?;
                self.phase = Phase::Read(round);
                Next::Send(vec![Request::Get { key: self.burst_key(round) }])
            }
            Phase::Read(round) => match answers.next() {
                Some(Answer::Read(Ok(Some(etag)))) => self.send_burst(Phase::Updates(round), round, CasGuard::Match(etag), "update"),
                Some(Answer::Read(Ok(None))) => {
                    return Err(violation("concurrent-create", "a create applied, yet the key reads as absent".into()))
                }
                Some(Answer::Read(Err(e))) => return Err(Stop::Ambiguous(msg!("read after concurrent-create: ", e))),
                _ => return Err(Stop::Ambiguous("read after concurrent-create: no answer".into())),
            },
            Phase::Updates(round) if round + 1 < BURST_ROUNDS => {
                count_burst("concurrent-update", answers)?;
                self.send_burst(Phase::Creates(round + 1), round + 1, CasGuard::Absent, "create")
            }
            Phase::Updates(_) => {
                count_burst("concurrent-update", answers)?;
                self.send_put(Phase::IfMatchMissing, "-missing", self.on_first(), "missing")
            }
            Phase::IfMatchMissing => {
                self.if_match_missing_status = match written(answers.next()) {
                    (status, PutAnswer::Rejected) => status,
                    // Unlike the single writes, no 501 rule here: conditional writes already passed.
                    (_, other) => return Err(unexpected("if-match-missing", other, "If-Match on a missing key was ")),
                };
                self.phase = Phase::ConditionalDelete;
                Next::Send(vec![Request::Delete { key: self.key("-a"), guard: Some(self.on_first()) }])
            }
            Phase::ConditionalDelete => {
                self.conditional_delete = matches!(written(answers.next()).1, PutAnswer::Rejected);
                self.phase = Phase::Cleanup;
                let mut keys = vec![self.key("-a")];
                keys.extend((0..BURST_ROUNDS).map(|round| self.burst_key(round)));
                keys.push(self.key("-missing"));
                Next::Send(keys.into_iter().map(|key| Request::Delete { key, guard: None }).collect())
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
fn count_burst(step: &str, mut answers: impl Iterator<Item = Answer>) -> core::result::Result<(), Stop> {
    let (mut applied, mut conflicts) = (0usize, 0usize);
    for _ in 0..BURST {
        match written(answers.next()).1 {
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
        return Err(violation(step, msg!(applied, " of ", BURST, " concurrent conditional writes applied; exactly 1 may")));
    }
    Ok(())
}
