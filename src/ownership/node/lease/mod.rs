//! Whether this instance may act, and under which lease generation (SPEC §5): this node's lease record
//! (one write at a time, shared by every caller; acquiring it in `acquire.rs`, renewing it and the renewal
//! loop in `renew.rs`), fencing, and the checks every write on this node's behalf makes (`held_lease`,
//! `require_generation`, `answered_under`). The lease is an explicit state (`LeaseState`); only this module
//! and its two children change it. It must never adopt a lease record it did not write, and never count a
//! claim's answer under a lease other than the one the claim was sent under.

use std::collections::VecDeque;

use crate::env::{Env, Event};
use crate::error::{Error, Quoted, Result};
use crate::ownership::cas::{Budget, FirstRejection, Reconciles, Settled};
use crate::ownership::clock::{authority_left_ms, expires_on_store_clock, LeaseTerms, Reading};
use crate::ownership::flight::{Joined, Share};
use crate::ownership::records::{encode_celld_lease, encode_lease, CasGuard, NodeLeaseRecord};

use super::{closed_error, S3Ownership};

mod acquire;
mod renew;

/// This node's lease while it holds one.
#[derive(Clone)]
pub(super) struct Lease {
    pub(super) etag: String,
    /// Both clocks read before the write was sent: this node may act until `ttl - skew` has passed since,
    /// by the larger advance of the two (`clock::authority_left_ms`: a sleep stops the monotonic clock, not
    /// the wall clock's advance; the wall clock's value is never used)...
    anchor: Reading,
    /// ...and while no answer since showed this machine's clocks undercounting (`Store::overruns`).
    overruns: u64,
    /// `expires_ms` of the record its authority comes from (on the store's clock when it was known).
    expires_ms: u64,
    /// This instance's lease write attempts sent when it was installed: later ones are newer writes; an
    /// earlier one (a resend of this very write) that lands later could only land over the version the write
    /// was conditioned on, put back by another writer.
    upto: u64,
    /// Which fresh acquisition of this instance it is: renewals keep it, an acquisition makes a new one.
    pub(super) generation: u64,
}

/// Where this instance's authority stands. (A lease write in flight is `S3Ownership::lease_writes`.)
#[derive(Default)]
enum LeaseState {
    /// No lease acquired yet (or the last acquisition's write outlasted its authority).
    #[default]
    None,
    Held(Lease),
    /// The lease was lost, and why, until a fresh one is acquired.
    Fenced(String),
    /// `close()` was called: no authority and no writes but the close's own.
    Closed {
        /// The lease held at close, kept for its retirement (its token, and the authority the close's own
        /// releases are sent under) until it is retired or found replaced.
        retiring: Option<Lease>,
        /// The lease still acting after close: only when the rule that a close ends authority is off.
        kept: Option<Lease>,
    },
}

#[derive(Default)]
pub(super) struct LeaseSlice {
    state: LeaseState,
    /// Lease generations so far.
    generations: u64,
    /// (nonce, expires_ms, attempt number) of this instance's recent lease write attempts: a lease record
    /// carrying the first two is ours; the number says which of our writes came later.
    nonces: VecDeque<(String, u64, u64)>,
    /// Lease write attempts sent so far.
    attempts: u64,
    /// The current renewal loop (`renew_until_stopped`); a newer loop retires an older one.
    renewer: u64,
    /// Until this monotonic instant, records naming this node that this instance did not write are not
    /// its own: it acquired over a *missing* lease, and the process whose lease went missing (a late
    /// delete by celld's clean-up) may still act for them until its authority runs out.
    inherited_until: f64,
    /// When an operation last started a due renewal (`renew_if_due`), on the monotonic clock.
    due_tried: Option<f64>,
}

/// What a lease's authority is timed from, all of it read before its write is sent.
#[derive(Clone, Copy)]
struct Anchor {
    clocks: Reading,
    /// `Store::overruns` then.
    overruns: u64,
}

