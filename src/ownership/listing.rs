//! Seeing the bucket (SPEC §4.2): every cell's owner record and every node's lease, with the liveness a
//! peer would judge (SPEC §5), for operators and dashboards. It needs no node id and no lease, and must
//! never write or decide anything — a listing is a snapshot, already old when it is returned, so nothing
//! here may be used to act for a cell (that is `claim` / `verify`). The one exception is `probe`, which
//! qualifies the store as `S3Ownership::probe` does (its own keys under `<prefix>probe/`, nothing else).
//!
//! Records decode through `records` (the one codec) and liveness is `clock::judge` /
//! `decide::awaiting_recovery`, the rules a claim uses, by the store's clock as this view's answers bound
//! it (one look: a lease only observation could prove dead reads `undecided`). Keys that are not records (`cells/<cell>/data/…`,
//! `probe/`, `fleet/`) are ignored. A record that does not decode is reported on its own entry as
//! `corrupt-record` naming its key; any other failure (credentials, a missing bucket, a store that is not
//! S3, a read that kept failing) fails the whole listing, since a partial listing would read as complete.

use std::rc::Rc;

use crate::env::{Env, Observer};
use crate::error::{Error, Result};
use crate::ownership::cas::{Budget, Store};
use crate::ownership::control::check_bucket_backend;
use crate::ownership::clock::{judge, Found, Judgement, Reading, StoreClock};
use crate::ownership::decide::{awaiting_recovery, Holder};
use crate::ownership::{Config, S3Ownership};
use crate::ownership::ids::{check_node, check_prefix, IdSet};
use crate::ownership::join::join_all;
use crate::ownership::probe::ProbeReport;
use crate::ownership::qualify::{self, Here, Mode, Outcome};
use crate::ownership::records::{corrupt, decode_lease, decode_owner, NodeLeaseRecord, OwnerRecord, Recovery};
use crate::s3::list::Listed;

/// Records read at once while listing: enough to hide a round trip, few enough for any runtime's
/// connection pool (a Worker has six simultaneous connections).
const READS_IN_FLIGHT: usize = 6;

/// The node ids a record may name to be shown: the widest set (an inspector has no `ids` option, and a
/// fleet of either set must list), which still refuses control characters and slashes. A record is
/// anyone's to write: its `node` must not carry terminal escapes into an operator's view.
const NODE_IDS: IdSet = IdSet::Utf8;

/// Keys under `cells/` that hold this are a cell's data (`scope().key()`), never records.
const DATA_DELIMITER: &str = "/data/";

/// What a peer would conclude from a node's lease right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseView {
    /// Not provably dead, and its expiry is still ahead by the store's clock.
    Live { expires_ms: u64 },
    /// Past its expiry by the store's clock, but the peer rule has not decided yet: the store's clock is
    /// not surely past it (its `Date` has whole seconds), or only observation can prove this lease dead (an
    /// expiry on its writer's wall clock: a peer waits the writer's ttl from its first sight of it).
    Undecided { expires_ms: u64 },
    /// Dead by the peer rule.
    Dead { expires_ms: u64 },
    /// No lease record. Not instant proof of death (SPEC §5): celld's clean-up deletes leases late.
    Missing,
    /// The lease record does not decode (the error names its key).
    Corrupt(Error),
}

impl LeaseView {
    pub fn name(&self) -> &'static str {
        match self {
            LeaseView::Live { .. } => "live",
            LeaseView::Undecided { .. } => "undecided",
            LeaseView::Dead { .. } => "dead",
            LeaseView::Missing => "missing",
            LeaseView::Corrupt(_) => "corrupt",
        }
    }

    pub fn expires_ms(&self) -> Option<u64> {
        match self {
            LeaseView::Live { expires_ms } | LeaseView::Undecided { expires_ms } | LeaseView::Dead { expires_ms } => {
                Some(*expires_ms)
            }
            _ => None,
        }
    }

    pub fn error(&self) -> Option<&Error> {
        match self {
            LeaseView::Corrupt(e) => Some(e),
            _ => None,
        }
    }
}

