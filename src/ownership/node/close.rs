//! Ending the instance (SPEC §4.2): `shut` ends authority at once (no claim, no write but the close's
//! own), `close` then lets writes in flight land, releases what it held (on request), retires this node's
//! lease over this instance's own token and, when nothing can still name this node, deletes it. Also the
//! clean-up of another node's dead lease (`remove_dead_lease`). It must never write over a lease record
//! another process wrote, nor delete a lease any record still needs.

use core::cell::Cell;

use crate::env::{Env, Event};
use crate::error::{Error, Result};
use crate::ownership::cas::{FirstRejection, Reconciles, Removal, Settled};
use crate::ownership::flight::{done, Share, Single};
use crate::ownership::ids::{check_cell, check_node};
use crate::ownership::join::join_all;
use crate::ownership::clock::Judgement;
use crate::ownership::lease::RETIRED_EXPIRES_MS;
use crate::ownership::records::{decode_lease, CasGuard};

use super::{CloseOptions, Closed, LeaseRemoval, S3Ownership};

/// The close in flight, which every `close()` caller shares, and its outcome once done.
#[derive(Default)]
pub(super) struct Closing {
    flight: Single<Result<Closed>>,
    done: Cell<Option<Closed>>,
}

impl<E: Env> S3Ownership<E> {
    /// Closes the instance: from the moment it is called this instance may act for no cell (`lease_valid`
    /// is false, `claimed` empty, `verify` false) and refuses every write (`not-leased`); the renewal loop
    /// and waiting claims end; claims in flight are void when answered. Then it retires this node's lease:
    /// one conditional write (`If-Match` this instance's token) of an expired copy, so that peers judge the
    /// node dead and take over its cells at once, never overwriting a lease another process wrote. With
    /// `release`, the cells it holds are released first. When no record can still name this node through
    /// this instance (nothing held, or all released, and no write left unsettled) and the store's probe
    /// showed it honours a conditional DELETE, the retired record is deleted too (`If-Match` its token).
    /// Idempotent: callers share one close; a close that failed (the retirement unsettled) is tried again
    /// by the next call, and a finished one answers at once.
    pub async fn close(&self, options: CloseOptions) -> Result<Closed> {
        self.shut();
        let how = Share { joined: |_: &(), j| done(j), ready: || self.closing.done.get().map(Ok), patience: core::future::pending };
        let close = || async move {
            let outcome = self.close_once(options).await;
            if let Ok(closed) = outcome {
                self.closing.done.set(Some(closed));
            }
            (outcome.clone(), outcome)
        };
        self.closing.flight.share((), how, close).await
    }

    /// The synchronous half of `close`: ends authority and every wait now. Idempotent.
    pub fn shut(&self) {
        if !self.close_lease() {
            return;
        }
        self.store.close();
        let ended = self.close_book();
        self.closed_signal.finish(());
        self.emit(Event::Closed { node: &self.config.node });
        self.closed_claims(&ended);
    }

    async fn close_once(&self, options: CloseOptions) -> Result<Closed> {
        let started = self.store.env.mono_ms();
        // A lease write in flight lands first (a renewal hands its token to the retirement), and so do
        // claims in flight (void now, but their writes may name this node)...
        self.lease_writes.idle().await;
        self.claims_in_flight.idle_all().await;
        // ...and every other write naming this node (a concurrent caller's `cas_owner`; one dropped by its
        // caller left the instance unaccounted: the lease is then kept).
        self.naming_writes_idle().await;
        // ...and releases in flight (their claims already ended): whether they landed decides the delete.
        self.releases_in_flight.idle_all().await;
        let held = self.closing_claims();
        let mut released = 0;
        if options.release && !held.is_empty() {
            let writes = held.iter().map(|(cell, (epoch, token))| self.release_closing(cell, *epoch, token));
            let outcomes = join_all(writes).await;
            for ((cell, _), applied) in held.iter().zip(outcomes) {
                if applied {
                    released += 1;
                    self.released_at_close(cell);
                }
            }
        }
        let Some(etag) = self.retire().await? else {
            return Ok(Closed { retired: false, deleted: false, released });
        };
        let mut deleted = false;
        if self.all_accounted() && self.deletes_conditionally() {
            // Best effort, and safe either way: only this retired version can be deleted.
            let key = self.lease_key(&self.config.node);
            let removal = self.store.delete_settled(&key, &etag, self.closing_budget(), &Reconciles::default()).await;
            deleted = removal == Ok(Removal::Gone);
        }
        let ms = self.store.env.mono_ms() - started;
        self.emit(Event::LeaseRetired { node: &self.config.node, deleted, ms });
        Ok(Closed { retired: true, deleted, released })
    }

