//! The claims this instance holds under its current lease, and how each one ends: taken over (a read
//! showed the record replaced), reclaimed (a claim at a higher epoch was sent), released, lost with the
//! lease, or closed. Each end is said once (`Event::AuthorityLost`), the moment it is known. It also
//! remembers whether a record naming this node may exist that this instance does not hold (`unaccounted`:
//! then `close()` keeps the retired lease for peers' takeover), and why the claims that ended lately ended,
//! for the check every fenced send makes (`authority_at`, SPEC §4.4). It must never send a request, never
//! decide on its own that a claim ended (its callers tell it what they saw), and never keep a cell it did
//! not hold.

use core::cell::Cell;
use core::future::Future;

use crate::env::{Env, Event, Lost};
use crate::error::{Quoted, Result};
use crate::ownership::authority::claim_gone;
use crate::ownership::cas::Settled;
use crate::ownership::records::OwnerRecord;

use super::release::Unsettled;
use super::S3Ownership;

/// A claim: the epoch and the token the claim's write left.
pub(super) type Claim = (u64, String);

/// Claims keyed by cell id, in cell order (a sorted `Vec`: per instance, a short list).
#[derive(Default)]
pub(super) struct Claims(Vec<(String, Claim)>);

impl Claims {
    fn find(&self, cell: &str) -> core::result::Result<usize, usize> {
        self.0.binary_search_by(|(c, _)| c.as_str().cmp(cell))
    }

    pub(super) fn get(&self, cell: &str) -> Option<&Claim> {
        self.find(cell).ok().map(|i| &self.0[i].1)
    }

    /// Adds or replaces the claim on `cell`.
    fn insert(&mut self, cell: String, claim: Claim) {
        match self.find(&cell) {
            Ok(i) => self.0[i].1 = claim,
            Err(i) => self.0.insert(i, (cell, claim)),
        }
    }

    fn remove(&mut self, cell: &str) {
        if let Ok(i) = self.find(cell) {
            self.0.remove(i);
        }
    }

    /// In cell order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &Claim)> {
        self.0.iter().map(|(c, claim)| (c, claim))
    }

    fn epochs(&self) -> Vec<(String, u64)> {
        self.iter().map(|(c, (e, _))| (c.clone(), *e)).collect()
    }
}

/// Claims that ended, remembered to say why (`authority_at`).
const ENDED_KEPT: usize = 64;

#[derive(Default)]
pub(super) struct Book {
    /// Cells claimed under the current lease.
    claims: Claims,
    /// The claims held when `close()` was called, for `CloseOptions::release`.
    closing: Claims,
    /// An owner record naming this node may exist that this instance does not hold: a claim's write that
    /// was not settled, or was voided after it landed; or the lease was taken over from another process of
    /// this node id.
    unaccounted: bool,
    /// The last `ENDED_KEPT` claims that ended: (cell, epoch, how, the core's detail).
    ended: std::collections::VecDeque<(String, u64, Lost, String)>,
}

impl<E: Env> S3Ownership<E> {
    /// This instance's claim of `cell`, if any.
    pub(super) fn claim_of(&self, cell: &str) -> Option<Claim> {
        self.book.borrow().claims.get(cell).cloned()
    }

    /// The epoch of this instance's claim of `cell`, if any.
    pub(super) fn claimed_epoch(&self, cell: &str) -> Option<u64> {
        self.book.borrow().claims.get(cell).map(|(e, _)| *e)
    }

    /// The claims held, with their epochs, whatever the lease (`claimed` checks it).
    pub(super) fn held_claims(&self) -> Vec<(String, u64)> {
        self.book.borrow().claims.epochs()
    }

    /// Reads `cell`'s owner record, then ends this instance's claim of it when the read shows it replaced
    /// (`claim_gone`, judged against the claim held when the read was sent).
    pub(super) async fn read_owner_judged(&self, cell: &str) -> Result<Option<OwnerRecord>> {
        let before = self.claim_of(cell);
        let read = self.read_owner_record(cell).await?;
        self.judge_claim(cell, before, read.as_ref());
        Ok(read)
    }

