//! The store probe (SPEC §6): before trusting a store with ownership, check on a scratch `probe/` key that
//! it honours conditional writes — alone and under a burst of concurrent writers — and note the variants
//! the rest of the library copes with (404 vs 412 for `If-Match` on a missing key, conditional DELETE,
//! ETag quoting). A violation is `store-violation` naming the step; ambiguity is retried on fresh keys a
//! few times and then reported as `transport`, never as a pass.

use crate::prelude::*;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::env::Env;
use crate::error::{msg, Error, Failure, Result};
use crate::ownership::cas::{Budget, Store};
use crate::ownership::records::CasGuard;
use crate::s3::PutAnswer;

/// Concurrent writers in each burst.
pub const BURST: usize = 16;
/// Bursts of each kind: a racy store must produce exactly one winner every time, and one lucky burst
/// must not qualify it.
pub const BURST_ROUNDS: usize = 5;
/// Attempts on fresh keys before ambiguity is reported as `transport`.
const ATTEMPTS: usize = 3;

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

/// Why one attempt stopped: the store lied (final) or answered ambiguously (worth a fresh attempt).
enum Stop {
    Violation(Error),
    Ambiguous(String),
    Refused(Error),
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

/// Expects the answer to be `Applied` (returning its ETag) or `Rejected`, as `want_applied` says.
fn expect(step: &str, answer: PutAnswer, want_applied: bool) -> core::result::Result<Option<String>, Stop> {
    match (answer, want_applied) {
        (PutAnswer::Applied { etag }, true) => Ok(Some(etag)),
        (PutAnswer::Rejected, false) => Ok(None),
        (PutAnswer::Ambiguous { detail }, _) => Err(Stop::Ambiguous(msg!(step, ": ", detail))),
        // 409 is "not applied, try again" (R2 answers it under concurrent conditional writes): inconclusive.
        (PutAnswer::Conflict { code }, _) => Err(Stop::Ambiguous(msg!(step, ": 409 ", code))),
        (PutAnswer::Refused(Error::Request(r)), _) if r.status == 501 => {
            Err(violation(step, msg!("the store does not implement conditional writes: 501 ", r.code, ": ", r.message)))
        }
        (PutAnswer::Refused(e), _) => Err(Stop::Refused(e)),
        (other, true) => Err(violation(step, msg!("a write that must apply was ", describe(&other)))),
        (other, false) => Err(violation(step, msg!("a write whose condition did not hold was ", describe(&other)))),
    }
}

/// Runs futures concurrently on the caller's executor and collects their outputs in order.
struct JoinAll<F: Future> {
    futures: Vec<Pin<Box<F>>>,
    outputs: Vec<Option<F::Output>>,
}

// The futures are boxed and the outputs never pinned, so moving a JoinAll is fine.
impl<F: Future> Unpin for JoinAll<F> {}

impl<F: Future> Future for JoinAll<F> {
    type Output = Vec<F::Output>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut pending = false;
        for (fut, out) in this.futures.iter_mut().zip(this.outputs.iter_mut()) {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            return Poll::Pending;
        }
        Poll::Ready(this.outputs.iter_mut().map(|o| o.take().expect("every future finished")).collect())
    }
}

fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> JoinAll<F> {
    let futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let outputs = futures.iter().map(|_| None).collect();
    JoinAll { futures, outputs }
}

