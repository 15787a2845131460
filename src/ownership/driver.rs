//! `S3Ownership`: runs the protocol over an `Env`. INTERFACE STUB — being implemented.

use std::cell::RefCell;

use crate::env::Env;
use crate::error::Result;
use crate::ownership::records::{CasGuard, CasOutcome, NodeLeaseRecord, OwnerRecord};

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
}

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
}

/// What `claim` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    Applied { epoch: u64, took_over: bool, prior: Option<OwnerRecord> },
    Rejected { owner: OwnerInfo },
}

pub struct S3Ownership<E: Env> {
    env: E,
    config: Config,
    state: RefCell<()>,
}

impl<E: Env> S3Ownership<E> {
    pub fn new(config: Config, env: E) -> Result<Self> {
        Ok(S3Ownership { env, config, state: RefCell::new(()) })
    }
    pub fn env(&self) -> &E {
        &self.env
    }
    pub fn config(&self) -> &Config {
        &self.config
    }
    /// Arms one deliberately broken rule (tests only).
    #[cfg(feature = "teeth")]
    pub fn with_tooth(self, tooth: crate::ownership::teeth::Tooth) -> Self {
        let _ = tooth;
        self
    }
    pub async fn read_owner(&self, cell: &str) -> Result<Option<OwnerRecord>> {
        todo!("{cell}")
    }
    pub async fn cas_owner(&self, cell: &str, guard: &CasGuard, epoch: u64) -> Result<CasOutcome> {
        todo!("{cell}{guard:?}{epoch}")
    }
    pub async fn release_owner(&self, cell: &str, epoch: u64) -> Result<CasOutcome> {
        todo!("{cell}{epoch}")
    }
    pub async fn read_node_lease(&self, node: &str) -> Result<Option<NodeLeaseRecord>> {
        todo!("{node}")
    }
    /// Returns the new ETag when applied.
    pub async fn cas_node_lease(&self, guard: &CasGuard, expires_ms: u64) -> Result<(CasOutcome, Option<String>)> {
        todo!("{guard:?}{expires_ms}")
    }
    pub async fn acquire_lease(&self) -> Result<()> {
        todo!()
    }
    pub async fn renew_lease(&self) -> Result<()> {
        todo!()
    }
    /// True while this node may act as an owner (SPEC §5), by its monotonic clock.
    pub fn lease_valid(&self) -> bool {
        todo!()
    }
    pub async fn claim(&self, cell: &str) -> Result<ClaimOutcome> {
        todo!("{cell}")
    }
    /// Releases a cell this node claimed, at the epoch it claimed it at.
    pub async fn release(&self, cell: &str) -> Result<CasOutcome> {
        todo!("{cell}")
    }
    /// Who owns `cell` and whether that owner's lease is live; `None` when the record is absent.
    pub async fn owner(&self, cell: &str) -> Result<Option<OwnerInfo>> {
        todo!("{cell}")
    }
    /// True iff the record still names this node at `epoch` (the ack gate).
    pub async fn verify(&self, cell: &str, epoch: u64) -> Result<bool> {
        todo!("{cell}{epoch}")
    }
}
