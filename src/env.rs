//! The one seam between the protocol and the world: sending HTTP, reading clocks, drawing randomness,
//! sleeping and asking for credentials (`Env`). The wasm bindings implement it over the injected JS
//! `fetch`; the simulation implements it over a seeded, fault-injecting store. Nothing else in the crate
//! touches I/O or time. What happened goes out beside it, to an `Observer` (events never wait for, or
//! answer, anything the protocol does).

use crate::error::{Fault, Source};

/// A request as data, before it is sent (method, absolute URL, headers, body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: &'static str,
    pub url: String,
    /// Lower-case names. `host` is not included: the sender derives it from the URL.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The first header with this (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// What the store answered: all the protocol reads is the status, the `ETag`, the `Date` (the store's
/// clock, which leases are judged by) and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub etag: Option<String>,
    /// The `Date` header as sent (a browser shows it only when the bucket's CORS rule exposes it).
    pub date: Option<String>,
    pub body: Vec<u8>,
}

/// The request did not produce an answer. For a write, either may mean it landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// Aborted by us after the timeout we gave.
    TimedOut,
    /// Connection refused/reset, DNS, CORS, or anything else the runtime's fetch threw.
    Network(NetworkError),
    /// An answer came (`status`), but the runtime hides what the protocol reads from it: a browser shows
    /// only the headers a cross-origin answer's CORS rule exposes, so a 2xx without a readable `ETag`.
    /// Trying again cannot change it: never retried. A write answered so may have landed.
    Unreadable { status: u16, detail: String },
    /// The runtime would not send the request, and sending it again cannot change that: nothing reached
    /// the store, so a write was not applied. Never retried.
    Unsent(Unsent, NetworkError),
}

/// Why a request could not be sent (`TransportError::Unsent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsent {
    /// A browser refused it: the bucket's CORS rule does not allow what it carries (its preflight failed).
    Cors,
    /// `https://` to a port that answers in plain HTTP.
    NoTls,
}

/// What the runtime said when a request got no answer: a description (with the reason the runtime
/// gives, e.g. `ECONNREFUSED`), and the runtime's error itself, which is handed to the caller untouched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkError {
    pub detail: String,
    pub source: Option<Source>,
}

impl From<String> for NetworkError {
    fn from(detail: String) -> Self {
        NetworkError { detail, source: None }
    }
}

impl From<&str> for NetworkError {
    fn from(detail: &str) -> Self {
        detail.to_owned().into()
    }
}

/// Keys from the host's credentials provider (SPEC 4.2, short-lived credentials).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    /// When they stop working (Unix ms); `None`: they do not expire, and are asked for once.
    pub expires_ms: Option<u64>,
}