/// One node's lease as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEntry {
    /// The id in the key (`nodes/<node>.json`).
    pub node: String,
    pub key: String,
    pub lease: LeaseView,
    pub addr: String,
    /// Empty when the lease is missing.
    pub etag: String,
    /// The store's `LastModified` of the lease (its last write, i.e. renewal), Unix ms, when listed.
    pub modified_ms: Option<u64>,
    /// Dead, and carrying a celld node log that is not sealed: celld recovers it before anyone may take
    /// the node's cells over (SPEC §2).
    pub awaiting_recovery: bool,
    /// While `awaiting_recovery`: which celld node is recovering that log and how long ago it last beat
    /// on its claim (stale after 30 s), from the lease's `log`, aged on the store's clock.
    pub recovery: Option<Recovery>,
    /// The store's clock when the liveness was judged (the middle of what its answers' `Date` headers
    /// bound it to; this machine's wall clock while no answer carried one).
    pub judged_at_ms: u64,
}

/// One cell's owner record as read, with its owner's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellEntry {
    /// The id in the key (`cells/<cell>/own.json`).
    pub cell: String,
    pub key: String,
    /// The owner record, or the `corrupt-record` error naming `key`.
    pub record: core::result::Result<CellOwner, Error>,
    /// The store's `LastModified` of the owner record, Unix ms, when listed.
    pub modified_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellOwner {
    /// `None` when released (the epoch is kept).
    pub node: Option<String>,
    pub epoch: u64,
    pub etag: String,
    /// The owner's lease; `None` when released.
    pub lease: Option<NodeEntry>,
}

impl CellEntry {
    /// One word for a table: `released`, `live`, `dead`, `awaiting-recovery`, `missing` (the owner's
    /// lease is absent) or `corrupt` (the owner record or the owner's lease does not decode).
    pub fn status(&self) -> &'static str {
        let Ok(owner) = &self.record else { return "corrupt" };
        match &owner.lease {
            None => "released",
            Some(lease) if lease.awaiting_recovery => "awaiting-recovery",
            Some(lease) => lease.lease.name(),
        }
    }

    /// The owner's lease, when the record names an owner.
    pub fn lease(&self) -> Option<&NodeEntry> {
        self.record.as_ref().ok().and_then(|o| o.lease.as_ref())
    }

    /// The `corrupt-record` of the owner record, or else of the owner's lease.
    pub fn error(&self) -> Option<&Error> {
        match &self.record {
            Err(e) => Some(e),
            Ok(owner) => owner.lease.as_ref().and_then(|l| l.lease.error()),
        }
    }
}

/// What the peer rule concludes from one look at `record` at `now` (SPEC §5, `clock::judge`): dead once
/// the store's clock (its lower bound) is past what the rule needs; live while the store's clock is before
/// its expiry; otherwise undecided. One look can never prove a lease dead by observation.
fn lease_view(record: &NodeLeaseRecord, clock: &StoreClock, now: Reading, max_skew_ms: u64) -> LeaseView {
    let expires_ms = record.expires_ms;
    let found = Found::Present { terms: record.terms(), unchanged_ms: 0.0, served: clock.lower(now) };
    // The judge's own ttl matters only for missing leases, which are not judged here.
    if judge(found, 0, max_skew_ms) == Judgement::Dead {
        LeaseView::Dead { expires_ms }
    } else if clock.estimate(now).unwrap_or(now.wall) < expires_ms {
        LeaseView::Live { expires_ms }
    } else {
        LeaseView::Undecided { expires_ms }
    }
}

/// The id in `<dir><id><suffix>`, when `key` is exactly that with a one-segment, non-empty id.
fn id_in<'k>(key: &'k str, dir: &str, suffix: &str) -> Option<&'k str> {
    let id = key.strip_prefix(dir)?.strip_suffix(suffix)?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// A record read: decoded, absent (deleted since it was listed), or `corrupt-record` (kept for its entry).
type Read<T> = Result<Option<Result<T>>>;

