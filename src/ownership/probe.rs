//! The store probe (SPEC §6): before trusting a store with ownership, check on scratch `probe/` keys that
//! it honours conditional writes — alone and raced by concurrent writers — that it is an S3 API at all,
//! and note the variants the rest of the library copes with (404 vs 412 for `If-Match` on a missing key,
//! conditional DELETE, ETag quoting). It also writes a key again after deleting it: a store that still
//! counts a deleted object (versitygw's versioned buckets refuse `If-None-Match: *` there and apply
//! `If-Match` with the deleted ETag) would strand a node id reused after `close()` and any cell record an
//! operator deleted. A violation is `store-violation` naming the step; a refusal (auth, "not an S3 API")
//! is that refusal; ambiguity is `transport`, never a pass.
//!
//! Budget: one qualification must fit a Workers Free request (50 subrequests) beside the lease and claim,
//! so the probe is one attempt of a fixed size (`Layout::requests`). Racy stores are caught by many small
//! races rather than a few wide bursts: on a store that checks a condition and writes in two steps, only
//! writers arriving within that gap of the first writer of a key can win beside it, so a burst's later
//! writers add little, while each fresh key is another independent chance (measured in
//! docs/conformance.md).
//!
//! It is a pure machine: [`Probe::step`] takes the answers to the requests it last asked for and says
//! what to send next, or the verdict. It must never do I/O, read a clock or draw randomness: the node
//! sends the requests and the nonce comes in as data.


use crate::error::{Error, Failure, Refusal, Result};
use crate::ownership::records::CasGuard;
use crate::s3::PutAnswer;

/// How the races are laid out: `keys` fresh keys, each raced by `writers` concurrent creates and then by
/// as many concurrent updates on the winner's ETag; each racer's body carries `pad` filler bytes (a longer
/// upload widens a check-then-write store's gap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub keys: usize,
    pub writers: usize,
    pub pad: usize,
}

impl Layout {
    /// What the library runs (chosen by the catch rates in docs/conformance.md): 41 requests.
    pub const DEFAULT: Layout = Layout { keys: 6, writers: 2, pad: 0 };

    /// Requests of a probe that passes: two race rounds, the creates' batch extras (`-a`, If-Match on a
    /// missing key, GET of a key never written), create-again, update-current, update-stale with the
    /// conditional DELETE and the DELETE of a raced key, that key's two writes after its deletion, and
    /// the cleanup.
    pub fn requests(&self) -> usize {
        2 * self.keys * self.writers + 3 + 1 + 1 + 3 + 2 + 1 + self.keys
    }

    /// Races that must be decided (one winner, the rest cleanly not applied) for a pass: two thirds. A
    /// few may be left open by 409s or timeouts (an open create leaves its key's update unraced), not most.
    pub fn decided_needed(&self) -> usize {
        (2 * self.keys * 2).div_ceil(3)
    }
}

/// What the probe learnt about a store that passed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
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

/// What the node must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Send these concurrently, then hand [`Probe::step`] their answers in the same order.
    Send(Vec<Request>),
    /// The store passed. The probe is over.
    Done(ProbeReport),
    /// The verdict is this error. The probe is over.
    Failed(Error),
}

/// Where the probe stands: each phase waits for the answers to the batch it sent.
#[derive(Debug, Clone)]
enum Phase {
    /// The creates' races, then the create of `-a`, `If-Match` on the missing `-m`, GET of the unwritten `-n`.
    Creates,
    /// A race of the creates broke the rule; create-again tells "ignores conditions" from "races".
    AgainAfterViolation(Error),
    /// Create-again on `-a` (must not apply), then the updates' races on each decided key.
    Updates,
    /// `If-Match` the create's ETag on `-a`: must apply.
    UpdateCurrent,
    /// `If-Match` the create's ETag again, now stale: must not apply; a DELETE `If-Match` that stale
    /// ETag, whose answer is reported; and the DELETE of a raced key, which must apply.
    UpdateStale,
    /// On the deleted key: `If-Match` its last ETag (must not apply) beside `If-None-Match: *` (must
    /// apply). Sent together: on an honest store each outcome holds whichever is served first.
    AfterDelete,
    /// Best-effort DELETE of every key written (a leftover costs bytes, not safety), then this verdict.
    Cleanup(Result<ProbeReport>),
}

