//! Releasing a cell (SPEC §4): `release` (the cell this instance claimed, over the token its claim left)
//! and celld's `release_owner` (whatever epoch the caller names). A release writes on behalf of this node:
//! it needs this instance's valid lease, and its claim ends the moment the write is sent. It must never
//! release over a claim of the same cell still in flight on this instance (that claim is answered first).

use core::cell::Cell;

use crate::env::{Env, Lost};
use crate::error::Result;
use crate::ownership::cas::Reconciles;
use crate::ownership::ids::check_cell;
use crate::ownership::records::{CasGuard, CasOutcome, OwnerRecord};

use super::owner::check_epoch;
use super::S3Ownership;

/// Marks the instance unaccounted if a write is dropped before it was answered (it may land).
pub(super) struct Unsettled<'a, E: Env> {
    pub(super) node: &'a S3Ownership<E>,
    pub(super) settled: Cell<bool>,
}

impl<E: Env> Drop for Unsettled<'_, E> {
    fn drop(&mut self) {
        if !self.settled.get() {
            self.node.unaccounted();
        }
    }
}

impl<E: Env> S3Ownership<E> {
    /// Releases a cell this node claimed, at the epoch it claimed it: one conditional write with the token
    /// the claim left, falling back to read-then-write when that token has moved. Needs a valid lease.
    pub async fn release(&self, cell: &str) -> Result<CasOutcome> {
        check_cell(self.config.ids, cell)?;
        self.renew_if_due().await;
        // A claim of the cell in flight is answered first, so that the release covers what it claimed
        // (and no claim is reported applied after the release of its epoch).
        self.wait_for_claim(cell).await;
        match self.claim_of(cell) {
            // `release_at` checks the lease right before its write.
            Some((epoch, etag)) => match self.release_at(cell, epoch, CasGuard::Match(etag)).await? {
                CasOutcome::Applied => Ok(CasOutcome::Applied),
                CasOutcome::Rejected => self.release_owner(cell, epoch).await,
            },
            // Not claimed by this instance: release whatever epoch the record names us at.
            None => {
                self.require_release_lease()?;
                match self.read_owner_and_judge(cell).await? {
                    Some(rec) if rec.node == self.config.node => self.release_own(cell, rec).await,
                    _ => Ok(CasOutcome::Rejected),
                }
            }
        }
    }

    /// Clears `node` (keeping the epoch), only if the record still names this node at `epoch`. Needs a
    /// valid lease: it writes on behalf of this node.
    pub async fn release_owner(&self, cell: &str, epoch: u64) -> Result<CasOutcome> {
        check_epoch(epoch)?;
        self.require_release_lease()?;
        match self.read_owner_and_judge(cell).await? {
            Some(rec) if rec.node == self.config.node && rec.epoch == epoch => self.release_own(cell, rec).await,
            _ => Ok(CasOutcome::Rejected),
        }
    }

    /// Releases `rec`, a record naming this node, once it is known to be this instance's to release.
    async fn release_own(&self, cell: &str, rec: OwnerRecord) -> Result<CasOutcome> {
        if self.inherited(cell, &rec) {
            return Err(self.inherited_error(cell));
        }
        if self.written_elsewhere(cell, &rec) {
            self.confirm_own().await?;
        }
        self.release_at(cell, rec.epoch, CasGuard::Match(rec.etag)).await
    }

    async fn release_at(&self, cell: &str, epoch: u64, guard: CasGuard) -> Result<CasOutcome> {
        // A claim of the cell that began meanwhile (and may have landed what we read) is answered first:
        // no claim is reported applied after the release of its epoch.
        self.wait_for_claim(cell).await;
        self.require_release_lease()?;
        // `close()` waits for this release; one abandoned before it settled may still land, or not.
        let unsettled = Unsettled { node: self, settled: Cell::new(false) };
        let write = async {
            // The claim ends as the release begins: once sent, it may land (and a peer claim) at any moment.
            self.lose_claim(cell, Some(epoch), Lost::Released, "");
            let settled = match self.ensure_probed().await {
                Ok(()) => {
                    let key = self.owner_key(cell);
                    let reconciles = Reconciles::default();
                    let body = |n: &str| self.owner_body("", epoch, n);
                    self.store.cas_settled(&key, &guard, &body, self.budget(), &reconciles).await
                }
                Err(e) => Err(e),
            };
            self.wrote_owner(cell, "", epoch, &settled);
            // Not landed, or maybe not: the record may still name this node, and its claim is gone.
            self.account(&settled);
            unsettled.settled.set(true);
            settled
        };
        let settled = self.releases_in_flight.lead(cell, write).await;
        settled?.outcome(&self.owner_key(cell))
    }

    /// Waits until no claim of `cell` is in flight on this instance.
    async fn wait_for_claim(&self, cell: &str) {
        if self.rules().one_claim_per_cell {
            self.claims_in_flight.idle(cell).await;
        }
    }

    /// A release writes on behalf of this node: a valid lease of this instance, or nothing.
    fn require_release_lease(&self) -> Result<()> {
        if !self.rules().release_needs_lease {
            return Ok(());
        }
        self.held_lease().map(|_| ())
    }
}
