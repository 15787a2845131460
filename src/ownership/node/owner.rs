//! The records, with celld's names (SPEC §4): reading and conditionally writing a cell's owner record
//! (`read_owner`, `cas_owner`) and a node's lease record (`read_node_lease`, `cas_node_lease`), and the
//! judgement of a peer by its lease (the clock-proof peer rule: what this instance has seen of each
//! lease version, and the store's clock; `clock::judge`). It
//! remembers what it read and wrote (`Known`, its own write nonces); that memory only ever picks a write's
//! guard or tells this instance's records from another process's. Reading a record must never end a claim
//! by itself: `read_owner` and `read_owner_record` return what they saw, and a caller that acts on it has
//! the book judge it (`read_owner_and_judge`).

use std::collections::VecDeque;

use crate::env::Env;
use crate::error::{Error, Result};
use crate::ownership::cas::{FirstRejection, Reconciles, Seen, Settled};
use crate::ownership::clock::{judge, Found, Judgement, LeaseTerms, Read, Sightings, Version};
use crate::ownership::ids::{check_cell, check_node};
use crate::ownership::known::Known;
use crate::ownership::records::{decode_lease, decode_owner, encode_owner, written_by_celld, CasGuard, CasOutcome, NodeLeaseRecord, OwnerRecord, MAX_EPOCH};

use super::lease::RESTORED;
use super::S3Ownership;

#[derive(Default)]
pub(super) struct Records {
    /// The owner-record versions this instance last read or wrote, whatever the lease.
    pub(super) known: Known,
    /// Nonces of this instance's recent owner-record writes: a record carrying one is this instance's.
    nonces: VecDeque<String>,
    /// The versions of holders' leases this instance has seen, and since when (per lease key and version;
    /// a missing lease per cell and owner-record version).
    sightings: Sightings,
}

/// Owner-record write nonces remembered.
const OWNER_NONCES: usize = 256;

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
        let body = |n: &str| self.owner_body(node, epoch, n);
        let settled = self.naming_write(self.store.cas_settled(&key, guard, &body, self.budget(), &reconciles)).await;
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
        self.read_node_lease_seen(node).await.map(|(read, _)| read)
    }

    /// Another node's lease as `remove_dead_lease` reads it: the record, whether celld wrote it (a node
    /// log, sealed included, a probe key or a peer protocol: never ours to remove), and when it was seen;
    /// the sighting counts toward the peer rule like any read of it.
    pub(super) async fn read_foreign_lease(&self, node: &str) -> Result<(Option<(NodeLeaseRecord, bool)>, Seen)> {
        check_node(self.config.ids, node)?;
        let once = !self.rules().reread_undecodable;
        let key = self.lease_key(node);
        let decode = |b: &[u8], t: &str| Ok((decode_lease(&key, b, t)?, written_by_celld(&key, b)?));
        let (read, seen) = self.store.get_decoded_seen(&key, self.budget(), decode, once).await?;
        if let Some((l, _)) = &read {
            self.saw(node, Version::Lease(l.etag.clone()), seen);
        }
        Ok((read, seen))
    }

    /// `read_node_lease`, with how the read was seen (for the peer rule). A lease seen present is a
    /// sighting of its version (and ends every sighting of it missing).
    pub(super) async fn read_node_lease_seen(&self, node: &str) -> Result<(Option<NodeLeaseRecord>, Seen)> {
        check_node(self.config.ids, node)?;
        let held = (node == self.config.node).then(|| self.current_lease()).flatten();
        let once = !self.rules().reread_undecodable;
        let key = self.lease_key(node);
        let (mut read, seen) = self.store.get_decoded_seen(&key, self.budget(), |b, t| decode_lease(&key, b, t), once).await?;
        if !self.rules().respect_node_log {
            read = read.map(|l| NodeLeaseRecord { log: None, ..l });
        }
        if let Some(l) = &read {
            self.saw(node, Version::Lease(l.etag.clone()), seen);
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
        Ok((read, seen))
    }

    /// Writes this node's lease record with `expires_ms` under `guard`; returns the new ETag when applied.
    /// Low level: it does not change this instance's lease state (`acquire_lease` / `renew_lease` do).
    pub async fn cas_node_lease(&self, guard: &CasGuard, expires_ms: u64) -> Result<(CasOutcome, Option<String>)> {
        check_guard(guard)?;
        self.refuse_if_closed()?;
        self.ensure_probed().await?;
        // An expiry the caller chose, on a clock it knows: judged by peers as celld's leases are (no `ttl_ms`).
        let terms = LeaseTerms { expires_ms, ttl_ms: None, store_clock: false };
        match self.write_lease(guard, terms, self.budget(), &Reconciles::default(), FirstRejection::ReadBack).await? {
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

    /// Records that a read of `holder`'s lease (seen as `seen`) showed `version`; returns for how long that
    /// version has been seen unchanged (`Sightings::saw`). Counted from the arrival of the answer that
    /// first showed it: the holder wrote that version before the store served the read.
    fn saw(&self, holder: &str, version: Version, seen: Seen) -> f64 {
        let read = if self.rules().count_from_arrival { seen.read } else { Read { arrived: seen.read.sent, ..seen.read } };
        let forget_after = 2.0 * self.config.lease_ttl_ms.saturating_add(self.config.max_clock_skew_ms) as f64;
        self.records.borrow_mut().sightings.saw(holder, version, read, forget_after)
    }

    /// The peer rule (SPEC §5, `clock::judge`) on the holder of `cell`'s record `rec`, whose lease a read
    /// seen as `seen` found (`None`: missing). A missing lease is judged per cell and owner-record version.
    pub(super) fn judge_holder(&self, cell: &str, rec: &OwnerRecord, lease: Option<&NodeLeaseRecord>, seen: Seen) -> Judgement {
        let found = match lease {
            Some(l) => return self.judge_lease(&rec.node, l, seen),
            None if !self.rules().missing_lease_waits => return Judgement::Dead,
            None => {
                // Per cell: another cell's record may have the same bytes and ETag (a tooth drops the cell).
                let cell = if self.rules().missing_keyed_by_cell { cell.to_owned() } else { String::new() };
                let version = Version::Missing { cell, owner_etag: rec.etag.clone() };
                Found::Missing { unchanged_ms: self.saw(&rec.node, version, seen) }
            }
        };
        judge(found, self.config.lease_ttl_ms, self.skew_for_peers())
    }

    /// The peer rule on `node`'s lease as a read seen as `seen` found it (a sighting of its version; seeing
    /// the same read twice changes nothing).
    pub(super) fn judge_lease(&self, node: &str, lease: &NodeLeaseRecord, seen: Seen) -> Judgement {
        let unchanged_ms = self.saw(node, Version::Lease(lease.etag.clone()), seen);
        // The store's clock when it served the read; never this machine's wall clock (a tooth does).
        let served = if self.rules().judge_by_store_clock { seen.served } else { Some(self.store.env.wall_ms()) };
        let found = Found::Present { terms: lease.terms(), unchanged_ms, served };
        judge(found, self.config.lease_ttl_ms, self.skew_for_peers())
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