/// A read-only view of one bucket + prefix.
pub struct Inspector<E: Env> {
    store: Store<E>,
    endpoint: String,
    bucket: String,
    prefix: String,
    max_clock_skew_ms: u64,
    timeout_ms: u32,
    page_size: Option<u32>,
}

impl<E: Env> Inspector<E> {
    /// From the connection part of `config` (endpoint, bucket, region, credentials, path style, prefix,
    /// `max_clock_skew_ms`, `request_timeout_ms`); `node`, `addr`, the lease TTL, `probe` and `ids` are
    /// not used, so `node` may be empty. Validates; sends nothing.
    pub fn new(config: &Config, env: E) -> Result<Self> {
        check_prefix(&config.prefix)?;
        if config.request_timeout_ms == 0 {
            return Err(Error::invalid("requestTimeoutMs must be positive"));
        }
        let here = crate::ownership::node::here(config);
        Ok(Inspector {
            store: Store::for_config(config, env)?,
            endpoint: here.endpoint.to_owned(),
            bucket: here.bucket.to_owned(),
            prefix: config.prefix.clone(),
            max_clock_skew_ms: config.max_clock_skew_ms,
            timeout_ms: config.request_timeout_ms,
            page_size: None,
        })
    }

    /// Tells `observer` of every request it sends (`Event::Request`) from now on.
    pub fn observed_by(mut self, observer: impl Observer + 'static) -> Self {
        self.store.observer = Rc::new(observer);
        self
    }

    pub fn env(&self) -> &E {
        &self.store.env
    }

    fn budget(&self) -> Budget {
        Budget::PerRequest(self.timeout_ms)
    }

    /// Keys per page (`max-keys`, 1..=1000; the store's default, 1000, otherwise).
    pub fn with_page_size(mut self, keys: u32) -> Result<Self> {
        if !(1..=1000).contains(&keys) {
            return Err(Error::invalid(format!("page size {keys} is not in 1..=1000")));
        }
        self.page_size = Some(keys);
        Ok(self)
    }

