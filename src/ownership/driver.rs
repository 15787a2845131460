//! `S3Ownership`: the protocol run over an `Env` (SPEC §4-§5). It sequences reads and conditional writes
//! and keeps this node's lease state; every decision comes from the pure modules (`decide`, `lease`,
//! `records`) and every request goes through the bucket layer (`cas`). It must never act on a claim made
//! under a lease that has since lapsed: a claim counts only under the lease it was sent under (its
//! generation is checked when the answer arrives), and every write on behalf of this node needs this
//! instance's valid lease. One instance serves many concurrent callers: at most one lease write
//! (acquisition or renewal) and one claim per cell is in flight, and concurrent callers share it. What it
//! remembers of owner records (`known`) only ever picks a write's guard; the store checks it. `close()`
//! ends authority the moment it is called, then retires the lease with one conditional write over this
//! instance's own token (never over a lease another process wrote); a closed instance writes nothing else.

use crate::prelude::*;
use core::cell::RefCell;
use alloc::collections::VecDeque;
use alloc::rc::Rc;

use crate::env::{Env, Event, Lost};
use crate::error::{msg, Error, Fault, Quoted, Result};
use crate::ownership::authority::claim_gone;
use crate::ownership::cas::{armed, Budget, FirstRejection, Reconciles, Settled, Store};
use crate::ownership::claims::{Claim, Claims};
use crate::ownership::control::FleetMarker;
use crate::ownership::decide::{
    after_peer_lease, awaiting_recovery, claim_step, holder_dead, writes_over_known, PeerLease, PeerRule, Step, Write,
};
use crate::ownership::ids::{check_cell, check_node, check_prefix, IdSet};
use crate::ownership::join::{beside, first, join_all, Either, Flight, Lead, Side};
use crate::ownership::known::Known;
use crate::ownership::lease::{
    judged_dead_at, peer_dead, remaining_ms, renew_interval_ms, renew_retry_ms, renewable, renewal_room_ms,
    self_deadline, wall_deadline, MIN_RENEWAL_ROOM_MS, RETIRED_EXPIRES_MS,
};
use crate::ownership::probe::ProbeReport;
use crate::ownership::qualify::{self, Here, Mode, Qualification};
use crate::ownership::records::{
    awaits_recovery, decode_lease, decode_owner, encode_lease, encode_owner, CasGuard, CasOutcome, NodeLeaseRecord, OwnerRecord,
    MAX_EPOCH,
};
use crate::s3::PutAnswer;
use core::future::Future;

/// Everything `new S3Ownership({...})` takes (SPEC §4), minus `fetch` (that is the `Env`).
#[derive(Debug, Clone)]
pub struct Config {
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    /// The keys come from the host's credentials provider (`Env::credentials`), asked before the first
    /// request and again before they expire; the static keys above are then unused.
    pub credentials_provider: bool,
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
    /// The keys a new `Bucket` starts signing with: the static ones, or placeholders that a credentials
    /// provider's keys replace before anything is signed (`Store::with_credentials_provider`).
    pub fn signing_keys(&self) -> (&str, &str) {
        match self.credentials_provider {
            true => ("provided", "provided"),
            false => (&self.access_key_id, &self.secret_access_key),
        }
    }

    /// Defaults from the SPEC: region "us-east-1", ttl 10 s, skew 1 s, path style, no prefix, no addr.
    pub fn new(endpoint: &str, bucket: &str, node: &str, access_key_id: &str, secret_access_key: &str) -> Self {
        Config {
            endpoint: endpoint.to_owned(),
            bucket: bucket.to_owned(),
            region: "us-east-1".to_owned(),
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            session_token: None,
            credentials_provider: false,
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerInfo {
    /// Empty when released (`null` to JS).
    #[serde(serialize_with = "super::records::node_or_null")]
    pub node: String,
    pub epoch: u64,
    pub addr: String,
    /// The owner's lease is not provably dead (peer rule, SPEC §5).
    pub live: bool,
    /// The owner is dead but its celld node log is not sealed: nobody may claim the cell until celld
    /// recovers that log (SPEC §2).
    pub awaiting_recovery: bool,
    /// This instance holds the cell now: it claimed it at `epoch` under its current, valid lease. A record
    /// naming this node is not enough: claims made under a lapsed lease are void (the Workers idle gap).
    pub held: bool,
}

/// How `claim_with` starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClaimOptions {
    /// The caller expects the cell to have no record yet: send the create (`If-None-Match: *`) first, one
    /// request when right. When a record exists, the store refuses the create (412) and the claim reads and
    /// decides as usual: one request more than reading first.
    pub expect_new: bool,
}

/// How `close` ends the instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CloseOptions {
    /// Also release every cell claimed under the current lease (one conditional write each, sent
    /// together) before the lease is retired, so their records read released rather than held by a dead
    /// node. Not needed for a takeover (the retired lease already lets peers take every cell at once), but
    /// it lets `close` delete the retired lease too, leaving nothing in `nodes/`.
    pub release: bool,
}

/// What `close` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Closed {
    /// The lease record was retired (an expired copy written over this instance's token).
    pub retired: bool,
    /// ...and then deleted (nothing of this node left in `nodes/`).
    pub deleted: bool,
    /// Cells `release` released.
    pub released: usize,
}

/// What `remove_dead_lease` found and did (to JS: `{ outcome, cell? }`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum LeaseRemoval {
    /// The dead lease was deleted (`If-Match` the version read).
    Removed,
    /// There was no lease record.
    Absent,
    /// The lease is not dead by the peer rule: left alone.
    Live,
    /// An owner record among the cells checked still names the node (a peer needs the lease to take it
    /// over at once), or the lease carries a celld node log awaiting recovery: left alone.
    Needed {
        #[serde(skip_serializing_if = "Option::is_none")]
        cell: Option<String>,
    },
    /// The store's conditional DELETE is not verified (no qualification kept, or it was not honoured):
    /// nothing deleted.
    Unsupported,
    /// The record changed between the read and the delete (someone re-acquired it): left alone.
    Changed,
}

/// What `claim` returns (to JS: `{ outcome: "applied", epoch, tookOver, prior }` or
/// `{ outcome: "rejected", owner }`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum ClaimOutcome {
    #[serde(rename_all = "camelCase")]
    Applied { epoch: u64, took_over: bool, prior: Option<OwnerRecord> },
    Rejected { owner: OwnerInfo },
}

/// This node's lease while it holds one.
#[derive(Clone)]
struct Lease {
    etag: String,
    /// Monotonic deadline: this node may act while `mono_ms() < deadline`...
    deadline: f64,
    /// ...and while `wall_ms() < wall_deadline` (`expires_ms - maxClockSkewMs` of the record it wrote).
    wall_deadline: u64,
    /// `expires_ms` of the record its authority comes from: what peers judge this node by.
    expires_ms: u64,
    /// Which fresh acquisition of this instance it is: renewals keep it, an acquisition makes a new one.
    generation: u64,
}

type Shared<T> = Rc<Flight<Result<T>>>;