    /// A takeover seen: drops this instance's claim of `cell` when a read (sent while the claim was
    /// `before`) shows it replaced.
    pub(super) fn judge_claim(&self, cell: &str, before: Option<Claim>, read: Option<&OwnerRecord>) {
        let Some(claim) = self.claim_of(cell) else { return };
        let sent_after_claim = before.as_ref() == Some(&claim);
        if claim_gone(&self.config.node, claim.0, sent_after_claim, read) {
            let key = self.owner_key(cell);
            let detail = match read {
                Some(r) if r.is_released() => format!("{key} was released at epoch {}", r.epoch),
                Some(r) => format!("{key} names {} at epoch {}", Quoted(&r.node), r.epoch),
                None => format!("{key} is gone"),
            };
            self.lose_claim(cell, Some(claim.0), Lost::TakenOver, &detail);
        }
    }

    /// Drops this instance's claim of `cell` (only the one at `epoch`, when given) and says so.
    pub(super) fn lose_claim(&self, cell: &str, epoch: Option<u64>, lost: Lost, detail: &str) {
        let dropped = {
            let mut book = self.book.borrow_mut();
            match book.claims.get(cell) {
                Some(&(e, _)) if epoch.is_none_or(|want| want == e) => {
                    book.claims.remove(cell);
                    Some(e)
                }
                _ => None,
            }
        };
        if let Some(epoch) = dropped {
            self.ended(cell, epoch, lost, detail);
        }
    }

    /// A claim ended: remembered (`authority_at`), then said.
    fn ended(&self, cell: &str, epoch: u64, lost: Lost, detail: &str) {
        {
            let mut book = self.book.borrow_mut();
            if book.ended.len() == ENDED_KEPT {
                book.ended.pop_front();
            }
            book.ended.push_back((cell.to_owned(), epoch, lost, detail.to_owned()));
        }
        self.emit(Event::AuthorityLost { cell, epoch, lost, detail });
    }

    /// How the claim of `cell` at `epoch` ended, if it ended lately.
    fn ended_of(&self, cell: &str, epoch: u64) -> Option<super::Ended> {
        let book = self.book.borrow();
        let (.., lost, detail) = book.ended.iter().rev().find(|(c, e, ..)| c == cell && *e == epoch)?;
        Some(super::Ended { lost: Some(*lost), detail: detail.clone() })
    }

    /// SPEC §4.4, fencing at send: how long this instance may still act for `cell` at `epoch` (ms), or why
    /// it may not (released, the lease lost, a newer epoch, closed). Asked by every fenced request at the
    /// moment it is sent; asking fences a lapsed lease, as `authority` does. Sends nothing.
    pub fn authority_at(&self, cell: &str, epoch: u64) -> core::result::Result<f64, super::Ended> {
        use super::Ended;
        let why = match self.authority(cell) {
            Ok((held, left)) if held == epoch => return Ok(left),
            Ok((held, _)) => Ended { lost: (held > epoch).then_some(Lost::Reclaimed), detail: format!("this instance holds it at epoch {held} now") },
            Err(_) if self.is_closed() => Ended { lost: Some(Lost::Closed), detail: "close() was called".into() },
            Err(e) => match self.held_lease() {
                Err(_) => Ended { lost: Some(Lost::LeaseLost), detail: e.message() },
                Ok(_) => Ended { lost: None, detail: "this instance does not hold it".into() },
            },
        };
        // What ended this very claim says it best (a release before the lease lapsed was a release).
        Err(self.ended_of(cell, epoch).unwrap_or(why))
    }

    /// Drops every claim (the lease they were made under is gone) and says so.
    pub(super) fn lose_all(&self, detail: &str) {
        let dropped = {
            let mut book = self.book.borrow_mut();
            let dropped = book.claims.epochs();
            book.claims = Claims::default();
            // Their records still name this node: a close must keep the retired lease for their takeover.
            book.unaccounted |= !dropped.is_empty();
            dropped
        };
        for (cell, epoch) in &dropped {
            self.ended(cell, *epoch, Lost::LeaseLost, detail);
        }
    }

