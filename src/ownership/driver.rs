//! `S3Ownership`: the protocol run over an `Env` (SPEC §4-§5). It sequences reads and conditional writes
//! and keeps this node's lease state; every decision comes from the pure modules (`decide`, `lease`,
//! `records`) and every request goes through the bucket layer (`cas`). It must never act on a claim made
//! under a lease that has since lapsed: claims live only as long as the lease they were made under. What it
//! remembers of owner records (`known`) only ever picks a write's guard; the store checks it.

use crate::prelude::*;
use core::cell::RefCell;
use alloc::collections::VecDeque;

use crate::env::{Env, Event};
use crate::error::{msg, Error, Quoted, Result};
use crate::ownership::cas::{armed, Budget, Settled, Store};
use crate::ownership::claims::Claims;
use crate::ownership::decide::{after_peer_lease, awaiting_recovery, claim_step, writes_over_known, Step};
use crate::ownership::control::FleetMarker;
use crate::ownership::ids::{check_cell, check_node, check_prefix, IdSet};
use crate::ownership::known::Known;
use crate::ownership::lease::{peer_dead, self_deadline};
use crate::ownership::probe::ProbeReport;
use crate::ownership::qualify::{self, Flight, Here, Join, Mode};
use crate::ownership::records::{
    decode_lease, decode_owner, encode_lease, encode_owner, CasGuard, CasOutcome, NodeLeaseRecord, OwnerRecord,
    MAX_EPOCH,
};
use crate::s3::Bucket;

/// Everything `new S3Ownership({...})` takes (SPEC §4), minus `fetch` (that is the `Env`).
#[derive(Debug, Clone)]
pub struct Config {
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    pub node: String,
    pub addr: String,
    pub prefix: String,
    pub lease_ttl_ms: u64,
    pub max_clock_skew_ms: u64,
    pub path_style: bool,
    /// Timeout of each request other than renewals (which are bounded by the remaining authority).
    pub request_timeout_ms: u32,
    /// When the store probe (SPEC §6) runs before this instance's first write.
    pub probe: ProbePolicy,
    /// How long a verdict recorded in the bucket (`<prefix>probe/qualified.json`) is trusted after it was
    /// reached; then the next instance qualifies again. At most 90 days; 0 never trusts a record.
    pub probe_trust_ms: u64,
    /// Which cell and node ids are accepted: celld's sets (the default), or wider UTF-8 ids for buckets
    /// no celld node shares (SPEC §2).
    pub ids: IdSet,
}

/// When an instance qualifies its store (`Config::probe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbePolicy {
    /// Trust the bucket's recorded verdict while it is fresh (one GET); otherwise probe and record.
    Recorded,
    /// Probe on every instance's first write, whatever the bucket records (and record the verdict).
    Always,
    /// Never probe: trust the store.
    Off,
}

/// Default `probe_trust_ms`: a week.
pub const PROBE_TRUST_MS: u64 = 7 * 86_400_000;
const MAX_PROBE_TRUST_MS: u64 = 90 * 86_400_000;

impl Config {
    /// Defaults from the SPEC: region "us-east-1", ttl 10 s, skew 1 s, path style, no prefix, no addr.
    pub fn new(endpoint: &str, bucket: &str, node: &str, access_key_id: &str, secret_access_key: &str) -> Self {
        Config {
            endpoint: endpoint.to_owned(),
            bucket: bucket.to_owned(),
            region: "us-east-1".to_owned(),
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            session_token: None,
            node: node.to_owned(),
            addr: String::new(),
            prefix: String::new(),
            lease_ttl_ms: 10_000,
            max_clock_skew_ms: 1_000,
            path_style: true,
            request_timeout_ms: 10_000,
            probe: ProbePolicy::Recorded,
            probe_trust_ms: PROBE_TRUST_MS,
            ids: IdSet::Celld,
        }
    }
}