/// What happened, for logs and graphs (`onEvent` in JS, which receives this as serialized: `type` in
/// kebab-case, fields in camelCase; js/ownership.d.ts `OwnershipEvent`). Names keys and node ids, never
/// credentials.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum Event<'a> {
    /// A fresh lease was installed; `ms` is how long acquiring took.
    LeaseAcquired { node: &'a str, expires_ms: u64, ms: f64 },
    LeaseRenewed { node: &'a str, expires_ms: u64, ms: f64 },
    /// The lease was lost (replaced, or renewed too late): every claim made under it is void.
    Fenced { node: &'a str, reason: &'a str },
    /// `close()` was called: from now on this instance may act for no cell, and refuses writes.
    Closed { node: &'a str },
    /// `close()` retired this node's lease (an expired copy, written over its own token): peers may take
    /// over its cells at once. `deleted`: the retired record was then deleted too (nothing left in `nodes/`).
    LeaseRetired { node: &'a str, deleted: bool, ms: f64 },
    /// A claim's write landed on a released or absent record.
    ClaimApplied { cell: &'a str, epoch: u64, ms: f64 },
    /// A claim's write landed over a dead holder's record.
    ClaimTookOver { cell: &'a str, epoch: u64, ms: f64 },
    /// A live owner holds the cell.
    ClaimRejected { cell: &'a str, owner: &'a str, epoch: u64, ms: f64 },
    /// An ambiguous conditional write was settled by reading back (`outcome`: applied / rejected /
    /// superseded) after `readbacks` reads.
    AmbiguousSettled { key: &'a str, outcome: &'a str, readbacks: usize },
    /// A read failed transiently and is tried again after `backoff_ms`.
    ReadRetried { key: &'a str, attempt: u32, backoff_ms: u32, detail: &'a str },
    /// This instance may no longer act for `cell` at `epoch` (its claim there is gone). Emitted once per
    /// claim, the moment the core knows, before the operation that learnt it returns.
    AuthorityLost {
        cell: &'a str,
        epoch: u64,
        #[serde(rename = "reason")]
        lost: Lost,
        detail: &'a str,
    },
    /// One request to the store was answered (or failed to be): `op` is read / write / delete, `record`
    /// what the key holds (owner, lease, fleet, probe, other), `outcome` how the answer was classified
    /// (found, missing, applied, rejected, conflict, ambiguous, retryable, refused), `status` the HTTP
    /// status (0: no answer), `ms` from sending to the answer on the monotonic clock.
    Request { key: &'a str, op: &'static str, record: &'static str, outcome: &'static str, status: u16, ms: f64 },
    /// The credentials provider answered: keys until `expires_ms` (0: no expiry); `ms`: how long it took.
    CredentialsRefreshed { expires_ms: u64, ms: f64 },
    /// The credentials provider failed; `detail` is what it threw. The lease and claims are kept.
    CredentialsFailed { detail: &'a str },
}

/// Why a claim's authority ended (`Event::AuthorityLost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lost {
    /// The lease it was made under lapsed (by either clock), was replaced, or was renewed too late.
    LeaseLost,
    /// A read found the record at a newer epoch or naming another node.
    TakenOver,
    /// This instance sent a claim of the cell at a higher epoch (every claim advances it).
    Reclaimed,
    /// This instance began releasing the cell.
    Released,
    /// `close()` was called: this instance acts for no cell any more.
    Closed,
}

impl Lost {
    /// The name events and JS use.
    pub fn as_str(self) -> &'static str {
        match self {
            Lost::LeaseLost => "lease-lost",
            Lost::TakenOver => "taken-over",
            Lost::Reclaimed => "reclaimed",
            Lost::Released => "released",
            Lost::Closed => "closed",
        }
    }
}

/// Everything impure the protocol needs, passed in.
#[allow(async_fn_in_trait)] // used only generically, never as `dyn`; futures need not be `Send` (wasm).
pub trait Env {
    /// Sends one request; `timeout_ms` aborts it (the answer is then `TimedOut`). Never retries.
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError>;
    /// Wall clock, Unix milliseconds (what lease records carry).
    fn wall_ms(&self) -> u64;
    /// Monotonic clock in milliseconds (what this node's own lease deadline is anchored on).
    fn mono_ms(&self) -> f64;
    /// 64 random bits (writer nonces, retry jitter).
    fn random_u64(&self) -> u64;
    /// Waits (read backoff).
    async fn sleep(&self, ms: u32);
    /// Asks the host's credentials provider for keys (only when the configuration says there is one,
    /// `Config::credentials_provider`); `Err` says why it failed, with what the provider threw as its
    /// `source`. Called by one caller at a time.
    async fn credentials(&self) -> Result<Credentials, Fault> {
        Err("no credentials provider".into())
    }
}

/// Hears the protocol's events, beside the `Env`. Called synchronously at the moment the core knows, with
/// no state of the instance borrowed: an observer may call back into the instance (the simulation's
/// hooks do), but it cannot change what the operation under way decides.
pub trait Observer {
    fn observe(&self, event: Event<'_>);
}

/// Nobody listening (an instance made without an observer).
impl Observer for () {
    fn observe(&self, _event: Event<'_>) {}
}

/// One observer shared by the instance and whoever reads what it gathered (the wasm shell's metrics).
impl<O: Observer + ?Sized> Observer for std::rc::Rc<O> {
    fn observe(&self, event: Event<'_>) {
        (**self).observe(event)
    }
}

/// A borrowed `Env` is an `Env`: read-only views (`listing::Inspector`) run over an `S3Ownership`'s own.
impl<E: Env> Env for &E {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        (**self).send(req, timeout_ms).await
    }
    fn wall_ms(&self) -> u64 {
        (**self).wall_ms()
    }
    fn mono_ms(&self) -> f64 {
        (**self).mono_ms()
    }
    fn random_u64(&self) -> u64 {
        (**self).random_u64()
    }
    async fn sleep(&self, ms: u32) {
        (**self).sleep(ms).await
    }
    async fn credentials(&self) -> Result<Credentials, Fault> {
        (**self).credentials().await
    }
}