#[derive(Debug, Clone, Copy)]
enum Round {
    Creates,
    Updates,
}

/// Why the probe stopped early: the store lied, refused, or answered ambiguously.
enum Stop {
    Violation(Error),
    Ambiguous(String),
    Refused(Error),
}

/// The probe of one store, under one prefix (keys `probe/cas-<nonce>-*`).
#[derive(Debug)]
pub struct Probe {
    prefix: String,
    /// In every key and in every body written. The bodies written to one key differ by their tags: a
    /// store gives equal bodies equal ETags.
    nonce: String,
    layout: Layout,
    phase: Phase,
    /// The create's ETag on `-a`: the guard of the single updates and the conditional DELETE.
    first: String,
    /// Per race key, the ETag of the one create that applied (`None`: left open).
    winners: Vec<Option<String>>,
    /// The first race key whose updates were decided, and the ETag it was left with: deleted, then
    /// written again.
    deleted: Option<(usize, String)>,
    decided: usize,
    etag_quoted: bool,
    if_match_missing_status: u16,
    conditional_delete: bool,
}

impl Probe {
    /// A probe under `prefix` with the library's layout; also the first requests to send.
    pub fn new(prefix: &str, nonce: String) -> (Probe, Next) {
        Probe::with_layout(prefix, nonce, Layout::DEFAULT)
    }

    /// A probe with another race layout (to measure layouts against real stores).
    pub fn with_layout(prefix: &str, nonce: String, layout: Layout) -> (Probe, Next) {
        let layout = Layout { keys: layout.keys.max(1), writers: layout.writers.max(2), pad: layout.pad };
        let probe = Probe {
            prefix: prefix.to_owned(),
            nonce,
            layout,
            phase: Phase::Creates,
            first: String::new(),
            winners: Vec::new(),
            deleted: None,
            decided: 0,
            etag_quoted: false,
            if_match_missing_status: 0,
            conditional_delete: false,
        };
        // The races first: requests go out in order, and the writers of one key should leave together.
        let mut batch = probe.races(Round::Creates);
        batch.push(probe.put("-a", CasGuard::Absent, "create"));
        // Any ETag will do on a key that was never written.
        batch.push(probe.put("-m", CasGuard::Match("\"celld-edge-probe\"".into()), "missing"));
        batch.push(Request::Get { key: probe.key("-n") });
        (probe, Next::Send(batch))
    }

    /// Takes the answers to the last [`Next::Send`], in its order; a missing answer counts as no answer
    /// (ambiguous). After `Done` or `Failed` the probe is over: do not step it again.
    pub fn step(&mut self, answers: Vec<Answer>) -> Next {
        match self.advance(answers) {
            Ok(next) => next,
            Err(Stop::Refused(e)) => Next::Failed(e),
            Err(Stop::Violation(e)) => self.cleanup(Err(e)),
            Err(Stop::Ambiguous(detail)) => {
                let detail = format!("probe inconclusive (it is tried again on the next write): {detail}");
                self.cleanup(Err(Error::transport(format!("{}probe/", self.prefix), detail)))
            }
        }
    }

    /// Races decided so far (what a pass rests on).
    pub fn decided_races(&self) -> u64 {
        self.decided as u64
    }

    fn key(&self, suffix: &str) -> String {
        format!("{}probe/cas-{}{suffix}", self.prefix, self.nonce)
    }

    fn race_key(&self, k: usize) -> String {
        self.key(&format!("-r{k}"))
    }

    fn body(&self, tag: &str, pad: usize) -> Vec<u8> {
        let mut body = format!("{{\"probe\":\"{tag}\",\"nonce\":\"{}\"", self.nonce);
        if pad > 0 {
            body.push_str(",\"pad\":\"");
            body.extend(core::iter::repeat_n('.', pad));
            body.push('"');
        }
        body.push('}');
        body.into_bytes()
    }