/// A cell's owner as seen for routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerInfo {
    /// Empty when released.
    pub node: String,
    pub epoch: u64,
    pub addr: String,
    /// The owner's lease is not provably dead (peer rule, SPEC §5).
    pub live: bool,
    /// The owner is dead but its celld node log is not sealed: nobody may claim the cell until celld
    /// recovers that log (SPEC §2).
    pub awaiting_recovery: bool,
}

/// How `claim_with` starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClaimOptions {
    /// The caller expects the cell to have no record yet: send the create (`If-None-Match: *`) first, one
    /// request when right. When a record exists, the store refuses the create (412) and the claim reads and
    /// decides as usual: one request more than reading first.
    pub expect_new: bool,
}

/// What `claim` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    Applied { epoch: u64, took_over: bool, prior: Option<OwnerRecord> },
    Rejected { owner: OwnerInfo },
}

/// This node's lease while it holds one.
struct Lease {
    etag: String,
    /// Monotonic deadline: this node may act while `mono_ms() < deadline`.
    deadline: f64,
}

#[derive(Default)]
struct State {
    lease: Option<Lease>,
    /// Why the lease was lost, until a fresh one is acquired.
    fenced: Option<String>,
    /// Nonces of this instance's recent lease writes: a lease record carrying one is ours.
    lease_nonces: VecDeque<String>,
    /// Cells claimed under the current lease: epoch and the token our claim left.
    claims: Claims,
    /// The owner-record versions this instance last read or wrote, whatever the lease.
    known: Known,
}

/// Claim rounds (read, decide, write) before a claim under constant contention gives up.
const CLAIM_ROUNDS: usize = 4;

pub struct S3Ownership<E: Env> {
    store: Store<E>,
    config: Config,
    state: RefCell<State>,
    /// The store's qualification (SPEC §6): kept verdict, or the one flight in progress.
    qualification: Flight,
    fleet: FleetMarker,
}

impl<E: Env> S3Ownership<E> {
    /// Validates the configuration; sends nothing.
    pub fn new(config: Config, env: E) -> Result<Self> {
        check_node(config.ids, &config.node)?;
        check_prefix(&config.prefix)?;
        if config.lease_ttl_ms <= config.max_clock_skew_ms || config.lease_ttl_ms > 86_400_000 {
            return Err(Error::invalid(msg!(
                "leaseTtlMs (", config.lease_ttl_ms, ") must exceed maxClockSkewMs (", config.max_clock_skew_ms,
                ") and be at most a day"
            )));
        }
        if config.request_timeout_ms == 0 {
            return Err(Error::invalid("requestTimeoutMs must be positive"));
        }
        if config.probe_trust_ms > MAX_PROBE_TRUST_MS {
            return Err(Error::invalid(msg!("probeTrustMs (", config.probe_trust_ms, ") must be at most 90 days")));
        }
        if config.addr.chars().any(char::is_control) {
            return Err(Error::invalid("addr contains a control character"));
        }
        let bucket = Bucket::new(
            &config.endpoint,
            &config.bucket,
            &config.region,
            config.path_style,
            &config.access_key_id,
            &config.secret_access_key,
            config.session_token.as_deref(),
        )?;
        let (state, qualification) = (RefCell::new(State::default()), Flight::default());
        Ok(S3Ownership { store: Store::new(env, bucket), config, state, qualification, fleet: FleetMarker::default() })
    }

    pub fn env(&self) -> &E {
        &self.store.env
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Arms one deliberately broken rule (tests only).
    #[cfg(feature = "teeth")]
    pub fn with_tooth(mut self, tooth: crate::ownership::teeth::Tooth) -> Self {
        self.store.tooth = Some(tooth);
        self
    }

    fn owner_key(&self, cell: &str) -> String {
        msg!(self.config.prefix, "cells/", cell, "/own.json")
    }

    fn lease_key(&self, node: &str) -> String {
        msg!(self.config.prefix, "nodes/", node, ".json")
    }

    fn budget(&self) -> Budget {
        Budget::PerRequest(self.config.request_timeout_ms)
    }

    fn skew_for_peers(&self) -> u64 {
        if armed!(self.store, NoPeerSkewMargin) {
            0
        } else {
            self.config.max_clock_skew_ms
        }
    }

    // ---- the store probe (SPEC §6) ----

    fn here(&self) -> Here<'_> {
        let endpoint = self.config.endpoint.trim_end_matches('/');
        Here { endpoint, bucket: &self.config.bucket, prefix: &self.config.prefix }
    }

