//! Acquiring this node's lease: an instance's first lease is created without reading (`If-None-Match: *`,
//! SPEC §6's 6 requests and §8's round trips); a refused create, and every later acquisition, reads the
//! record first (absent, ours, or another process's that is dead by the peer rule).

use crate::env::{Env, Event};
use crate::error::{Error, Quoted, Result};
use core::cell::RefCell;

use crate::ownership::cas::{FirstRejection, Reconciles, Settled};
use crate::ownership::clock::Judgement;
use crate::ownership::records::{decode_lease, CasGuard};

use super::{LeaseState, S3Ownership};
use crate::ownership::node::closed_error;

/// How an acquisition's write went, when it did not fail.
enum Acquired {
    Yes,
    /// The instance's unread create was refused: read the record, then decide.
    Refused,
}

impl<E: Env> S3Ownership<E> {
    pub(super) async fn acquire_once(&self) -> Result<()> {
        self.refuse_if_closed()?;
        if self.lease_valid() {
            return self.renew_once().await;
        }
        self.ensure_probed().await?;
        // This instance's first lease write, whatever the node id: created without reading (`If-None-Match:
        // *`). It lands only while no lease record exists, which is exactly what the read-first path needs
        // to see before it sends the same create, with no time between the two; so it adds no history, and
        // after it lands this instance inherits nothing for ttl + skew, as after reading "absent". A refusal
        // (a predecessor's record: another process of a given id, a retired or dead lease, celld's) falls back
        // to reading it and judging it. Saves one request and one round trip when the key is free (a made-up
        // id always; a given id on its first use, or after a close that deleted its lease); costs one refused
        // create when it is not (docs/protocol.md, "The cold path").
        let mut created_unread = self.lease.borrow().nonces.is_empty();
        // The unread create was refused: the read that follows finds our own record only if that create
        // landed after all (delivered twice, answered 412), over a missing lease.
        let mut after_unread = false;
        let mut rereads = 0;
        loop {
            let guard = if created_unread { CasGuard::Absent } else { self.acquisition_guard(after_unread).await? };
            // This machine's clocks moved (a sleep, a step) since the store's clock was learnt, so it was
            // forgotten (`Store::reading`): the read's answer teaches it again, unless the move came while the
            // read was queued; then read again rather than write an expiry on the wall clock (issue 34 A).
            if self.store.forgot_store_clock() {
                rereads += 1;
                if rereads > 3 {
                    let key = self.lease_key(&self.config.node);
                    return Err(Error::transport(key, "this machine's clocks kept jumping while the store's clock was read: try again"));
                }
                created_unread = false;
                continue;
            }
            match self.acquire_with(guard, created_unread).await? {
                Acquired::Yes => {
                    if created_unread {
                        // The lease was missing when the create landed, as the careful path's read found it:
                        // counted from the answer, which came after.
                        self.inherit_until_dead();
                    }
                    return Ok(());
                }
                Acquired::Refused => (created_unread, after_unread) = (false, true),
            }
        }
    }

    /// Records naming this node that this instance did not write are not its own until a missing lease's
    /// holder could no longer act (`inherited_until`).
    fn inherit_until_dead(&self) {
        let ttl_skew = self.config.lease_ttl_ms.saturating_add(self.config.max_clock_skew_ms) as f64;
        self.lease.borrow_mut().inherited_until = self.store.env.mono_ms() + ttl_skew;
    }

    /// The guard of an acquisition that read this node's lease record first: absent, ours, or another
    /// process's that is dead by the peer rule (a live one is refused). `after_unread`: this read follows
    /// the instance's refused unread create, so a record of ours is that create, landed over a missing
    /// lease (the network delivered it twice), and inherits nothing, as "absent" would not.
    async fn acquisition_guard(&self, after_unread: bool) -> Result<CasGuard> {
        let key = self.lease_key(&self.config.node);
        let once = !self.rules().reread_undecodable;
        let (current, seen) = self.store.get_decoded_seen(&key, self.budget(), |b, t| decode_lease(&key, b, t), once).await?;
        Ok(match current {
            None => {
                self.inherit_until_dead();
                CasGuard::Absent
            }
            Some(rec) if self.is_ours(&rec) => {
                if after_unread {
                    self.inherit_until_dead();
                }
                CasGuard::Match(rec.etag)
            }
            Some(rec) => {
                // Another process's records may name this node id: a close must not delete this lease.
                self.unaccounted();
                if let Judgement::Live { observe_after_ms, .. } = self.judge_lease(&self.config.node, &rec, seen) {
                    let wait = observe_after_ms.map_or_else(|| "unknown".to_owned(), |ms| format!("at most {ms:.0} ms"));
                    return Err(Error::not_leased(format!(
                        "{key} holds a live lease from another process using node id {} (dead in {wait}); node ids must be unique per running instance",
                        Quoted(&self.config.node)
                    )));
                }
                CasGuard::Match(rec.etag)
            }
        })
    }

    /// Writes a fresh lease under `guard` and installs it. A refused write is `not-leased`, or `Refused`
    /// when it was `created_unread` (then the caller reads the record).
    async fn acquire_with(&self, guard: CasGuard, created_unread: bool) -> Result<Acquired> {
        let key = self.lease_key(&self.config.node);
        let started = self.store.env.mono_ms();
        // An unread create's refusal is not read back here: the careful path reads the record next anyway
        // and recognises this write's nonce there (`acquisition_guard`), one request instead of two.
        let nonces = RefCell::new(Vec::new());
        let first = if created_unread { FirstRejection::CallerReads(&nonces) } else { FirstRejection::ReadBack };
        let (settled, anchor, expires_ms) =
            self.anchored_lease_write(&guard, 0, self.budget(), &Reconciles::default(), first).await?;
        match settled {
            Settled::Applied { etag } => {
                // Claims made under an earlier lease died with it.
                self.lose_all("a fresh lease replaced the one the claim was made under");
                let lease = self.new_lease(etag, anchor, expires_ms, None);
                let within = self.within(&lease);
                let mut slice = self.lease.borrow_mut();
                if let LeaseState::Closed { retiring, .. } = &mut slice.state {
                    // Landed after close(): the retirement retires this record.
                    *retiring = Some(lease);
                    return Err(closed_error());
                }
                if !within {
                    slice.state = LeaseState::None;
                    return Err(Error::not_leased(format!("writing {key} took longer than the lease's authority")));
                }
                slice.state = LeaseState::Held(lease);
                drop(slice);
                let ms = self.store.env.mono_ms() - started;
                self.emit(Event::LeaseAcquired { node: &self.config.node, expires_ms, ms });
                Ok(Acquired::Yes)
            }
            Settled::Rejected | Settled::Superseded if created_unread => Ok(Acquired::Refused),
            Settled::Rejected | Settled::Superseded => Err(Error::not_leased(format!(
                "{key} changed while acquiring it: another process is using node id {}",
                Quoted(&self.config.node)
            ))),
        }
    }
}
