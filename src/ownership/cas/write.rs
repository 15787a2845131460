//! Writes: one conditional PUT or DELETE, classified and never retried here, and the pause after a
//! throttled one.

use super::{Budget, Departure, Store};
use crate::env::Env;
use crate::ownership::clock::authority_left_ms;
use crate::ownership::records::CasGuard;
use crate::ownership::throttle::{full_jitter_ms, worth_resending};
use crate::s3::{classify_put, PutAnswer};

/// What a write sent again after a throttle needs left before the deadline: its readback and itself.
const RESEND_ROOM_MS: u64 = 250;

impl<E: Env> Store<E> {
    /// One conditional PUT, classified. Never retried here.
    pub async fn put_cas(&self, key: &str, guard: &CasGuard, body: Vec<u8>, budget: Budget) -> PutAnswer {
        self.put_cas_status(key, guard, body, budget).await.1
    }

    /// `put_cas`, also giving the HTTP status (0 when there was no answer) for the probe's report.
    pub async fn put_cas_status(&self, key: &str, guard: &CasGuard, body: Vec<u8>, budget: Budget) -> (u16, PutAnswer) {
        if let Err(e) = self.signable(key, budget).await {
            return (0, PutAnswer::Refused(e));
        }
        // After the keys are ready (that may wait): the last moment before the request goes out.
        if let Err(e) = self.refuse_after_close(budget) {
            return (0, PutAnswer::Refused(e));
        }
        let (signing_ms, departure) = self.signing();
        let req = match self.bucket.borrow_mut().put(key, guard, body, signing_ms) {
            Ok(req) => req,
            Err(e) => return (0, PutAnswer::Refused(e)),
        };
        self.sent(key, "write", req, budget, departure).await
    }

    /// Sends a write (or delete) signed at `departure` and classifies its answer like a conditional PUT,
    /// with its status.
    async fn sent(&self, key: &str, op: &'static str, req: crate::env::HttpRequest, budget: Budget, departure: Departure) -> (u16, PutAnswer) {
        let (answer, seen) = self.exchange(req, budget, departure).await;
        let status = answer.as_ref().map_or(0, |r| r.status);
        let answer = self.refused_put(classify_put(key, answer));
        let outcome = match &answer {
            PutAnswer::Applied { .. } => "applied",
            PutAnswer::Rejected => "rejected",
            PutAnswer::Conflict { .. } => "conflict",
            PutAnswer::Throttled(_) => "throttled",
            PutAnswer::Ambiguous { .. } => "ambiguous",
            PutAnswer::Refused(_) => "refused",
        };
        self.answered(key, op, outcome, status, seen.read);
        (status, answer)
    }

    /// A DELETE (the probe's), classified like a PUT, with its status like `put_cas_status`.
    pub async fn delete(&self, key: &str, guard: Option<&CasGuard>, budget: Budget) -> (u16, PutAnswer) {
        if let Err(e) = self.signable(key, budget).await {
            return (0, PutAnswer::Refused(e));
        }
        if let Err(e) = self.refuse_after_close(budget) {
            return (0, PutAnswer::Refused(e));
        }
        let (signing_ms, departure) = self.signing();
        let req = match self.bucket.borrow_mut().delete(key, guard, signing_ms) {
            Ok(req) => req,
            Err(e) => return (0, PutAnswer::Refused(e)),
        };
        self.sent(key, "delete", req, budget, departure).await
    }

    /// The pause after a write the store turned away `turned` times (429, 503 SlowDown) since the write's
    /// first send at `started` (monotonic), before reading the record back: full jitter
    /// (`throttle::full_jitter_ms`), within the caller's deadline — the write's own timeout counted from
    /// its first send, or a renewal's remaining authority. `None`: no resend fits before it.
    pub fn throttle_pause(&self, budget: Budget, started: f64, turned: u32) -> Option<u32> {
        let left = match budget {
            Budget::PerRequest(ms) | Budget::Closing(ms) => started + f64::from(ms) - self.env.mono_ms(),
            Budget::Authority { anchor, ttl_ms, skew_ms } => authority_left_ms(anchor, self.reading(), ttl_ms, skew_ms),
        };
        let left = left.max(0.0) as u64;
        let pause = full_jitter_ms(turned, self.env.random_u64(), left);
        worth_resending(pause, left, RESEND_ROOM_MS).then_some(pause)
    }
}
