//! What a probe's answers amount to: a violation, a refusal, or ambiguity; and how an answer reads in a reason.

use super::Answer;
use crate::error::{Error, Failure, Fault, Refusal};
use crate::s3::PutAnswer;

/// Why the probe stopped early: the store lied, refused, or answered ambiguously.
pub(super) enum Stop {
    Violation(Error),
    /// A violation unless the ETag's quoting explains it: no `If-Match` on a current ETag applied.
    Unmatched(Error),
    Ambiguous(String),
    /// Inconclusive because the store kept turning a write away (429, 503 SlowDown): its last answer.
    Throttled(Fault),
    Refused(Error),
}

pub(super) fn violation(step: &str, detail: String) -> Stop {
    Stop::Violation(broken(step, detail))
}

/// The `store-violation` at `step`.
pub(super) fn broken(step: &str, detail: String) -> Error {
    Error::StoreViolation(Box::new(Failure::new(step, detail)))
}

/// A GET of a key nobody wrote answered with an object: whatever answered is not an S3 bucket.
pub(super) fn not_s3(key: &str) -> Error {
    let message = "not an S3 API: a GET of a key never written answered 200 (check the endpoint)".to_owned();
    Error::Request(Box::new(Refusal { key: key.to_owned(), status: 200, code: String::new(), message, source: None }))
}

pub(super) fn describe(a: &PutAnswer) -> String {
    match a {
        PutAnswer::Applied { etag } => format!("applied (ETag {etag})"),
        PutAnswer::Rejected => "rejected".into(),
        PutAnswer::Conflict { code } => format!("409 {code}"),
        PutAnswer::Throttled(fault) => format!("turned away ({})", fault.detail),
        PutAnswer::Ambiguous(fault) => format!("ambiguous ({})", fault.detail),
        PutAnswer::Refused(e) => format!("refused ({e})"),
    }
}

/// A write's answer; a missing one (or a read's) is no answer, which is ambiguous.
pub(super) fn written(answer: Option<Answer>) -> (u16, PutAnswer) {
    match answer {
        Some(Answer::Written(status, answer)) => (status, answer),
        _ => (0, PutAnswer::Ambiguous("no answer".into())),
    }
}

/// A single write that must apply: its ETag.
pub(super) fn applied(step: &str, answer: PutAnswer) -> core::result::Result<String, Stop> {
    match answer {
        PutAnswer::Applied { etag } => Ok(etag),
        other => Err(unexpected(step, other, "a write that must apply was ")),
    }
}

/// A single write whose condition did not hold.
pub(super) fn rejected(step: &str, answer: PutAnswer) -> core::result::Result<(), Stop> {
    match answer {
        PutAnswer::Rejected => Ok(()),
        other => Err(unexpected(step, other, "a write whose condition did not hold was ")),
    }
}

/// Not the answer wanted: ambiguity and 409 are inconclusive, a refusal is final, anything else a lie.
pub(super) fn unexpected(step: &str, answer: PutAnswer, lead: &str) -> Stop {
    match answer {
        PutAnswer::Ambiguous(fault) => Stop::Ambiguous(format!("{step}: {}", fault.detail)),
        // 409 is "not applied, try again" (R2 answers it under concurrent conditional writes): inconclusive.
        PutAnswer::Conflict { code } => Stop::Ambiguous(format!("{step}: 409 {code}")),
        // So is 429, a rate limit (R2: one write per second per key), never a verdict on conditions.
        PutAnswer::Throttled(fault) => Stop::Throttled(Fault { detail: format!("{step}: {} (throttled)", fault.detail), ..fault }),
        PutAnswer::Refused(e) => Stop::Refused(e),
        other => violation(step, format!("{lead}{}", describe(&other))),
    }
}
