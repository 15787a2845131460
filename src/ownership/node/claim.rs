//! Claiming a cell (SPEC §4): read, decide (`decide::claim_step`), write under a guard, as many rounds as
//! contention allows; concurrent claims of one cell on this instance share one attempt. Also what a
//! claim's reads tell callers: `owner` (who holds a cell, and is their lease live) and `verify` (the ack
//! gate). A claim's write counts only under the lease it was sent under; a rejected claim says when it may
//! succeed (`Wake`). It must never judge a peer on a version it did not read now.

use core::cell::RefCell;

use crate::env::{Env, Event};
use crate::error::{Error, Quoted, Result};
use crate::ownership::cas::{FirstRejection, Reconciles, Seen, Settled};
use crate::ownership::clock::Judgement;
use crate::ownership::decide::{after_peer_lease, awaiting_recovery, claim_step, writes_over_known, Holder, Step, Write};
use crate::ownership::ids::check_cell;
use crate::ownership::lease::renew_retry_ms;
use crate::ownership::records::{NodeLeaseRecord, OwnerRecord, Recovery, RECOVERY_HEARTBEAT_MS};

use super::owner::check_epoch;
use super::{ClaimOptions, ClaimOutcome, OwnerInfo, S3Ownership};

/// Claim rounds (read, decide, write) before a claim under constant contention gives up.
const CLAIM_ROUNDS: usize = 4;

impl<E: Env> S3Ownership<E> {
    /// Claims `cell` at a new epoch when it is absent, released, this node's, or held by a node whose
    /// lease is dead; otherwise returns the live owner as a routing hint.
    pub async fn claim(&self, cell: &str) -> Result<ClaimOutcome> {
        self.claim_with(cell, ClaimOptions::default()).await
    }

    /// `claim`, starting without a read when it can: with `expect_new`, by creating the record; else when
    /// this instance saw the cell's latest version absent, released or its own, by writing over that
    /// version (while such versions have recently been current, see `Known`). The write's guard makes the
    /// store check that the version is still current; a refused guard sends the claim back to reading (one
    /// extra round, not counted against contention). Concurrent claims of one cell on this instance share
    /// one attempt and its answer.
    pub async fn claim_with(&self, cell: &str, options: ClaimOptions) -> Result<ClaimOutcome> {
        self.claim_shared(cell, options).await.map(|(outcome, _)| outcome)
    }

    /// `claim_with`, and when a rejected claim should look again (shared with every concurrent claim of
    /// the cell, like the outcome).
    pub(super) async fn claim_shared(&self, cell: &str, options: ClaimOptions) -> Result<(ClaimOutcome, Wake)> {
        check_cell(self.config.ids, cell)?;
        self.renew_if_due().await;
        if !self.rules().one_claim_per_cell {
            return self.claims_in_flight.lead(cell, self.claim_once(cell, options)).await;
        }
        self.claims_in_flight.share(cell, || self.claim_once(cell, options)).await
    }