/// How many answers of a burst applied; ambiguity stops the attempt (it might hide a second winner).
fn count_burst(step: &str, answers: Vec<PutAnswer>) -> core::result::Result<usize, Stop> {
    let (mut applied, mut conflicts) = (0usize, 0usize);
    for a in answers {
        match a {
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
    Ok(applied)
}

async fn attempt<E: Env>(store: &Store<E>, base: &str, budget: Budget) -> core::result::Result<ProbeReport, Stop> {
    let key = msg!(base, "-a");
    let body = |tag: &str| msg!("{\"probe\":\"", tag, "\",\"nonce\":\"", store.nonce(), "\"}").into_bytes();
    // The four single writes, in order: (step, body tag, guard is the first write's ETag, must apply).
    // One awaited write in a loop instead of four written out: each would be a copy of its state machine.
    const SINGLES: [(&str, &str, bool, bool); 4] = [
        ("create", "create", false, true),
        ("create-again", "again", false, false),
        ("update-current", "update", true, true),
        ("update-stale", "stale", true, false),
    ];
    let mut etags: Vec<String> = Vec::new();
    for (step, tag, on_first, want_applied) in SINGLES {
        let guard = match (on_first, etags.first()) {
            (true, Some(first)) => CasGuard::Match(first.clone()),
            _ => CasGuard::Absent,
        };
        if let Some(etag) = expect(step, store.put_cas(&key, &guard, body(tag), budget).await, want_applied)? {
            etags.push(etag);
        }
    }
    // Both writes that must apply returned an ETag (`expect` answers one for an applied write).
    let [first, second] = etags.as_slice() else {
        return Err(violation("update-current", "a write that must apply answered no ETag".into()));
    };

    let mut scratch = vec![key.clone()];
    for round in 0..BURST_ROUNDS {
        let burst_key = msg!(base, "-b", round);
        scratch.push(burst_key.clone());
        // The creates race on an absent key; the updates on the token the winning create left.
        let mut guard = CasGuard::Absent;
        for (step, tag) in [("concurrent-create", "create"), ("concurrent-update", "update")] {
            let writes = (0..BURST).map(|i| store.put_cas(&burst_key, &guard, body(&msg!(tag, "-", i)), budget));
            count_burst(step, join_all(writes).await)?;
            if let CasGuard::Match(_) = guard {
                break;
            }
            guard = match store.get(&burst_key, budget).await {
                Ok(Some((_, etag))) => CasGuard::Match(etag),
                Ok(None) => return Err(violation(step, "a create applied, yet the key reads as absent".into())),
                Err(e) => return Err(Stop::Ambiguous(msg!("read after ", step, ": ", e))),
            };
        }
    }

    // Variants, reported without failing.
    let missing = msg!(base, "-missing");
    let if_match_missing_status = match store.put_cas_status(&missing, &CasGuard::Match(first.clone()), body("missing"), budget).await {
        (status, PutAnswer::Rejected) => status,
        (_, PutAnswer::Ambiguous { detail }) => return Err(Stop::Ambiguous(msg!("if-match-missing: ", detail))),
        (_, PutAnswer::Conflict { code }) => return Err(Stop::Ambiguous(msg!("if-match-missing: 409 ", code))),
        (_, PutAnswer::Refused(e)) => return Err(Stop::Refused(e)),
        (_, other) => return Err(violation("if-match-missing", msg!("If-Match on a missing key was ", describe(&other)))),
    };
    let conditional_delete = matches!(store.delete(&key, Some(&CasGuard::Match(first.clone())), budget).await, PutAnswer::Rejected);
    scratch.push(missing);
    // Cleanup is best effort (a leftover probe key costs bytes, not safety), and concurrent.
    join_all(scratch.iter().map(|k| store.delete(k, None, budget))).await;
    Ok(ProbeReport { if_match_missing_status, conditional_delete, etag_quoted: second.starts_with('"') })
}

/// Runs the probe under `prefix` (keys `probe/cas-<nonce>-*`).
pub async fn probe<E: Env>(store: &Store<E>, prefix: &str, budget: Budget) -> Result<ProbeReport> {
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        let base = msg!(prefix, "probe/cas-", store.nonce());
        match attempt(store, &base, budget).await {
            Ok(report) => return Ok(report),
            Err(Stop::Violation(e)) | Err(Stop::Refused(e)) => return Err(e),
            Err(Stop::Ambiguous(detail)) => last = detail,
        }
    }
    Err(Error::transport(msg!(prefix, "probe/"), msg!("probe stayed ambiguous after ", ATTEMPTS, " attempts; last: ", last)))
}
