//! Renewing this node's lease: one renewal (over the held token, settled by reading back), the renewal
//! an operation makes when one is due (`renew_if_due`, SPEC §4.4: where nothing runs between requests),
//! and the renewal loop that runs it every ttl/3. Renewals never write more than one lease per renewal
//! period while they succeed, whoever asks.

use crate::env::{Env, Event};
use crate::error::{Error, Result};
use crate::ownership::cas::{Budget, FirstRejection, Reconciles, Settled};
use crate::ownership::join::{beside, Side};
use crate::ownership::lease::{renew_interval_ms, renew_retry_ms};
use crate::ownership::records::{decode_lease, CasGuard};

use super::{LeaseState, S3Ownership, RESTORED};
use crate::ownership::node::closed_error;

/// After a due renewal an operation started failed, operations try again no sooner than this (ms): about
/// the rate at which R2 takes writes to one key, and often enough to try several times before a lease
/// whose renewal fell due at ttl/3 lapses at `ttl - skew`.
const DUE_RETRY_MS: f64 = 1_000.0;

/// Whether a held lease with `left_ms` of its authority (`ttl - skew`) left is due for renewal: ttl/3 of it
/// is used (the renewal loop's cadence, `renew_interval_ms`). `since_tried_ms`: how long ago an operation
/// last started a due renewal, which it may not start again within `DUE_RETRY_MS` (nor within the
/// interval, for a very short ttl) — a renewal that landed moved the lease's anchor past that attempt, so
/// this only spaces out the attempts after one failed.
pub(super) fn renewal_due(left_ms: f64, ttl_ms: u64, skew_ms: u64, since_tried_ms: Option<f64>) -> bool {
    let interval = renew_interval_ms(ttl_ms) as f64;
    let used = ttl_ms.saturating_sub(skew_ms) as f64 - left_ms;
    used >= interval && since_tried_ms.is_none_or(|ms| ms >= DUE_RETRY_MS.min(interval))
}

impl<E: Env> S3Ownership<E> {
    pub(super) async fn renew_once(&self) -> Result<()> {
        let reconciles = Reconciles::default();
        for _ in 0..2 {
            let held = self.held_lease()?;
            let started = self.store.env.mono_ms();
            let (ttl_ms, skew_ms) = (self.config.lease_ttl_ms, self.config.max_clock_skew_ms);
            let budget = Budget::Authority { anchor: held.anchor, ttl_ms, skew_ms };
            let (settled, anchor, expires_ms) =
                self.anchored_lease_write(&CasGuard::Match(held.etag.clone()), held.expires_ms, budget, &reconciles, FirstRejection::ReadBack).await?;
            let late = !self.within(&held) && self.rules().refuse_late_renewal;
            match settled {
                Settled::Applied { .. } if late => {
                    return Err(self.fence("the renewal was answered only after the lease had lapsed"))
                }
                Settled::Applied { etag } => {
                    let lease = self.new_lease(etag, anchor, expires_ms, Some(held.generation));
                    let mut slice = self.lease.borrow_mut();
                    match &mut slice.state {
                        LeaseState::Closed { retiring, .. } => {
                            // Landed after close(): the retirement must go over this token, not the old one.
                            if let Some(r) = retiring.as_mut().filter(|r| r.generation == held.generation) {
                                r.etag = lease.etag;
                            }
                            return Err(closed_error());
                        }
                        LeaseState::Held(l) if l.generation == held.generation => *l = lease,
                        LeaseState::None | LeaseState::Held(_) | LeaseState::Fenced(_) => {
                            return Err(Error::fenced(
                                "the lease was lost while its renewal was in flight; acquire a new one".into(),
                            ))
                        }
                    }
                    drop(slice);
                    let ms = self.store.env.mono_ms() - started;
                    self.emit(Event::LeaseRenewed { node: &self.config.node, expires_ms, ms });
                    return Ok(());
                }
                Settled::Superseded if !self.rules().one_lease_write => {
                    return Err(self.fence("the lease record was replaced by another writer"))
                }
                // An earlier lease write of ours that ended ambiguous may have landed after all (this one's
                // readback then shows a nonce of another of our writes): then the record is ours under a
                // token we never saw. Adopt it (authority unchanged) and retry.
                Settled::Rejected | Settled::Superseded => {
                    let key = self.lease_key(&self.config.node);
                    match self.read_decoded(&key, decode_lease).await? {
                        Some(_) if late => {
                            return Err(self.fence("the renewal was answered only after the lease had lapsed"))
                        }
                        Some(rec) if self.adoptable(&rec, &held) => {
                            if let LeaseState::Held(l) = &mut self.lease.borrow_mut().state {
                                l.etag = rec.etag;
                            }
                        }
                        Some(rec) if self.is_ours(&rec) => return Err(self.fence(RESTORED)),
                        Some(_) => return Err(self.fence("the lease record was replaced by another writer")),
                        None => return Err(self.fence("the lease record was deleted")),
                    }
                }
            }
        }
        Err(self.fence("the lease record kept changing under renewal"))
    }

