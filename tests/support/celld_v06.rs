//! celld v0.6's node lease as celld reads it, restated for the tests from what
//! `../shared/notes/celld-v06.md` records of celld's serde shapes and rules (written here, not copied):
//! which fields a lease must carry, which ones default when absent, their types, and the rules celld
//! applies to another node's lease. celld's decode of the leases under `nodes/` is all-or-nothing: one
//! lease that does not decode as `Lease` fails placement, readiness, drains and follower choice on every
//! celld node; one that decodes but fails `keeps_planner_running` halts every node's rebalancing.
#![allow(dead_code)] // each test target uses part of it

use std::collections::BTreeMap;

use serde::Deserialize;

/// celld's own peer protocol number (5 in the v0.6.1 sources; only "not ours" matters).
pub const CELLD_PROTOCOL: u16 = 5;
/// `CELLD_TTL_MS`'s default: the planner's freshness bound on `load.sampled_ms`.
pub const CELLD_TTL_MS: u64 = 10_000;
/// celld v0.6's bucket format; a live lease reading an older one closes the paging gate.
pub const BUCKET_FORMAT: u16 = 2;

/// The lease. Only `node` and `expires_ms` are required; every other field defaults. No field is refused
/// for being unknown (an edge `nonce` passes).
#[derive(Debug, Deserialize)]
pub struct Lease {
    pub node: String,
    pub expires_ms: u64,
    #[serde(default)]
    pub addr: String,
    #[serde(default)]
    pub probe_public_key: String,
    #[serde(default)]
    pub peer_protocol: u16,
    #[serde(default)]
    pub paced_handoff: bool,
    #[serde(default)]
    pub ownership_index_generation: String,
    #[serde(default)]
    pub log: Option<Log>,
    /// Absent reads as an all-zero sample with no weight (which halts the planner); present, it must be
    /// complete.
    #[serde(default)]
    pub load: Load,
}

/// The folded node log.
#[derive(Debug, Deserialize)]
pub struct Log {
    pub state: String,
    pub epoch: u64,
    pub ensemble: Vec<String>,
    pub tiered: u64,
    #[serde(default)]
    pub active: bool,
    #[serde(default)]
    pub claimant: Option<String>,
    #[serde(default)]
    pub claimed_ms: Option<u64>,
}

/// The load sample: nine required fields, the rest optional.
#[derive(Debug, Default, Deserialize)]
pub struct Load {
    pub sampled_ms: u64,
    #[serde(default)]
    pub owned_cells: Option<usize>,
    #[serde(default)]
    pub placement_weight: Option<u64>,
    #[serde(default)]
    pub bucket_format: Option<u16>,
    pub resident_cells: usize,
    pub host_websockets: usize,
    pub rss_bytes: u64,
    #[serde(default)]
    pub in_use_bytes: Option<u64>,
    #[serde(default)]
    pub cgroup_working_set_bytes: Option<u64>,
    #[serde(default)]
    pub cgroup_current_bytes: Option<u64>,
    pub cpu_percent_x100: u64,
    pub open_fds: u64,
    pub fd_limit: u64,
    pub pressured: bool,
    #[serde(default)]
    pub memory_headroom: Option<bool>,
    pub shed_cells: u64,
    #[serde(default)]
    pub restoring: u64,
    #[serde(default)]
    pub rebalance_paused: Option<bool>,
    #[serde(default)]
    pub draining: Option<bool>,
    #[serde(default)]
    pub container_instances: BTreeMap<String, u64>,
}

/// The fields `Load` cannot do without.
pub const REQUIRED_LOAD: [&str; 9] =
    ["sampled_ms", "resident_cells", "host_websockets", "rss_bytes", "cpu_percent_x100", "open_fds", "fd_limit", "pressured", "shed_cells"];

pub fn decode(body: &[u8]) -> Result<Lease, serde_json::Error> {
    serde_json::from_slice(body)
}

impl Lease {
    /// celld routes to (or refuses to take over from) the owner whose lease this is, read from
    /// `nodes/<key_node>.json` by a read issued at `issued_ms` on celld's wall clock.
    pub fn live_to_celld(&self, key_node: &str, issued_ms: u64) -> bool {
        self.expires_ms > issued_ms && !self.addr.is_empty() && self.node == key_node
    }

    /// A cold cell may be placed on this node (activation placement).
    pub fn placement_target(&self, now_ms: u64) -> bool {
        self.expires_ms > now_ms
            && !self.addr.is_empty()
            && self.peer_protocol == CELLD_PROTOCOL
            && self.load.sampled_ms != 0
            && !self.load.pressured
    }

    /// A draining or rebalancing node may hand this node a cell.
    pub fn handoff_target(&self, now_ms: u64) -> bool {
        self.expires_ms > now_ms
            && !self.addr.is_empty()
            && self.peer_protocol == CELLD_PROTOCOL
            && self.load.sampled_ms != 0
            && self.paced_handoff
    }

    /// The rebalancing planner goes on with this lease in the fleet at `now_ms` (an expired lease is not
    /// looked at); `since_ms` is the planner's last batch.
    pub fn keeps_planner_running(&self, now_ms: u64, since_ms: u64) -> bool {
        if self.expires_ms <= now_ms {
            return true;
        }
        let load = &self.load;
        let fresh = load.sampled_ms > since_ms && now_ms.saturating_sub(load.sampled_ms) <= CELLD_TTL_MS;
        fresh
            && self.paced_handoff
            && !load.rebalance_paused.unwrap_or(false)
            && load.owned_cells.is_some()
            && load.placement_weight.is_some()
    }

    /// The planner may choose this node to receive cells.
    pub fn receives_cells(&self) -> bool {
        !self.load.draining.unwrap_or(false) && self.load.restoring == 0
    }

    /// A joining celld node's readiness gate passes with this lease live.
    pub fn lets_readiness_pass(&self) -> bool {
        !self.load.pressured && self.load.memory_headroom != Some(false) && self.load.restoring == 0
    }

    /// The paged-restore format gate stays open with this lease live.
    pub fn keeps_paging_open(&self) -> bool {
        self.load.bucket_format.unwrap_or(1) >= BUCKET_FORMAT
    }

    /// celld's dead-node clean-up keeps this lease (a log it has not sealed, or sealed: its log clean-up
    /// needs the record).
    pub fn kept_by_cleanup(&self) -> bool {
        self.log.is_some()
    }
}
