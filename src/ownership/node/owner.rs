//! The records, with celld's names (SPEC §4): reading and conditionally writing a cell's owner record
//! (`read_owner`, `cas_owner`) and a node's lease record (`read_node_lease`, `cas_node_lease`), and the
//! judgement of a peer by its lease (the peer rule, and how long a missing lease has stayed missing). It
//! remembers what it read and wrote (`Known`, its own write nonces); that memory only ever picks a write's
//! guard or tells this instance's records from another process's. Reading a record must never end a claim
//! by itself: `read_owner` and `read_owner_record` return what they saw, and a caller that acts on it has
//! the book judge it (`read_owner_and_judge`).

use std::collections::VecDeque;

use crate::env::Env;
use crate::error::{Error, Result};
use crate::ownership::cas::{Reconciles, Settled};
use crate::ownership::decide::{PeerLease, PeerRule};
use crate::ownership::ids::{check_cell, check_node};
use crate::ownership::known::Known;
use crate::ownership::records::{decode_lease, decode_owner, encode_owner, CasGuard, CasOutcome, NodeLeaseRecord, OwnerRecord, MAX_EPOCH};

use super::lease::RESTORED;
use super::S3Ownership;

#[derive(Default)]
pub(super) struct Records {
    /// The owner-record versions this instance last read or wrote, whatever the lease.
    pub(super) known: Known,
    /// Nonces of this instance's recent owner-record writes: a record carrying one is this instance's.
    nonces: VecDeque<String>,
    /// Holder leases this instance found missing, per (holder, cell): a missing lease proves death only
    /// once it stayed missing (`MissingLease`).
    missing: VecDeque<MissingLease>,
}

/// Owner-record write nonces remembered.
const OWNER_NONCES: usize = 256;

/// Missing holder leases remembered (oldest forgotten first).
const MISSING_REMEMBERED: usize = 64;

/// A holder's lease found missing when judging the record of one cell that names it. It stands only for
/// that lease key and that cell's record version (a cell's versions never repeat: epochs only grow; bytes
/// do repeat across cells, celld writes no nonce), it is dropped when the lease is seen present again, and
/// a sighting not renewed within `2 × (ttl + skew)` starts over.
struct MissingLease {
    holder: String,
    cell: String,
    /// The owner-record version of `cell` it was seen missing for.
    owner_etag: String,
    /// First and latest sighting (monotonic, each sampled after the answer that showed it).
    since: f64,
    last: f64,
}

impl<E: Env> S3Ownership<E> {
    /// Reads `cell`'s owner record and returns what it saw (celld's `read_owner`): no claim of this
    /// instance ends by it, whatever the record shows.
    pub async fn read_owner(&self, cell: &str) -> Result<Option<OwnerRecord>> {
        check_cell(self.config.ids, cell)?;
        self.read_owner_record(cell).await
    }

    /// `read_owner`, then ends this instance's claim of `cell` when the record shows it replaced (the
    /// book's judgement, `read_owner_judged`; JS `readOwner`).
    pub async fn read_owner_and_judge(&self, cell: &str) -> Result<Option<OwnerRecord>> {
        check_cell(self.config.ids, cell)?;
        self.read_owner_judged(cell).await
    }

    /// Reads `cell`'s owner record and remembers the version seen; nothing else.
    pub(super) async fn read_owner_record(&self, cell: &str) -> Result<Option<OwnerRecord>> {
        let read = self.read_decoded(&self.owner_key(cell), decode_owner).await;
        let mut records = self.records.borrow_mut();
        match &read {
            Ok(version) => records.known.set(cell, version.clone()),
            Err(_) => records.known.forget(cell),
        }
        read
    }

    /// Remembers the version an owner-record write of `{node, epoch}` left, or forgets the cell when the
    /// write did not apply (whatever is there now, this instance has not seen it).
    pub(super) fn wrote_owner(&self, cell: &str, node: &str, epoch: u64, settled: &Result<Settled>) {
        let mut records = self.records.borrow_mut();
        match settled {
            Ok(Settled::Applied { etag }) => {
                let rec = OwnerRecord { node: node.to_owned(), epoch, etag: etag.clone(), nonce: None };
                records.known.set(cell, Some(rec));
            }
            _ => records.known.forget(cell),
        }
    }