    async fn claim_once(&self, cell: &str, options: ClaimOptions) -> Result<(ClaimOutcome, Wake)> {
        let generation = self.held_lease()?.generation;
        let started = self.store.env.mono_ms();
        let reconciles = Reconciles::default();
        let ClaimStart { mut unread, trying, mut untried } = self.claim_start(cell, options);
        let mut last_seen: Option<OwnerInfo> = None;
        // The last round's write when it was answered 412/404 (with what it wrote over) and its nonces: a
        // request delivered twice lands and is answered 412; the next read shows our nonce then.
        let mut refused: Option<(Write, Option<OwnerRecord>)> = None;
        let sent: RefCell<Vec<String>> = RefCell::default();
        for _ in 0..CLAIM_ROUNDS + usize::from(unread.is_some()) {
            let unread_round = unread.is_some();
            let current = match unread.take() {
                Some(version) => version,
                None => {
                    let current = self.read_owner_judged(cell).await?;
                    if let Some(token) = untried.take() {
                        let hit = token.as_deref() == current.as_ref().map(|r| r.etag.as_str());
                        self.records.borrow_mut().known.scored(hit);
                    }
                    if let Some(landed) = self.landed_after_all(&mut refused, &sent, current.as_ref()) {
                        return self.claim_landed(cell, generation, landed, started);
                    }
                    current
                }
            };
            if let Some(rec) = current.as_ref().filter(|r| self.inherited(cell, r)) {
                if unread_round {
                    continue; // read it now
                }
                let owner = OwnerInfo { node: rec.node.clone(), epoch: rec.epoch, addr: self.config.addr.clone(), live: true, awaiting_recovery: false, recovery: None, held: false };
                let wake = Wake(self.inherited_until());
                return Ok((self.claim_rejected(cell, owner, started), wake));
            }
            if current.as_ref().is_some_and(|r| self.written_elsewhere(cell, r)) {
                if unread_round {
                    continue; // read it now
                }
                self.confirm_own().await?;
                self.require_generation(generation)?;
            }
            // A version not read now never names a peer (`unread_start`): peers are judged on fresh reads.
            let Write { guard, epoch, took_over } = match claim_step(&self.config.node, current.as_ref())? {
                Step::Write(write) => write,
                Step::ReadPeerLease { holder: rec } => {
                    let (lease, seen) = self.read_node_lease_seen(&rec.node).await?;
                    let judgement = self.judge_holder(cell, rec, lease.as_ref(), seen);
                    let holder = Holder { lease: lease.as_ref(), dead: judgement == Judgement::Dead };
                    match after_peer_lease(rec, holder)? {
                        Some(write) => write,
                        None => {
                            let awaiting_recovery = awaiting_recovery(holder);
                            let wake = self.holder_wake(judgement, seen, awaiting_recovery);
                            let recovery = recovery_of(lease.as_ref(), awaiting_recovery, self.store.store_now_ms());
                            let addr = lease.map(|l| l.addr).unwrap_or_default();
                            let (live, epoch) = (!awaiting_recovery, rec.epoch);
                            let owner = OwnerInfo { node: rec.node.clone(), epoch, addr, live, awaiting_recovery, recovery, held: false };
                            return Ok((self.claim_rejected(cell, owner, started), wake));
                        }
                    }
                }
            };
            // Time passed while reading: the lease the claim started under must still hold. A round that
            // read nothing (the first, over a remembered version: `claim_step` writes over it at once)
            // awaited nothing since `held_lease` above, whose check is still the current one.
            if !unread_round {
                self.require_generation(generation)?;
            }
            self.reclaiming(cell, epoch);
            let node = &self.config.node;
            sent.borrow_mut().clear();
            // The key only for this write: a string live across every await is dropped on every early exit.
            let key = self.owner_key(cell);
            let first = FirstRejection::CallerReads(&sent);
            let body = |n: &str| self.owner_body(node, epoch, n);
            let settled = self.naming_write(self.store.cas_settled_then(&key, &guard, &body, self.budget(), &reconciles, first)).await;
            drop(key);
            self.wrote_owner(cell, node, epoch, &settled);
            self.account(&settled);
            if let (true, true, Ok(s)) = (unread_round, trying, &settled) {
                self.records.borrow_mut().known.scored(matches!(s, Settled::Applied { .. }));
            }
            match settled? {
                Settled::Applied { etag } => {
                    return self.claim_landed(cell, generation, (Write { guard, epoch, took_over }, current, etag), started);
                }
                Settled::Rejected if unread_round && !self.rules().read_before_rejecting => {
                    let (node, epoch) = current.map(|r| (r.node, r.epoch)).unwrap_or_default();
                    let owner = OwnerInfo { node, epoch, addr: String::new(), live: true, awaiting_recovery: false, recovery: None, held: false };
                    return Ok((ClaimOutcome::Rejected { owner }, self.soon()));
                }
                Settled::Rejected if !self.rules().reread_after_conflict => {
                    let (node, epoch) = current.map(|r| (r.node, r.epoch)).unwrap_or_default();
                    let owner = OwnerInfo { node, epoch, addr: String::new(), live: true, awaiting_recovery: false, recovery: None, held: false };
                    return Ok((ClaimOutcome::Rejected { owner }, self.soon()));
                }
                // Superseded: another writer's claim replaced ours or beat it; the next round reads it.
                Settled::Rejected | Settled::Superseded => {
                    last_seen = current.as_ref().map(|r| OwnerInfo { node: r.node.clone(), epoch: r.epoch, addr: String::new(), live: true, awaiting_recovery: false, recovery: None, held: false });
                    refused = Some((Write { guard, epoch, took_over }, current));
                }
            }
        }
        if refused.is_some() {
            let current = self.read_owner_judged(cell).await?;
            if let Some(landed) = self.landed_after_all(&mut refused, &sent, current.as_ref()) {
                return self.claim_landed(cell, generation, landed, started);
            }
        }
        // Lost every round to other writers: report who holds it now, when someone does.
        match self.owner(cell).await? {
            // Contention: look again soon; that claim reads the holder's lease and says when.
            Some(owner) if owner.live || owner.awaiting_recovery => {
                Ok((self.claim_rejected(cell, owner, started), self.soon()))
            }
            // Absent, released, or held by a dead node now: nobody to route to, and claiming again may win.
            _ => Err(Error::transport(
                self.owner_key(cell),
                format!("claim lost {CLAIM_ROUNDS} rounds of contention (last seen: {})", seen(last_seen.as_ref())),
            )),
        }
    }