    /// Every key under `dir`, page by page, except those holding `delimiter` past `dir` (rolled up by
    /// the store into common prefixes, which are not records).
    async fn list(&self, dir: &str, delimiter: Option<&str>) -> Result<Vec<Listed>> {
        let mut all = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = self.store.list(dir, delimiter, token.as_deref(), self.page_size, self.budget()).await?;
            all.extend(page.objects);
            match page.next {
                None => return Ok(all),
                // A store that hands back the token it was given would page forever.
                Some(next) if token.as_deref() == Some(next.as_str()) => {
                    let detail = format!("the store answered continuation token {next} with itself");
                    return Err(Error::transport(dir.to_owned(), detail));
                }
                Some(next) => token = Some(next),
            }
        }
    }

    /// Reads and decodes `keys`, `READS_IN_FLIGHT` at a time, answers in order. A record that does not
    /// decode is read again as any read is (`Store::get_decoded`: a garbled transfer is not a corrupt
    /// record) and then kept as its entry's error; any other failure fails the whole read.
    async fn read_all<T>(&self, keys: &[String], decode: fn(&str, &[u8], &str) -> Result<T>) -> Result<Vec<Option<Result<T>>>> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(READS_IN_FLIGHT) {
            let reads = chunk.iter().map(|key| async move {
                let read: Read<T> = match self.store.get_decoded(key, self.budget(), |b, t| decode(key, b, t), false).await {
                    Ok(found) => Ok(found.map(Ok)),
                    Err(e) if e.code() == "corrupt-record" => Ok(Some(Err(e))),
                    Err(e) => Err(e),
                };
                read
            });
            for read in join_all(reads).await {
                out.push(read?);
            }
        }
        Ok(out)
    }

    /// A lease record read from `key`, unless it names no node id (`NODE_IDS`): `corrupt-record`.
    fn named(&self, key: &str, record: NodeLeaseRecord) -> Result<NodeLeaseRecord> {
        check_node(NODE_IDS, &record.node).map_err(|e| corrupt(key, format!("its node is not a node id: {e}")))?;
        Ok(record)
    }

    /// A lease as read (`None`: absent), judged by the peer rule at `now`.
    fn lease_entry(&self, node: &str, key: String, modified_ms: Option<u64>, read: Option<Result<NodeLeaseRecord>>, now: Reading) -> NodeEntry {
        let clock = self.store.store_clock();
        let mut entry = NodeEntry {
            node: node.to_owned(),
            key,
            lease: LeaseView::Missing,
            addr: String::new(),
            etag: String::new(),
            modified_ms,
            awaiting_recovery: false,
            recovery: None,
            judged_at_ms: clock.estimate(now).unwrap_or(now.wall),
        };
        match read {
            None => {}
            Some(Err(e)) => entry.lease = LeaseView::Corrupt(e),
            Some(Ok(record)) => {
                entry.lease = lease_view(&record, &clock, now, self.max_clock_skew_ms);
                let dead = matches!(entry.lease, LeaseView::Dead { .. });
                entry.awaiting_recovery = awaiting_recovery(Holder { lease: Some(&record), dead });
                if entry.awaiting_recovery {
                    entry.recovery = record.log.as_ref().map(|log| log.recovery(entry.judged_at_ms));
                }
                entry.addr = record.addr;
                entry.etag = record.etag;
            }
        }
        entry
    }

    /// Every node lease under `<prefix>nodes/`, in key order. A lease deleted while listing is left out.
    pub async fn list_nodes(&self) -> Result<Vec<NodeEntry>> {
        let dir = format!("{}nodes/", self.prefix);
        let leases: Vec<Listed> = self.list(&dir, None).await?.into_iter().filter(|l| id_in(&l.key, &dir, ".json").is_some()).collect();
        let keys: Vec<String> = leases.iter().map(|l| l.key.clone()).collect();
        let reads = self.read_all(&keys, decode_lease).await?;
        let now = self.store.reading();
        let mut out = Vec::with_capacity(keys.len());
        for (l, read) in leases.iter().zip(reads) {
            if read.is_some() {
                let node = id_in(&l.key, &dir, ".json").unwrap_or_default();
                let read = read.map(|r| r.and_then(|record| self.named(&l.key, record)));
                out.push(self.lease_entry(node, l.key.clone(), l.last_modified_ms, read, now));
            }
        }
        Ok(out)
    }

    /// Every owner record under `<prefix>cells/`, in key order, each with its owner's lease (read once
    /// per owner). A record deleted while listing is left out.
    pub async fn list_cells(&self) -> Result<Vec<CellEntry>> {
        let dir = format!("{}cells/", self.prefix);
        // The application's data (`cells/<cell>/data/…`, any number of keys) comes back as one common
        // prefix per cell: the listing stays as long as the cells are many, whatever the data.
        let records: Vec<Listed> =
            self.list(&dir, Some(DATA_DELIMITER)).await?.into_iter().filter(|l| id_in(&l.key, &dir, "/own.json").is_some()).collect();
        let keys: Vec<String> = records.iter().map(|l| l.key.clone()).collect();
        let mut cells = Vec::with_capacity(keys.len());
        for (l, read) in records.into_iter().zip(self.read_all(&keys, decode_owner).await?) {
            let Some(record) = read else { continue };
            let record = record.and_then(|r: OwnerRecord| {
                if !r.is_released() {
                    check_node(NODE_IDS, &r.node).map_err(|e| corrupt(&l.key, format!("its node is not a node id: {e}")))?;
                }
                Ok(r)
            });
            let record = record.map(|r: OwnerRecord| CellOwner {
                node: (!r.is_released()).then_some(r.node),
                epoch: r.epoch,
                etag: r.etag,
                lease: None,
            });
            let cell = id_in(&l.key, &dir, "/own.json").unwrap_or_default().to_owned();
            cells.push(CellEntry { cell, key: l.key, record, modified_ms: l.last_modified_ms });
        }
        // The owners' leases, each read once: the nodes/ listing gives their LastModified; an owner whose
        // lease is not listed is read anyway (it may have been written since), and is `missing` only if
        // absent. Plain vectors and linear finds: owners are few.
        let node_dir = format!("{}nodes/", self.prefix);
        let listed_leases = self.list(&node_dir, None).await?;
        let mut owners: Vec<&str> = Vec::new();
        for cell in &cells {
            if let Ok(CellOwner { node: Some(node), .. }) = &cell.record {
                if !owners.contains(&node.as_str()) {
                    owners.push(node);
                }
            }
        }
        let keys: Vec<String> = owners.iter().map(|node| format!("{node_dir}{}.json", *node)).collect();
        let reads = self.read_all(&keys, decode_lease).await?;
        let now = self.store.reading();
        let mut leases = Vec::with_capacity(keys.len());
        for ((node, key), read) in owners.iter().zip(&keys).zip(reads) {
            let read = read.map(|r| r.and_then(|record| self.named(key, record)));
            let modified = listed_leases.iter().find(|l| l.key == *key).and_then(|l| l.last_modified_ms);
            leases.push(self.lease_entry(node, key.clone(), modified, read, now));
        }
        for cell in &mut cells {
            if let Ok(CellOwner { node: Some(node), lease, .. }) = &mut cell.record {
                *lease = leases.iter().find(|l| l.node == *node).cloned();
            }
        }
        Ok(cells)
    }

    /// Qualifies the store now (SPEC §6) and records the verdict at `<prefix>probe/qualified.json` for
    /// later instances, whatever was recorded before: what `S3Ownership::probe` does, without a node.
    /// A store that breaks conditional writes is `store-violation` naming the step (and recorded so).
    pub async fn probe(&self) -> Result<ProbeReport> {
        // The fleet's backend marker first (read, never created here): a fleet of another backend gets no
        // write of the probe.
        let marker = check_bucket_backend(&self.store, &self.prefix, self.budget()).await;
        // A marker that does not decode may be a wrong endpoint's page: the probe says "not an S3 API".
        match &marker {
            Err(e) if e.code() != "corrupt-record" => return Err(e.clone()),
            _ => {}
        }
        let here = Here { endpoint: &self.endpoint, bucket: &self.bucket, prefix: &self.prefix };
        // Mode::Explicit ignores what is recorded, so the trust period only dates this instance's copy.
        let report = match qualify::qualify(&self.store, &here, Mode::Explicit, 0, self.max_clock_skew_ms, self.budget(), None).await {
            Outcome::Qualified { report, .. } => report,
            Outcome::Refused { error, .. } | Outcome::Failed(error) => return Err(error),
        };
        marker.map(|()| report)
    }
}

