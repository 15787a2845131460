//! What callers get back from an instance (and the options they pass it): plain values, no behaviour.
//! They must never hold a reference into the instance's state.

use crate::env::Lost;
use crate::ownership::records::{OwnerRecord, Recovery};

/// Why this instance may no longer act for a cell at an epoch (`S3Ownership::authority_at`): how its claim
/// ended (`None`: too long ago to say, or never held at that epoch) and the core's detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub lost: Option<Lost>,
    pub detail: String,
}

/// A cell's owner as seen for routing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerInfo {
    /// Empty when released (`null` to JS).
    #[serde(serialize_with = "crate::ownership::records::node_or_null")]
    pub node: String,
    pub epoch: u64,
    pub addr: String,
    /// The owner's lease is not provably dead (peer rule, SPEC §5).
    pub live: bool,
    /// The owner is dead but its celld node log is not sealed: nobody may claim the cell until celld
    /// recovers that log (SPEC §2).
    pub awaiting_recovery: bool,
    /// While `awaiting_recovery`: which celld node is recovering that log and how long ago it last beat on
    /// its claim (stale after 30 s); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
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
    /// over at once): left alone.
    Needed {
        #[serde(skip_serializing_if = "Option::is_none")]
        cell: Option<String>,
    },
    /// The store's conditional DELETE is not verified (no qualification kept, or it was not honoured):
    /// nothing deleted.
    Unsupported,
    /// The lease there is not the version judged dead: someone re-acquired it, before our delete or after
    /// it landed unheard (a DELETE delivered twice, then a fresh create, reads back the same): left alone.
    Changed,
    /// celld wrote the lease (it carries a node log, sealed included, a `probe_public_key` or a
    /// `peer_protocol`): celld's own clean-up keeps or removes it, never this library.
    Celld,
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
