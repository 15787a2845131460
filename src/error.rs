//! The crate's one error type. Every variant says what happened and where (the key or the input), so
//! callers can branch on `code()` and humans can read `message()`. Secrets never enter these values.

use core::any::Any;
use core::fmt;
use std::rc::Rc;

/// What went wrong, with the key or input it concerns. Structured payloads are boxed, so that an `Error`
/// stays small in the `Result`s the async operations move between their states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The caller passed something unusable (an id, a URL, a credential, an option); nothing was sent.
    InvalidInput(String),
    /// The store refused our credentials or signature (401/403, or a signature error code).
    Auth(Box<Refusal>),
    /// The store refused the request as malformed or unsupported (other 4xx, redirects).
    Request(Box<Refusal>),
    /// The request could not be completed and nothing was written (reads, or writes known not to apply).
    Transport(Box<Failure>),
    /// A conditional write may or may not have landed, and reading back could not settle it.
    Ambiguous(Box<Failure>),
    /// The store kept turning the request away (429, 503 SlowDown) until the caller's time ran out:
    /// nothing was applied; the fault is the store's last answer.
    Throttled(Box<Failure>),
    /// A record in the bucket does not decode as what its key says it is.
    CorruptRecord(Box<Failure>),
    /// The store broke the conditional-write contract (see `probe()`); `key` is the probe's step.
    StoreViolation(Box<Failure>),
    /// This node holds no valid lease, so it may not claim or act as an owner.
    NotLeased(String),
    /// This node's lease was lost (replaced, or renewed too late): its claims are void.
    Fenced(String),
    /// The fleet's marker (`key`) says its ownership records live somewhere this library cannot reach
    /// (celld's DynamoDB backend, or a marker format it does not know); nothing was written.
    UnsupportedBackend(Box<Failure>),
    /// The bucket is to be shared with a celld fleet (`celld: true`) that has not initialised it
    /// (`key`, `wake/format.json`, is absent or mid-migration): nothing was written.
    UninitializedFleet(Box<Failure>),
    /// The caller gave up: a waiting claim's `AbortSignal` fired before the cell could be claimed.
    Aborted(String),
    /// A browser would not send the request because the bucket's CORS rule does not allow it (its
    /// preflight was refused): nothing reached the store, and only changing the rule helps.
    Cors(Box<Failure>),
}

/// The store's refusal of one request: its status and S3 error code and message. A credentials
/// provider's failure is one too (status 0), with what the provider threw as `source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub key: String,
    pub status: u16,
    pub code: String,
    pub message: String,
    pub source: Option<Source>,
}

impl Refusal {
    /// `403 AccessDenied: message`, without the empty parts (`404: message`, `403 AccessDenied`).
    fn answer(&self) -> String {
        let mut out = self.status.to_string();
        if !self.code.is_empty() {
            out = format!("{out} {}", self.code);
        }
        if !self.message.is_empty() {
            out = format!("{out}: {}", self.message);
        }
        out
    }
}

/// Where something failed (a key, or a probe step) and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub key: String,
    pub fault: Fault,
}

/// What happened, as the caller gets to see it: the description, and, when the failure came from a
/// request, the store's status and S3 `<Code>` if it answered (a 5xx, a 429) or the runtime's own error
/// if nothing came back (JS `error.cause`: ECONNREFUSED and an unknown host read differently).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fault {
    pub detail: String,
    /// The store's HTTP status; 0 when it did not answer.
    pub status: u16,
    /// The store's S3 error code; empty when it sent none.
    pub code: String,
    pub source: Option<Source>,
}

impl Failure {
    pub(crate) fn new(key: impl Into<String>, detail: impl Into<String>) -> Self {
        Failure { key: key.into(), fault: Fault::new(detail) }
    }
}

impl Fault {
    /// A fault that is only a description (no answer and no runtime error behind it).
    pub fn new(detail: impl Into<String>) -> Self {
        Fault { detail: detail.into(), ..Fault::default() }
    }
}

/// The runtime's own error value behind a failure (in JS, what `fetch` threw), carried untouched for the
/// caller and never looked at by the protocol. An `Rc<dyn Any>` because a JS value is neither `Send` nor
/// a Rust error; the crate's futures are single-threaded anyway. Two sources are equal when they are the
/// same value.
#[derive(Clone)]
pub struct Source(Rc<dyn Any>);