    /// `close()` was called: every claim ends now, kept aside for `CloseOptions::release` (unless the
    /// rule that a close ends authority is off). Returns them, for `closed_claims` to say so.
    pub(super) fn close_book(&self) -> Vec<(String, u64)> {
        if !self.rules().close_ends_authority {
            return Vec::new();
        }
        let mut book = self.book.borrow_mut();
        book.closing = core::mem::take(&mut book.claims);
        book.closing.epochs()
    }

    /// Says that the claims `close_book` ended are gone.
    pub(super) fn closed_claims(&self, ended: &[(String, u64)]) {
        for (cell, epoch) in ended {
            self.ended(cell, *epoch, Lost::Closed, "close() was called");
        }
    }

    /// The claims held when `close()` was called and not released since.
    pub(super) fn closing_claims(&self) -> Vec<(String, Claim)> {
        self.book.borrow().closing.iter().map(|(c, claim)| (c.clone(), claim.clone())).collect()
    }

    /// `close(release)` released `cell`.
    pub(super) fn released_at_close(&self, cell: &str) {
        self.book.borrow_mut().closing.remove(cell);
    }

    /// No record can still name this node through this instance: nothing held at close, nothing unsettled.
    pub(super) fn all_accounted(&self) -> bool {
        let book = self.book.borrow();
        !book.unaccounted && book.closing.iter().next().is_none()
    }

    /// A claim of `cell` at `epoch` is about to be sent: this instance's claim at a lower epoch ends now
    /// (the write may land at any moment).
    pub(super) fn reclaiming(&self, cell: &str, epoch: u64) {
        if let Some(old) = self.claimed_epoch(cell).filter(|e| *e < epoch) {
            self.lose_claim(cell, Some(old), Lost::Reclaimed, &format!("claiming it again at epoch {epoch}"));
        }
    }

    /// Records a claim, never replacing a newer one: answers of one cell's writes may arrive out of order.
    pub(super) fn record_claim(&self, cell: &str, epoch: u64, etag: String) {
        self.reclaiming(cell, epoch);
        let mut book = self.book.borrow_mut();
        let newer = book.claims.get(cell).is_some_and(|(e, _)| *e > epoch) && self.rules().one_claim_per_cell;
        if !newer {
            book.claims.insert(cell.to_owned(), (epoch, etag));
        }
    }

    /// A record naming this node may exist that this instance does not hold.
    pub(super) fn unaccounted(&self) {
        self.book.borrow_mut().unaccounted = true;
    }

    /// Sends `write`, an owner-record write naming this node, so that `close()` settles it before it deletes
    /// the lease (issue 34 B): it waits for the writes in flight (`naming_writes`), and one whose caller
    /// dropped it before its answer (it may still land) leaves the instance unaccounted, which keeps the
    /// lease (retired, never deleted: peers take over at once, where a missing lease would make them wait).
    pub(super) async fn naming_write(&self, write: impl Future<Output = Result<Settled>>) -> Result<Settled> {
        if !self.rules().close_settles_writes {
            return write.await;
        }
        let guard = Unsettled { node: self, settled: Cell::new(false) };
        let n = self.naming_sent.get() + 1;
        self.naming_sent.set(n);
        let settled = self.naming_writes.lead(&n.to_string(), write).await;
        guard.settled.set(true);
        settled
    }

    /// Waits until no owner-record write naming this node is in flight (`naming_write`).
    pub(super) async fn naming_writes_idle(&self) {
        self.naming_writes.idle_all().await;
    }

    /// Notes an owner-record write of this instance that may have landed without this instance holding it.
    pub(super) fn account(&self, settled: &Result<Settled>) {
        if !matches!(settled, Ok(Settled::Applied { .. } | Settled::Rejected)) {
            self.unaccounted();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_behave_like_a_map_in_cell_order() {
        let mut claims = Claims::default();
        for (cell, epoch) in [("m", 1), ("a", 2), ("z", 3), ("m", 4)] {
            claims.insert(cell.into(), (epoch, format!("t{epoch}")));
        }
        assert_eq!(claims.get("m"), Some(&(4, "t4".into())));
        assert_eq!(claims.get("b"), None);
        claims.remove("a");
        claims.remove("absent");
        assert_eq!(claims.epochs(), [("m".to_owned(), 4), ("z".to_owned(), 3)]);
    }
}