    /// Qualifies the store now, whatever is recorded or kept (after any qualification in progress), and
    /// records the verdict in the bucket for later instances.
    pub async fn probe(&self) -> Result<ProbeReport> {
        self.qualified(true).await
    }

    /// Before the first write: the verdict this instance keeps, the bucket's recorded one, or a probe now
    /// (unless the caller opted out). Concurrent callers share one qualification.
    async fn ensure_probed(&self) -> Result<()> {
        // celld's fleet marker first: a fleet of another backend is refused before anything is written.
        if !armed!(self.store, SkipFleetMarker) {
            if let Err(e) = self.fleet.ensure(&self.store, &self.config.prefix, self.budget()).await {
                // A marker that does not decode may be a wrong endpoint's page: the qualification tells
                // the two apart ("not an S3 API" is its error), else the marker really is corrupt.
                if e.code() == "corrupt-record" && self.config.probe != ProbePolicy::Off {
                    self.qualified(false).await?;
                }
                return Err(e);
            }
        }
        if self.config.probe == ProbePolicy::Off {
            return Ok(());
        }
        self.qualified(false).await.map(|_| ())
    }

    /// Joins or leads this instance's qualification; `fresh` ignores what is kept and recorded.
    async fn qualified(&self, fresh: bool) -> Result<ProbeReport> {
        let mode = match self.config.probe {
            _ if fresh => Mode::Explicit,
            ProbePolicy::Always => Mode::Always,
            ProbePolicy::Recorded | ProbePolicy::Off => Mode::Trust,
        };
        let mut waited = None;
        loop {
            match self.qualification.join(self.store.env.wall_ms(), waited, fresh) {
                Join::Known(verdict) => return verdict,
                Join::Wait(flight) => {
                    self.qualification.wait(flight).await;
                    waited = Some(flight);
                }
                Join::Lead(leader) => {
                    let (trust, skew) = (self.config.probe_trust_ms, self.config.max_clock_skew_ms);
                    let outcome =
                        qualify::qualify(&self.store, &self.here(), mode, trust, skew, self.budget()).await;
                    return leader.finish(outcome);
                }
            }
        }
    }

    // ---- low level (SPEC §4), names as in celld ----

    pub async fn read_owner(&self, cell: &str) -> Result<Option<OwnerRecord>> {
        check_cell(self.config.ids, cell)?;
        let read = self.read_decoded(&self.owner_key(cell), decode_owner).await;
        let mut state = self.state.borrow_mut();
        match &read {
            Ok(version) => state.known.set(cell, version.clone()),
            Err(_) => state.known.forget(cell),
        }
        read
    }

    /// Remembers the version an owner-record write of `{node, epoch}` left, or forgets the cell when the
    /// write did not apply (whatever is there now, this instance has not seen it).
    fn wrote_owner(&self, cell: &str, node: &str, epoch: u64, settled: &Result<Settled>) {
        let mut state = self.state.borrow_mut();
        match settled {
            Ok(Settled::Applied { etag }) => {
                let rec = OwnerRecord { node: node.to_owned(), epoch, etag: etag.clone(), nonce: None };
                state.known.set(cell, Some(rec));
            }
            _ => state.known.forget(cell),
        }
    }

    /// GETs and decodes a record. A body that does not decode is read once more before it is called
    /// corrupt: a truncated transfer looks the same as a corrupt record, and only the record stays so.
    async fn read_decoded<T>(&self, key: &str, decode: fn(&str, &[u8], &str) -> Result<T>) -> Result<Option<T>> {
        let mut first_failure = None;
        loop {
            let Some((body, etag)) = self.store.get(key, self.budget()).await? else { return Ok(None) };
            match decode(key, &body, &etag) {
                Ok(record) => return Ok(Some(record)),
                Err(e) if first_failure.is_some() => return Err(e),
                Err(e) => first_failure = Some(e),
            }
        }
    }