    fn put(&self, suffix: &str, guard: CasGuard, tag: &str) -> Request {
        Request::Put { key: self.key(suffix), guard, body: self.body(tag, 0) }
    }

    /// One round of races: every writer of each key, creating it, or updating it on the ETag its create
    /// left (keys whose create race stayed open are skipped).
    fn races(&self, round: Round) -> Vec<Request> {
        let mut batch = Vec::with_capacity(self.layout.keys * self.layout.writers + 4);
        for k in 0..self.layout.keys {
            let (guard, tag) = match (round, self.winners.get(k)) {
                (Round::Creates, _) => (CasGuard::Absent, "create"),
                (Round::Updates, Some(Some(etag))) => (CasGuard::Match(etag.clone()), "update"),
                (Round::Updates, _) => continue,
            };
            for i in 0..self.layout.writers {
                let body = self.body(&format!("{tag}-{k}-{i}"), self.layout.pad);
                batch.push(Request::Put { key: self.race_key(k), guard: guard.clone(), body });
            }
        }
        batch
    }

    fn cleanup(&mut self, verdict: Result<ProbeReport>) -> Next {
        let mut deletes = Vec::with_capacity(self.layout.keys + 1);
        for k in 0..self.layout.keys {
            deletes.push(Request::Delete { key: self.race_key(k), guard: None });
        }
        deletes.push(Request::Delete { key: self.key("-a"), guard: None });
        self.phase = Phase::Cleanup(verdict);
        Next::Send(deletes)
    }