    /// Renews the held lease when it is due (`renewal_due`), before the caller's own work: what keeps a
    /// busy holder's lease, and so its epochs, where nothing runs between requests (Workers, SPEC §4.4).
    /// Joins the lease write in flight, if any. A renewal that fails and leaves the lease held (no answer,
    /// an ambiguous write) changes nothing for the caller: its claims stand while the lease's authority
    /// lasts, and a later operation tries again; one that lost the lease fenced it, which the caller finds
    /// when it next asks for the lease. A lapsed lease is not renewed here (the caller's check fences it).
    pub async fn renew_if_due(&self) {
        // One reading: authority left and the retry pacing's clock alike.
        let reading = self.store.reading();
        let now = reading.mono;
        let due = {
            let slice = self.lease.borrow();
            let LeaseState::Held(lease) = &slice.state else { return };
            let left = self.authority_left_at(lease, reading);
            let (ttl, skew) = (self.config.lease_ttl_ms, self.config.max_clock_skew_ms);
            left > 0.0 && renewal_due(left, ttl, skew, slice.due_tried.map(|at| now - at))
        };
        if due {
            self.lease.borrow_mut().due_tried = Some(now);
            // Its error is the lease's, not the caller's (above).
            let _ = self.renew_lease().await;
        }
    }

    /// How long until the held lease is due for renewal (0: due now), or `None` without a lease held.
    fn due_in_ms(&self) -> Option<f64> {
        let lease = self.current_lease()?;
        let used = self.config.lease_ttl_ms.saturating_sub(self.config.max_clock_skew_ms) as f64 - self.authority_left(&lease);
        Some((renew_interval_ms(self.config.lease_ttl_ms) as f64 - used).max(0.0))
    }

    /// The renewal loop of long-lived runtimes (JS `startRenewing`): renews every ttl/3, and promptly
    /// (100..200 ms) after a failed attempt while authority remains, until `stop()` answers true or a
    /// newer loop starts on this instance (a newer loop retires this one at its next wake, so two never
    /// both run). Transient failures go to `on_error`; losing the lease (`fenced`, `not-leased`) ends the
    /// loop with that error. Renewals share the instance's single lease write with every other caller.
    pub async fn renew_until_stopped(&self, stop: &dyn Fn() -> bool, on_error: &mut dyn FnMut(&Error)) -> Result<()> {
        let me = {
            let mut slice = self.lease.borrow_mut();
            slice.renewer += 1;
            slice.renewer
        };
        let ttl = self.config.lease_ttl_ms;
        let mut wait = renew_interval_ms(ttl);
        // A due credentials refresh runs beside the loop (started after a renewal, bounded by the request
        // timeout), never in its way: a slow provider delays no renewal while the keys held still work.
        let mut refreshing: Side<'_, Result<()>> = None;
        loop {
            let (_, refreshed) = beside(self.sleep_unless_closed(wait as u32), &mut refreshing).await;
            if let Some(Err(e)) = refreshed {
                on_error(&e);
            }
            if stop() || self.lease.borrow().renewer != me || self.is_closed() {
                return Ok(());
            }
            // An operation renewed meanwhile (`renew_if_due`): the next renewal is due a period after that one.
            if let Some(ms) = self.due_in_ms().filter(|&ms| ms >= 1.0) {
                wait = ms.ceil() as u64;
                continue;
            }
            let (renewed, refreshed) = beside(self.renew_lease(), &mut refreshing).await;
            if let Some(Err(e)) = refreshed {
                on_error(&e);
            }
            match renewed {
                Ok(()) => {
                    wait = renew_interval_ms(ttl);
                    if !self.rules().refresh_beside_renewal {
                        if let Err(e) = self.store.refresh_due_credentials(self.budget()).await {
                            on_error(&e);
                        }
                    } else if refreshing.is_none() {
                        refreshing = Some(Box::pin(self.store.refresh_due_credentials(self.budget())));
                    }
                }
                Err(e @ (Error::Fenced(_) | Error::NotLeased(_))) => return Err(e),
                Err(e) => {
                    on_error(&e);
                    wait = renew_retry_ms(ttl, self.store.env.random_u64());
                }
            }
        }
    }

    /// Retires the running renewal loop (it returns at its next wake, without renewing again).
    pub fn stop_renewing(&self) {
        self.lease.borrow_mut().renewer += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::renewal_due;

    #[test]
    fn a_renewal_is_due_once_a_third_of_the_ttl_is_used_and_retried_no_more_than_once_a_second() {
        // ttl 10 s, skew 1 s: authority 9 s, due once 3,333 ms of it are used (5,667 left).
        assert!(!renewal_due(5_668.0, 10_000, 1_000, None));
        assert!(renewal_due(5_667.0, 10_000, 1_000, None));
        assert!(renewal_due(100.0, 10_000, 1_000, None));
        // A due renewal an operation started 400 ms ago failed (the lease is still due): not again yet.
        assert!(!renewal_due(5_000.0, 10_000, 1_000, Some(400.0)));
        assert!(renewal_due(5_000.0, 10_000, 1_000, Some(1_000.0)));
        // A short ttl retries within its own interval: 600 ms, skew 100, interval 200.
        assert!(renewal_due(300.0, 600, 100, Some(200.0)));
        assert!(!renewal_due(301.0, 600, 100, None));
    }
}
