//! A store in memory that answers the probe's requests, for the probe's tests.

use super::*;
use crate::error::{Error, Fault, Refusal, Result};
use crate::ownership::records::CasGuard;
use crate::s3::PutAnswer;
use std::collections::BTreeMap;

/// A store in memory that answers the probe's requests: honest unless told otherwise.
pub(super) struct Fake {
    /// key → ETag
    pub(super) objects: BTreeMap<String, String>,
    pub(super) writes: u32,
    /// Writers of one key, within one batch, that are checked against the state before the batch
    /// (1: honest; more: a store that checks and writes in two steps).
    pub(super) winners: usize,
    pub(super) ignore_conditions: bool,
    /// Deleted keys keep their last ETag for conditions (versitygw's versioned buckets).
    pub(super) remember_deleted: bool,
    pub(super) deleted: BTreeMap<String, String>,
    pub(super) if_match_missing: u16,
    pub(super) quoted: bool,
    /// `If-Match` holds only when sent quoted (`Some(true)`) or only unquoted (`Some(false)`).
    pub(super) if_match_quoting: Option<bool>,
    /// `If-None-Match` on PUT is ignored (GCS's XML API); `If-Match` is honoured.
    pub(super) ignore_if_none_match: bool,
    /// R2: a write to a key written in this batch or the one before is answered 429.
    pub(super) r2: bool,
    written_in: BTreeMap<String, usize>,
    /// Replaces the answer to the n-th request (counted from 0 over the whole probe).
    pub(super) fault: fn(usize, &Request) -> Option<Answer>,
    pub(super) sent: Vec<Request>,
    pub(super) batches: Vec<usize>,
}

pub(super) fn fake() -> Fake {
    Fake {
        objects: BTreeMap::new(),
        writes: 0,
        winners: 1,
        ignore_conditions: false,
        remember_deleted: false,
        deleted: BTreeMap::new(),
        if_match_missing: 404,
        quoted: true,
        if_match_quoting: None,
        ignore_if_none_match: false,
        r2: false,
        written_in: BTreeMap::new(),
        fault: |_, _| None,
        sent: Vec::new(),
        batches: Vec::new(),
    }
}

pub(super) fn put(status: u16, answer: PutAnswer) -> Answer {
    Answer::Written(status, answer)
}

pub(super) fn refused(status: u16, code: &str) -> PutAnswer {
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
    /// Whether `guard` holds on `key` in `state`, by this store's dialect.
    fn holds_here(&self, state: &BTreeMap<String, String>, key: &str, guard: &CasGuard) -> bool {
        let bare = |e: &str| e.trim_matches('"').to_owned();
        match guard {
            CasGuard::Absent if self.ignore_if_none_match => true,
            CasGuard::Match(sent) if self.if_match_quoting.is_some() => {
                self.if_match_quoting == Some(sent.starts_with('"'))
                    && state.get(key).is_some_and(|e| bare(e) == bare(sent))
            }
            _ => holds(state, key, guard),
        }
    }

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
    pub(super) fn answer(&mut self, requests: Vec<Request>) -> Vec<Answer> {
        self.batches.push(requests.len());
        let batch = self.batches.len();
        let before = self.objects.clone();
        let mut checked_early: BTreeMap<String, usize> = BTreeMap::new();
        let mut answers = Vec::new();
        for request in requests {
            let n = self.sent.len();
            self.sent.push(request.clone());
            // A write turned away is not applied.
            let fault = (self.fault)(n, &request);
            if let Some(turned @ Answer::Written(_, PutAnswer::Throttled(_))) = fault {
                answers.push(turned);
                continue;
            }
            let answer = match &request {
                Request::Put { key, .. } if self.r2 && self.written_in.get(key).is_some_and(|b| b + 1 >= batch) => {
                    put(429, PutAnswer::Throttled(Fault::new("429 TooManyRequests")))
                }
                Request::Put { key, guard, .. } => {
                    let early = checked_early.entry(key.clone()).or_default();
                    let state = self.seen(if *early < self.winners { &before } else { &self.objects });
                    *early += 1;
                    if self.ignore_conditions || self.holds_here(&state, key, guard) {
                        self.writes += 1;
                        self.written_in.insert(key.clone(), batch);
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
                    if guard.as_ref().is_none_or(|g| self.ignore_conditions || self.holds_here(&self.objects, key, g)) {
                        if let Some(etag) = self.objects.remove(key) {
                            self.deleted.insert(key.clone(), etag);
                        }
                        put(204, PutAnswer::Applied { etag: String::new() })
                    } else {
                        put(412, PutAnswer::Rejected)
                    }
                }
            };
            answers.push(fault.unwrap_or(answer));
        }
        answers
    }
}

/// Steps the probe against `store` to its verdict.
pub(super) fn run(store: &mut Fake) -> Result<ProbeReport> {
    let (mut probe, mut next) = Probe::new("t/", "n0".into());
    loop {
        next = match next {
            Next::Send(requests) | Next::Resend { requests, .. } => probe.step(store.answer(requests)),
            Next::Done(report) => return Ok(report),
            Next::Failed(e) => return Err(e),
        };
    }
}

pub(super) fn key_of(request: &Request) -> &str {
    match request {
        Request::Put { key, .. } | Request::Get { key } | Request::Delete { key, .. } => key,
    }
}

pub(super) fn is_race(request: &Request) -> bool {
    matches!(request, Request::Put { key, .. } if key.contains("-r"))
}
