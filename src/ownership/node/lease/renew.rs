//! Renewing this node's lease: one renewal (over the held token, settled by reading back), and the
//! renewal loop that runs it every ttl/3.

use crate::env::{Env, Event};
use crate::error::{Error, Result};
use crate::ownership::cas::{Budget, Reconciles, Settled};
use crate::ownership::join::{beside, Side};
use crate::ownership::lease::{renew_interval_ms, renew_retry_ms};
use crate::ownership::records::{decode_lease, CasGuard};

use super::{LeaseState, S3Ownership, RESTORED};
use crate::ownership::node::closed_error;

impl<E: Env> S3Ownership<E> {
    pub(super) async fn renew_once(&self) -> Result<()> {
        let reconciles = Reconciles::default();
        for _ in 0..2 {
            let held = self.held_lease()?;
            let started = self.store.env.mono_ms();
            let (ttl_ms, skew_ms) = (self.config.lease_ttl_ms, self.config.max_clock_skew_ms);
            let budget = Budget::Authority { anchor: held.anchor, ttl_ms, skew_ms };
            let (settled, anchor, expires_ms) =
                self.anchored_lease_write(&CasGuard::Match(held.etag.clone()), held.expires_ms, budget, &reconciles).await?;
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