    /// Renders an owner record, remembering its nonce as this instance's.
    pub(super) fn owner_body(&self, node: &str, epoch: u64, nonce: &str) -> Vec<u8> {
        let mut records = self.records.borrow_mut();
        if records.nonces.len() == OWNER_NONCES {
            records.nonces.pop_front();
        }
        records.nonces.push_back(nonce.to_owned());
        encode_owner(node, epoch, nonce)
    }

    /// Writes `{node: me, epoch}` under `guard`. On applied, the cell counts as claimed at `epoch`. Needs
    /// a valid lease, counts only under the lease it was sent under, and never lowers the epoch: with
    /// `{ match }`, `epoch` must exceed the epoch of the version that token names (this instance's last
    /// sight of the cell, or a read when it has none of that version).
    pub async fn cas_owner(&self, cell: &str, guard: &CasGuard, epoch: u64) -> Result<CasOutcome> {
        check_cell(self.config.ids, cell)?;
        check_epoch(epoch)?;
        check_guard(guard)?;
        let held = self.held_lease()?;
        if let CasGuard::Match(token) = guard {
            let seen = self.records.borrow().known.get(cell).cloned().flatten().filter(|r| r.etag == *token);
            let current = match seen {
                Some(rec) => rec,
                None => match self.read_owner_judged(cell).await? {
                    Some(rec) if rec.etag == *token => rec,
                    // The token is not the current version: a write under it could not apply.
                    _ => return Ok(CasOutcome::Rejected),
                },
            };
            if epoch <= current.epoch {
                return Err(Error::invalid(format!(
                    "epoch {epoch} does not advance the record's epoch {} (epochs never go down)",
                    current.epoch
                )));
            }
        }
        self.ensure_probed().await?;
        self.require_generation(held.generation)?;
        self.reclaiming(cell, epoch);
        let key = self.owner_key(cell);
        let node = &self.config.node;
        let reconciles = Reconciles::default();
        let settled =
            self.store.cas_settled(&key, guard, &|n| self.owner_body(node, epoch, n), self.budget(), &reconciles).await;
        self.wrote_owner(cell, node, epoch, &settled);
        self.account(&settled);
        let settled = settled?;
        if let Settled::Applied { etag } = &settled {
            self.answered_under(held.generation, "write")?;
            self.record_claim(cell, epoch, etag.clone());
        }
        settled.outcome(&key)
    }

    /// Reads a node's lease. Reading this node's own while holding a lease: finding it gone, or replaced
    /// by a record this instance did not write, fences at once (celld's clean-up deletes leases it judged
    /// dead, and a delete can land late).
    pub async fn read_node_lease(&self, node: &str) -> Result<Option<NodeLeaseRecord>> {
        check_node(self.config.ids, node)?;
        let held = (node == self.config.node).then(|| self.current_lease()).flatten();
        let mut read = self.read_decoded(&self.lease_key(node), decode_lease).await?;
        if !self.rules().respect_node_log {
            read = read.map(|l| NodeLeaseRecord { log: None, ..l });
        }
        if read.is_some() {
            self.lease_present(node);
        }
        if let Some(held) = held {
            let gone = read.as_ref().is_none_or(|rec| !self.is_ours(rec));
            let older = read.as_ref().is_some_and(|rec| !self.adoptable(rec, &held));
            let same = self.current_lease().is_some_and(|l| l.generation == held.generation);
            if gone && same {
                let _ = self.fence("this node's lease record was deleted or replaced by another writer");
            } else if older && same {
                let _ = self.fence(RESTORED);
            }
        }
        Ok(read)
    }

    /// Writes this node's lease record with `expires_ms` under `guard`; returns the new ETag when applied.
    /// Low level: it does not change this instance's lease state (`acquire_lease` / `renew_lease` do).
    pub async fn cas_node_lease(&self, guard: &CasGuard, expires_ms: u64) -> Result<(CasOutcome, Option<String>)> {
        check_guard(guard)?;
        self.refuse_if_closed()?;
        self.ensure_probed().await?;
        match self.write_lease(guard, expires_ms, self.budget(), &Reconciles::default()).await? {
            Settled::Applied { etag } => Ok((CasOutcome::Applied, Some(etag))),
            other => Ok((other.outcome(&self.lease_key(&self.config.node))?, None)),
        }
    }

    /// A record naming this node that this instance may not treat as its own yet (`inherited_until`).
    pub(super) fn inherited(&self, cell: &str, rec: &OwnerRecord) -> bool {
        let records = self.records.borrow();
        rec.node == self.config.node
            && self.store.env.mono_ms() < self.inherited_until()
            && self.claim_of(cell).is_none_or(|(_, t)| t != rec.etag)
            && !rec.nonce.as_ref().is_some_and(|n| records.nonces.contains(n))
            && self.rules().missing_lease_waits
    }