    /// Writes `{node: me, epoch}` under `guard`. On applied, the cell counts as claimed at `epoch`.
    pub async fn cas_owner(&self, cell: &str, guard: &CasGuard, epoch: u64) -> Result<CasOutcome> {
        check_cell(self.config.ids, cell)?;
        check_epoch(epoch)?;
        check_guard(guard)?;
        self.ensure_probed().await?;
        let key = self.owner_key(cell);
        let node = &self.config.node;
        let settled = self.store.cas_settled(&key, guard, &|n| encode_owner(node, epoch, n), self.budget()).await;
        self.wrote_owner(cell, node, epoch, &settled);
        let settled = settled?;
        if let Settled::Applied { etag } = &settled {
            self.state.borrow_mut().claims.insert(cell.to_owned(), (epoch, etag.clone()));
        }
        settled.outcome(&key)
    }

    /// Clears `node` (keeping the epoch), only if the record still names this node at `epoch`.
    pub async fn release_owner(&self, cell: &str, epoch: u64) -> Result<CasOutcome> {
        check_epoch(epoch)?;
        match self.read_owner(cell).await? {
            Some(rec) if rec.node == self.config.node && rec.epoch == epoch => {
                self.release_at(cell, epoch, CasGuard::Match(rec.etag)).await
            }
            _ => Ok(CasOutcome::Rejected),
        }
    }

    async fn release_at(&self, cell: &str, epoch: u64, guard: CasGuard) -> Result<CasOutcome> {
        self.ensure_probed().await?;
        let key = self.owner_key(cell);
        let settled = self.store.cas_settled(&key, &guard, &|n| encode_owner("", epoch, n), self.budget()).await;
        self.wrote_owner(cell, "", epoch, &settled);
        let settled = settled?;
        let mut state = self.state.borrow_mut();
        if state.claims.get(cell).is_some_and(|(e, _)| *e == epoch) {
            state.claims.remove(cell);
        }
        settled.outcome(&key)
    }

    pub async fn read_node_lease(&self, node: &str) -> Result<Option<NodeLeaseRecord>> {
        check_node(self.config.ids, node)?;
        let lease = self.read_decoded(&self.lease_key(node), decode_lease).await;
        if armed!(self.store, IgnoreNodeLog) {
            return lease.map(|l| l.map(|l| NodeLeaseRecord { log: None, ..l }));
        }
        lease
    }

    /// Writes this node's lease record with `expires_ms` under `guard`; returns the new ETag when applied.
    /// Low level: it does not change this instance's lease state (`acquire_lease` / `renew_lease` do).
    pub async fn cas_node_lease(&self, guard: &CasGuard, expires_ms: u64) -> Result<(CasOutcome, Option<String>)> {
        check_guard(guard)?;
        self.ensure_probed().await?;
        match self.write_lease(guard, expires_ms, self.budget()).await? {
            Settled::Applied { etag } => Ok((CasOutcome::Applied, Some(etag))),
            other => Ok((other.outcome(&self.lease_key(&self.config.node))?, None)),
        }
    }

    async fn write_lease(&self, guard: &CasGuard, expires_ms: u64, budget: Budget) -> Result<Settled> {
        let key = self.lease_key(&self.config.node);
        let (node, addr) = (&self.config.node, &self.config.addr);
        let body = |nonce: &str| {
            let mut state = self.state.borrow_mut();
            if state.lease_nonces.len() == 16 {
                state.lease_nonces.pop_front();
            }
            state.lease_nonces.push_back(nonce.to_owned());
            encode_lease(node, expires_ms, addr, nonce)
        };
        self.store.cas_settled(&key, guard, &body, budget).await
    }

