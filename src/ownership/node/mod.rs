//! `S3Ownership`: one node's instance of the protocol (SPEC §4-§5), run over an `Env`. It sequences reads
//! and conditional writes; every decision comes from the pure modules (`decide`, `lease`, `records`,
//! `authority`) and every request goes through the bucket layer (`cas`). One instance serves many
//! concurrent callers.
//!
//! Split by what the protocol talks about, each file owning its slice of the instance's state and
//! importing only from files above it in this list:
//! - `config`, `outcomes`: what an instance is given and what callers get back (data only);
//! - this file: the instance (store, config, rules, qualification, fleet, the shared flights) and what
//!   every part uses (keys, budgets, the store's qualification, reading a record, sleeping);
//! - `book`: the claims this instance holds and how they end (each end is said once, as an event);
//! - `lease`: whether this instance may act, and under which generation (acquire, renew, the renewal
//!   loop, fencing); the lease is an explicit state (`LeaseState`);
//! - `owner`: the records with celld's names (read_owner, cas_owner, release_owner, read/cas_node_lease)
//!   and the judgement of peers' leases;
//! - `claim`: `claim`, `owner`, `verify`; `release`: `release`; `wait`: `claim_waiting`;
//! - `close`: `close`, and the dead-lease clean-up of other nodes.
//!
//! It must never act on a claim made under a lease that has since lapsed: a claim counts only under the
//! lease it was sent under, and every write on behalf of this node needs this instance's valid lease.
//! What it remembers of owner records only ever picks a write's guard; the store checks it.

mod book;
mod claim;
mod close;
mod config;
mod lease;
mod outcomes;
mod owner;
mod release;
mod wait;

pub use config::{Config, ProbePolicy};
pub use outcomes::{ClaimOptions, ClaimOutcome, CloseOptions, Closed, Ended, LeaseRemoval, OwnerInfo};

use std::rc::Rc;
use core::cell::RefCell;

use crate::env::{Env, Event, Observer};
use crate::error::{Error, Result};
use crate::ownership::cas::{Budget, Settled, Store};
use crate::ownership::control::{read_fleet, Fleet, FleetMarker};
use crate::ownership::ids::check_set_for_fleet;
use crate::ownership::flight::{Flight, PerKey, Single};
use crate::ownership::join::{beside, first, Side};
use crate::ownership::probe::ProbeReport;
use crate::ownership::qualify::{self, Here, Mode, Qualification};
use crate::ownership::rules::Rules;

use book::Book;
use claim::Wake;
use close::Closing;
use lease::LeaseSlice;
use owner::Records;

pub struct S3Ownership<E: Env> {
    store: Store<E>,
    config: Config,
    /// The store's qualification (SPEC §6): kept verdict, or the one flight in progress.
    qualification: Qualification,
    fleet: FleetMarker,
    /// This node's lease (`lease/`).
    lease: RefCell<LeaseSlice>,
    /// The claims held (`book.rs`).
    book: RefCell<Book>,
    /// What this instance remembers of records (`owner.rs`).
    records: RefCell<Records>,
    /// The lease write in flight (tag: an acquisition), which every lease caller shares.
    lease_writes: Single<Result<()>, bool>,
    /// The claim in flight per cell, which every concurrent claim of that cell shares.
    claims_in_flight: PerKey<Result<(ClaimOutcome, Wake)>>,
    /// The releases in flight per cell, which `close()` waits for (not shared: each caller sends its own).
    releases_in_flight: PerKey<Result<Settled>>,
    /// Every owner-record write naming this node in flight (a claim's, `cas_owner`'s), which `close()` waits
    /// for before it deletes the lease (`book.rs`, `naming_write`), and how many were sent.
    naming_writes: PerKey<Result<Settled>>,
    naming_sent: core::cell::Cell<u64>,
    /// `close()` (`close.rs`).
    closing: Closing,
    /// Finished by `close()`: wakes every sleep of the instance that waits on it (the renewal loop's, a
    /// waiting claim's).
    closed_signal: Rc<Flight<()>>,
}

impl<E: Env> S3Ownership<E> {
    /// Validates the configuration; sends nothing. Without a node id (`made_up_node`), makes one up.
    pub fn new(mut config: Config, env: E) -> Result<Self> {
        if config.made_up_node {
            config.node = format!("edge-{:016x}", env.random_u64());
        }
        config.check()?;
        let store = Store::for_config(&config, env)?;
        Ok(S3Ownership {
            store,
            config,
            qualification: Qualification::default(),
            fleet: FleetMarker::default(),
            lease: RefCell::default(),
            book: RefCell::default(),
            records: RefCell::default(),
            lease_writes: Single::default(),
            claims_in_flight: PerKey::default(),
            releases_in_flight: PerKey::default(),
            naming_writes: PerKey::default(),
            naming_sent: core::cell::Cell::new(0),
            closing: Closing::default(),
            closed_signal: Flight::new(),
        })
    }

