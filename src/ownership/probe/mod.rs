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
//!
//! Here: the vocabulary (layout, requests, answers, report); `machine` the phases; `verdict` what an
//! answer amounts to; `fake` an in-memory store for the tests.

mod machine;
mod verdict;
#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

pub use machine::Probe;

use crate::error::{Error, Result};
use crate::ownership::records::CasGuard;
use crate::s3::PutAnswer;

/// How the races are laid out: `keys` fresh keys, the first raced by `wide` concurrent creates and the
/// others by `writers` each, and then each by as many concurrent updates on its winner's ETag; each
/// racer's body carries `pad` filler bytes (a longer upload widens a check-then-write store's gap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub keys: usize,
    pub writers: usize,
    /// Writers of the first key (SPEC §6: 8 concurrent creates of one key, 8 concurrent updates of one
    /// ETag); never fewer than `writers`.
    pub wide: usize,
    pub pad: usize,
}

impl Layout {
    /// What the library runs: one wide race of 8 (SPEC §6) and two pairs (small races catch a
    /// check-then-write store best, docs/conformance.md): 38 requests, so that a first claim with its
    /// qualification fits the 50 subrequests of a Workers Free request.
    pub const DEFAULT: Layout = Layout { keys: 3, writers: 2, wide: 8, pad: 0 };

    /// Writers of race key `k`.
    pub fn writers_of(&self, k: usize) -> usize {
        if k == 0 { self.wide.max(self.writers) } else { self.writers }
    }

    /// Requests of a probe that passes unthrottled: two race rounds, the creates' batch extras (`-a`,
    /// If-Match on a missing key, GET of a key never written), create-again, update-current, update-stale
    /// with the conditional DELETE and the DELETE of a raced key, that key's two writes after its deletion,
    /// and the cleanup. A write the store turns away (429, 503 SlowDown) is sent again after a pause.
    pub fn requests(&self) -> usize {
        let racers: usize = (0..self.keys).map(|k| self.writers_of(k)).sum();
        2 * racers + 3 + 1 + 1 + 3 + 2 + 1 + self.keys
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
    /// The store turned these away (429, 503 SlowDown): wait `throttle::full_jitter_ms(attempt, ..)`,
    /// then send them like [`Next::Send`]. Never a write whose answer may have landed.
    Resend { attempt: u32, requests: Vec<Request> },
    /// The store passed. The probe is over.
    Done(ProbeReport),
    /// The verdict is this error. The probe is over.
    Failed(Error),
}