/// Lease-write nonces remembered.
const LEASE_NONCES: usize = 16;

/// Why a lease record restored to an older version of ours fences.
pub(super) const RESTORED: &str =
    "the lease record was put back to an older version by another writer (a restore?): peers may judge this node dead before its authority ends";

impl<E: Env> S3Ownership<E> {
    /// What this instance writes into its lease record: `expires_ms` (on the store's clock when
    /// `store_clock`) and its ttl, which peers judging it by observation count on.
    pub(super) fn terms(&self, expires_ms: u64, store_clock: bool) -> LeaseTerms {
        LeaseTerms { expires_ms, ttl_ms: Some(self.config.lease_ttl_ms), store_clock }
    }

    /// Writes this node's lease record with `terms` under `guard`, remembering the write's nonce, and taking
    /// a first attempt's rejection as `first` says (an acquisition's unread create reads the record next
    /// anyway, and recognises its own nonce there: `is_ours`).
    pub(super) async fn write_lease(
        &self,
        guard: &CasGuard,
        terms: LeaseTerms,
        budget: Budget,
        rc: &Reconciles,
        first: FirstRejection<'_>,
    ) -> Result<Settled> {
        let key = self.lease_key(&self.config.node);
        let (node, addr) = (&self.config.node, &self.config.addr);
        // In a celld fleet every lease (acquired, renewed, retired) is one celld v0.6 reads (SPEC §2.1).
        let celld = self.in_celld_fleet();
        let body = |nonce: &str| {
            let mut lease = self.lease.borrow_mut();
            if lease.nonces.len() == LEASE_NONCES {
                lease.nonces.pop_front();
            }
            lease.attempts += 1;
            let attempt = lease.attempts;
            lease.nonces.push_back((nonce.to_owned(), terms.expires_ms, attempt));
            if celld {
                // Sampled as this attempt goes out, on the store's clock when known (celld judges the
                // sample's freshness by its own wall clock, near the store's): a fresh sample on a live lease.
                // celld's planner wants the sample no older than its ttl while the lease lives: taken at
                // the instant the expiry counts from (the store's clock, its upper bound), so it stays
                // fresh to the last millisecond; a retirement's (expiry 0) is the store's clock now.
                let sampled_ms = terms.expires_ms.checked_sub(self.config.lease_ttl_ms).unwrap_or_else(|| self.store.store_now_ms());
                return encode_celld_lease(node, terms, addr, nonce, sampled_ms);
            }
            encode_lease(node, terms, addr, nonce)
        };
        self.store.cas_settled_then(&key, guard, &body, budget, rc, first).await
    }

    /// The lease acting now, if any (whether or not it still gives authority).
    pub(super) fn current_lease(&self) -> Option<Lease> {
        match &self.lease.borrow().state {
            LeaseState::Held(l) | LeaseState::Closed { kept: Some(l), .. } => Some(l.clone()),
            _ => None,
        }
    }

    /// A lease record this instance wrote: its current token, or a nonce of ours with the expiry we wrote
    /// with it (celld's clean-up keeps the nonce in the expired copy it writes: that copy is not ours).
    pub(super) fn is_ours(&self, rec: &NodeLeaseRecord) -> bool {
        let lease = self.lease.borrow();
        matches!(&lease.state, LeaseState::Held(l) | LeaseState::Closed { kept: Some(l), .. } if l.etag == rec.etag)
            || self.our_attempt(rec).is_some()
    }

    /// The number of our lease write attempt whose nonce and `expires_ms` `rec` carries, if any.
    fn our_attempt(&self, rec: &NodeLeaseRecord) -> Option<u64> {
        let lease = self.lease.borrow();
        let n = rec.nonce.as_ref()?;
        lease.nonces.iter().find(|(m, e, _)| m == n && *e == rec.expires_ms).map(|&(_, _, a)| a)
    }

