//! The bucket layer: one GET and one ListObjectsV2 page (retried with jittered backoff — reads are safe to
//! repeat), one conditional PUT (`put_cas`, never retried: a blind retry can meet its own first attempt
//! and come back as a clean-looking 412), and `cas_settled`, which settles an ambiguous PUT by reading the record back and
//! looking for this write's nonce (at most `MAX_RECONCILES` readbacks per operation, however many writes it
//! makes). Equal content never counts as "mine": stores give equal bodies equal ETags. A readback that does
//! not decode settles nothing: it is read again, and a write still unsettled is `ambiguous`, never
//! `corrupt-record` (it may have landed).

mod read;
mod settle;
mod write;

pub use settle::{FirstRejection, Reconciles, Removal, Settled, MAX_RECONCILES};

use std::rc::Rc;
use core::cell::{Cell, RefCell};

use crate::env::{Env, Event, Observer};
use crate::error::{Error, Result};
use crate::ownership::credentials::Rotation;
use crate::ownership::Config;
use crate::ownership::clock::{
    authority_left_ms, Learnt, OffsetWatch, Read, Reading, Stamp, StoreClock, DATE_SECOND_MS, DATE_SPAN_MS, READ_TRIES,
    TIGHT_READ_MS,
};
use crate::ownership::lease::renewal_timeout_ms;
use crate::ownership::rules::Rules;
use crate::sigv4::encode::push_hex;
use crate::s3::{parse_http_date, Bucket, PutAnswer};

/// What a key holds, by the layout of SPEC §2 (whatever the prefix): for grouping requests in metrics.
pub fn record_of(key: &str) -> &'static str {
    let mut segments = key.rsplit('/');
    let (last, parent) = (segments.next().unwrap_or(""), segments.next().unwrap_or(""));
    match (parent, last) {
        (_, "own.json") if segments.next() == Some("cells") => "owner",
        ("nodes", _) => "lease",
        ("fleet", "control.json") => "fleet",
        ("probe", _) => "probe",
        _ => "other",
    }
}


/// When a settled write must give up: a renewal is bounded by its remaining authority.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// Each request gets this timeout.
    PerRequest(u32),
    /// Each request gets half of what remains of the lease's authority (250..=2500 ms): `ttl - skew` after
    /// the lease write sent at `anchor` (`clock::authority_left_ms`).
    Authority { anchor: Reading, ttl_ms: u64, skew_ms: u64 },
    /// A write of `close()` itself (the close's releases, the retirement, its delete), each request with
    /// this timeout: the only writes a closed store still sends (`Store::close`).
    Closing(u32),
}

pub struct Store<E: Env> {
    pub env: E,
    /// Hears every request's outcome, retries and settled ambiguities (nobody, unless the host wants them).
    pub observer: Rc<dyn Observer>,
    bucket: RefCell<Bucket>,
    /// The keys' lifetime when a credentials provider gives them.
    rotation: Rotation,
    /// Set by `close()`: from then on only `Budget::Closing` writes are sent. Checked at the moment each
    /// write is sent, so that no operation under way (or a user callback that closes mid-operation) can
    /// let a write out after close.
    closed: Cell<bool>,
    /// The safety rules in force (all of them, outside the simulation's teeth).
    pub rules: Rules,
    /// The store's clock as its answers' `Date` headers bound it.
    clock: RefCell<StoreClock>,
    /// How many times this machine's clocks were caught undercounting, or could have been: an answer
    /// showed more store time passed than they counted (`Learnt::Overran`), or the wall clock's lead over the
    /// monotonic clock moved between two readings (`OffsetWatch`: a sleep, or a step of the wall clock).
    /// Authority anchored before one of them is void.
    overruns: Cell<u64>,
    /// The wall clock's lead over the monotonic clock at the last reading.
    offset: Cell<OffsetWatch>,
    /// Whether any answer has taught the store's clock (it may be forgotten since).
    dated: Cell<bool>,
}

/// When a request left (a reading taken before it was signed) and the overrun counter then.
#[derive(Debug, Clone, Copy)]
struct Departure {
    at: Reading,
    overruns: u64,
}

/// When a read was sent and answered, and the store's clock when it served it (at least), as far as known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    pub read: Read,
    pub served: Option<u64>,
}

impl<E: Env> Store<E> {
    pub fn new(env: E, bucket: Bucket) -> Self {
        Store {
            env,
            observer: Rc::new(()),
            bucket: RefCell::new(bucket),
            rotation: Rotation::new(false),
            closed: Cell::new(false),
            rules: Rules::ALL,
            clock: RefCell::default(),
            overruns: Cell::new(0),
            offset: Cell::default(),
            dated: Cell::new(false),
        }
    }