    fn advance(&mut self, mut answers: Vec<Answer>) -> core::result::Result<Next, Stop> {
        // Taken from the back: the first asked is the first taken.
        answers.reverse();
        let phase = core::mem::replace(&mut self.phase, Phase::Creates);
        Ok(match phase {
            Phase::Creates => {
                // Every answer is taken before any verdict, in the batch's order.
                let mut race = None;
                for _ in 0..self.layout.keys {
                    let counted = self.count_race("concurrent-create", &mut answers);
                    self.winners.push(counted.as_ref().ok().cloned().flatten());
                    if let Err(stop) = counted {
                        if race.is_none() || matches!(stop, Stop::Refused(_)) {
                            race = Some(stop);
                        }
                    }
                }
                let (create, missing, never) = (written(answers.pop()).1, written(answers.pop()), answers.pop());
                // Something that is not S3 outranks any verdict on conditions.
                match never {
                    Some(Answer::Read(Ok(Some(_)))) => return Err(Stop::Refused(not_s3(&self.key("-n")))),
                    Some(Answer::Read(Err(e @ (Error::Auth(_) | Error::Request(_))))) => return Err(Stop::Refused(e)),
                    _ => {}
                }
                if let Some(Stop::Refused(e)) = race {
                    return Err(Stop::Refused(e));
                }
                self.first = applied("create", create)?;
                let missing = match missing {
                    (status, PutAnswer::Rejected) => {
                        self.if_match_missing_status = status;
                        None
                    }
                    (_, other) => Some(unexpected("if-match-missing", other, "If-Match on a missing key was ")),
                };
                match race.or(missing) {
                    // Create-again tells a store that ignores conditions from one that races.
                    Some(Stop::Violation(e)) => {
                        self.phase = Phase::AgainAfterViolation(e);
                        return Ok(Next::Send(vec![self.put("-a", CasGuard::Absent, "again")]));
                    }
                    Some(other) => return Err(other),
                    None => {}
                }
                match never {
                    Some(Answer::Read(Ok(None))) => {}
                    Some(Answer::Read(Err(e))) => return Err(Stop::Ambiguous(format!("read of a key never written: {e}"))),
                    _ => return Err(Stop::Ambiguous("read of a key never written: no answer".into())),
                }
                let mut batch = vec![self.put("-a", CasGuard::Absent, "again")];
                batch.extend(self.races(Round::Updates));
                self.phase = Phase::Updates;
                Next::Send(batch)
            }
            Phase::AgainAfterViolation(race) => {
                rejected("create-again", written(answers.pop()).1)?;
                return Err(Stop::Violation(race));
            }
            Phase::Updates => {
                rejected("create-again", written(answers.pop()).1)?;
                for k in 0..self.layout.keys {
                    if self.winners[k].is_some() {
                        if let Some(etag) = self.count_race("concurrent-update", &mut answers)? {
                            self.deleted.get_or_insert((k, etag));
                        }
                    }
                }
                if self.decided < self.layout.decided_needed() {
                    return Err(Stop::Ambiguous(format!("only {} of {} races were decided (409s or answers lost); the rest proves nothing", self.decided, 2 * self.layout.keys)));
                }
                self.phase = Phase::UpdateCurrent;
                Next::Send(vec![self.put("-a", CasGuard::Match(self.first.clone()), "update")])
            }
            Phase::UpdateCurrent => {
                self.etag_quoted = applied("update-current", written(answers.pop()).1)?.starts_with('"');
                self.phase = Phase::UpdateStale;
                let stale = CasGuard::Match(self.first.clone());
                let mut batch = vec![
                    self.put("-a", stale.clone(), "stale"),
                    Request::Delete { key: self.key("-a"), guard: Some(stale) },
                ];
                // Decided updates are what a pass rests on, so there is one to delete.
                if let Some((k, _)) = &self.deleted {
                    batch.push(Request::Delete { key: self.race_key(*k), guard: None });
                }
                Next::Send(batch)
            }
            Phase::UpdateStale => {
                rejected("update-stale", written(answers.pop()).1)?;
                self.conditional_delete = matches!(written(answers.pop()).1, PutAnswer::Rejected);
                let Some((k, etag)) = self.deleted.clone() else {
                    return Err(Stop::Ambiguous("no raced key was left to delete".into()));
                };
                match written(answers.pop()) {
                    (200..=299, _) => {}
                    (_, PutAnswer::Refused(e)) => return Err(Stop::Refused(e)),
                    (status, other) => {
                        return Err(Stop::Ambiguous(format!("delete of a raced key: {status} {}", describe(&other))))
                    }
                }
                self.phase = Phase::AfterDelete;
                let key = self.race_key(k);
                Next::Send(vec![
                    Request::Put { key: key.clone(), guard: CasGuard::Match(etag), body: self.body("stale-after-delete", 0) },
                    Request::Put { key, guard: CasGuard::Absent, body: self.body("create-after-delete", 0) },
                ])
            }
            Phase::AfterDelete => {
                let (stale, again) = (written(answers.pop()).1, written(answers.pop()).1);
                // The worse lie first: a write on a deleted object's token resurrects a stale record.
                if !matches!(stale, PutAnswer::Rejected) {
                    return Err(unexpected("stale-after-delete", stale, "If-Match with the ETag of a deleted object was "));
                }
                if !matches!(again, PutAnswer::Applied { .. }) {
                    return Err(unexpected(
                        "create-after-delete",
                        again,
                        "If-None-Match: * on a key just deleted was ",
                    ));
                }
                self.cleanup(Ok(ProbeReport {
                    if_match_missing_status: self.if_match_missing_status,
                    conditional_delete: self.conditional_delete,
                    etag_quoted: self.etag_quoted,
                }))
            }
            // The verdict was known before the cleanup: its answers change nothing.
            Phase::Cleanup(verdict) => match verdict {
                Ok(report) => Next::Done(report),
                Err(e) => Next::Failed(e),
            },
        })
    }