    /// A lease record of ours (`is_ours`) that may stand for the authority of `held`: the held version
    /// itself, or a write of ours sent since `held`'s began (an ambiguous renewal that landed late) that gives
    /// peers no earlier death (`expires_ms` no earlier than the held one's). An older body of ours put back by
    /// another tool (a versioned bucket's restore, a backup) lets peers judge this node dead before its
    /// authority ends: never adopted. Its `expires_ms` alone does not tell it from a newer one: a wall-clock
    /// expiry stays at its floor, the held one's, while the wall clock is behind (stepped back).
    /// An attempt of the held lease's own write (a resend) that landed after it could only land over the
    /// version that write was conditioned on, put back meanwhile: a restore, never adopted either.
    pub(super) fn adoptable(&self, rec: &NodeLeaseRecord, held: &Lease) -> bool {
        let newer = || self.our_attempt(rec).is_some_and(|a| a > held.upto) && rec.expires_ms >= held.expires_ms;
        rec.etag == held.etag || (self.is_ours(rec) && (!self.rules().refuse_restored_lease || newer()))
    }

    /// Until when records naming this node that this instance did not write are not its own.
    pub(super) fn inherited_until(&self) -> f64 {
        self.lease.borrow().inherited_until
    }

    /// Installs this node's lease (or renews it, when one is held). A lease record left by another
    /// process under this node id is taken over only once it is dead by the peer rule (a first look at a
    /// lease written moments ago refuses; a later call may find it dead). Concurrent callers
    /// share the lease write in flight.
    pub async fn acquire_lease(&self) -> Result<()> {
        self.lease_write(true).await
    }

    /// Extends the held lease. Fails with `fenced` when the lease was replaced or could not be renewed
    /// before it lapsed; the node must then `acquire_lease` again and re-claim its cells. Concurrent
    /// callers share the lease write in flight.
    pub async fn renew_lease(&self) -> Result<()> {
        self.lease_write(false).await
    }

    /// At most one lease write in flight: a caller finding one takes its outcome (an acquisition that
    /// finds a failed renewal then acquires itself).
    async fn lease_write(&self, acquire: bool) -> Result<()> {
        let once = || async move {
            let outcome = if acquire { self.acquire_once().await } else { self.renew_once().await };
            (outcome.clone(), outcome)
        };
        if !self.rules().one_lease_write {
            return self.lease_writes.lead(acquire, async { once().await.0 }).await;
        }
        let joined = |was_acquire: &bool, joined: Joined<Result<()>>| match joined {
            Joined::Done(Err(_)) if acquire && !was_acquire => None,
            Joined::Done(outcome) => Some(outcome),
            Joined::Abandoned | Joined::Impatient => None,
        };
        let how = Share { joined, ready: || None, patience: core::future::pending };
        self.lease_writes.share(acquire, how, once).await
    }

    /// The lease a write anchored at `anchor` (both clocks, and the overrun counter then) with `expires_ms`
    /// gives: a new generation unless it renews `generation`.
    fn new_lease(&self, etag: String, anchor: Anchor, expires_ms: u64, generation: Option<u64>) -> Lease {
        let generation = generation.unwrap_or_else(|| {
            let mut slice = self.lease.borrow_mut();
            slice.generations += 1;
            slice.generations
        });
        // Authority that outlasts a sign of this machine's clocks undercounting (an answer's `Date`, the
        // clocks' offset moving) is void: counted from before the send, so that one seen while the write was
        // in flight (a sleep with the request queued, the wall clock stepped meanwhile) voids it too.
        let overruns = if self.rules().anchor_every_clock { anchor.overruns } else { self.store.overruns() };
        let upto = self.lease.borrow().attempts;
        Lease { etag, anchor: anchor.clocks, overruns, expires_ms, upto, generation }
    }

