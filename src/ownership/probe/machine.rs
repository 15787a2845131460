//! The probe's machine: which requests each phase sends and what their answers decide.

use super::verdict::{applied, broken, describe, not_s3, rejected, unexpected, violation, written, Stop};
use super::{Answer, Layout, Next, ProbeReport, Request};
use crate::error::{Error, Fault, Result};
use crate::ownership::records::CasGuard;
use crate::s3::PutAnswer;

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
    /// An `If-Match` that had to apply did not: the same ETag quoted the other way (`quoting`) tells a
    /// store that honours only one form from one that lies; otherwise this violation stands.
    Quoting(Error),
    /// Best-effort DELETE of every key written (a leftover costs bytes, not safety), then this verdict.
    Cleanup(Result<ProbeReport>),
}

/// Resends of one batch's turned-away writes before the step is judged without them (the pauses' windows
/// double up to `throttle::CAP_MS`: about 20 s in all at most). A batch with two writes to one key (the
/// stale update beside the conditional DELETE) passes R2's one write per second per key one at a time.
const RESENDS_PER_BATCH: u32 = 8;
/// Resends in one probe: at R2's one write per second per key most steps wait once or twice (a step
/// writes a key its previous step wrote); a store that throttles every step gets an answer in bounded time.
const RESENDS_PER_PROBE: u32 = 40;

#[derive(Debug, Clone, Copy)]
enum Round {
    Creates,
    Updates,
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
    /// The batch last sent, its answers so far (by position), the positions sent again, and how often.
    batch: Vec<Request>,
    held: Vec<Option<Answer>>,
    resent: Vec<usize>,
    attempt: u32,
    resends: u32,
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
        let writers = layout.writers.max(2);
        let layout = Layout { keys: layout.keys.max(1), writers, wide: layout.wide.max(writers), pad: layout.pad };
        let mut probe = Probe {
            prefix: prefix.to_owned(),
            nonce,
            layout,
            phase: Phase::Creates,
            first: String::new(),
            winners: Vec::new(),
            deleted: None,
            decided: 0,
            batch: Vec::new(),
            held: Vec::new(),
            resent: Vec::new(),
            attempt: 0,
            resends: 0,
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
        let next = probe.send(batch);
        (probe, next)
    }

    /// Takes the answers to the last [`Next::Send`] or [`Next::Resend`], in its order; a missing answer
    /// counts as no answer (ambiguous). After `Done` or `Failed` the probe is over: do not step it again.
    pub fn step(&mut self, answers: Vec<Answer>) -> Next {
        let answers = match self.gather(answers) {
            Ok(answers) => answers,
            Err(resend) => return resend,
        };
        match self.advance(answers) {
            Ok(next) => next,
            Err(Stop::Refused(e)) => Next::Failed(e),
            Err(Stop::Violation(e) | Stop::Unmatched(e)) => self.cleanup(Err(e)),
            Err(Stop::Ambiguous(detail)) => {
                let detail = format!("probe inconclusive (it is tried again on the next write): {detail}");
                self.cleanup(Err(Error::transport(format!("{}probe/", self.prefix), detail)))
            }
            Err(Stop::Throttled(fault)) => {
                let detail = format!("probe inconclusive (it is tried again on the next write): {}", fault.detail);
                self.cleanup(Err(Error::throttled(format!("{}probe/", self.prefix), Fault { detail, ..fault })))
            }
        }
    }

    /// Sends a new batch.
    fn send(&mut self, batch: Vec<Request>) -> Next {
        self.batch = batch.clone();
        self.held.clear();
        self.resent.clear();
        self.attempt = 0;
        Next::Send(batch)
    }