    fn is_ours(&self, rec: &NodeLeaseRecord) -> bool {
        let state = self.state.borrow();
        // celld's dead-node clean-up rewrites a dead lease with `expires_ms: 0`, keeping our nonce.
        let tombstone = rec.expires_ms == 0;
        state.lease.as_ref().is_some_and(|l| l.etag == rec.etag)
            || (!tombstone && rec.nonce.as_ref().is_some_and(|n| state.lease_nonces.contains(n)))
    }

    // ---- leases (SPEC §5) ----

    /// Installs this node's lease (or renews it, when one is held). A lease record left by another
    /// process under this node id is taken over only once it is dead by the peer rule.
    pub async fn acquire_lease(&self) -> Result<()> {
        if self.lease_valid() {
            return self.renew_lease().await;
        }
        self.ensure_probed().await?;
        let key = self.lease_key(&self.config.node);
        let now = self.store.env.wall_ms(); // before the read, as in `claim`
        let current = self.read_node_lease(&self.config.node).await?;
        let guard = match current {
            None => CasGuard::Absent,
            Some(rec) if self.is_ours(&rec) => CasGuard::Match(rec.etag),
            Some(rec) => {
                if !peer_dead(rec.expires_ms, self.config.max_clock_skew_ms, now) {
                    let wait = rec.expires_ms.saturating_add(self.config.max_clock_skew_ms).saturating_sub(now);
                    return Err(Error::not_leased(msg!(
                        key, " holds a live lease from another process using node id ", Quoted(&self.config.node),
                        " (dead in ", wait, " ms); node ids must be unique per running instance"
                    )));
                }
                CasGuard::Match(rec.etag)
            }
        };
        let started = self.store.env.mono_ms();
        let (settled, anchor, expires_ms) = self.anchored_lease_write(&guard, self.budget()).await?;
        match settled {
            Settled::Applied { etag } => {
                let deadline = self_deadline(anchor, self.config.lease_ttl_ms, self.config.max_clock_skew_ms);
                let mut state = self.state.borrow_mut();
                // Claims made under an earlier lease died with it.
                state.claims.clear();
                state.fenced = None;
                if self.store.env.mono_ms() >= deadline {
                    state.lease = None;
                    return Err(Error::not_leased(msg!("writing ", key, " took longer than the lease's authority")));
                }
                state.lease = Some(Lease { etag, deadline });
                drop(state);
                let ms = self.store.env.mono_ms() - started;
                self.store.env.observe(Event::LeaseAcquired { node: &self.config.node, expires_ms, ms });
                Ok(())
            }
            Settled::Rejected | Settled::Superseded => Err(Error::not_leased(msg!(
                key, " changed while acquiring it: another process is using node id ", Quoted(&self.config.node)
            ))),
        }
    }

    /// Writes this node's lease with `expires = wall_now + ttl`, returning the monotonic anchor, sampled
    /// before the write is sent.
    async fn anchored_lease_write(&self, guard: &CasGuard, budget: Budget) -> Result<(Settled, f64, u64)> {
        let anchor = self.store.env.mono_ms();
        let expires_ms = self.store.env.wall_ms().saturating_add(self.config.lease_ttl_ms);
        let settled = self.write_lease(guard, expires_ms, budget).await?;
        let anchor = if armed!(self.store, AnchorAfterWrite) { self.store.env.mono_ms() } else { anchor };
        Ok((settled, anchor, expires_ms))
    }