    /// The answers of one key's race: at most one may apply. `Ok(Some(etag))` when exactly one did and the
    /// rest cleanly did not (decided); `Ok(None)` when it stays open (a 409 and no winner, or a lost answer
    /// that could hide a second winner); a refusal is final.
    fn count_race(&mut self, step: &str, answers: &mut Vec<Answer>) -> core::result::Result<Option<String>, Stop> {
        let writers = self.layout.writers;
        let (mut winners, mut conflicts, mut unknown) = (Vec::new(), 0usize, None);
        let mut refused = None;
        for _ in 0..writers {
            match written(answers.pop()).1 {
                PutAnswer::Applied { etag } => winners.push(etag),
                PutAnswer::Rejected => {}
                // Neither applied: a 429 (R2: one write per second per key) is not a lost race.
                PutAnswer::Conflict { .. } | PutAnswer::Throttled(_) => conflicts += 1,
                PutAnswer::Ambiguous(fault) => unknown = Some(fault.detail),
                PutAnswer::Refused(e) => refused = Some(e),
            }
        }
        if let Some(e) = refused {
            return Err(Stop::Refused(e));
        }
        if winners.len() > 1 {
            return Err(violation(
                step,
                format!("{} of {writers} concurrent conditional writes to one key applied; at most 1 may", winners.len()),
            ));
        }
        if unknown.is_some() || (winners.is_empty() && conflicts > 0) {
            return Ok(None);
        }
        let Some(etag) = winners.pop() else {
            let what = if step == "concurrent-create" { "the key was absent" } else { "the ETag was current" };
            return Err(violation(step, format!("none of {writers} concurrent conditional writes applied, yet {what}")));
        };
        self.decided += 1;
        Ok(Some(etag))
    }
}

fn violation(step: &str, detail: String) -> Stop {
    Stop::Violation(Error::StoreViolation(Box::new(Failure::new(step, detail))))
}

/// A GET of a key nobody wrote answered with an object: whatever answered is not an S3 bucket.
fn not_s3(key: &str) -> Error {
    let message = "not an S3 API: a GET of a key never written answered 200 (check the endpoint)".to_owned();
    Error::Request(Box::new(Refusal { key: key.to_owned(), status: 200, code: String::new(), message, source: None }))
}

fn describe(a: &PutAnswer) -> String {
    match a {
        PutAnswer::Applied { etag } => format!("applied (ETag {etag})"),
        PutAnswer::Rejected => "rejected".into(),
        PutAnswer::Conflict { code } => format!("409 {code}"),
        PutAnswer::Throttled(fault) => format!("turned away ({})", fault.detail),
        PutAnswer::Ambiguous(fault) => format!("ambiguous ({})", fault.detail),
        PutAnswer::Refused(e) => format!("refused ({e})"),
    }
}

/// A write's answer; a missing one (or a read's) is no answer, which is ambiguous.
fn written(answer: Option<Answer>) -> (u16, PutAnswer) {
    match answer {
        Some(Answer::Written(status, answer)) => (status, answer),
        _ => (0, PutAnswer::Ambiguous("no answer".into())),
    }
}

/// A single write that must apply: its ETag.
fn applied(step: &str, answer: PutAnswer) -> core::result::Result<String, Stop> {
    match answer {
        PutAnswer::Applied { etag } => Ok(etag),
        other => Err(unexpected(step, other, "a write that must apply was ")),
    }
}

/// A single write whose condition did not hold.
fn rejected(step: &str, answer: PutAnswer) -> core::result::Result<(), Stop> {
    match answer {
        PutAnswer::Rejected => Ok(()),
        other => Err(unexpected(step, other, "a write whose condition did not hold was ")),
    }
}