    /// The write a claim's last round sent, found in `current` after all (its nonce is there) though it was
    /// answered 412/404: delivered twice. Takes `refused`; `None` when `current` is not that write.
    fn landed_after_all(
        &self,
        refused: &mut Option<(Write, Option<OwnerRecord>)>,
        sent: &RefCell<Vec<String>>,
        current: Option<&OwnerRecord>,
    ) -> Option<(Write, Option<OwnerRecord>, String)> {
        let (write, prior) = refused.take()?;
        let rec = current.filter(|r| r.nonce.as_ref().is_some_and(|n| sent.borrow().contains(n)))?;
        if !self.rules().look_for_own_nonce || rec.node != self.config.node || rec.epoch != write.epoch {
            return None;
        }
        Some((write, prior, rec.etag.clone()))
    }

    /// A claim's write landed (`write` over `prior`, leaving `etag`): it counts only under the lease it was
    /// sent under.
    fn claim_landed(
        &self,
        cell: &str,
        generation: u64,
        (write, prior, etag): (Write, Option<OwnerRecord>, String),
        started: f64,
    ) -> Result<(ClaimOutcome, Wake)> {
        let Write { epoch, took_over, .. } = write;
        self.answered_under(generation, "write")?;
        self.record_claim(cell, epoch, etag);
        let ms = self.store.env.mono_ms() - started;
        self.emit(if took_over { Event::ClaimTookOver { cell, epoch, ms } } else { Event::ClaimApplied { cell, epoch, ms } });
        Ok((ClaimOutcome::Applied { epoch, took_over, prior }, self.soon()))
    }

    /// How a claim starts: with `expect_new`, by creating; else over the version of `cell` this instance
    /// last saw, if a claim could write over it without reading (absent, released or its own — never one
    /// naming a peer, see `writes_over_known`) and such versions have lately been current.
    fn claim_start(&self, cell: &str, options: ClaimOptions) -> ClaimStart {
        if options.expect_new {
            return ClaimStart { unread: Some(None), trying: false, untried: None };
        }
        let records = self.records.borrow();
        let known = &records.known;
        let remembered = known.get(cell).filter(|v| writes_over_known(&self.config.node, v.as_ref()));
        match remembered {
            Some(version) if known.worth_trying() => ClaimStart { unread: Some(version.clone()), trying: true, untried: None },
            // Not tried: the first read still tells whether it would have been current.
            Some(version) => ClaimStart { unread: None, trying: false, untried: Some(version.as_ref().map(|r| r.etag.clone())) },
            None => ClaimStart { unread: None, trying: false, untried: None },
        }
    }

    fn claim_rejected(&self, cell: &str, owner: OwnerInfo, started: f64) -> ClaimOutcome {
        let ms = self.store.env.mono_ms() - started;
        self.emit(Event::ClaimRejected { cell, owner: &owner.node, epoch: owner.epoch, ms });
        ClaimOutcome::Rejected { owner }
    }

    /// Who owns `cell` and whether that owner's lease is live (not provably dead by the peer rule, SPEC §5:
    /// a lease this instance has not yet seen unchanged long enough, whose expiry the store's clock has not
    /// passed, or that has not stayed missing `ttl + skew`, counts as live); `None` when the record is absent.
    pub async fn owner(&self, cell: &str) -> Result<Option<OwnerInfo>> {
        self.renew_if_due().await;
        let Some(rec) = self.read_owner_and_judge(cell).await? else { return Ok(None) };
        if rec.is_released() {
            return Ok(Some(OwnerInfo { node: String::new(), epoch: rec.epoch, addr: String::new(), live: false, awaiting_recovery: false, recovery: None, held: false }));
        }
        if rec.node == self.config.node {
            let live = self.lease_valid();
            let held = live && self.claimed_epoch(cell) == Some(rec.epoch);
            return Ok(Some(OwnerInfo { node: rec.node, epoch: rec.epoch, addr: self.config.addr.clone(), live, awaiting_recovery: false, recovery: None, held }));
        }
        let (lease, seen) = self.read_node_lease_seen(&rec.node).await?;
        let judgement = self.judge_holder(cell, &rec, lease.as_ref(), seen);
        let holder = Holder { lease: lease.as_ref(), dead: judgement == Judgement::Dead };
        let (live, awaiting_recovery) = (!holder.dead, awaiting_recovery(holder));
        let recovery = recovery_of(lease.as_ref(), awaiting_recovery, self.store.store_now_ms());
        let addr = lease.map(|l| l.addr).unwrap_or_default();
        Ok(Some(OwnerInfo { node: rec.node, epoch: rec.epoch, addr, live, awaiting_recovery, recovery, held: false }))
    }