/// The listings as `S3Ownership` methods: an `Inspector` over this instance's `Env` and configuration.
/// They need no lease and never touch this instance's lease or claims.
impl<E: Env> S3Ownership<E> {
    pub async fn list_cells(&self) -> Result<Vec<CellEntry>> {
        self.inspector()?.list_cells().await
    }

    pub async fn list_nodes(&self) -> Result<Vec<NodeEntry>> {
        self.inspector()?.list_nodes().await
    }

    fn inspector(&self) -> Result<Inspector<&E>> {
        let mut inspector = Inspector::new(self.config(), self.env())?;
        inspector.store.observer = self.observer();
        Ok(inspector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_keys_only() {
        assert_eq!(id_in("p/cells/a/own.json", "p/cells/", "/own.json"), Some("a"));
        assert_eq!(id_in("p/cells/a b.c/own.json", "p/cells/", "/own.json"), Some("a b.c"));
        for key in ["p/cells//own.json", "p/cells/a/data/e1/own.json", "p/cells/a/own.json.bak", "cells/a/own.json", "p/cells/own.json"] {
            assert_eq!(id_in(key, "p/cells/", "/own.json"), None, "{key}");
        }
        assert_eq!(id_in("nodes/n-1.json", "nodes/", ".json"), Some("n-1"));
        for key in ["nodes/.json", "nodes/a/b.json", "nodes/a.json.tmp", "nodes/a"] {
            assert_eq!(id_in(key, "nodes/", ".json"), None, "{key}");
        }
    }
}
