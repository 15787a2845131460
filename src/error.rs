//! The crate's one error type. Every variant says what happened and where (the key or the input), so
//! callers can branch on `code()` and humans can read `Display`. Secrets never enter these values.

use std::fmt::{self, Write};

/// What went wrong, with the key or input it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The caller passed something unusable (an id, a URL, a credential, an option); nothing was sent.
    InvalidInput(String),
    /// The store refused our credentials or signature (401/403, or a signature error code).
    Auth { key: String, status: u16, code: String, message: String },
    /// The store refused the request as malformed or unsupported (other 4xx, redirects).
    Request { key: String, status: u16, code: String, message: String },
    /// The request could not be completed and nothing was written (reads, or writes known not to apply).
    Transport { key: String, detail: String },
    /// A conditional write may or may not have landed, and reading back could not settle it.
    Ambiguous { key: String, detail: String },
    /// A record in the bucket does not decode as what its key says it is.
    CorruptRecord { key: String, detail: String },
    /// The store broke the conditional-write contract (see `probe()`).
    StoreViolation { step: String, detail: String },
    /// This node holds no valid lease, so it may not claim or act as an owner.
    NotLeased(String),
    /// This node's lease was lost (replaced, or renewed too late): its claims are void.
    Fenced(String),
}

impl Error {
    /// The stable code exposed to JS as `error.code`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput(_) => "invalid-input",
            Error::Auth { .. } => "auth",
            Error::Request { .. } => "request",
            Error::Transport { .. } => "transport",
            Error::Ambiguous { .. } => "ambiguous",
            Error::CorruptRecord { .. } => "corrupt-record",
            Error::StoreViolation { .. } => "store-violation",
            Error::NotLeased(_) => "not-leased",
            Error::Fenced(_) => "fenced",
        }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidInput(m) => write!(f, "invalid input: {m}"),
            Error::Auth { key, status, code, message } => {
                write!(f, "store refused credentials for {key}: {status} {code}: {message}")
            }
            Error::Request { key, status, code, message } => {
                write!(f, "store refused request for {key}: {status} {code}: {message}")
            }
            Error::Transport { key, detail } => write!(f, "transport failure on {key}: {detail}"),
            Error::Ambiguous { key, detail } => {
                write!(f, "write to {key} may or may not have landed: {detail}")
            }
            Error::CorruptRecord { key, detail } => write!(f, "corrupt record at {key}: {detail}"),
            Error::StoreViolation { step, detail } => {
                write!(f, "store violates conditional writes at step {step}: {detail}")
            }
            Error::NotLeased(m) => write!(f, "no valid lease: {m}"),
            Error::Fenced(m) => write!(f, "fenced: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// Caller input inside a message: `"…"` with quotes, backslashes and control characters escaped, so a
/// message stays one line and shows what was wrong. Used instead of `{:?}`, whose Unicode tables cost
/// several KB of wasm.
pub(crate) struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' | '\\' => write!(f, "\\{c}")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                '\0' => f.write_str("\\0")?,
                c if c.is_control() => write!(f, "\\u{{{:x}}}", c as u32)?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::Quoted;

    #[test]
    fn quoted_escapes_what_debug_escapes_in_ascii() {
        for s in ["plain", "", "a\"b\\c", "tab\there\r\n", "\u{0}\u{1f}\u{7f}", "é ü"] {
            assert_eq!(Quoted(s).to_string(), format!("{s:?}"));
        }
    }
}