    /// Both local clocks now. Every reading watches the wall clock's lead over the monotonic clock: when it
    /// moved since the last reading (a sleep, or a step of the wall clock either way, or both), the clocks
    /// may undercount the time passed, so authority anchored before is void (`overruns`), and so is what
    /// they carried of the store's clock, until an answer teaches it again.
    pub fn reading(&self) -> Reading {
        let (now, width) = self.clocks_read();
        let width = if self.rules.read_width_counts { width } else { 0.0 };
        let mut offset = self.offset.get();
        if offset.moved(now, width) && self.rules.wall_deadline {
            self.overruns.set(self.overruns.get() + 1);
            self.clock.replace(StoreClock::default());
        }
        self.offset.set(offset);
        now
    }

    /// Both clocks, the wall clock read between two reads of the monotonic one, and how long that took. A
    /// thread preempted between the reads (a loaded machine) would make the wall clock's lead look moved:
    /// such a reading is taken again, and the narrowest kept, whose width the offset watch allows for.
    fn clocks_read(&self) -> (Reading, f64) {
        let read = || {
            let mono = self.env.mono_ms();
            let wall = self.env.wall_ms();
            (Reading { mono, wall }, self.env.mono_ms() - mono)
        };
        let mut narrowest = read();
        for _ in 1..READ_TRIES {
            if narrowest.1 <= TIGHT_READ_MS {
                break;
            }
            let again = read();
            if again.1 < narrowest.1 {
                narrowest = again;
            }
        }
        narrowest
    }