/// Not the answer wanted: ambiguity and 409 are inconclusive, a refusal is final, anything else a lie.
fn unexpected(step: &str, answer: PutAnswer, lead: &str) -> Stop {
    match answer {
        PutAnswer::Ambiguous(fault) => Stop::Ambiguous(format!("{step}: {}", fault.detail)),
        // 409 is "not applied, try again" (R2 answers it under concurrent conditional writes): inconclusive.
        PutAnswer::Conflict { code } => Stop::Ambiguous(format!("{step}: 409 {code}")),
        // So is 429, a rate limit (R2: one write per second per key), never a verdict on conditions.
        PutAnswer::Throttled(fault) => Stop::Ambiguous(format!("{step}: {} (throttled)", fault.detail)),
        PutAnswer::Refused(e) => Stop::Refused(e),
        other => violation(step, format!("{lead}{}", describe(&other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Fault;
    use std::collections::BTreeMap;

    const L: Layout = Layout::DEFAULT;

    /// A store in memory that answers the probe's requests: honest unless told otherwise.
    struct Fake {
        /// key → ETag
        objects: BTreeMap<String, String>,
        writes: u32,
        /// Writers of one key, within one batch, that are checked against the state before the batch
        /// (1: honest; more: a store that checks and writes in two steps).
        winners: usize,
        ignore_conditions: bool,
        /// Deleted keys keep their last ETag for conditions (versitygw's versioned buckets).
        remember_deleted: bool,
        deleted: BTreeMap<String, String>,
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
            remember_deleted: false,
            deleted: BTreeMap::new(),
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
        let r = Box::new(Refusal { key: "k".into(), status, code: code.into(), message: "m".into(), source: None });
        PutAnswer::Refused(if status == 403 { Error::Auth(r) } else { Error::Request(r) })
    }

    fn holds(objects: &BTreeMap<String, String>, key: &str, guard: &CasGuard) -> bool {
        match guard {
            CasGuard::Absent => !objects.contains_key(key),
            CasGuard::Match(etag) => objects.get(key) == Some(etag),
        }
    }

    impl Fake {
        /// What a condition is checked against: the objects, and the deleted ones where they linger.
        fn seen(&self, state: &BTreeMap<String, String>) -> BTreeMap<String, String> {
            let mut seen = state.clone();
            if self.remember_deleted {
                for (k, e) in &self.deleted {
                    seen.entry(k.clone()).or_insert_with(|| e.clone());
                }
            }
            seen
        }
    }

    impl Fake {
        fn answer(&mut self, requests: Vec<Request>) -> Vec<Answer> {
            self.batches.push(requests.len());
            let before = self.objects.clone();
            let mut checked_early: BTreeMap<String, usize> = BTreeMap::new();
            let mut answers = Vec::new();
            for request in requests {
                let n = self.sent.len();
                self.sent.push(request.clone());
                let answer = match &request {
                    Request::Put { key, guard, .. } => {
                        let early = checked_early.entry(key.clone()).or_default();
                        let state = self.seen(if *early < self.winners { &before } else { &self.objects });
                        *early += 1;
                        if self.ignore_conditions || holds(&state, key, guard) {
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
                        if guard.as_ref().is_none_or(|g| self.ignore_conditions || holds(&self.objects, key, g)) {
                            if let Some(etag) = self.objects.remove(key) {
                                self.deleted.insert(key.clone(), etag);
                            }
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

    /// Steps the probe against `store` to its verdict.
    fn run(store: &mut Fake) -> Result<ProbeReport> {
        let (mut probe, mut next) = Probe::new("t/", "n0".into());
        loop {
            next = match next {
                Next::Send(requests) => probe.step(store.answer(requests)),
                Next::Done(report) => return Ok(report),
                Next::Failed(e) => return Err(e),
            };
        }
    }

    fn key_of(request: &Request) -> &str {
        match request {
            Request::Put { key, .. } | Request::Get { key } | Request::Delete { key, .. } => key,
        }
    }

    fn is_race(request: &Request) -> bool {
        matches!(request, Request::Put { key, .. } if key.contains("-r"))
    }

    /// The n-th request of the creates' batch that is not a race.
    const CREATE_A: usize = 12;
    const MISSING: usize = 13;
    const NEVER: usize = 14;

    #[test]
    fn an_honest_store_passes_within_the_budget_and_the_script_is_as_specified() {
        let mut store = fake();
        let report = run(&mut store).unwrap();
        assert_eq!(report, ProbeReport { if_match_missing_status: 404, conditional_delete: true, etag_quoted: true });
        let races = L.keys * L.writers;
        assert_eq!(store.batches, [races + 3, 1 + races, 1, 3, 2, L.keys + 1]);
        assert_eq!(store.sent.len(), L.requests());
        assert_eq!(L.requests(), 41);
        // The first raced key is deleted, then written on its last ETag and created again.
        let after = races + 3 + 1 + races + 1;
        assert_eq!(store.sent[after + 2], Request::Delete { key: "t/probe/cas-n0-r0".into(), guard: None });
        assert!(matches!(&store.sent[after + 3], Request::Put { key, guard: CasGuard::Match(e), .. }
            if key == "t/probe/cas-n0-r0" && e == "\"e8\""));
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
        assert_eq!(key_of(&store.sent[1]), "t/probe/cas-n0-r0");
        assert_eq!(key_of(&store.sent[2]), "t/probe/cas-n0-r1");
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
            "store violates conditional writes at step concurrent-create: 2 of 2 concurrent conditional writes to one key applied; at most 1 may"
        );
        // The creates, create-again (rejected: conditions are checked, just not atomically), the cleanup.
        assert_eq!(store.batches, [L.keys * L.writers + 3, 1, L.keys + 1]);
        assert!(store.objects.is_empty(), "{:?}", store.objects);
    }

    #[test]
    fn one_racing_key_of_the_last_round_is_enough() {
        let mut store = fake();
        // Honest except the last key's updates: both apply.
        store.fault = |n, r| {
            let last_update = 12 + 3 + 1 + 11;
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
        assert_eq!(err.to_string(), "store violates conditional writes at step create-again: a write whose condition did not hold was applied (ETag \"e15\")");
    }

    #[test]
    fn no_winner_of_a_race_is_a_violation_too() {
        let mut store = fake();
        store.fault = |n, r| (n < 2 && is_race(r)).then(|| put(412, PutAnswer::Rejected));
        let err = run(&mut store).unwrap_err();
        assert_eq!(err.to_string(), "store violates conditional writes at step concurrent-create: none of 2 concurrent conditional writes applied, yet the key was absent");
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
        assert_eq!(store.batches, [L.keys * L.writers + 3, L.keys + 1]);
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
        assert!(err.to_string().ends_with("only 0 of 12 races were decided (409s or answers lost); the rest proves nothing"), "{err}");
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
            "store violates conditional writes at step stale-after-delete: If-Match with the ETag of a deleted object was applied (ETag \"e15\")"
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
        store.fault = |n, r| (n == 16 && is_race(r)).then(|| put(0, PutAnswer::Ambiguous("timed out".into())));
        run(&mut store).unwrap();
        let deleted = store.sent.iter().position(|r| matches!(r, Request::Delete { key, guard: None } if key.contains("-r"))).unwrap();
        assert_eq!(key_of(&store.sent[deleted]), "t/probe/cas-n0-r1");
        assert!(matches!(&store.sent[deleted + 1], Request::Put { key, guard: CasGuard::Match(e), .. } if key == "t/probe/cas-n0-r1" && e == "\"e9\""));
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
        store.fault = |n, r| (n % 2 == 1 && n < 12 && is_race(r)).then(|| put(429, PutAnswer::Throttled(Fault::new("429 TooManyRequests"))));
        assert!(run(&mut store).is_ok());
        // On a single write: inconclusive, tried again later.
        let mut store = fake();
        store.fault = |n, _| (n == CREATE_A).then(|| put(429, PutAnswer::Throttled(Fault::new("429 TooManyRequests"))));
        let err = run(&mut store).unwrap_err();
        assert_eq!(err.code(), "transport");
        assert!(err.to_string().ends_with("create: 429 TooManyRequests (throttled)"), "{err}");
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
        assert!(matches!(next, Next::Send(ref r) if r.len() == L.keys * L.writers + 3));
        // No answer at all: inconclusive, cleanup, then transport.
        assert!(matches!(probe.step(Vec::new()), Next::Send(ref r) if r.len() == L.keys + 1));
        match probe.step(Vec::new()) {
            Next::Failed(e) => assert_eq!(e.code(), "transport", "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn layouts_scale_the_script() {
        let layout = Layout { keys: 3, writers: 4, pad: 10 };
        assert_eq!(layout.requests(), 2 * 12 + 8 + 3 + 3);
        let (_, next) = Probe::with_layout("", "n".into(), layout);
        let Next::Send(batch) = next else { panic!() };
        assert_eq!(batch.len(), 12 + 3);
        assert!(matches!(&batch[0], Request::Put { body, .. } if body.ends_with(br#","pad":".........."}"#)));
    }
}