impl Source {
    pub fn new<T: Any>(value: T) -> Self {
        Source(Rc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Source {}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Source(..)")
    }
}

impl Error {
    /// The stable code exposed to JS as `error.code`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput(_) => "invalid-input",
            Error::Auth(_) => "auth",
            Error::Request(_) => "request",
            Error::Transport(_) => "transport",
            Error::Ambiguous(_) => "ambiguous",
            Error::Throttled(_) => "throttled",
            Error::CorruptRecord(_) => "corrupt-record",
            Error::StoreViolation(_) => "store-violation",
            Error::NotLeased(_) => "not-leased",
            Error::Fenced(_) => "fenced",
            Error::UnsupportedBackend(_) => "unsupported-backend",
            Error::UninitializedFleet(_) => "uninitialized-fleet",
            Error::Aborted(_) => "aborted",
            Error::Cors(_) => "cors",
        }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }

    /// `InvalidInput` reading `<what>"<value>"<why>`, the shape of most refusals of an input: built here
    /// once instead of at each of its call sites.
    /// Written piece by piece rather than with `format!`: the signing-only wasm then carries none of
    /// `format!`'s machinery for its messages (bench/README.md, the signing-only entry's size).
    #[inline(never)]
    pub(crate) fn invalid_value(what: &str, value: &str, why: &str) -> Self {
        let mut message = String::with_capacity(what.len() + value.len() + why.len() + 2);
        message.push_str(what);
        push_quoted(value, &mut message);
        message.push_str(why);
        Error::InvalidInput(message)
    }

    pub(crate) fn not_leased(why: String) -> Self {
        Error::NotLeased(why)
    }

    pub(crate) fn aborted(why: String) -> Self {
        Error::Aborted(why)
    }

    pub(crate) fn fenced(why: String) -> Self {
        Error::Fenced(why)
    }

    pub(crate) fn transport(key: String, fault: impl Into<Fault>) -> Self {
        Error::Transport(Box::new(Failure { key, fault: fault.into() }))
    }

    pub(crate) fn ambiguous(key: String, fault: impl Into<Fault>) -> Self {
        Error::Ambiguous(Box::new(Failure { key, fault: fault.into() }))
    }

    pub(crate) fn throttled(key: String, fault: impl Into<Fault>) -> Self {
        Error::Throttled(Box::new(Failure { key, fault: fault.into() }))
    }

    /// The key (or probe step) this error concerns, when it concerns one.
    pub fn key(&self) -> Option<&str> {
        match self {
            Error::Auth(r) | Error::Request(r) => Some(&r.key),
            Error::Transport(f) | Error::Ambiguous(f) | Error::Throttled(f) | Error::CorruptRecord(f) | Error::StoreViolation(f)
            | Error::UnsupportedBackend(f) | Error::UninitializedFleet(f) | Error::Cors(f) => Some(&f.key),
            Error::InvalidInput(_) | Error::NotLeased(_) | Error::Fenced(_) | Error::Aborted(_) => None,
        }
    }

    /// The store's answer and the runtime's error behind this error, without a description: what an
    /// error that wraps this one keeps (`Fault { detail, ..e.fault() }`).
    pub fn fault(&self) -> Fault {
        match self {
            Error::Auth(r) | Error::Request(r) => Fault { detail: String::new(), status: r.status, code: r.code.clone(), source: r.source.clone() },
            Error::Transport(f) | Error::Ambiguous(f) | Error::Throttled(f) | Error::CorruptRecord(f) | Error::StoreViolation(f)
            | Error::UnsupportedBackend(f) | Error::UninitializedFleet(f) | Error::Cors(f) => Fault { detail: String::new(), ..f.fault.clone() },
            Error::InvalidInput(_) | Error::NotLeased(_) | Error::Fenced(_) | Error::Aborted(_) => Fault::default(),
        }
    }
}

impl From<String> for Fault {
    fn from(detail: String) -> Self {
        Fault::new(detail)
    }
}

