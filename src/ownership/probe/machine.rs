//! The probe's machine: which requests each phase sends and what their answers decide.

use super::verdict::{applied, describe, not_s3, rejected, unexpected, violation, written, Stop};
use super::{Answer, Layout, Next, ProbeReport, Request};
use crate::error::{Error, Result};
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
    /// Best-effort DELETE of every key written (a leftover costs bytes, not safety), then this verdict.
    Cleanup(Result<ProbeReport>),
}

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