    /// Puts the answers in their places in the batch, and asks for the writes the store turned away (429,
    /// 503 SlowDown: not applied) to be sent again after a pause, except a racer beside its key's winner
    /// (a decided loss). Once there is nothing to resend, or resends are spent, the whole batch's answers.
    fn gather(&mut self, answers: Vec<Answer>) -> core::result::Result<Vec<Answer>, Next> {
        let mut all = core::mem::take(&mut self.held);
        all.resize(self.batch.len(), None);
        let places: Vec<usize> =
            if self.resent.is_empty() { (0..self.batch.len()).collect() } else { core::mem::take(&mut self.resent) };
        for (place, answer) in places.into_iter().zip(answers) {
            all[place] = Some(match answer {
                // Only a 429 is known not to have landed; a 503 SlowDown may have been applied first (as
                // a proxy or store may do), and resending it would read as a violation: it stays
                // ambiguous here, as it did before throttling had a name (docs/load.md).
                Answer::Written(status, PutAnswer::Throttled(fault)) if status != 429 => {
                    Answer::Written(status, PutAnswer::Ambiguous(fault))
                }
                answer => answer,
            });
        }
        let turned: Vec<usize> = (0..all.len())
            .filter(|&i| matches!(all[i], Some(Answer::Written(_, PutAnswer::Throttled(_)))) && !self.lost_race(i, &all))
            .collect();
        let spent = self.attempt >= RESENDS_PER_BATCH || self.resends >= RESENDS_PER_PROBE;
        if !turned.is_empty() && !spent && !matches!(self.phase, Phase::Cleanup(_)) {
            self.attempt += 1;
            self.resends += 1;
            let requests = turned.iter().map(|&i| self.batch[i].clone()).collect();
            self.held = all;
            self.resent = turned;
            return Err(Next::Resend { attempt: self.attempt, requests });
        }
        Ok(all
            .into_iter()
            .zip(&self.batch)
            .map(|(answer, request)| match (answer, request) {
                (Some(answer), _) => answer,
                (None, Request::Get { key }) => Answer::Read(Err(Error::transport(key.clone(), "no answer"))),
                (None, _) => Answer::Written(0, PutAnswer::Ambiguous("no answer".into())),
            })
            .collect())
    }

