//! The ownership protocol (SPEC §2-§6). Pure parts — `records` (wire shapes and their serde codec),
//! `decide` (claim decision), `authority` (which reads end a claim), `lease` (time arithmetic), `clock` (the clock-proof peer rule and the store's clock), `ids`
//! (validation), `probe` (the store probe's machine) — take everything as arguments. `cas` is the bucket
//! layer (GET, conditional PUT, settling ambiguous writes by readback); `credentials` rotates a
//! provider's keys under it; `control` reads celld's fleet marker over it; `qualify` records and trusts
//! the probe's verdict per bucket; `S3Ownership` (in `node/`, one file per thing the protocol
//! talks about) sequences them over an [`crate::env::Env`]; `rules` names the safety rules it applies,
//! `flight` shares one operation among concurrent callers; `throttle` is the pause before resending what a store turned away. `listing` is the read-only view of the bucket (every cell's owner, every node's
//! lease), needing no node id and no lease.

pub mod authority;
pub mod cas;
pub mod clock;
pub mod control;
pub mod credentials;
pub mod decide;
mod flight;
pub mod ids;
mod join;
mod known;
pub mod lease;
pub mod listing;
mod node;
pub mod probe;
pub mod qualify;
pub mod records;
pub mod rules;
pub mod throttle;
#[cfg(feature = "teeth")]
pub mod teeth;

pub use node::{
    ClaimOptions, ClaimOutcome, CloseOptions, Closed, Config, Ended, LeaseRemoval, OwnerInfo, ProbePolicy, S3Ownership,
};
pub use ids::IdSet;
pub use listing::{CellEntry, CellOwner, Inspector, LeaseView, NodeEntry};
pub use probe::ProbeReport;
pub use records::{CasGuard, CasOutcome, NodeLeaseRecord, OwnerRecord};
