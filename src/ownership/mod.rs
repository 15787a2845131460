//! The ownership protocol (SPEC §2-§5). Pure parts — `records` (wire shapes), `decide` (claim decision),
//! `lease` (time arithmetic), `reconcile` (settling ambiguous writes) — take everything as arguments.
//! `S3Ownership` (in `driver`) runs them over an [`crate::env::Env`]; it holds no logic of its own
//! beyond sequencing requests.

mod driver;
pub mod ids;
pub mod records;
#[cfg(feature = "teeth")]
pub mod teeth;

pub use driver::{ClaimOutcome, Config, OwnerInfo, S3Ownership};
pub use records::{CasGuard, CasOutcome, NodeLeaseRecord, OwnerRecord};