    /// One release of `close(release)`: a conditional write over the claim's token, sent only while the
    /// lease kept for the retirement still gives authority. True when it applied.
    async fn release_closing(&self, cell: &str, epoch: u64, token: &str) -> bool {
        let lease = self.retiring();
        if !lease.as_ref().is_some_and(|l| self.within(l)) {
            return false;
        }
        let key = self.owner_key(cell);
        let reconciles = Reconciles::default();
        let guard = CasGuard::Match(token.to_owned());
        let body = |n: &str| self.owner_body("", epoch, n);
        let settled = self.store.cas_settled(&key, &guard, &body, self.closing_budget(), &reconciles).await;
        self.wrote_owner(cell, "", epoch, &settled);
        matches!(settled, Ok(Settled::Applied { .. }))
    }

    /// Writes the retired lease over the token kept at close; `None` when there was nothing to retire or
    /// the record is no longer this instance's (replaced by another process, or removed): that is never
    /// written over. A record that moved to another write of ours (a renewal that landed late) is retired
    /// in turn.
    async fn retire(&self) -> Result<Option<String>> {
        let Some(lease) = self.retiring() else { return Ok(None) };
        let key = self.lease_key(&self.config.node);
        let reconciles = Reconciles::default();
        let mut guard = CasGuard::Match(lease.etag);
        for _ in 0..3 {
            let retired = self.terms(RETIRED_EXPIRES_MS, true);
            match self.write_lease(&guard, retired, self.closing_budget(), &reconciles, FirstRejection::ReadBack).await? {
                Settled::Applied { etag } => {
                    self.retired();
                    return Ok(Some(etag));
                }
                Settled::Rejected | Settled::Superseded => match self.read_decoded(&key, decode_lease).await? {
                    Some(rec)
                        if (self.is_ours(&rec) || !self.rules().retire_own_lease_only)
                            && rec.expires_ms != RETIRED_EXPIRES_MS =>
                    {
                        guard = CasGuard::Match(rec.etag);
                    }
                    _ => {
                        self.retired();
                        return Ok(None);
                    }
                },
            }
        }
        Err(Error::ambiguous(key, "the lease record kept changing under its retirement"))
    }

    /// Deletes another node's lease left by a process that did not close (a crash), safely: only when the
    /// store's conditional DELETE was verified by this instance's qualification, only a lease dead by the
    /// peer rule (SPEC §5: seen unchanged long enough by this instance, or past its expiry by the store's
    /// clock; a first look at a lease written moments ago says `Live`, ask again later), one this library
    /// wrote (never celld's: a lease with a node log, sealed included, is kept by celld on purpose, and
    /// celld's clean-up removes its others), whose node no owner record among `cells` names (the caller lists the
    /// bucket's cells, e.g. with a listing), and only the version read (`If-Match` its ETag): a lease
    /// someone re-acquired meanwhile has another ETag and stays. A record naming the node that lands after
    /// the check (a late write of the dead process) only waits `ttl + skew` longer for its takeover: a
    /// missing lease is never taken for instant death (SPEC §5). Needs no lease of this instance.
    pub async fn remove_dead_lease(&self, node: &str, cells: &[&str]) -> Result<LeaseRemoval> {
        check_node(self.config.ids, node)?;
        for cell in cells {
            check_cell(self.config.ids, cell)?;
        }
        self.refuse_if_closed()?;
        self.ensure_probed().await?;
        if !self.deletes_conditionally() {
            return Ok(LeaseRemoval::Unsupported);
        }
        let key = self.lease_key(node);
        let (read, seen) = self.read_foreign_lease(node).await?;
        let Some((lease, celld)) = read else { return Ok(LeaseRemoval::Absent) };
        if celld {
            return Ok(LeaseRemoval::Celld);
        }
        if self.judge_lease(node, &lease, seen) != Judgement::Dead {
            return Ok(LeaseRemoval::Live);
        }
        for cell in cells {
            if self.read_owner_and_judge(cell).await?.is_some_and(|r| r.node == node) {
                return Ok(LeaseRemoval::Needed { cell: Some((*cell).to_owned()) });
            }
        }
        // Settled by reading back (a DELETE delivered twice is answered 412/404 after it applied).
        match self.store.delete_settled(&key, &lease.etag, self.budget(), &Reconciles::default()).await? {
            Removal::Gone => Ok(LeaseRemoval::Removed),
            Removal::Changed => Ok(LeaseRemoval::Changed),
        }
    }
}