    /// Extends the held lease. Fails with `fenced` when the lease was replaced or could not be renewed
    /// before it lapsed; the node must then `acquire_lease` again and re-claim its cells.
    pub async fn renew_lease(&self) -> Result<()> {
        for _ in 0..2 {
            let (etag, deadline) = self.held_lease()?;
            let started = self.store.env.mono_ms();
            let (settled, anchor, expires_ms) =
                self.anchored_lease_write(&CasGuard::Match(etag), Budget::Authority(deadline)).await?;
            let late = self.store.env.mono_ms() >= deadline && !armed!(self.store, InstallLateRenewal);
            match settled {
                Settled::Applied { .. } if late => {
                    return Err(self.fence("the renewal was answered only after the lease had lapsed"))
                }
                Settled::Applied { etag } => {
                    let deadline = self_deadline(anchor, self.config.lease_ttl_ms, self.config.max_clock_skew_ms);
                    let mut state = self.state.borrow_mut();
                    if state.fenced.is_none() {
                        state.lease = Some(Lease { etag, deadline });
                    }
                    drop(state);
                    let ms = self.store.env.mono_ms() - started;
                    self.store.env.observe(Event::LeaseRenewed { node: &self.config.node, expires_ms, ms });
                    return Ok(());
                }
                Settled::Superseded => return Err(self.fence("the lease record was replaced by another writer")),
                Settled::Rejected => {
                    // An earlier renewal of ours that ended ambiguous may have landed after all: then the
                    // record is ours under a token we never saw. Adopt it (authority unchanged) and retry.
                    match self.read_node_lease(&self.config.node).await? {
                        Some(rec) if self.is_ours(&rec) && !late => {
                            if let Some(lease) = self.state.borrow_mut().lease.as_mut() {
                                lease.etag = rec.etag;
                            }
                        }
                        _ => return Err(self.fence("the lease record was replaced by another writer")),
                    }
                }
            }
        }
        Err(self.fence("the lease record kept changing under renewal"))
    }

    /// The held lease's token and deadline, or why there is none (lapsed leases fence here).
    fn held_lease(&self) -> Result<(String, f64)> {
        let state = self.state.borrow();
        if let Some(why) = &state.fenced {
            return Err(Error::fenced(why.clone()));
        }
        let Some(lease) = &state.lease else {
            return Err(Error::not_leased("no lease held; call acquireLease() first".into()));
        };
        let (etag, deadline) = (lease.etag.clone(), lease.deadline);
        drop(state);
        if self.store.env.mono_ms() >= deadline && !armed!(self.store, InstallLateRenewal) {
            return Err(self.fence("the lease lapsed before it was renewed"));
        }
        Ok((etag, deadline))
    }

    /// Drops the lease and every claim made under it.
    fn fence(&self, why: &str) -> Error {
        let mut state = self.state.borrow_mut();
        state.lease = None;
        state.claims.clear();
        state.fenced = Some(why.to_owned());
        drop(state);
        self.store.env.observe(Event::Fenced { node: &self.config.node, reason: why });
        Error::fenced(why.to_owned())
    }

    /// True while this node may act as an owner: it holds a lease whose self-deadline has not passed.
    pub fn lease_valid(&self) -> bool {
        let state = self.state.borrow();
        state.fenced.is_none() && state.lease.as_ref().is_some_and(|l| self.store.env.mono_ms() < l.deadline)
    }

    /// `not-leased` / `fenced` unless the lease is valid now.
    fn require_lease(&self) -> Result<()> {
        self.held_lease().map(|_| ())
    }

    // ---- high level ----

    /// Claims `cell` at a new epoch when it is absent, released, this node's, or held by a node whose
    /// lease is dead; otherwise returns the live owner as a routing hint.
    pub async fn claim(&self, cell: &str) -> Result<ClaimOutcome> {
        self.claim_with(cell, ClaimOptions::default()).await
    }

