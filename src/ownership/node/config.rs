//! What an instance is configured with (`new S3Ownership({...})`, SPEC §4) and the checks made before
//! anything is sent. Data only: it must never send, read a clock or hold state.

use crate::error::{Error, Result};
use crate::ownership::ids::{check_node, check_prefix, check_set_for_fleet, IdSet};
use crate::ownership::lease::{renew_interval_ms, renewable, renewal_room_ms, MIN_RENEWAL_ROOM_MS};

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
    /// The caller gave no node id: the instance makes one up (`S3Ownership::new`). No predecessor can
    /// have used it, so its first lease's create (sent unread, as for any id) is never refused.
    pub made_up_node: bool,
    /// The store is a Workers R2 binding (the `r2` option): requests go through it unsigned
    /// (`Bucket::binding`), and endpoint, bucket, region and keys are unused.
    pub r2_binding: bool,
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
    /// A celld v0.6 fleet shares the bucket (`celld: true`): a bucket no celld node has initialised
    /// (`<prefix>wake/format.json`) is refused before anything is written (SPEC §2.1).
    pub celld: bool,
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
            credentials_provider: false,
            node: node.to_owned(),
            made_up_node: false,
            r2_binding: false,
            addr: String::new(),
            prefix: String::new(),
            lease_ttl_ms: 10_000,
            max_clock_skew_ms: 1_000,
            path_style: true,
            request_timeout_ms: 10_000,
            probe: ProbePolicy::Recorded,
            probe_trust_ms: PROBE_TRUST_MS,
            ids: IdSet::Celld,
            celld: false,
        }
    }

    /// Checks what no request can check later: ids, the lease's timing, timeouts, trust, `addr`.
    pub(super) fn check(&self) -> Result<()> {
        check_node(self.ids, &self.node)?;
        check_set_for_fleet(self.ids, self.celld)?;
        check_prefix(&self.prefix)?;
        let (ttl, skew) = (self.lease_ttl_ms, self.max_clock_skew_ms);
        if ttl > 86_400_000 {
            return Err(Error::invalid(format!("leaseTtlMs ({ttl}) must be at most a day")));
        }
        if !renewable(ttl, skew) {
            return Err(Error::invalid(format!(
                "leaseTtlMs ({ttl}) and maxClockSkewMs ({skew}) leave a renewal no time to succeed: a lease \
                 gives authority for leaseTtlMs - maxClockSkewMs ({} ms) and is renewed leaseTtlMs/3 ({} ms) \
                 after it was written, so the renewal has {} ms to make its round trip; at least \
                 {MIN_RENEWAL_ROOM_MS} ms are needed (raise leaseTtlMs or lower maxClockSkewMs)",
                ttl.saturating_sub(skew),
                renew_interval_ms(ttl),
                renewal_room_ms(ttl, skew),
            )));
        }
        if self.request_timeout_ms == 0 {
            return Err(Error::invalid("requestTimeoutMs must be positive"));
        }
        if self.probe_trust_ms > MAX_PROBE_TRUST_MS {
            return Err(Error::invalid(format!("probeTrustMs ({}) must be at most 90 days", self.probe_trust_ms)));
        }
        if self.addr.chars().any(char::is_control) {
            return Err(Error::invalid("addr contains a control character"));
        }
        Ok(())
    }
}