    /// What this instance knows of the store's clock.
    pub fn store_clock(&self) -> core::cell::Ref<'_, StoreClock> {
        self.clock.borrow()
    }

    /// The store's clock was known and a move of this machine's clocks made this instance forget it: a lease
    /// written now would carry its expiry on the wall clock, which celld's nodes misjudge when it is off.
    pub fn forgot_store_clock(&self) -> bool {
        self.dated.get() && !self.clock.borrow().known()
    }

    /// Times so far this machine's clocks were caught undercounting, or could have been (`Learnt::Overran`,
    /// a moved `OffsetWatch`).
    pub fn overruns(&self) -> u64 {
        self.overruns.get()
    }

    /// The store's clock as best known, else the wall clock: what requests are signed with (a machine
    /// hours off would be refused by stores that check the signing time) and what celld's wall-clock
    /// fields written or read here are compared with.
    pub fn store_now_ms(&self) -> u64 {
        let now = self.reading();
        self.clock.borrow().estimate(now).unwrap_or(now.wall)
    }

    /// The moment a request is signed: one reading serves as its signing time (the store's clock as best
    /// known, else the wall clock) and as its send reading (`exchange`). Signing is pure computation, so
    /// the reading stays before the send, where every use of it needs it: the send reading and the store's
    /// clock known then may be early, never late (docs/protocol.md, Clocks).
    fn signing(&self) -> (u64, Departure) {
        let at = self.reading();
        let overruns = self.overruns();
        let ms = self.clock.borrow().estimate(at).unwrap_or(at.wall);
        (ms, Departure { at, overruns })
    }

    /// Sends one request signed at `departure` (`signing`), learning the store's clock from the answer's
    /// `Date`.
    async fn exchange(
        &self,
        req: crate::env::HttpRequest,
        budget: Budget,
        departure: Departure,
    ) -> (Result<crate::env::HttpResponse, crate::env::TransportError>, Seen) {
        let Departure { at: sent, overruns } = departure;
        // What was known when the request left: the store served it later.
        let known = self.clock.borrow().lower(sent);
        let answer = self.env.send(req, Some(self.timeout(budget))).await;
        let arrived = self.reading();
        let date = answer.as_ref().ok().and_then(|r| r.date.as_deref()).and_then(parse_http_date);
        // The clocks moved apart during the request: its round trip is unknown, and so how far the store's
        // clock ran past its `Date` by the arrival. The next answer teaches it.
        if let Some(date_ms) = date.filter(|_| self.overruns() == overruns) {
            let span_ms = if self.rules.date_may_lag { DATE_SPAN_MS } else { DATE_SECOND_MS };
            self.dated.set(true);
            if self.clock.borrow_mut().learn(Stamp { date_ms, sent, arrived, span_ms }) == Learnt::Overran {
                self.overruns.set(self.overruns.get() + 1);
            }
        }
        let served = known.max(date);
        (answer, Seen { read: Read { sent: sent.mono, arrived: arrived.mono }, served })
    }

    /// From now on, refuse every write other than `close()`'s own (`Budget::Closing`).
    pub fn close(&self) {
        if self.rules.no_write_after_close {
            self.closed.set(true);
        }
    }

    /// `not-leased` for a write that a closed store must not send.
    fn refuse_after_close(&self, budget: Budget) -> Result<()> {
        if self.closed.get() && !matches!(budget, Budget::Closing(_)) {
            return Err(Error::not_leased(
                "this instance was closed (close()) before this write was sent: nothing was sent".into(),
            ));
        }
        Ok(())
    }

    fn timeout(&self, budget: Budget) -> u32 {
        match budget {
            Budget::PerRequest(ms) | Budget::Closing(ms) => ms,
            Budget::Authority { anchor, ttl_ms, skew_ms } => {
                renewal_timeout_ms(authority_left_ms(anchor, self.reading(), ttl_ms, skew_ms))
            }
        }
    }

    /// The store `config` names (endpoint, bucket, region, path style, keys or a credentials provider), for
    /// `S3Ownership` and `Inspector` alike. Validates; sends nothing.
    pub fn for_config(config: &Config, env: E) -> Result<Self> {
        let (endpoint, name, region, path_style) = (&config.endpoint, &config.bucket, &config.region, config.path_style);
        let bucket = match config.credentials_provider {
            _ if config.r2_binding => Bucket::binding(),
            true => Bucket::awaiting_credentials(endpoint, name, region, path_style)?,
            false => Bucket::new(
                endpoint,
                name,
                region,
                path_style,
                &config.access_key_id,
                &config.secret_access_key,
                config.session_token.as_deref(),
            )?,
        };
        let store = Store::new(env, bucket);
        Ok(if config.credentials_provider { store.with_credentials_provider() } else { store })
    }

    /// Signs with the keys of the host's credentials provider (`Env::credentials`), asked for before the
    /// first request (the bucket has no keys until then).
    pub fn with_credentials_provider(mut self) -> Self {
        self.rotation = Rotation::new(true);
        self
    }

    /// Usable keys before a request for `key` is signed (`Rotation::ready`): renewals, bounded by the
    /// lease's authority, never wait on the provider while the keys held still work.
    async fn signable(&self, key: &str, budget: Budget) -> Result<()> {
        let can_wait = matches!(budget, Budget::PerRequest(_) | Budget::Closing(_));
        self.rotation.ready(&self.env, &*self.observer, &self.bucket, key, can_wait, self.timeout(budget)).await
    }

    /// Refreshes the keys now if a refresh is due (the renewal loop's quiet moments), waiting for the
    /// provider at most as long as for one request.
    pub async fn refresh_due_credentials(&self, budget: Budget) -> Result<()> {
        self.rotation.ready(&self.env, &*self.observer, &self.bucket, "credentials", true, self.timeout(budget)).await
    }

    /// A 128-bit random hex nonce.
    pub fn nonce(&self) -> String {
        let mut nonce = String::with_capacity(32);
        push_hex(&mut nonce, &self.env.random_u64().to_be_bytes());
        push_hex(&mut nonce, &self.env.random_u64().to_be_bytes());
        nonce
    }

    /// Says how one request went (`Event::Request`), timed by its send and arrival readings.
    fn answered(&self, key: &str, op: &'static str, outcome: &'static str, status: u16, read: Read) {
        let ms = read.arrived - read.sent;
        self.observer.observe(Event::Request { key, op, record: record_of(key), outcome, status, ms });
    }

    /// A store's refusal of the keys themselves (expired or revoked early, not a denied permission) has
    /// the provider asked again before the next request.
    fn refused(&self, e: Error) -> Error {
        const STALE_KEYS: [&str; 6] =
            ["ExpiredToken", "InvalidToken", "TokenRefreshRequired", "InvalidAccessKeyId", "XAdminUserNotFound", "SignatureDoesNotMatch"];
        if matches!(&e, Error::Auth(r) if r.status != 0 && STALE_KEYS.contains(&r.code.as_str())) {
            self.rotation.distrust();
        }
        e
    }

    fn refused_put(&self, answer: PutAnswer) -> PutAnswer {
        match answer {
            PutAnswer::Refused(e) => PutAnswer::Refused(self.refused(e)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::record_of;

    #[test]
    fn keys_are_grouped_by_the_record_they_hold() {
        for (key, record) in [
            ("cells/c/own.json", "owner"),
            ("p/x/cells/c:1$x/own.json", "owner"),
            ("nodes/edge-7.json", "lease"),
            ("p/nodes/n.json", "lease"),
            ("fleet/control.json", "fleet"),
            ("probe/qualified.json", "probe"),
            ("probe/cas-1234", "probe"),
            ("cells/c/data/e1/own.json", "other"),
            ("own.json", "other"),
        ] {
            assert_eq!(record_of(key), record, "{key}");
        }
    }
}