    /// `claim`, starting without a read when it can: with `expect_new`, by creating the record; else when
    /// this instance saw the cell's latest version absent, released or its own, by writing over that
    /// version (while such versions have recently been current, see `Known`). The write's guard makes the
    /// store check that the version is still current; a refused guard sends the claim back to reading (one
    /// extra round, not counted against contention).
    pub async fn claim_with(&self, cell: &str, options: ClaimOptions) -> Result<ClaimOutcome> {
        check_cell(self.config.ids, cell)?;
        self.require_lease()?;
        let started = self.store.env.mono_ms();
        let ClaimStart { mut unread, trying, mut untried } = self.claim_start(cell, options);
        let mut last_seen: Option<OwnerInfo> = None;
        for _ in 0..CLAIM_ROUNDS + usize::from(unread.is_some()) {
            let unread_round = unread.is_some();
            let current = match unread.take() {
                Some(version) => version,
                None => {
                    let current = self.read_owner(cell).await?;
                    if let Some(token) = untried.take() {
                        let hit = token.as_deref() == current.as_ref().map(|r| r.etag.as_str());
                        self.state.borrow_mut().known.scored(hit);
                    }
                    current
                }
            };
            // A version not read now never names a peer (`unread_start`): peers are judged on fresh reads.
            let step = match claim_step(&self.config.node, current.as_ref())? {
                Step::ReadPeerLease { node } => {
                    let rec = current.as_ref().expect("a peer is named only by a record that exists");
                    // Judge the lease at the instant the read was sent: the record is at least that fresh,
                    // while a slow answer may carry a lease the holder has renewed since.
                    let now = self.store.env.wall_ms();
                    let lease = self.read_node_lease(&node).await?;
                    match after_peer_lease(rec, lease.as_ref(), self.skew_for_peers(), now)? {
                        Some(step) => step,
                        None => {
                            let awaiting_recovery = awaiting_recovery(lease.as_ref(), self.skew_for_peers(), now);
                            let addr = lease.map(|l| l.addr).unwrap_or_default();
                            let (live, epoch) = (!awaiting_recovery, rec.epoch);
                            let owner = OwnerInfo { node, epoch, addr, live, awaiting_recovery };
                            return Ok(self.claim_rejected(cell, owner, started));
                        }
                    }
                }
                step => step,
            };
            let Step::Write { guard, epoch, took_over } = step else { unreachable!("resolved above") };
            // Time passed while reading: the lease must still hold when the claim is written.
            self.require_lease()?;
            let node = &self.config.node;
            // The key only for this write: a string live across every await is dropped on every early exit.
            let settled =
                self.store.cas_settled(&self.owner_key(cell), &guard, &|n| encode_owner(node, epoch, n), self.budget()).await;
            self.wrote_owner(cell, node, epoch, &settled);
            if let (true, true, Ok(s)) = (unread_round, trying, &settled) {
                self.state.borrow_mut().known.scored(matches!(s, Settled::Applied { .. }));
            }
            match settled? {
                Settled::Applied { etag } => {
                    if !self.lease_valid() {
                        // Landed, but our authority ran out meanwhile: a claim we may not act on.
                        return Err(self.fence("the lease lapsed while the claim was being written"));
                    }
                    self.state.borrow_mut().claims.insert(cell.to_owned(), (epoch, etag));
                    let ms = self.store.env.mono_ms() - started;
                    self.store.env.observe(Event::ClaimApplied { cell, epoch, took_over, ms });
                    return Ok(ClaimOutcome::Applied { epoch, took_over, prior: current });
                }
                Settled::Rejected if unread_round && armed!(self.store, AnswerFromKnown) => {
                    let (node, epoch) = current.map(|r| (r.node, r.epoch)).unwrap_or_default();
                    return Ok(ClaimOutcome::Rejected { owner: OwnerInfo { node, epoch, addr: String::new(), live: true, awaiting_recovery: false } });
                }
                Settled::Rejected if armed!(self.store, ConflictMeansOwned) => {
                    let (node, epoch) = current.map(|r| (r.node, r.epoch)).unwrap_or_default();
                    let owner = OwnerInfo { node, epoch, addr: String::new(), live: true, awaiting_recovery: false };
                    return Ok(ClaimOutcome::Rejected { owner });
                }
                // Superseded: another writer's claim replaced ours or beat it; the next round reads it.
                Settled::Rejected | Settled::Superseded => {
                    last_seen = current.map(|r| OwnerInfo { node: r.node, epoch: r.epoch, addr: String::new(), live: true, awaiting_recovery: false });
                }
            }
        }
        // Lost every round to other writers: report who holds it now.
        match self.owner(cell).await? {
            Some(owner) => Ok(self.claim_rejected(cell, owner, started)),
            None => Err(Error::transport(
                self.owner_key(cell),
                msg!("claim lost ", CLAIM_ROUNDS, " rounds of contention (last seen: ", seen(last_seen.as_ref()), ")"),
            )),
        }
    }