#[derive(Default)]
struct State {
    lease: Option<Lease>,
    /// Why the lease was lost, until a fresh one is acquired.
    fenced: Option<String>,
    /// Lease generations so far.
    generations: u64,
    /// (nonce, expires_ms) of this instance's recent lease writes: a lease record carrying both is ours.
    lease_nonces: VecDeque<(String, u64)>,
    /// Cells claimed under the current lease: epoch and the token our claim left.
    claims: Claims,
    /// The owner-record versions this instance last read or wrote, whatever the lease.
    known: Known,
    /// The lease write in flight (true: an acquisition), which every lease caller shares.
    lease_flight: Option<(bool, Shared<()>)>,
    /// The claim in flight per cell, which every concurrent claim of that cell shares.
    claim_flights: Vec<(String, Shared<(ClaimOutcome, Wake)>)>,
    /// The releases in flight (`release_at`), which `close()` waits for.
    release_flights: Vec<Rc<Flight<()>>>,
    /// Holder leases this instance found missing, per (holder, cell): a missing lease proves death only
    /// once it stayed missing (`MissingLease`).
    missing: VecDeque<MissingLease>,
    /// The current renewal loop (`renew_until_stopped`); a newer loop retires an older one.
    renewer: u64,
    /// Until this monotonic instant, records naming this node that this instance did not write are not
    /// its own: it acquired over a *missing* lease, and the process whose lease went missing (a late
    /// delete by celld's clean-up) may still act for them until its authority runs out.
    inherited_until: f64,
    /// Nonces of this instance's recent owner-record writes: a record carrying one is this instance's.
    owner_nonces: VecDeque<String>,
    /// `close()` was called: no authority and no writes from then on.
    closed: bool,
    /// The lease held when `close()` was called, kept for its retirement (its token, and the authority
    /// the close's own releases are sent under) until it is retired or found replaced.
    retiring: Option<Lease>,
    /// The claims held when `close()` was called, for `CloseOptions::release`.
    closing_claims: Claims,
    /// The close in flight, which every `close()` caller shares; `closed_with` its outcome once done.
    close_flight: Option<Shared<Closed>>,
    closed_with: Option<Closed>,
    /// An owner record naming this node may exist that this instance does not hold: a claim's write that
    /// was not settled, or was voided after it landed; or the lease was taken over from another process of
    /// this node id. `close()` then keeps the retired lease (peers need it to take those cells at once).
    unaccounted: bool,
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

/// Claim rounds (read, decide, write) before a claim under constant contention gives up.
const CLAIM_ROUNDS: usize = 4;

pub struct S3Ownership<E: Env> {
    store: Store<E>,
    config: Config,
    state: RefCell<State>,
    /// The store's qualification (SPEC §6): kept verdict, or the one flight in progress.
    qualification: Qualification,
    fleet: FleetMarker,
    /// Finished by `close()`: wakes every sleep of the instance that waits on it (the renewal loop's, a
    /// waiting claim's).
    closing: Rc<Flight<()>>,
}

impl<E: Env> S3Ownership<E> {
    /// Validates the configuration; sends nothing.
    pub fn new(config: Config, env: E) -> Result<Self> {
        check_node(config.ids, &config.node)?;
        check_prefix(&config.prefix)?;
        if config.lease_ttl_ms > 86_400_000 {
            return Err(Error::invalid(msg!("leaseTtlMs (", config.lease_ttl_ms, ") must be at most a day")));
        }
        if !renewable(config.lease_ttl_ms, config.max_clock_skew_ms) {
            let (ttl, skew) = (config.lease_ttl_ms, config.max_clock_skew_ms);
            return Err(Error::invalid(msg!(
                "leaseTtlMs (", ttl, ") and maxClockSkewMs (", skew, ") leave a renewal no time to succeed: a lease ",
                "gives authority for leaseTtlMs - maxClockSkewMs (", ttl.saturating_sub(skew), " ms) and is renewed ",
                "leaseTtlMs/3 (", renew_interval_ms(ttl), " ms) after it was written, so the renewal has ",
                renewal_room_ms(ttl, skew), " ms to make its round trip; at least ", MIN_RENEWAL_ROOM_MS,
                " ms are needed (raise leaseTtlMs or lower maxClockSkewMs)"
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
        let store = Store::for_config(&config, env)?;
        let (state, qualification) = (RefCell::new(State::default()), Qualification::default());
        let closing = Flight::new();
        Ok(S3Ownership { store, config, state, qualification, fleet: FleetMarker::default(), closing })
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

    /// The budget of `close()`'s own writes, the only ones a closed instance sends.
    fn closing_budget(&self) -> Budget {
        Budget::Closing(self.config.request_timeout_ms)
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
        self.refuse_if_closed()?;
        // The probe writes (its scratch keys, the verdict): a fleet of another backend gets none of them.
        self.fleet_checked(true).await?;
        self.qualified(true).await
    }

    /// Before the first write: the verdict this instance keeps, the bucket's recorded one, or a probe now
    /// (unless the caller opted out). Concurrent callers share one qualification.
    async fn ensure_probed(&self) -> Result<()> {
        self.fleet_checked(false).await?;
        if self.config.probe == ProbePolicy::Off {
            return Ok(());
        }
        self.qualified(false).await.map(|_| ())
    }

    /// celld's fleet marker, before anything is written: a fleet of another backend is refused.
    async fn fleet_checked(&self, fresh: bool) -> Result<()> {
        if armed!(self.store, SkipFleetMarker) {
            return Ok(());
        }
        if let Err(e) = self.fleet.ensure(&self.store, &self.config.prefix, self.budget()).await {
            // A marker that does not decode may be a wrong endpoint's page: the qualification tells
            // the two apart ("not an S3 API" is its error), else the marker really is corrupt.
            if e.code() == "corrupt-record" && (fresh || self.config.probe != ProbePolicy::Off) {
                self.qualified(fresh).await?;
            }
            return Err(e);
        }
        Ok(())
    }

    /// Joins or leads this instance's qualification; `fresh` ignores what is kept and recorded.
    async fn qualified(&self, fresh: bool) -> Result<ProbeReport> {
        let mode = match self.config.probe {
            _ if fresh => Mode::Explicit,
            ProbePolicy::Always => Mode::Always,
            ProbePolicy::Recorded | ProbePolicy::Off => Mode::Trust,
        };
        let (trust, skew) = (self.config.probe_trust_ms, self.config.max_clock_skew_ms);
        let run = || async move { qualify::qualify(&self.store, &self.here(), mode, trust, skew, self.budget()).await };
        self.qualification.share(|| self.store.env.wall_ms(), fresh, run).await
    }

    // ---- low level (SPEC §4), names as in celld ----

    pub async fn read_owner(&self, cell: &str) -> Result<Option<OwnerRecord>> {
        check_cell(self.config.ids, cell)?;
        let before = self.state.borrow().claims.get(cell).cloned();
        let read = self.read_decoded(&self.owner_key(cell), decode_owner).await;
        let mut state = self.state.borrow_mut();
        match &read {
            Ok(version) => state.known.set(cell, version.clone()),
            Err(_) => state.known.forget(cell),
        }
        drop(state);
        if let Ok(version) = &read {
            self.judge_claim(cell, before, version.as_ref());
        }
        read
    }

    /// A takeover seen: drops this instance's claim of `cell` when a read (sent while the claim was
    /// `before`) shows it replaced (`claim_gone`).
    fn judge_claim(&self, cell: &str, before: Option<Claim>, read: Option<&OwnerRecord>) {
        let Some(claim) = self.state.borrow().claims.get(cell).cloned() else { return };
        let sent_after_claim = before.as_ref() == Some(&claim);
        if claim_gone(&self.config.node, claim.0, sent_after_claim, read) {
            let detail = match read {
                Some(r) if r.is_released() => msg!(self.owner_key(cell), " was released at epoch ", r.epoch),
                Some(r) => msg!(self.owner_key(cell), " names ", Quoted(&r.node), " at epoch ", r.epoch),
                None => msg!(self.owner_key(cell), " is gone"),
            };
            self.lose_claim(cell, Some(claim.0), Lost::TakenOver, &detail);
        }
    }

    /// Drops this instance's claim of `cell` (only the one at `epoch`, when given) and says so.
    fn lose_claim(&self, cell: &str, epoch: Option<u64>, lost: Lost, detail: &str) {
        let dropped = {
            let mut state = self.state.borrow_mut();
            match state.claims.get(cell) {
                Some(&(e, _)) if epoch.is_none_or(|want| want == e) => {
                    state.claims.remove(cell);
                    Some(e)
                }
                _ => None,
            }
        };
        if let Some(epoch) = dropped {
            self.store.env.observe(Event::AuthorityLost { cell, epoch, lost, detail });
        }
    }

    /// Drops every claim (the lease they were made under is gone) and says so.
    fn lose_all(&self, detail: &str) {
        let dropped: Vec<(String, u64)> = {
            let mut state = self.state.borrow_mut();
            let dropped: Vec<(String, u64)> = state.claims.iter().map(|(c, (e, _))| (c.clone(), *e)).collect();
            state.claims.clear();
            // Their records still name this node: a close must keep the retired lease for their takeover.
            state.unaccounted |= !dropped.is_empty();
            dropped
        };
        for (cell, epoch) in &dropped {
            self.store.env.observe(Event::AuthorityLost { cell, epoch: *epoch, lost: Lost::LeaseLost, detail });
        }
    }

    /// A claim of `cell` at `epoch` is about to be sent: this instance's claim at a lower epoch ends now
    /// (the write may land at any moment).
    fn reclaiming(&self, cell: &str, epoch: u64) {
        let older = self.state.borrow().claims.get(cell).map(|(e, _)| *e).filter(|e| *e < epoch);
        if let Some(old) = older {
            self.lose_claim(cell, Some(old), Lost::Reclaimed, &msg!("claiming it again at epoch ", epoch));
        }
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

    /// GETs and decodes a record (`Store::get_decoded`: a body that does not decode is read again).
    async fn read_decoded<T>(&self, key: &str, decode: fn(&str, &[u8], &str) -> Result<T>) -> Result<Option<T>> {
        let once = armed!(self.store, DecodeReadbackOnce);
        self.store.get_decoded(key, self.budget(), |body, etag| decode(key, body, etag), once).await
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
            let seen = self.state.borrow().known.get(cell).cloned().flatten().filter(|r| r.etag == *token);
            let current = match seen {
                Some(rec) => rec,
                None => match self.read_owner(cell).await? {
                    Some(rec) if rec.etag == *token => rec,
                    // The token is not the current version: a write under it could not apply.
                    _ => return Ok(CasOutcome::Rejected),
                },
            };
            if epoch <= current.epoch {
                return Err(Error::invalid(msg!(
                    "epoch ", epoch, " does not advance the record's epoch ", current.epoch, " (epochs never go down)"
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

    /// Clears `node` (keeping the epoch), only if the record still names this node at `epoch`. Needs a
    /// valid lease: it writes on behalf of this node.
    pub async fn release_owner(&self, cell: &str, epoch: u64) -> Result<CasOutcome> {
        check_epoch(epoch)?;
        self.require_release_lease()?;
        match self.read_owner(cell).await? {
            Some(rec) if rec.node == self.config.node && rec.epoch == epoch => {
                if self.inherited(cell, &rec) {
                    return Err(self.inherited_error(cell));
                }
                if self.written_elsewhere(cell, &rec) {
                    self.confirm_own().await?;
                }
                self.release_at(cell, epoch, CasGuard::Match(rec.etag)).await
            }
            _ => Ok(CasOutcome::Rejected),
        }
    }

    async fn release_at(&self, cell: &str, epoch: u64, guard: CasGuard) -> Result<CasOutcome> {
        // A claim of the cell that began meanwhile (and may have landed what we read) is answered first:
        // no claim is reported applied after the release of its epoch.
        self.wait_for_claim(cell).await;
        self.require_release_lease()?;
        // `close()` waits for this release; one abandoned before it settled may still land, or not.
        let (flight, settled_here) = (Flight::new(), core::cell::Cell::new(false));
        self.state.borrow_mut().release_flights.push(flight.clone());
        let mine = flight.clone();
        let lead = Lead::new(flight, || {
            let mut state = self.state.borrow_mut();
            state.release_flights.retain(|f| !Rc::ptr_eq(f, &mine));
            state.unaccounted |= !settled_here.get();
        });
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
        settled_here.set(true);
        lead.finish(());
        settled?.outcome(&self.owner_key(cell))
    }

    /// Waits until no claim of `cell` is in flight on this instance.
    async fn wait_for_claim(&self, cell: &str) {
        loop {
            let in_flight = self.state.borrow().claim_flights.iter().find(|(c, _)| c == cell).map(|(_, f)| f.clone());
            match in_flight.filter(|_| !armed!(self.store, ClaimsOutOfOrder)) {
                Some(flight) => {
                    let _ = flight.wait().await;
                }
                None => return,
            }
        }
    }

    /// A release writes on behalf of this node: a valid lease of this instance, or nothing.
    fn require_release_lease(&self) -> Result<()> {
        if armed!(self.store, ReleaseWithoutLease) {
            return Ok(());
        }
        self.held_lease().map(|_| ())
    }

    /// Reads a node's lease. Reading this node's own while holding a lease: finding it gone, or replaced
    /// by a record this instance did not write, fences at once (celld's clean-up deletes leases it judged
    /// dead, and a delete can land late).
    pub async fn read_node_lease(&self, node: &str) -> Result<Option<NodeLeaseRecord>> {
        check_node(self.config.ids, node)?;
        let held = (node == self.config.node).then(|| self.state.borrow().lease.clone()).flatten();
        let mut read = self.read_decoded(&self.lease_key(node), decode_lease).await?;
        if armed!(self.store, IgnoreNodeLog) {
            read = read.map(|l| NodeLeaseRecord { log: None, ..l });
        }
        if read.is_some() {
            self.lease_present(node);
        }
        if let Some(held) = held {
            let gone = read.as_ref().is_none_or(|rec| !self.is_ours(rec));
            let older = read.as_ref().is_some_and(|rec| !self.adoptable(rec, &held));
            let same = self.state.borrow().lease.as_ref().is_some_and(|l| l.generation == held.generation);
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

    async fn write_lease(&self, guard: &CasGuard, expires_ms: u64, budget: Budget, rc: &Reconciles) -> Result<Settled> {
        let key = self.lease_key(&self.config.node);
        let (node, addr) = (&self.config.node, &self.config.addr);
        let body = |nonce: &str| {
            let mut state = self.state.borrow_mut();
            if state.lease_nonces.len() == 16 {
                state.lease_nonces.pop_front();
            }
            state.lease_nonces.push_back((nonce.to_owned(), expires_ms));
            encode_lease(node, expires_ms, addr, nonce)
        };
        self.store.cas_settled(&key, guard, &body, budget, rc).await
    }

    /// A lease record this instance wrote: its current token, or a nonce of ours with the expiry we wrote
    /// with it (celld's clean-up keeps the nonce in the expired copy it writes: that copy is not ours).
    fn is_ours(&self, rec: &NodeLeaseRecord) -> bool {
        let state = self.state.borrow();
        state.lease.as_ref().is_some_and(|l| l.etag == rec.etag)
            || rec.nonce.as_ref().is_some_and(|n| state.lease_nonces.iter().any(|(m, e)| m == n && *e == rec.expires_ms))
    }

    /// A lease record of ours (`is_ours`) that may stand for the authority of `held`: the held version
    /// itself, or one that gives peers no earlier death (`expires_ms` no earlier than the held one's). An
    /// older body of ours put back by another tool (a versioned bucket's restore, a backup) lets peers
    /// judge this node dead before its authority ends: never adopted.
    fn adoptable(&self, rec: &NodeLeaseRecord, held: &Lease) -> bool {
        rec.etag == held.etag
            || (self.is_ours(rec) && (rec.expires_ms >= held.expires_ms || armed!(self.store, AdoptRestoredLease)))
    }

    // ---- leases (SPEC §5) ----

    /// Installs this node's lease (or renews it, when one is held). A lease record left by another
    /// process under this node id is taken over only once it is dead by the peer rule. Concurrent callers
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

    /// At most one lease write in flight: a caller finding one waits for it and takes its outcome (an
    /// acquisition that finds a failed renewal then acquires itself).
    async fn lease_write(&self, acquire: bool) -> Result<()> {
        loop {
            let in_flight = self.state.borrow().lease_flight.clone();
            if let Some((was_acquire, flight)) = in_flight.filter(|_| !armed!(self.store, ParallelLeaseWrites)) {
                match flight.wait().await {
                    None => continue,
                    Some(Err(_)) if acquire && !was_acquire => continue,
                    Some(outcome) => return outcome,
                }
            }
            let flight = Flight::new();
            let mine = flight.clone();
            self.state.borrow_mut().lease_flight = Some((acquire, flight.clone()));
            let lead = Lead::new(flight, || {
                let mut state = self.state.borrow_mut();
                if state.lease_flight.as_ref().is_some_and(|(_, f)| Rc::ptr_eq(f, &mine)) {
                    state.lease_flight = None;
                }
            });
            let outcome = if acquire { self.acquire_once().await } else { self.renew_once().await };
            lead.finish(outcome.clone());
            return outcome;
        }
    }

    async fn acquire_once(&self) -> Result<()> {
        self.refuse_if_closed()?;
        if self.lease_valid() {
            return self.renew_once().await;
        }
        self.ensure_probed().await?;
        let key = self.lease_key(&self.config.node);
        let now = self.store.env.wall_ms(); // before the read, as in `claim`
        let current = self.read_decoded(&key, decode_lease).await?;
        let guard = match current {
            None => {
                let ttl_skew = self.config.lease_ttl_ms.saturating_add(self.config.max_clock_skew_ms) as f64;
                self.state.borrow_mut().inherited_until = self.store.env.mono_ms() + ttl_skew;
                CasGuard::Absent
            }
            Some(rec) if self.is_ours(&rec) => CasGuard::Match(rec.etag),
            Some(rec) => {
                // Another process's records may name this node id: a close must not delete this lease.
                self.state.borrow_mut().unaccounted = true;
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
        let (settled, anchor, expires_ms) =
            self.anchored_lease_write(&guard, self.budget(), &Reconciles::default()).await?;
        match settled {
            Settled::Applied { etag } => {
                // Claims made under an earlier lease died with it.
                self.lose_all("a fresh lease replaced the one the claim was made under");
                let lease = self.new_lease(etag, anchor, expires_ms, None);
                let mut state = self.state.borrow_mut();
                if state.closed {
                    // Landed after close(): the retirement retires this record.
                    state.retiring = Some(lease);
                    return Err(closed_error());
                }
                state.fenced = None;
                if !self.within(&lease) {
                    state.lease = None;
                    return Err(Error::not_leased(msg!("writing ", key, " took longer than the lease's authority")));
                }
                state.lease = Some(lease);
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

    /// The lease a write anchored at `anchor` with `expires_ms` gives: a new generation unless it renews
    /// `generation`.
    fn new_lease(&self, etag: String, anchor: f64, expires_ms: u64, generation: Option<u64>) -> Lease {
        let skew = self.config.max_clock_skew_ms;
        let generation = generation.unwrap_or_else(|| {
            let mut state = self.state.borrow_mut();
            state.generations += 1;
            state.generations
        });
        let expires_ms = if armed!(self.store, AnchorAfterWrite) {
            self.store.env.wall_ms().saturating_add(self.config.lease_ttl_ms)
        } else {
            expires_ms
        };
        Lease {
            etag,
            deadline: self_deadline(anchor, self.config.lease_ttl_ms, skew),
            wall_deadline: wall_deadline(expires_ms, skew),
            expires_ms,
            generation,
        }
    }

    /// Writes this node's lease with `expires = wall_now + ttl`, returning the monotonic anchor, sampled
    /// before the write is sent.
    async fn anchored_lease_write(&self, guard: &CasGuard, budget: Budget, rc: &Reconciles) -> Result<(Settled, f64, u64)> {
        let anchor = self.store.env.mono_ms();
        let expires_ms = self.store.env.wall_ms().saturating_add(self.config.lease_ttl_ms);
        let settled = self.write_lease(guard, expires_ms, budget, rc).await?;
        let anchor = if armed!(self.store, AnchorAfterWrite) { self.store.env.mono_ms() } else { anchor };
        Ok((settled, anchor, expires_ms))
    }

    async fn renew_once(&self) -> Result<()> {
        let reconciles = Reconciles::default();
        for _ in 0..2 {
            let held = self.held_lease()?;
            let started = self.store.env.mono_ms();
            let budget = Budget::Authority { mono: held.deadline, wall: held.wall_deadline };
            let (settled, anchor, expires_ms) =
                self.anchored_lease_write(&CasGuard::Match(held.etag.clone()), budget, &reconciles).await?;
            let late = !self.within(&held) && !armed!(self.store, InstallLateRenewal);
            match settled {
                Settled::Applied { .. } if late => {
                    return Err(self.fence("the renewal was answered only after the lease had lapsed"))
                }
                Settled::Applied { etag } => {
                    let lease = self.new_lease(etag, anchor, expires_ms, Some(held.generation));
                    let mut state = self.state.borrow_mut();
                    if state.closed {
                        // Landed after close(): the retirement must go over this token, not the old one.
                        if let Some(r) = state.retiring.as_mut().filter(|r| r.generation == held.generation) {
                            r.etag = lease.etag;
                        }
                        return Err(closed_error());
                    }
                    let current = state.lease.as_ref().is_some_and(|l| l.generation == held.generation);
                    if state.fenced.is_some() || !current {
                        return Err(Error::fenced(
                            "the lease was lost while its renewal was in flight; acquire a new one".into(),
                        ));
                    }
                    state.lease = Some(lease);
                    drop(state);
                    let ms = self.store.env.mono_ms() - started;
                    self.store.env.observe(Event::LeaseRenewed { node: &self.config.node, expires_ms, ms });
                    return Ok(());
                }
                Settled::Superseded if armed!(self.store, ParallelLeaseWrites) => {
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
                            if let Some(lease) = self.state.borrow_mut().lease.as_mut() {
                                lease.etag = rec.etag;
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
            let mut state = self.state.borrow_mut();
            state.renewer += 1;
            state.renewer
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
            if stop() || self.state.borrow().renewer != me || self.state.borrow().closed {
                return Ok(());
            }
            let (renewed, refreshed) = beside(self.renew_lease(), &mut refreshing).await;
            if let Some(Err(e)) = refreshed {
                on_error(&e);
            }
            match renewed {
                Ok(()) => {
                    wait = renew_interval_ms(ttl);
                    if armed!(self.store, RenewalWaitsOnCredentials) {
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
        self.state.borrow_mut().renewer += 1;
    }

    /// Whether `lease` still gives authority now: both deadlines ahead.
    fn within(&self, lease: &Lease) -> bool {
        let env = &self.store.env;
        env.mono_ms() < lease.deadline && (env.wall_ms() < lease.wall_deadline || armed!(self.store, NoWallDeadline))
    }

    /// The held lease, or why there is none (lapsed leases fence here).
    fn held_lease(&self) -> Result<Lease> {
        let state = self.state.borrow();
        if state.closed {
            return Err(closed_error());
        }
        if let Some(why) = &state.fenced {
            return Err(Error::fenced(why.clone()));
        }
        let Some(lease) = state.lease.clone() else {
            return Err(Error::not_leased("no lease held; call acquireLease() first".into()));
        };
        drop(state);
        if !self.within(&lease) && !armed!(self.store, InstallLateRenewal) {
            return Err(self.fence("the lease lapsed before it was renewed"));
        }
        Ok(lease)
    }

    /// `fenced` unless the lease of `generation` is still held and valid: a claim sent under one lease
    /// never continues under the next.
    fn require_generation(&self, generation: u64) -> Result<()> {
        let held = self.held_lease()?;
        if held.generation != generation && !armed!(self.store, ClaimUnderAnyLease) {
            return Err(Error::fenced(
                "the lease this operation started under was lost before its write; claim again under the new one".into(),
            ));
        }
        Ok(())
    }

    /// After a write of a claim landed: it counts only if the lease it was sent under is still held and
    /// valid. A lapsed lease fences; a lease since lost or replaced makes the claim void (`fenced`).
    fn answered_under(&self, generation: u64, what: &str) -> Result<()> {
        if armed!(self.store, ClaimUnderAnyLease) {
            return if self.lease_valid() { Ok(()) } else { Err(self.fence("the lease lapsed while the claim was being written")) };
        }
        if self.state.borrow().closed {
            // Landed, but close() ended this instance's authority first: void, and maybe naming us.
            self.state.borrow_mut().unaccounted = true;
            return Err(closed_error());
        }
        let lease = self.state.borrow().lease.clone();
        match lease {
            Some(l) if l.generation == generation && self.state.borrow().fenced.is_none() => {
                if self.within(&l) {
                    Ok(())
                } else {
                    // Landed, but our authority ran out meanwhile: a claim we may not act on, whose record
                    // names this node.
                    self.state.borrow_mut().unaccounted = true;
                    Err(self.fence("the lease lapsed while the claim was being written"))
                }
            }
            _ => {
                self.state.borrow_mut().unaccounted = true;
                Err(Error::fenced(msg!(
                    "the lease this claim's ", what, " was sent under was lost or replaced before it was answered: the claim is void"
                )))
            }
        }
    }

    /// Drops the lease and every claim made under it.
    fn fence(&self, why: &str) -> Error {
        let mut state = self.state.borrow_mut();
        state.lease = None;
        state.fenced = Some(why.to_owned());
        drop(state);
        self.store.env.observe(Event::Fenced { node: &self.config.node, reason: why });
        self.lose_all(why);
        Error::fenced(why.to_owned())
    }

    /// True while this node may act as an owner: it holds a lease whose deadlines (monotonic, and wall
    /// `expires_ms - maxClockSkewMs`) have not passed.
    pub fn lease_valid(&self) -> bool {
        let state = self.state.borrow();
        (!state.closed || armed!(self.store, KeepAuthorityAfterClose))
            && state.fenced.is_none()
            && state.lease.as_ref().is_some_and(|l| self.within(l))
    }

    /// Records a claim, never replacing a newer one: answers of one cell's writes may arrive out of order.
    fn record_claim(&self, cell: &str, epoch: u64, etag: String) {
        self.reclaiming(cell, epoch);
        let mut state = self.state.borrow_mut();
        let newer = state.claims.get(cell).is_some_and(|(e, _)| *e > epoch) && !armed!(self.store, ClaimsOutOfOrder);
        if !newer {
            state.claims.insert(cell.to_owned(), (epoch, etag));
        }
    }

    /// Renders an owner record, remembering its nonce as this instance's.
    fn owner_body(&self, node: &str, epoch: u64, nonce: &str) -> Vec<u8> {
        let mut state = self.state.borrow_mut();
        if state.owner_nonces.len() == OWNER_NONCES {
            state.owner_nonces.pop_front();
        }
        state.owner_nonces.push_back(nonce.to_owned());
        encode_owner(node, epoch, nonce)
    }

    /// A record naming this node that this instance may not treat as its own yet (`inherited_until`).
    fn inherited(&self, cell: &str, rec: &OwnerRecord) -> bool {
        let state = self.state.borrow();
        rec.node == self.config.node
            && self.store.env.mono_ms() < state.inherited_until
            && state.claims.get(cell).is_none_or(|(_, t)| *t != rec.etag)
            && !rec.nonce.as_ref().is_some_and(|n| state.owner_nonces.contains(n))
            && !armed!(self.store, MissingLeaseIsDead)
    }

    /// A record naming this node that another process of the node id wrote (its nonce is not one of this
    /// instance's, nor is it the version this instance's claim left). A record without a nonce naming this
    /// node is this instance's own write as remembered (`wrote_owner`): celld writes only its own ids.
    fn written_elsewhere(&self, cell: &str, rec: &OwnerRecord) -> bool {
        let state = self.state.borrow();
        rec.node == self.config.node
            && state.claims.get(cell).is_none_or(|(_, t)| *t != rec.etag)
            && rec.nonce.as_ref().is_some_and(|n| !state.owner_nonces.contains(n))
            && !armed!(self.store, TrustOwnNodeId)
    }

    /// Before treating a record another process of this node id wrote as this node's own: this node's
    /// lease record must still be this instance's. If another process of the id holds it now (it acquired
    /// over a lease of ours that celld's clean-up deleted late), that process wrote the record and acts for
    /// it: reading the lease fences this instance instead.
    async fn confirm_own(&self) -> Result<()> {
        self.read_node_lease(&self.config.node).await?;
        self.held_lease().map(|_| ())
    }

    fn inherited_error(&self, cell: &str) -> Error {
        Error::not_leased(msg!(
            self.owner_key(cell), " names this node, but this instance's lease replaced a missing one: the process ",
            "that held it may still act for the cell until its authority runs out (at most leaseTtlMs + maxClockSkewMs)"
        ))
    }

    fn peer_rule(&self, wall_now_ms: u64) -> PeerRule {
        PeerRule { lease_ttl_ms: self.config.lease_ttl_ms, max_skew_ms: self.skew_for_peers(), wall_now_ms }
    }

    /// The holder's lease for `cell`'s record `rec` as read: a missing one is judged by how long this
    /// instance has seen it missing for that record version (first sight: now, after the answer).
    fn peer_lease<'a>(&self, cell: &str, rec: &OwnerRecord, lease: Option<&'a NodeLeaseRecord>) -> PeerLease<'a> {
        if let Some(l) = lease {
            return PeerLease::Present(l);
        }
        if armed!(self.store, MissingLeaseIsDead) {
            return PeerLease::Missing { for_ms: f64::INFINITY };
        }
        let now = self.store.env.mono_ms();
        let mut state = self.state.borrow_mut();
        let forget_after = 2.0 * self.config.lease_ttl_ms.saturating_add(self.config.max_clock_skew_ms) as f64;
        let found = state.missing.iter_mut().find(|m| m.holder == rec.node && m.cell == cell);
        if let Some(m) = found.filter(|m| m.owner_etag == rec.etag && now - m.last <= forget_after) {
            m.last = now;
            return PeerLease::Missing { for_ms: now - m.since };
        }
        state.missing.retain(|m| !(m.holder == rec.node && m.cell == cell));
        if state.missing.len() == MISSING_REMEMBERED {
            state.missing.pop_front();
        }
        let (holder, cell, owner_etag) = (rec.node.clone(), cell.to_owned(), rec.etag.clone());
        state.missing.push_back(MissingLease { holder, cell, owner_etag, since: now, last: now });
        PeerLease::Missing { for_ms: 0.0 }
    }

    /// A node's lease seen present: every sighting of it missing is void (it may go missing again later,
    /// and must then stay missing from that later sighting on).
    fn lease_present(&self, node: &str) {
        self.state.borrow_mut().missing.retain(|m| m.holder != node);
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
    /// extra round, not counted against contention). Concurrent claims of one cell on this instance share
    /// one attempt and its answer.
    pub async fn claim_with(&self, cell: &str, options: ClaimOptions) -> Result<ClaimOutcome> {
        self.claim_shared(cell, options).await.map(|(outcome, _)| outcome)
    }

    /// `claim_with`, and when a rejected claim should look again (shared with every concurrent claim of
    /// the cell, like the outcome).
    async fn claim_shared(&self, cell: &str, options: ClaimOptions) -> Result<(ClaimOutcome, Wake)> {
        check_cell(self.config.ids, cell)?;
        loop {
            let in_flight = self.state.borrow().claim_flights.iter().find(|(c, _)| c == cell).map(|(_, f)| f.clone());
            if let Some(flight) = in_flight.filter(|_| !armed!(self.store, ClaimsOutOfOrder)) {
                match flight.wait().await {
                    Some(outcome) => return outcome,
                    None => continue,
                }
            }
            let flight = Flight::new();
            let mine = flight.clone();
            self.state.borrow_mut().claim_flights.push((cell.to_owned(), flight.clone()));
            let lead = Lead::new(flight, || self.state.borrow_mut().claim_flights.retain(|(_, f)| !Rc::ptr_eq(f, &mine)));
            let outcome = self.claim_once(cell, options).await;
            lead.finish(outcome.clone());
            return outcome;
        }
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
                    let current = self.read_owner(cell).await?;
                    if let Some(token) = untried.take() {
                        let hit = token.as_deref() == current.as_ref().map(|r| r.etag.as_str());
                        self.state.borrow_mut().known.scored(hit);
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
                let owner = OwnerInfo { node: rec.node.clone(), epoch: rec.epoch, addr: self.config.addr.clone(), live: true, awaiting_recovery: false, held: false };
                let wake = Wake::Mono(self.state.borrow().inherited_until);
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
                    // Judge the lease at the instant the read was sent: the record is at least that fresh,
                    // while a slow answer may carry a lease the holder has renewed since.
                    let now = self.store.env.wall_ms();
                    let lease = self.read_node_lease(&rec.node).await?;
                    let found = self.peer_lease(cell, rec, lease.as_ref());
                    match after_peer_lease(rec, found, self.peer_rule(now))? {
                        Some(write) => write,
                        None => {
                            let awaiting_recovery = awaiting_recovery(lease.as_ref(), self.skew_for_peers(), now);
                            let wake = self.holder_wake(found, awaiting_recovery);
                            let addr = lease.map(|l| l.addr).unwrap_or_default();
                            let (live, epoch) = (!awaiting_recovery, rec.epoch);
                            let owner = OwnerInfo { node: rec.node.clone(), epoch, addr, live, awaiting_recovery, held: false };
                            return Ok((self.claim_rejected(cell, owner, started), wake));
                        }
                    }
                }
            };
            // Time passed while reading: the lease the claim started under must still hold.
            self.require_generation(generation)?;
            self.reclaiming(cell, epoch);
            let node = &self.config.node;
            sent.borrow_mut().clear();
            // The key only for this write: a string live across every await is dropped on every early exit.
            let key = self.owner_key(cell);
            let first = FirstRejection::CallerReads(&sent);
            let body = |n: &str| self.owner_body(node, epoch, n);
            let settled = self.store.cas_settled_then(&key, &guard, &body, self.budget(), &reconciles, first).await;
            drop(key);
            self.wrote_owner(cell, node, epoch, &settled);
            self.account(&settled);
            if let (true, true, Ok(s)) = (unread_round, trying, &settled) {
                self.state.borrow_mut().known.scored(matches!(s, Settled::Applied { .. }));
            }
            match settled? {
                Settled::Applied { etag } => {
                    return self.claim_landed(cell, generation, (Write { guard, epoch, took_over }, current, etag), started);
                }
                Settled::Rejected if unread_round && armed!(self.store, AnswerFromKnown) => {
                    let (node, epoch) = current.map(|r| (r.node, r.epoch)).unwrap_or_default();
                    let owner = OwnerInfo { node, epoch, addr: String::new(), live: true, awaiting_recovery: false, held: false };
                    return Ok((ClaimOutcome::Rejected { owner }, self.soon()));
                }
                Settled::Rejected if armed!(self.store, ConflictMeansOwned) => {
                    let (node, epoch) = current.map(|r| (r.node, r.epoch)).unwrap_or_default();
                    let owner = OwnerInfo { node, epoch, addr: String::new(), live: true, awaiting_recovery: false, held: false };
                    return Ok((ClaimOutcome::Rejected { owner }, self.soon()));
                }
                // Superseded: another writer's claim replaced ours or beat it; the next round reads it.
                Settled::Rejected | Settled::Superseded => {
                    last_seen = current.as_ref().map(|r| OwnerInfo { node: r.node.clone(), epoch: r.epoch, addr: String::new(), live: true, awaiting_recovery: false, held: false });
                    refused = Some((Write { guard, epoch, took_over }, current));
                }
            }
        }
        if refused.is_some() {
            let current = self.read_owner(cell).await?;
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
                msg!("claim lost ", CLAIM_ROUNDS, " rounds of contention (last seen: ", seen(last_seen.as_ref()), ")"),
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
        if armed!(self.store, TrustFirstRejection) || rec.node != self.config.node || rec.epoch != write.epoch {
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
        self.store.env.observe(Event::ClaimApplied { cell, epoch, took_over, ms });
        Ok((ClaimOutcome::Applied { epoch, took_over, prior }, self.soon()))
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
    /// the claim left, falling back to read-then-write when that token has moved. Needs a valid lease.
    pub async fn release(&self, cell: &str) -> Result<CasOutcome> {
        check_cell(self.config.ids, cell)?;
        // A claim of the cell in flight is answered first, so that the release covers what it claimed
        // (and no claim is reported applied after the release of its epoch).
        self.wait_for_claim(cell).await;
        self.require_release_lease()?;
        let claimed = self.state.borrow().claims.get(cell).cloned();
        match claimed {
            Some((epoch, etag)) => match self.release_at(cell, epoch, CasGuard::Match(etag)).await? {
                CasOutcome::Applied => Ok(CasOutcome::Applied),
                CasOutcome::Rejected => self.release_owner(cell, epoch).await,
            },
            // Not claimed by this instance: release whatever epoch the record names us at.
            None => match self.read_owner(cell).await? {
                Some(rec) if rec.node == self.config.node => {
                    if self.inherited(cell, &rec) {
                        return Err(self.inherited_error(cell));
                    }
                    if self.written_elsewhere(cell, &rec) {
                        self.confirm_own().await?;
                    }
                    self.release_at(cell, rec.epoch, CasGuard::Match(rec.etag)).await
                }
                _ => Ok(CasOutcome::Rejected),
            },
        }
    }

    /// Who owns `cell` and whether that owner's lease is live (not provably dead: a missing lease counts
    /// as live until it has stayed missing `ttl + skew`); `None` when the record is absent.
    pub async fn owner(&self, cell: &str) -> Result<Option<OwnerInfo>> {
        let Some(rec) = self.read_owner(cell).await? else { return Ok(None) };
        if rec.is_released() {
            return Ok(Some(OwnerInfo { node: String::new(), epoch: rec.epoch, addr: String::new(), live: false, awaiting_recovery: false, held: false }));
        }
        if rec.node == self.config.node {
            let live = self.lease_valid();
            let held = live && self.state.borrow().claims.get(cell).is_some_and(|(e, _)| *e == rec.epoch);
            return Ok(Some(OwnerInfo { node: rec.node, epoch: rec.epoch, addr: self.config.addr.clone(), live, awaiting_recovery: false, held }));
        }
        let now = self.store.env.wall_ms(); // before the read, as in `claim`
        let lease = self.read_node_lease(&rec.node).await?;
        let live = !holder_dead(self.peer_lease(cell, &rec, lease.as_ref()), self.peer_rule(now));
        let awaiting_recovery = awaiting_recovery(lease.as_ref(), self.skew_for_peers(), now);
        let addr = lease.map(|l| l.addr).unwrap_or_default();
        Ok(Some(OwnerInfo { node: rec.node, epoch: rec.epoch, addr, live, awaiting_recovery, held: false }))
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

    /// The cells this instance holds under its current lease, with their epochs (none without a valid
    /// lease).
    pub fn claimed(&self) -> Vec<(String, u64)> {
        if !self.lease_valid() {
            return Vec::new();
        }
        self.state.borrow().claims.iter().map(|(c, (e, _))| (c.clone(), *e)).collect()
    }

    /// This instance's authority for `cell` now: the epoch it holds the cell at and how long that lasts
    /// (the smaller of the lease's two deadlines, SPEC §5), or why it has none: `fenced` (asking fences a
    /// lapsed lease, which ends every claim: `Event::AuthorityLost`) or `not-leased` (no lease, or no
    /// claim of the cell under it). Sends nothing: the bindings' abort signals are armed on it.
    pub fn authority(&self, cell: &str) -> Result<(u64, f64)> {
        let lease = self.held_lease()?;
        let Some(&(epoch, _)) = self.state.borrow().claims.get(cell) else {
            return Err(Error::not_leased(msg!("this instance holds no claim of cell ", Quoted(cell))));
        };
        let env = &self.store.env;
        Ok((epoch, remaining_ms(lease.deadline, env.mono_ms(), lease.wall_deadline, env.wall_ms())))
    }

    // ---- waiting for a cell (SPEC §4.2) ----

    /// `claim_with`, waiting until the cell can be claimed: after a rejection it sleeps until the moment
    /// the holder's lease, as read, can be judged dead (`expires_ms + maxClockSkewMs` on this wall clock;
    /// a missing lease once it has stayed missing `ttl + skew`; a log awaiting celld's recovery a ttl
    /// later), then claims again — a renewed holder means another sleep until its new expiry. No request
    /// is sent while it sleeps. Resolves applied, or fails: `aborted` when `cancel` finishes first (checked
    /// while sleeping and before each attempt; an attempt already sent is answered first), `not-leased`
    /// when `close()` is called, or the error of an attempt (this node's lease must stay valid meanwhile).
    pub async fn claim_waiting(
        &self,
        cell: &str,
        options: ClaimOptions,
        cancel: impl Future<Output = ()>,
    ) -> Result<ClaimOutcome> {
        check_cell(self.config.ids, cell)?;
        let mut cancel = core::pin::pin!(cancel);
        loop {
            let cancelled =
                core::future::poll_fn(|cx| core::task::Poll::Ready(cancel.as_mut().poll(cx).is_ready())).await;
            if cancelled {
                return Err(aborted_error(cell));
            }
            let (outcome, wake) = self.claim_shared(cell, options).await?;
            if let ClaimOutcome::Applied { .. } = outcome {
                return Ok(outcome);
            }
            self.sleep_until(wake, cancel.as_mut(), cell).await?;
        }
    }

    /// When a claim rejected because of the holder's lease `found` can next succeed.
    fn holder_wake(&self, found: PeerLease<'_>, awaiting_recovery: bool) -> Wake {
        let now = self.store.env.mono_ms();
        if awaiting_recovery {
            // celld recovers the log in its own time: look again a ttl later.
            return Wake::Mono(now + self.config.lease_ttl_ms as f64);
        }
        match found {
            PeerLease::Present(l) => Wake::Wall(judged_dead_at(l.expires_ms, self.skew_for_peers())),
            PeerLease::Missing { for_ms } => {
                let needed = self.config.lease_ttl_ms.saturating_add(self.config.max_clock_skew_ms) as f64;
                Wake::Mono(now + (needed - for_ms).max(0.0))
            }
        }
    }

    /// A short, jittered wait (100..199 ms) before looking again when nothing says when.
    fn soon(&self) -> Wake {
        let jitter = renew_retry_ms(self.config.lease_ttl_ms, self.store.env.random_u64());
        Wake::Mono(self.store.env.mono_ms() + jitter as f64)
    }

    /// Sleeps until `wake` (a wall instant to the millisecond, or a monotonic one); a timer that fires
    /// early is followed by one for the rest. Cut short by `close()` (`not-leased`) or `cancel` (`aborted`).
    async fn sleep_until(
        &self,
        wake: Wake,
        mut cancel: core::pin::Pin<&mut impl Future<Output = ()>>,
        cell: &str,
    ) -> Result<()> {
        loop {
            if self.state.borrow().closed {
                return Err(closed_error());
            }
            let left = match wake {
                Wake::Wall(at) => at.saturating_sub(self.store.env.wall_ms()) as f64,
                Wake::Mono(at) => (at - self.store.env.mono_ms()).max(0.0).ceil(),
            };
            if left <= 0.0 {
                return Ok(());
            }
            // setTimeout fires at once when asked for more than 2^31 - 1 ms.
            let ms = left.min(MAX_SLEEP_MS as f64) as u32;
            match first(first(self.store.env.sleep(ms), self.closing.wait()), cancel.as_mut()).await {
                Either::Left(Either::Left(())) => {}
                Either::Left(Either::Right(_)) => return Err(closed_error()),
                Either::Right(()) => return Err(aborted_error(cell)),
            }
        }
    }

    /// `Env::sleep`, ended early by `close()`.
    async fn sleep_unless_closed(&self, ms: u32) {
        let _ = first(self.store.env.sleep(ms), self.closing.wait()).await;
    }

    // ---- stopping (SPEC §4.2) ----

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
        loop {
            let in_flight = self.state.borrow().close_flight.clone();
            if let Some(flight) = in_flight {
                match flight.wait().await {
                    Some(outcome) => return outcome,
                    None => continue,
                }
            }
            if let Some(done) = self.state.borrow().closed_with {
                return Ok(done);
            }
            let flight = Flight::new();
            let mine = flight.clone();
            self.state.borrow_mut().close_flight = Some(flight.clone());
            let lead = Lead::new(flight, || {
                let mut state = self.state.borrow_mut();
                if state.close_flight.as_ref().is_some_and(|f| Rc::ptr_eq(f, &mine)) {
                    state.close_flight = None;
                }
            });
            let outcome = self.close_once(options).await;
            if let Ok(done) = outcome {
                self.state.borrow_mut().closed_with = Some(done);
            }
            lead.finish(outcome.clone());
            return outcome;
        }
    }

    /// The synchronous half of `close`: ends authority and every wait now. Idempotent.
    pub fn shut(&self) {
        let mut state = self.state.borrow_mut();
        if state.closed {
            return;
        }
        state.closed = true;
        state.renewer += 1;
        self.store.close();
        let keep = armed!(self.store, KeepAuthorityAfterClose);
        let lease = if keep { state.lease.clone() } else { state.lease.take() };
        state.retiring = lease.filter(|_| state.fenced.is_none());
        state.closing_claims = if keep { Claims::default() } else { core::mem::take(&mut state.claims) };
        let ended: Vec<(String, u64)> = state.closing_claims.iter().map(|(c, (e, _))| (c.clone(), *e)).collect();
        drop(state);
        self.closing.finish(());
        self.store.env.observe(Event::Closed { node: &self.config.node });
        for (cell, epoch) in &ended {
            self.store.env.observe(Event::AuthorityLost { cell, epoch: *epoch, lost: Lost::Closed, detail: "close() was called" });
        }
    }

    async fn close_once(&self, options: CloseOptions) -> Result<Closed> {
        let started = self.store.env.mono_ms();
        // A lease write in flight lands first (a renewal hands its token to the retirement), and so do
        // claims in flight (void now, but their writes may name this node).
        loop {
            let in_flight = self.state.borrow().lease_flight.clone();
            match in_flight {
                Some((_, flight)) => {
                    let _ = flight.wait().await;
                }
                None => break,
            }
        }
        loop {
            let in_flight = self.state.borrow().claim_flights.first().map(|(_, f)| f.clone());
            match in_flight {
                Some(flight) => {
                    let _ = flight.wait().await;
                }
                None => break,
            }
        }
        // So do releases in flight (their claims already ended): whether they landed decides the delete.
        loop {
            let in_flight = self.state.borrow().release_flights.first().cloned();
            match in_flight {
                Some(flight) => {
                    let _ = flight.wait().await;
                }
                None => break,
            }
        }
        let held: Vec<(String, Claim)> = {
            let state = self.state.borrow();
            state.closing_claims.iter().map(|(c, claim)| (c.clone(), claim.clone())).collect()
        };
        let mut released = 0;
        if options.release && !held.is_empty() {
            let writes = held.iter().map(|(cell, (epoch, token))| self.release_closing(cell, *epoch, token));
            let outcomes = join_all(writes).await;
            let mut state = self.state.borrow_mut();
            for ((cell, _), applied) in held.iter().zip(outcomes) {
                if applied {
                    released += 1;
                    state.closing_claims.remove(cell);
                }
            }
        }
        let Some(etag) = self.retire().await? else {
            return Ok(Closed { retired: false, deleted: false, released });
        };
        let accounted = {
            let state = self.state.borrow();
            !state.unaccounted && state.closing_claims.iter().next().is_none()
        };
        let deletes = self.qualification.kept(self.store.env.wall_ms()).is_some_and(|r| r.conditional_delete);
        let mut deleted = false;
        if accounted && deletes {
            // Best effort, and safe either way: only this retired version can be deleted.
            let key = self.lease_key(&self.config.node);
            let (status, _) = self.store.delete(&key, Some(&CasGuard::Match(etag)), self.closing_budget()).await;
            deleted = (200..300).contains(&status);
        }
        let ms = self.store.env.mono_ms() - started;
        self.store.env.observe(Event::LeaseRetired { node: &self.config.node, deleted, ms });
        Ok(Closed { retired: true, deleted, released })
    }

    /// One release of `close(release)`: a conditional write over the claim's token, sent only while the
    /// lease kept for the retirement still gives authority. True when it applied.
    async fn release_closing(&self, cell: &str, epoch: u64, token: &str) -> bool {
        let lease = self.state.borrow().retiring.clone();
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
        let Some(lease) = self.state.borrow().retiring.clone() else { return Ok(None) };
        let key = self.lease_key(&self.config.node);
        let reconciles = Reconciles::default();
        let mut guard = CasGuard::Match(lease.etag);
        for _ in 0..3 {
            match self.write_lease(&guard, RETIRED_EXPIRES_MS, self.closing_budget(), &reconciles).await? {
                Settled::Applied { etag } => {
                    self.state.borrow_mut().retiring = None;
                    return Ok(Some(etag));
                }
                Settled::Rejected | Settled::Superseded => match self.read_decoded(&key, decode_lease).await? {
                    Some(rec)
                        if (self.is_ours(&rec) || armed!(self.store, RetireUnconditionally))
                            && rec.expires_ms != RETIRED_EXPIRES_MS =>
                    {
                        guard = CasGuard::Match(rec.etag);
                    }
                    _ => {
                        self.state.borrow_mut().retiring = None;
                        return Ok(None);
                    }
                },
            }
        }
        Err(Error::ambiguous(key, "the lease record kept changing under its retirement"))
    }

    // ---- dead-lease clean-up ----

    /// Deletes another node's lease left by a process that did not close (a crash), safely: only when the
    /// store's conditional DELETE was verified by this instance's qualification, only a lease dead by the
    /// peer rule (`expires_ms + maxClockSkewMs <= now`, the wall clock read before the lease), carrying no
    /// celld log awaiting recovery, whose node no owner record among `cells` names (the caller lists the
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
        if !self.qualification.kept(self.store.env.wall_ms()).is_some_and(|r| r.conditional_delete) {
            return Ok(LeaseRemoval::Unsupported);
        }
        let now = self.store.env.wall_ms(); // before the read, as in `claim`
        let key = self.lease_key(node);
        let Some(lease) = self.read_decoded(&key, decode_lease).await? else { return Ok(LeaseRemoval::Absent) };
        if !peer_dead(lease.expires_ms, self.config.max_clock_skew_ms, now) {
            return Ok(LeaseRemoval::Live);
        }
        if awaits_recovery(&lease) {
            return Ok(LeaseRemoval::Needed { cell: None });
        }
        for cell in cells {
            if self.read_owner(cell).await?.is_some_and(|r| r.node == node) {
                return Ok(LeaseRemoval::Needed { cell: Some((*cell).to_owned()) });
            }
        }
        let (status, answer) = self.store.delete(&key, Some(&CasGuard::Match(lease.etag)), self.budget()).await;
        match answer {
            PutAnswer::Rejected => Ok(LeaseRemoval::Changed),
            PutAnswer::Refused(e) => Err(e),
            _ if (200..300).contains(&status) => Ok(LeaseRemoval::Removed),
            PutAnswer::Ambiguous(fault) => {
                let detail = msg!("the delete of a dead lease may or may not have landed: ", fault.detail);
                Err(Error::ambiguous(key, Fault { detail, ..fault }))
            }
            PutAnswer::Conflict { code } => {
                Err(Error::ambiguous(key, msg!("the delete of a dead lease may or may not have landed: ", code)))
            }
            PutAnswer::Throttled(fault) => {
                let detail = msg!("the store turned the delete of a dead lease away (", fault.detail, "); nothing was deleted");
                Err(Error::transport(key, Fault { detail, ..fault }))
            }
            PutAnswer::Applied { .. } => Ok(LeaseRemoval::Removed),
        }
    }

    /// Notes an owner-record write of this instance that may have landed without this instance holding it.
    fn account(&self, settled: &Result<Settled>) {
        if !matches!(settled, Ok(Settled::Applied { .. } | Settled::Rejected)) {
            self.state.borrow_mut().unaccounted = true;
        }
    }

    fn refuse_if_closed(&self) -> Result<()> {
        if self.state.borrow().closed {
            return Err(closed_error());
        }
        Ok(())
    }
}

/// Why a lease record restored to an older version of ours fences.
const RESTORED: &str =
    "the lease record was put back to an older version by another writer (a restore?): peers may judge this node dead before its authority ends";

/// The longest single timer a waiting claim sets (setTimeout's limit).
const MAX_SLEEP_MS: u32 = i32::MAX as u32;

/// When a rejected claim should look again: a wall instant (a holder's lease read, judged dead exactly
/// then) or a monotonic one (a missing lease, a log awaiting recovery, contention).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wake {
    Wall(u64),
    Mono(f64),
}

fn closed_error() -> Error {
    Error::not_leased("this instance was closed (close()): it holds no lease and writes nothing; make a new one".into())
}

fn aborted_error(cell: &str) -> Error {
    Error::aborted(msg!("the wait to claim ", Quoted(cell), " was aborted by its signal"))
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