    /// Writes this node's lease with `expires_ms` = the store's clock (its upper bound, from `Date`
    /// headers; the wall clock while none was seen) plus the ttl, never before `floor` (a renewal's is the
    /// expiry it extends: the upper bound narrows as answers come, and a later write of ours must never
    /// read as an older one, `adoptable`). A first attempt's rejection is taken as `first` says. Returns the
    /// anchor, read before the write is sent.
    async fn anchored_lease_write(
        &self,
        guard: &CasGuard,
        floor: u64,
        budget: Budget,
        rc: &Reconciles,
        first: FirstRejection<'_>,
    ) -> Result<(Settled, Anchor, u64)> {
        let clocks = self.store.reading();
        let anchor = Anchor { clocks, overruns: self.store.overruns() };
        let ttl = self.config.lease_ttl_ms;
        let on_store = expires_on_store_clock(&self.store.store_clock(), clocks, ttl);
        let expires_ms = on_store.unwrap_or(clocks.wall.saturating_add(ttl)).max(floor);
        let settled = self.write_lease(guard, self.terms(expires_ms, on_store.is_some()), budget, rc, first).await?;
        let anchor = if self.rules().anchor_before_write { anchor } else { Anchor { clocks: self.store.reading(), ..anchor } };
        Ok((settled, anchor, expires_ms))
    }

    /// Whether `lease` still gives authority now (`authority_left`).
    pub(super) fn within(&self, lease: &Lease) -> bool {
        self.authority_left(lease) > 0.0
    }

    /// What remains of `lease`'s authority (ms): `ttl - skew` since its anchor by the larger advance of the
    /// monotonic and the wall clock, and nothing once an answer from the store showed this machine's clocks
    /// undercounting since the anchor (`Learnt::Overran`).
    fn authority_left(&self, lease: &Lease) -> f64 {
        // Read first: the reading itself may show the clocks' offset moved.
        self.authority_left_at(lease, self.store.reading())
    }

    /// `authority_left` at `now`, a reading this instance has just taken (nothing between it and this call).
    pub(super) fn authority_left_at(&self, lease: &Lease, mut now: Reading) -> f64 {
        if self.store.overruns() != lease.overruns {
            return 0.0;
        }
        if !self.rules().wall_deadline {
            now.wall = lease.anchor.wall;
        }
        authority_left_ms(lease.anchor, now, self.config.lease_ttl_ms, self.config.max_clock_skew_ms)
    }

    /// The held lease, or why there is none (lapsed leases fence here).
    pub(super) fn held_lease(&self) -> Result<Lease> {
        let lease = match &self.lease.borrow().state {
            LeaseState::Closed { .. } => return Err(closed_error()),
            LeaseState::Fenced(why) => return Err(Error::fenced(why.clone())),
            LeaseState::None => return Err(Error::not_leased("no lease held; call acquireLease() first".into())),
            LeaseState::Held(lease) => lease.clone(),
        };
        if !self.within(&lease) && self.rules().refuse_late_renewal {
            return Err(self.fence("the lease lapsed before it was renewed"));
        }
        Ok(lease)
    }

    /// `fenced` unless the lease of `generation` is still held and valid: a claim sent under one lease
    /// never continues under the next.
    pub(super) fn require_generation(&self, generation: u64) -> Result<()> {
        let held = self.held_lease()?;
        if held.generation != generation && self.rules().claim_under_its_lease {
            return Err(Error::fenced(
                "the lease this operation started under was lost before its write; claim again under the new one".into(),
            ));
        }
        Ok(())
    }