    /// The `i`-th request of the batch is a racer and another writer of its key applied.
    fn lost_race(&self, i: usize, all: &[Option<Answer>]) -> bool {
        let racing = matches!(self.phase, Phase::Creates | Phase::Updates);
        let Request::Put { key, .. } = &self.batch[i] else { return false };
        racing
            && key.starts_with(&self.key("-r"))
            && self.batch.iter().zip(all).any(|(r, a)| {
                matches!((r, a), (Request::Put { key: k, .. }, Some(Answer::Written(_, PutAnswer::Applied { .. }))) if k == key)
            })
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
        let mut batch = Vec::with_capacity(self.layout.requests());
        for k in 0..self.layout.keys {
            let (guard, tag) = match (round, self.winners.get(k)) {
                (Round::Creates, _) => (CasGuard::Absent, "create"),
                (Round::Updates, Some(Some(etag))) => (CasGuard::Match(etag.clone()), "update"),
                (Round::Updates, _) => continue,
            };
            for i in 0..self.layout.writers_of(k) {
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
        self.send(deletes)
    }

    fn advance(&mut self, mut answers: Vec<Answer>) -> core::result::Result<Next, Stop> {
        // Taken from the back: the first asked is the first taken.
        answers.reverse();
        let phase = core::mem::replace(&mut self.phase, Phase::Creates);
        Ok(match phase {
            Phase::Creates => {
                // Every answer is taken before any verdict, in the batch's order.
                let mut race = None;
                for k in 0..self.layout.keys {
                    let counted = self.count_race("concurrent-create", k, &mut answers);
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
                        return Ok(self.send(vec![self.put("-a", CasGuard::Absent, "again")]));
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
                self.send(batch)
            }
            Phase::AgainAfterViolation(race) => {
                create_again(written(answers.pop()).1)?;
                return Err(Stop::Violation(race));
            }
            Phase::Updates => {
                create_again(written(answers.pop()).1)?;
                let mut unmatched = None;
                for k in 0..self.layout.keys {
                    if self.winners[k].is_some() {
                        match self.count_race("concurrent-update", k, &mut answers) {
                            Ok(Some(etag)) => _ = self.deleted.get_or_insert((k, etag)),
                            Ok(None) => {}
                            // No writer's If-Match held on a current ETag: its quoting may be the cause.
                            Err(Stop::Unmatched(e)) => _ = unmatched.get_or_insert(e),
                            Err(stop) => return Err(stop),
                        }
                    }
                }
                if let Some(e) = unmatched {
                    return Ok(self.quoting(e));
                }
                if self.decided < self.layout.decided_needed() {
                    return Err(Stop::Ambiguous(format!("only {} of {} races were decided (409s or answers lost); the rest proves nothing", self.decided, 2 * self.layout.keys)));
                }
                self.phase = Phase::UpdateCurrent;
                self.send(vec![self.put("-a", CasGuard::Match(self.first.clone()), "update")])
            }
            Phase::Quoting(violated) => {
                let etag = &self.first;
                let (sent, other) = (etag.clone(), requoted(etag));
                return Err(match written(answers.pop()).1 {
                    PutAnswer::Applied { .. } => {
                        let only = if other.starts_with('"') { "quoted" } else { "unquoted" };
                        violation(
                            "if-match-quoting",
                            format!(
                                "If-Match is honoured only {only}: the ETag sent back exactly as the store gave it ({sent}) did \
                                 not match, the same ETag as {other} did; ETags are opaque tokens sent back as received, so \
                                 this store cannot be used"
                            ),
                        )
                    }
                    _ => Stop::Violation(violated),
                });
            }
            Phase::UpdateCurrent => {
                let answer = written(answers.pop()).1;
                if matches!(answer, PutAnswer::Rejected) {
                    return Ok(self.quoting(broken("update-current", "a write that must apply was rejected".into())));
                }
                self.etag_quoted = applied("update-current", answer)?.starts_with('"');
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
                self.send(batch)
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
                self.send(vec![
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
    fn count_race(&mut self, step: &str, k: usize, answers: &mut Vec<Answer>) -> core::result::Result<Option<String>, Stop> {
        let writers = self.layout.writers_of(k);
        let (mut winners, mut conflicts, mut unknown) = (Vec::new(), 0usize, None);
        let mut refused = None;
        for _ in 0..writers {
            match written(answers.pop()).1 {
                PutAnswer::Applied { etag } => winners.push(etag),
                PutAnswer::Rejected => {}
                // Neither applied: a 429 (R2: one write per second per key) or 503 SlowDown is not a lost race.
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
            if step == "concurrent-create" {
                return Err(violation(step, format!("none of {writers} concurrent conditional writes applied, yet the key was absent")));
            }
            let detail = format!("none of {writers} concurrent conditional writes applied, yet the ETag was current");
            return Err(Stop::Unmatched(broken(step, detail)));
        };
        self.decided += 1;
        Ok(Some(etag))
    }

    /// An `If-Match` on the ETag `-a` still holds (`first`) did not apply: ask again with it quoted the
    /// other way, which only a store that honours one quoting applies.
    fn quoting(&mut self, violated: Error) -> Next {
        self.phase = Phase::Quoting(violated);
        self.send(vec![self.put("-a", CasGuard::Match(requoted(&self.first)), "quoting")])
    }
}

/// The ETag quoted the other way: without its double quotes when it has them, else in them.
fn requoted(etag: &str) -> String {
    match etag.strip_prefix('"').and_then(|e| e.strip_suffix('"')) {
        Some(bare) => bare.to_owned(),
        None => format!("\"{etag}\""),
    }
}

/// Create-again on an existing key must not apply; a store that applies it ignores `If-None-Match` on PUT.
fn create_again(answer: PutAnswer) -> core::result::Result<(), Stop> {
    match answer {
        PutAnswer::Applied { etag } => Err(violation(
            "create-again",
            format!(
                "If-None-Match: * on a key that exists was applied (ETag {etag}): the store ignores If-None-Match on \
                 PUT (GCS's S3-compatible XML API does; its preconditions are x-goog-if-generation-match, which this \
                 library does not send)"
            ),
        )),
        other => rejected("create-again", other),
    }
}