    /// A record naming this node that another process of the node id wrote (its nonce is not one of this
    /// instance's, nor is it the version this instance's claim left). A record without a nonce naming this
    /// node is this instance's own write as remembered (`wrote_owner`): celld writes only its own ids.
    pub(super) fn written_elsewhere(&self, cell: &str, rec: &OwnerRecord) -> bool {
        let records = self.records.borrow();
        rec.node == self.config.node
            && self.claim_of(cell).is_none_or(|(_, t)| t != rec.etag)
            && rec.nonce.as_ref().is_some_and(|n| !records.nonces.contains(n))
            && self.rules().confirm_own_node_id
    }

    /// Before treating a record another process of this node id wrote as this node's own: this node's
    /// lease record must still be this instance's. If another process of the id holds it now (it acquired
    /// over a lease of ours that celld's clean-up deleted late), that process wrote the record and acts for
    /// it: reading the lease fences this instance instead.
    pub(super) async fn confirm_own(&self) -> Result<()> {
        self.read_node_lease(&self.config.node).await?;
        self.held_lease().map(|_| ())
    }

    pub(super) fn inherited_error(&self, cell: &str) -> Error {
        Error::not_leased(format!(
            "{} names this node, but this instance's lease replaced a missing one: the process that held it may \
             still act for the cell until its authority runs out (at most leaseTtlMs + maxClockSkewMs)",
            self.owner_key(cell)
        ))
    }

    /// The skew margin peers are judged with.
    pub(super) fn skew_for_peers(&self) -> u64 {
        if self.rules().peer_skew_margin {
            self.config.max_clock_skew_ms
        } else {
            0
        }
    }

    pub(super) fn peer_rule(&self, wall_now_ms: u64) -> PeerRule {
        PeerRule { lease_ttl_ms: self.config.lease_ttl_ms, max_skew_ms: self.skew_for_peers(), wall_now_ms }
    }

    /// The holder's lease for `cell`'s record `rec` as read: a missing one is judged by how long this
    /// instance has seen it missing for that record version (first sight: now, after the answer).
    pub(super) fn peer_lease<'a>(&self, cell: &str, rec: &OwnerRecord, lease: Option<&'a NodeLeaseRecord>) -> PeerLease<'a> {
        if let Some(l) = lease {
            return PeerLease::Present(l);
        }
        if !self.rules().missing_lease_waits {
            return PeerLease::Missing { for_ms: f64::INFINITY };
        }
        let now = self.store.env.mono_ms();
        let mut records = self.records.borrow_mut();
        let forget_after = 2.0 * self.config.lease_ttl_ms.saturating_add(self.config.max_clock_skew_ms) as f64;
        let found = records.missing.iter_mut().find(|m| m.holder == rec.node && m.cell == cell);
        if let Some(m) = found.filter(|m| m.owner_etag == rec.etag && now - m.last <= forget_after) {
            m.last = now;
            return PeerLease::Missing { for_ms: now - m.since };
        }
        records.missing.retain(|m| !(m.holder == rec.node && m.cell == cell));
        if records.missing.len() == MISSING_REMEMBERED {
            records.missing.pop_front();
        }
        let (holder, cell, owner_etag) = (rec.node.clone(), cell.to_owned(), rec.etag.clone());
        records.missing.push_back(MissingLease { holder, cell, owner_etag, since: now, last: now });
        PeerLease::Missing { for_ms: 0.0 }
    }

    /// A node's lease seen present: every sighting of it missing is void (it may go missing again later,
    /// and must then stay missing from that later sighting on).
    fn lease_present(&self, node: &str) {
        self.records.borrow_mut().missing.retain(|m| m.holder != node);
    }
}

pub(super) fn check_epoch(epoch: u64) -> Result<()> {
    if epoch == 0 || epoch > MAX_EPOCH {
        return Err(Error::invalid(format!("epoch {epoch} is not in 1..=2^53-1")));
    }
    Ok(())
}

fn check_guard(guard: &CasGuard) -> Result<()> {
    match guard {
        CasGuard::Match(etag) if etag.is_empty() || etag.contains(['\r', '\n']) => {
            Err(Error::invalid_value("guard token ", etag, " is not an ETag"))
        }
        _ => Ok(()),
    }
}