    /// The ack gate: true iff this node claimed `cell` at `epoch` under its current lease, the lease is
    /// still valid, and the record still names this node at `epoch`.
    pub async fn verify(&self, cell: &str, epoch: u64) -> Result<bool> {
        check_epoch(epoch)?;
        self.renew_if_due().await;
        let rec = self.read_owner_and_judge(cell).await?;
        let names_us = rec.is_some_and(|r| r.node == self.config.node && r.epoch == epoch);
        let claimed = self.claimed_epoch(cell) == Some(epoch);
        Ok(names_us && claimed && self.lease_valid())
    }

    /// The cells this instance holds under its current lease, with their epochs (none without a valid
    /// lease).
    pub fn claimed(&self) -> Vec<(String, u64)> {
        if !self.lease_valid() {
            return Vec::new();
        }
        self.held_claims()
    }

    /// When a claim rejected because of the holder's lease (judged `judgement` from a read seen as `seen`)
    /// can next succeed: the earlier of the two instants the peer rule allows — a read sent then finds the
    /// same version dead by observation, or served after the store's clock passed its expiry — on the
    /// monotonic clock. With neither (a lease of celld's while the store's clock is unknown), a ttl later.
    fn holder_wake(&self, judgement: Judgement, seen: Seen, awaiting_recovery: bool) -> Wake {
        let now = self.store.reading();
        let ttl = self.config.lease_ttl_ms as f64;
        if awaiting_recovery {
            // celld recovers the log in its own time, beating on its claim every 5 s: look again as often
            // (the log may be sealed by then), not a whole ttl later.
            return Wake(now.mono + ttl.min(RECOVERY_HEARTBEAT_MS as f64));
        }
        let Judgement::Live { observe_after_ms, store_after } = judgement else { return self.soon() };
        let observed = observe_after_ms.map(|ms| seen.read.sent + ms);
        let by_store = store_after.and_then(|at| self.store.store_clock().mono_when_at_least(at, now));
        Wake(match (observed, by_store) {
            (Some(a), Some(b)) => a.min(b),
            (Some(at), None) | (None, Some(at)) => at,
            (None, None) => now.mono + ttl,
        })
    }

    /// A short, jittered wait (100..199 ms) before looking again when nothing says when.
    fn soon(&self) -> Wake {
        let jitter = renew_retry_ms(self.config.lease_ttl_ms, self.store.env.random_u64());
        Wake(self.store.env.mono_ms() + jitter as f64)
    }
}

/// When a rejected claim should look again: an instant of the monotonic clock (a holder's lease judged
/// dead by then, a log awaiting recovery, contention).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Wake(pub(super) f64);

/// How a claim starts (`claim_start`).
struct ClaimStart {
    /// The version the first round writes over without reading (`Some(None)`: absent).
    unread: Option<Option<OwnerRecord>>,
    /// `unread` is a remembered version, to be scored by whether the write lands.
    trying: bool,
    /// A remembered version not tried, by its token (`None`: absent), to be scored against the first read.
    /// Records never repeat (epochs only grow), so an equal token means the same version.
    untried: Option<Option<String>>,
}

/// The owner a lost claim last saw, for its error message.
fn seen(owner: Option<&OwnerInfo>) -> String {
    match owner {
        Some(o) => format!("{} at epoch {}", Quoted(&o.node), o.epoch),
        None => "no record".to_owned(),
    }
}

/// Who is recovering the holder's celld node log (its lease's `log.claimant` and heartbeat), while the
/// cell awaits that recovery: what a rejection and `owner()` report beside `awaiting_recovery`.
fn recovery_of(lease: Option<&NodeLeaseRecord>, awaiting_recovery: bool, now_ms: u64) -> Option<Recovery> {
    let log = lease.and_then(|l| l.log.as_ref()).filter(|_| awaiting_recovery)?;
    Some(log.recovery(now_ms))
}