    /// After a write of a claim landed: it counts only if the lease it was sent under is still held and
    /// valid. A lapsed lease fences; a lease since lost or replaced makes the claim void (`fenced`).
    pub(super) fn answered_under(&self, generation: u64, what: &str) -> Result<()> {
        if !self.rules().claim_under_its_lease {
            return if self.lease_valid() { Ok(()) } else { Err(self.fence("the lease lapsed while the claim was being written")) };
        }
        if self.is_closed() {
            // Landed, but close() ended this instance's authority first: void, and maybe naming us.
            self.unaccounted();
            return Err(closed_error());
        }
        match self.current_lease() {
            Some(l) if l.generation == generation => {
                if self.within(&l) {
                    Ok(())
                } else {
                    // Landed, but our authority ran out meanwhile: a claim we may not act on, whose record
                    // names this node.
                    self.unaccounted();
                    Err(self.fence("the lease lapsed while the claim was being written"))
                }
            }
            _ => {
                self.unaccounted();
                Err(Error::fenced(format!(
                    "the lease this claim's {what} was sent under was lost or replaced before it was answered: the claim is void"
                )))
            }
        }
    }

    /// Drops the lease and every claim made under it.
    pub(super) fn fence(&self, why: &str) -> Error {
        {
            let mut slice = self.lease.borrow_mut();
            match &mut slice.state {
                // Closed stays closed; a lease kept past close (a tooth) is lost all the same.
                LeaseState::Closed { kept, .. } => *kept = None,
                state => *state = LeaseState::Fenced(why.to_owned()),
            }
        }
        self.emit(Event::Fenced { node: &self.config.node, reason: why });
        self.lose_all(why);
        Error::fenced(why.to_owned())
    }

    /// True while this node may act as an owner: it holds a lease whose authority (`ttl - skew` since its
    /// write was sent, by either clock's advance) has not run out.
    pub fn lease_valid(&self) -> bool {
        match &self.lease.borrow().state {
            LeaseState::Held(l) | LeaseState::Closed { kept: Some(l), .. } => self.within(l),
            LeaseState::None | LeaseState::Fenced(_) | LeaseState::Closed { kept: None, .. } => false,
        }
    }

    /// This instance's authority for `cell` now: the epoch it holds the cell at and how long that lasts
    /// (`authority_left`, SPEC §5), or why it has none: `fenced` (asking fences a
    /// lapsed lease, which ends every claim: `Event::AuthorityLost`) or `not-leased` (no lease, or no
    /// claim of the cell under it). Sends nothing: the bindings' abort signals are armed on it.
    pub fn authority(&self, cell: &str) -> Result<(u64, f64)> {
        let lease = self.held_lease()?;
        let Some(epoch) = self.claimed_epoch(cell) else {
            return Err(Error::not_leased(format!("this instance holds no claim of cell {}", Quoted(cell))));
        };
        Ok((epoch, self.authority_left(&lease)))
    }

    pub(super) fn is_closed(&self) -> bool {
        matches!(self.lease.borrow().state, LeaseState::Closed { .. })
    }

    pub(super) fn refuse_if_closed(&self) -> Result<()> {
        if self.is_closed() {
            return Err(closed_error());
        }
        Ok(())
    }

    /// `close()` was called: the lease stops giving authority (kept for its retirement) and the renewal
    /// loop ends. False when it was already closed.
    pub(super) fn close_lease(&self) -> bool {
        let mut slice = self.lease.borrow_mut();
        if matches!(slice.state, LeaseState::Closed { .. }) {
            return false;
        }
        slice.renewer += 1;
        let held = match core::mem::take(&mut slice.state) {
            LeaseState::Held(l) => Some(l),
            LeaseState::None | LeaseState::Fenced(_) | LeaseState::Closed { .. } => None,
        };
        let kept = held.clone().filter(|_| !self.rules().close_ends_authority);
        slice.state = LeaseState::Closed { retiring: held, kept };
        true
    }

    /// The lease kept for the retirement, while there is one.
    pub(super) fn retiring(&self) -> Option<Lease> {
        match &self.lease.borrow().state {
            LeaseState::Closed { retiring, .. } => retiring.clone(),
            _ => None,
        }
    }

    /// The retirement is done, or there is nothing of ours left to retire.
    pub(super) fn retired(&self) {
        if let LeaseState::Closed { retiring, .. } = &mut self.lease.borrow_mut().state {
            *retiring = None;
        }
    }
}