    /// Tells `observer` every event from now on (nobody hears them otherwise).
    pub fn observed_by(mut self, observer: impl Observer + 'static) -> Self {
        self.store.observer = Rc::new(observer);
        self
    }

    /// Who hears this instance's events (its listings' too).
    pub(crate) fn observer(&self) -> Rc<dyn Observer> {
        self.store.observer.clone()
    }

    pub fn env(&self) -> &E {
        &self.store.env
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Turns off the one safety rule `tooth` names (tests only).
    #[cfg(feature = "teeth")]
    pub fn with_tooth(mut self, tooth: crate::ownership::teeth::Tooth) -> Self {
        self.store.rules = Rules::without(tooth);
        self
    }

    /// The safety rules in force.
    fn rules(&self) -> &Rules {
        &self.store.rules
    }

    /// Tells the host what happened.
    fn emit(&self, event: Event<'_>) {
        self.store.observer.observe(event);
    }

    fn owner_key(&self, cell: &str) -> String {
        format!("{}cells/{cell}/own.json", self.config.prefix)
    }

    fn lease_key(&self, node: &str) -> String {
        format!("{}nodes/{node}.json", self.config.prefix)
    }

    fn budget(&self) -> Budget {
        Budget::PerRequest(self.config.request_timeout_ms)
    }

    /// The budget of `close()`'s own writes, the only ones a closed instance sends.
    fn closing_budget(&self) -> Budget {
        Budget::Closing(self.config.request_timeout_ms)
    }

    /// `Env::sleep`, ended early by `close()`.
    async fn sleep_unless_closed(&self, ms: u32) {
        let _ = first(self.store.env.sleep(ms), self.closed_signal.wait()).await;
    }

    /// GETs and decodes a record (`Store::get_decoded`: a body that does not decode is read again).
    async fn read_decoded<T>(&self, key: &str, decode: fn(&str, &[u8], &str) -> Result<T>) -> Result<Option<T>> {
        let once = !self.rules().reread_undecodable;
        self.store.get_decoded(key, self.budget(), |body, etag| decode(key, body, etag), once).await
    }

    // ---- the store probe (SPEC §6) ----

    fn here(&self) -> Here<'_> {
        here(&self.config)
    }

    /// Qualifies the store now, whatever is recorded or kept (after any qualification in progress), and
    /// records the verdict in the bucket for later instances.
    pub async fn probe(&self) -> Result<ProbeReport> {
        self.refuse_if_closed()?;
        // The probe writes (its scratch keys, the verdict): a fleet of another backend gets none of them.
        self.fleet_checked(true).await?;
        self.qualified(true, None).await
    }

    /// Before the first write: the verdict this instance keeps, the bucket's recorded one, or a probe now
    /// (unless the caller opted out). Concurrent callers share one qualification.
    async fn ensure_probed(&self) -> Result<()> {
        if self.config.probe == ProbePolicy::Off {
            return self.fleet_checked(false).await.map(drop);
        }
        let mode = if self.config.probe == ProbePolicy::Always { Mode::Always } else { Mode::Trust };
        let (trust, skew) = (self.config.probe_trust_ms, self.config.max_clock_skew_ms);
        // In the one qualification concurrent callers share, the qualification record is read with the
        // fleet's first reads (SPEC §8); the probe's writes come only once the fleet is judged.
        let run = || async move {
            let record = RefCell::new(None);
            let judged = self.fleet_judged(Some(&record)).await;
            let read = record.into_inner();
            let here = self.here();
            let qualify = |read| qualify::qualify(&self.store, &here, mode, trust, skew, self.budget(), read);
            match judged {
                Ok(_) => qualify(read).await,
                // A marker that does not decode may be a wrong endpoint's page: the qualification tells the
                // two apart ("not an S3 API" is its error), else the marker really is corrupt.
                Err(e) if e.code() == "corrupt-record" => match qualify(read).await {
                    qualify::Outcome::Failed(not_s3) => qualify::Outcome::Failed(not_s3),
                    _ => qualify::Outcome::Failed(e),
                },
                Err(e) => qualify::Outcome::Failed(e),
            }
        };
        self.qualification.share(|| self.store.env.wall_ms(), false, run).await?;
        // A verdict kept from earlier skips the run: the fleet is judged here then (kept once read).
        self.fleet_checked(false).await.map(drop)
    }