impl From<&str> for Fault {
    fn from(detail: &str) -> Self {
        Fault::new(detail)
    }
}

impl Error {
    /// The human-readable text (what JS sees as `error.message`).
    pub fn message(&self) -> String {
        match self {
            Error::InvalidInput(m) => format!("invalid input: {}", m),
            Error::Auth(r) if r.status == 0 => format!("no usable credentials for {}: {}: {}", r.key, r.code, r.message),
            Error::Auth(r) => format!("store refused credentials for {}: {}", r.key, r.answer()),
            Error::Request(r) => format!("store refused request for {}: {}", r.key, r.answer()),
            Error::Transport(f) => format!("transport failure on {}: {}", f.key, f.fault.detail),
            Error::Ambiguous(f) => format!("write to {} may or may not have landed: {}", f.key, f.fault.detail),
            Error::Throttled(f) => format!("store throttled {}: {}", f.key, f.fault.detail),
            Error::CorruptRecord(f) => format!("corrupt record at {}: {}", f.key, f.fault.detail),
            Error::StoreViolation(f) => format!("store violates conditional writes at step {}: {}", f.key, f.fault.detail),
            Error::NotLeased(m) => format!("no valid lease: {}", m),
            Error::Fenced(m) => format!("fenced: {}", m),
            Error::UnsupportedBackend(f) => format!("unsupported fleet backend at {}: {}", f.key, f.fault.detail),
            Error::UninitializedFleet(f) => format!("uninitialized celld fleet at {}: {}", f.key, f.fault.detail),
            Error::Aborted(m) => format!("aborted: {}", m),
            Error::Cors(f) => format!("the browser would not send the request for {} (the bucket's CORS rule refused it): {}", f.key, f.fault.detail),
        }
    }
}

/// For Rust callers; the crate itself (and so the wasm) uses `message()`.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl core::error::Error for Error {}

/// Caller input inside a message: `"…"` with quotes, backslashes and control characters escaped, so a
/// message stays one line and shows what was wrong (ASCII escapes only, where `{:?}` would also escape
/// by Unicode tables).
pub(crate) struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        push_quoted(self.0, &mut out);
        f.write_str(&out)
    }
}

fn push_quoted(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => {
                out.push_str("\\u{");
                push_hex(c as u32, out);
                out.push('}');
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Lowercase hex digits of `n` without leading zeros, as `{:x}` prints them.
fn push_hex(n: u32, out: &mut String) {
    let mut started = false;
    for shift in (0..8).rev() {
        let d = (n >> (shift * 4)) & 0xf;
        started |= d != 0 || shift == 0;
        if started {
            out.push(char::from(b"0123456789abcdef"[d as usize]));
        }
    }
}

/// `parts` in one string, for messages: `[..].concat()` without the panic path of its length check,
/// whose formatting would otherwise weigh in the signing-only wasm (bench/README.md, its size).
pub(crate) fn joined(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        out.push_str(part);
    }
    out
}

pub type Result<T, E = Error> = core::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::{Error, Quoted, Refusal};

    #[test]
    fn quoted_escapes_what_debug_escapes_in_ascii() {
        for s in ["plain", "", "a\"b\\c", "tab\there\r\n", "\u{0}\u{1f}\u{7f}\u{80}\u{9f}", "é ü"] {
            assert_eq!(format!("{}", Quoted(s)), format!("{s:?}"));
        }
    }

    #[test]
    fn display_is_the_message() {
        let r = Refusal { key: "k".into(), status: 403, code: "SignatureDoesNotMatch".into(), message: "m".into(), source: None };
        let e = Error::Auth(Box::new(r));
        assert_eq!(e.message(), "store refused credentials for k: 403 SignatureDoesNotMatch: m");
        assert_eq!(e.to_string(), e.message());
        assert_eq!(format!("x {} {e}", String::from("y")), format!("x y {e}"));
        // No S3 code (an answer that is not S3's): no empty slot between the status and the message.
        let r = Refusal { key: "k".into(), status: 404, code: String::new(), message: "not an S3 API".into(), source: None };
        assert_eq!(Error::Request(Box::new(r)).message(), "store refused request for k: 404: not an S3 API");
    }
}