    /// How a claim starts: with `expect_new`, by creating; else over the version of `cell` this instance
    /// last saw, if a claim could write over it without reading (absent, released or its own — never one
    /// naming a peer, see `writes_over_known`) and such versions have lately been current.
    fn claim_start(&self, cell: &str, options: ClaimOptions) -> ClaimStart {
        if options.expect_new {
            return ClaimStart { unread: Some(None), trying: false, untried: None };
        }
        let known = &self.state.borrow().known;
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
        self.store.env.observe(Event::ClaimRejected { cell, owner: &owner.node, epoch: owner.epoch, ms });
        ClaimOutcome::Rejected { owner }
    }

    /// Releases a cell this node claimed, at the epoch it claimed it: one conditional write with the token
    /// the claim left, falling back to read-then-write when that token has moved.
    pub async fn release(&self, cell: &str) -> Result<CasOutcome> {
        check_cell(self.config.ids, cell)?;
        let claimed = self.state.borrow().claims.get(cell).cloned();
        match claimed {
            Some((epoch, etag)) => match self.release_at(cell, epoch, CasGuard::Match(etag)).await? {
                CasOutcome::Applied => Ok(CasOutcome::Applied),
                CasOutcome::Rejected => self.release_owner(cell, epoch).await,
            },
            // Not claimed by this instance: release whatever epoch the record names us at.
            None => match self.read_owner(cell).await? {
                Some(rec) if rec.node == self.config.node => {
                    self.release_at(cell, rec.epoch, CasGuard::Match(rec.etag)).await
                }
                _ => Ok(CasOutcome::Rejected),
            },
        }
    }

    /// Who owns `cell` and whether that owner's lease is live; `None` when the record is absent.
    pub async fn owner(&self, cell: &str) -> Result<Option<OwnerInfo>> {
        let Some(rec) = self.read_owner(cell).await? else { return Ok(None) };
        if rec.is_released() {
            return Ok(Some(OwnerInfo { node: String::new(), epoch: rec.epoch, addr: String::new(), live: false, awaiting_recovery: false }));
        }
        if rec.node == self.config.node {
            let live = self.lease_valid();
            return Ok(Some(OwnerInfo { node: rec.node, epoch: rec.epoch, addr: self.config.addr.clone(), live, awaiting_recovery: false }));
        }
        let now = self.store.env.wall_ms(); // before the read, as in `claim`
        let lease = self.read_node_lease(&rec.node).await?;
        let live = lease.as_ref().is_some_and(|l| !peer_dead(l.expires_ms, self.skew_for_peers(), now));
        let awaiting_recovery = awaiting_recovery(lease.as_ref(), self.skew_for_peers(), now);
        let addr = lease.map(|l| l.addr).unwrap_or_default();
        Ok(Some(OwnerInfo { node: rec.node, epoch: rec.epoch, addr, live, awaiting_recovery }))
    }

    /// The ack gate: true iff this node claimed `cell` at `epoch` under its current lease, the lease is
    /// still valid, and the record still names this node at `epoch`.
    pub async fn verify(&self, cell: &str, epoch: u64) -> Result<bool> {
        check_epoch(epoch)?;
        let rec = self.read_owner(cell).await?;
        let names_us = rec.is_some_and(|r| r.node == self.config.node && r.epoch == epoch);
        let claimed = self.state.borrow().claims.get(cell).is_some_and(|(e, _)| *e == epoch);
        Ok(names_us && claimed && self.lease_valid())
    }

    /// The cells this instance holds under its current lease, with their epochs.
    pub fn claimed(&self) -> Vec<(String, u64)> {
        self.state.borrow().claims.iter().map(|(c, (e, _))| (c.clone(), *e)).collect()
    }
}

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
        Some(o) => msg!(Quoted(&o.node), " at epoch ", o.epoch),
        None => "no record".to_owned(),
    }
}

fn check_epoch(epoch: u64) -> Result<()> {
    if epoch == 0 || epoch > MAX_EPOCH {
        return Err(Error::invalid(msg!("epoch ", epoch, " is not in 1..=2^53-1")));
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