    /// Who shares the bucket, before anything is written: a fleet of another backend is refused, and so
    /// is (with `celld: true`) a bucket no celld node has initialised, and `ids: "utf8"` in a celld fleet.
    async fn fleet_checked(&self, fresh: bool) -> Result<Fleet> {
        let judged = self.fleet_judged(None).await;
        if let Err(e) = &judged {
            // A marker that does not decode may be a wrong endpoint's page: the qualification tells the
            // two apart ("not an S3 API" is its error), else the marker really is corrupt.
            if e.code() == "corrupt-record" && (fresh || self.config.probe != ProbePolicy::Off) {
                self.qualified(fresh, None).await?;
            }
        }
        judged
    }

    /// The fleet as judged (kept for the instance's life once read; read now if nobody is), unless the
    /// rule is off. `record`: where the qualification record goes when it was read with the fleet's.
    async fn fleet_judged(&self, record: Option<&RefCell<Option<qualify::RecordRead>>>) -> Result<Fleet> {
        if !self.rules().check_fleet_marker {
            return Ok(Fleet::default());
        }
        let read = || async {
            let (fleet, read) = self.first_reads(record.is_some()).await;
            if let (Some(record), Some(read)) = (record, read) {
                *record.borrow_mut() = Some(read);
            }
            fleet
        };
        let fleet = self.fleet.ensure(read).await?;
        check_set_for_fleet(self.config.ids, fleet.celld)?;
        Ok(fleet)
    }

    /// What an instance reads before its first write, sent together (one round trip): the fork's backend
    /// marker and celld's `wake/format.json`, judged (`control::read_fleet`), and (`with_record`) the
    /// store's qualification record. Keep every such read in this one batch: a read added after it costs
    /// every cold instance a round trip.
    async fn first_reads(&self, with_record: bool) -> (Result<Fleet>, Option<qualify::RecordRead>) {
        let fleet = read_fleet(&self.store, &self.config.prefix, self.config.celld, self.budget());
        if !with_record {
            return (fleet.await, None);
        }
        // The fleet's reads go out first (a side job is polled first), the record's beside them.
        let key = qualify::record_key(&self.config.prefix);
        let mut fleet: Side<'_, Result<Fleet>> = Some(Box::pin(fleet));
        let (read, judged) = beside(qualify::read_record(&self.store, &key, self.budget()), &mut fleet).await;
        let fleet = match (judged, fleet.take()) {
            (Some(judged), _) => judged,
            (None, Some(judging)) => judging.await,
            (None, None) => unreachable!("a side job is emptied only with its output"),
        };
        (fleet, Some(read))
    }

    /// Whether this instance's records follow celld's v0.6 shapes: the fleet was found to be a celld one
    /// (or the option says so).
    fn in_celld_fleet(&self) -> bool {
        self.config.celld || self.fleet.known().is_some_and(|f| f.celld)
    }

    /// Joins or leads this instance's qualification; `fresh` ignores what is kept and recorded. `read`:
    /// the record, read already.
    async fn qualified(&self, fresh: bool, read: Option<qualify::RecordRead>) -> Result<ProbeReport> {
        let mode = match self.config.probe {
            _ if fresh => Mode::Explicit,
            ProbePolicy::Always => Mode::Always,
            ProbePolicy::Recorded | ProbePolicy::Off => Mode::Trust,
        };
        let (trust, skew) = (self.config.probe_trust_ms, self.config.max_clock_skew_ms);
        let run = || async move { qualify::qualify(&self.store, &self.here(), mode, trust, skew, self.budget(), read).await };
        self.qualification.share(|| self.store.env.wall_ms(), fresh, run).await
    }

    /// Whether the kept qualification showed the store honours a conditional DELETE.
    fn deletes_conditionally(&self) -> bool {
        self.qualification.kept(self.store.env.wall_ms()).is_some_and(|r| r.conditional_delete)
    }
}

/// Where a verdict about `config`'s store holds. An R2 binding has no endpoint and does not know its
/// bucket's name: its verdicts are its own (`r2-binding`), apart from those of S3-API clients of the same
/// bucket, whose answers differ (conditional DELETE, `If-Match` on a missing key).
pub fn here(config: &Config) -> Here<'_> {
    match config.r2_binding {
        true => Here { endpoint: "r2-binding", bucket: "", prefix: &config.prefix },
        false => Here { endpoint: config.endpoint.trim_end_matches('/'), bucket: &config.bucket, prefix: &config.prefix },
    }
}

fn closed_error() -> Error {
    Error::not_leased("this instance was closed (close()): it holds no lease and writes nothing; make a new one".into())
}
