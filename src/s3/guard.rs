//! The precondition of a conditional write, as the store checks it. A store condition only: it must never
//! carry protocol meaning (which version a claim may write over is the ownership layer's decision).

/// The precondition of a conditional PUT (or DELETE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CasGuard {
    /// `If-None-Match: *`: create only.
    Absent,
    /// `If-Match: <etag>`: replace only this version.
    Match(String),
}
