//! The bucket layer: one GET and one ListObjectsV2 page (retried with jittered backoff — reads are safe to
//! repeat), one conditional PUT (`put_cas`, never retried: a blind retry can meet its own first attempt
//! and come back as a clean-looking 412), and `cas_settled`, which settles an ambiguous PUT by reading the record back and
//! looking for this write's nonce (at most `MAX_RECONCILES` readbacks per operation, however many writes it
//! makes). Equal content never counts as "mine": stores give equal bodies equal ETags. A readback that does
//! not decode settles nothing: it is read again, and a write still unsettled is `ambiguous`, never
//! `corrupt-record` (it may have landed).

use std::rc::Rc;
use core::cell::{Cell, RefCell};

use crate::env::{Env, Event, Observer};
use crate::error::{Error, Fault, Result};
use crate::ownership::credentials::Rotation;
use crate::ownership::Config;
use crate::ownership::clock::{authority_left_ms, Learnt, Read, Reading, Stamp, StoreClock, DATE_SECOND_MS, DATE_SPAN_MS};
use crate::ownership::lease::renewal_timeout_ms;
use crate::ownership::records::{decode_nonce, CasGuard, CasOutcome};
use crate::ownership::rules::Rules;
use crate::sigv4::encode::push_hex;
use crate::s3::list::{classify_list, ListAnswer, ListPage};
use crate::s3::{classify_get, classify_put, parse_http_date, Bucket, GetAnswer, PutAnswer};

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

/// Readbacks allowed to settle one operation's ambiguous writes (SPEC §3: per operation).
pub const MAX_RECONCILES: usize = 3;

/// One operation's readback allowance, shared by every write it makes.
#[derive(Debug, Default)]
pub struct Reconciles(Cell<usize>);

impl Reconciles {
    /// Takes one readback; false when the operation has used them all.
    fn take(&self) -> bool {
        let used = self.0.get();
        self.0.set(used + 1);
        used < MAX_RECONCILES
    }

    pub fn used(&self) -> usize {
        self.0.get().min(MAX_RECONCILES)
    }
}
/// The longest pause after a throttled write: R2 takes one write per second per key.
const THROTTLE_PAUSE_MS: u32 = 1000;
/// Extra attempts of a failed read.
const READ_RETRIES: u32 = 3;
/// Reads of a record that does not decode before `get_decoded` gives up.
const UNDECODABLE_READS: usize = 5;

/// A conditional write once settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    Applied { etag: String },
    /// Known not to have landed.
    Rejected,
    /// An ambiguous attempt may have landed, but the record has since moved on to another writer's
    /// version: not ours now, yet not a clean rejection either.
    Superseded,
}

impl Settled {
    /// For callers that must not report a possibly-landed write as rejected: `Superseded` is `ambiguous`.
    pub fn outcome(self, key: &str) -> Result<CasOutcome> {
        match self {
            Settled::Applied { .. } => Ok(CasOutcome::Applied),
            Settled::Rejected => Ok(CasOutcome::Rejected),
            Settled::Superseded => Err(Error::ambiguous(
                key.to_owned(),
                "an ambiguous attempt may have landed before another writer replaced it",
            )),
        }
    }
}

/// How `cas_settled` takes a rejection (412/404) of its first attempt.
pub enum FirstRejection<'a> {
    /// Read the record back once and look for this write's nonce.
    ReadBack,
    /// The caller reads the record next anyway: the rejection is returned as it is, and this write's
    /// nonces are pushed here for the caller to recognise.
    CallerReads(&'a RefCell<Vec<String>>),
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
    /// How many answers showed more store time passed than this machine's clocks counted
    /// (`Learnt::Overran`): authority anchored before one of them is void.
    overruns: Cell<u64>,
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
        }
    }

    /// Both local clocks now.
    pub fn reading(&self) -> Reading {
        Reading { mono: self.env.mono_ms(), wall: self.env.wall_ms() }
    }

    /// What this instance knows of the store's clock.
    pub fn store_clock(&self) -> core::cell::Ref<'_, StoreClock> {
        self.clock.borrow()
    }

    /// Answers so far that showed this machine's clocks undercounting (`Learnt::Overran`).
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

    fn signing_ms(&self) -> u64 {
        self.store_now_ms()
    }

    /// Sends one request, learning the store's clock from the answer's `Date`.
    async fn exchange(
        &self,
        req: crate::env::HttpRequest,
        budget: Budget,
    ) -> (Result<crate::env::HttpResponse, crate::env::TransportError>, Seen) {
        let sent = self.reading();
        // What was known when the request left: the store served it later.
        let known = self.clock.borrow().lower(sent);
        let answer = self.env.send(req, Some(self.timeout(budget))).await;
        let arrived = self.reading();
        let date = answer.as_ref().ok().and_then(|r| r.date.as_deref()).and_then(parse_http_date);
        if let Some(date_ms) = date {
            let span_ms = if self.rules.date_may_lag { DATE_SPAN_MS } else { DATE_SECOND_MS };
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

    /// GET `key`: `Some((body, etag))`, or `None` when absent. Retries transient failures.
    pub async fn get(&self, key: &str, budget: Budget) -> Result<Option<(Vec<u8>, String)>> {
        self.get_seen(key, budget).await.map(|(found, _)| found)
    }

    /// `get`, with when the answer that counts was sent and arrived and the store's clock then.
    pub async fn get_seen(&self, key: &str, budget: Budget) -> Result<(Option<(Vec<u8>, String)>, Seen)> {
        let mut attempt = 0;
        loop {
            self.signable(key, budget).await?;
            let req = self.bucket.borrow_mut().get(key, self.signing_ms())?;
            let started = self.env.mono_ms();
            let (answer, seen) = self.exchange(req, budget).await;
            let status = answer.as_ref().map_or(0, |r| r.status);
            let answer = classify_get(key, answer);
            let outcome = match &answer {
                GetAnswer::Found { .. } => "found",
                GetAnswer::Missing => "missing",
                GetAnswer::Retryable { .. } => "retryable",
                GetAnswer::Refused(_) => "refused",
            };
            self.answered(key, "read", outcome, status, started);
            match answer {
                GetAnswer::Found { body, etag } => return Ok((Some((body, etag)), seen)),
                GetAnswer::Missing => return Ok((None, seen)),
                GetAnswer::Refused(e) => return Err(self.refused(e)),
                GetAnswer::Retryable(fault) => {
                    attempt += 1;
                    self.pause_before_retry(key, attempt, fault).await?;
                }
            }
        }
    }

    /// One page of the keys under `prefix` (ListObjectsV2, at most `max_keys`), after `token`; retried
    /// like a GET.
    pub async fn list(&self, prefix: &str, delimiter: Option<&str>, token: Option<&str>, max_keys: Option<u32>, budget: Budget) -> Result<ListPage> {
        let mut attempt = 0;
        loop {
            self.signable(prefix, budget).await?;
            let req = self.bucket.borrow_mut().list(prefix, delimiter, token, max_keys, self.signing_ms())?;
            let started = self.env.mono_ms();
            let (answer, _) = self.exchange(req, budget).await;
            let status = answer.as_ref().map_or(0, |r| r.status);
            let answer = classify_list(prefix, answer);
            let outcome = match &answer {
                ListAnswer::Page(_) => "found",
                ListAnswer::Retryable(_) => "retryable",
                ListAnswer::Refused(_) => "refused",
            };
            self.answered(prefix, "list", outcome, status, started);
            match answer {
                ListAnswer::Page(page) => return Ok(page),
                ListAnswer::Refused(e) => return Err(self.refused(e)),
                ListAnswer::Retryable(fault) => {
                    attempt += 1;
                    self.pause_before_retry(prefix, attempt, fault).await?;
                }
            }
        }
    }

    /// The pause before retry `attempt` of a read of `key` that failed with `detail`: full jitter over an
    /// exponential window (50, 100, 200 ms), or `transport` once the retries are used up.
    async fn pause_before_retry(&self, key: &str, attempt: u32, fault: Fault) -> Result<()> {
        if attempt > READ_RETRIES {
            let detail = format!("{} (gave up after {attempt} attempts)", fault.detail);
            return Err(Error::transport(key.to_owned(), Fault { detail, ..fault }));
        }
        let window = 50u64 << (attempt - 1);
        let backoff_ms = (self.env.random_u64() % window + 1) as u32;
        self.observer.observe(Event::ReadRetried { key, attempt, backoff_ms, detail: &fault.detail });
        self.env.sleep(backoff_ms).await;
        Ok(())
    }

    /// GETs `key` and decodes it. A body that does not decode is read again: a truncated or garbled
    /// transfer looks the same as a corrupt record, and only the record reads the same every time. So it
    /// is `corrupt-record` only after the same bytes under the same token failed three reads in a row
    /// (`once`: at the first); bodies that keep changing are a broken transfer (`transport`).
    pub async fn get_decoded<T>(
        &self,
        key: &str,
        budget: Budget,
        decode: impl Fn(&[u8], &str) -> Result<T>,
        once: bool,
    ) -> Result<Option<T>> {
        self.get_decoded_seen(key, budget, decode, once).await.map(|(found, _)| found)
    }

    /// `get_decoded`, with how the read that decided was seen (`get_seen`).
    pub async fn get_decoded_seen<T>(
        &self,
        key: &str,
        budget: Budget,
        decode: impl Fn(&[u8], &str) -> Result<T>,
        once: bool,
    ) -> Result<(Option<T>, Seen)> {
        let mut last: Option<(Vec<u8>, String)> = None;
        let mut same = 0;
        for _ in 0..UNDECODABLE_READS {
            let (found, seen) = self.get_seen(key, budget).await?;
            let Some((body, etag)) = found else { return Ok((None, seen)) };
            let e = match decode(&body, &etag) {
                Ok(record) => return Ok((Some(record), seen)),
                Err(e) => e,
            };
            if last.as_ref().is_some_and(|(b, t)| *b == body && *t == etag) {
                same += 1;
            } else {
                same = 1;
                last = Some((body, etag));
            }
            if same == 3 || once {
                return Err(e);
            }
        }
        Err(Error::transport(
            key.to_owned(),
            format!("read {UNDECODABLE_READS} undecodable bodies that differ from read to read (a broken transfer)"),
        ))
    }

    /// One conditional PUT, classified. Never retried here.
    pub async fn put_cas(&self, key: &str, guard: &CasGuard, body: Vec<u8>, budget: Budget) -> PutAnswer {
        self.put_cas_status(key, guard, body, budget).await.1
    }

    /// `put_cas`, also giving the HTTP status (0 when there was no answer) for the probe's report.
    pub async fn put_cas_status(&self, key: &str, guard: &CasGuard, body: Vec<u8>, budget: Budget) -> (u16, PutAnswer) {
        if let Err(e) = self.signable(key, budget).await {
            return (0, PutAnswer::Refused(e));
        }
        // After the keys are ready (that may wait): the last moment before the request goes out.
        if let Err(e) = self.refuse_after_close(budget) {
            return (0, PutAnswer::Refused(e));
        }
        let req = match self.bucket.borrow_mut().put(key, guard, body, self.signing_ms()) {
            Ok(req) => req,
            Err(e) => return (0, PutAnswer::Refused(e)),
        };
        self.sent(key, "write", req, budget).await
    }

    /// Sends a write (or delete) and classifies its answer like a conditional PUT, with its status.
    async fn sent(&self, key: &str, op: &'static str, req: crate::env::HttpRequest, budget: Budget) -> (u16, PutAnswer) {
        let started = self.env.mono_ms();
        let (answer, _) = self.exchange(req, budget).await;
        let status = answer.as_ref().map_or(0, |r| r.status);
        let answer = self.refused_put(classify_put(key, answer));
        let outcome = match &answer {
            PutAnswer::Applied { .. } => "applied",
            PutAnswer::Rejected => "rejected",
            PutAnswer::Conflict { .. } => "conflict",
            PutAnswer::Throttled(_) => "throttled",
            PutAnswer::Ambiguous { .. } => "ambiguous",
            PutAnswer::Refused(_) => "refused",
        };
        self.answered(key, op, outcome, status, started);
        (status, answer)
    }

    /// Says how one request went (`Event::Request`).
    fn answered(&self, key: &str, op: &'static str, outcome: &'static str, status: u16, started: f64) {
        let ms = self.env.mono_ms() - started;
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

    /// A DELETE (the probe's), classified like a PUT, with its status like `put_cas_status`.
    pub async fn delete(&self, key: &str, guard: Option<&CasGuard>, budget: Budget) -> (u16, PutAnswer) {
        if let Err(e) = self.signable(key, budget).await {
            return (0, PutAnswer::Refused(e));
        }
        if let Err(e) = self.refuse_after_close(budget) {
            return (0, PutAnswer::Refused(e));
        }
        let req = match self.bucket.borrow_mut().delete(key, guard, self.signing_ms()) {
            Ok(req) => req,
            Err(e) => return (0, PutAnswer::Refused(e)),
        };
        self.sent(key, "delete", req, budget).await
    }

    /// The pause after a write the store turned away with 429 (R2 takes one write per second per key),
    /// before reading the record back: half a second to a second, jittered so that throttled writers
    /// spread out, and never longer than one request of `budget` may take (a renewal's authority).
    pub async fn back_off(&self, budget: Budget) {
        let window = THROTTLE_PAUSE_MS.min(self.timeout(budget)).max(2);
        self.env.sleep(window / 2 + (self.env.random_u64() % u64::from(window / 2)) as u32 + 1).await;
    }

    /// Reports how a write that needed readbacks was settled.
    fn settled(&self, key: &str, settled: Settled, readbacks: usize) -> Settled {
        let outcome = match settled {
            Settled::Applied { .. } => "applied",
            Settled::Rejected => "rejected",
            Settled::Superseded => "superseded",
        };
        self.observer.observe(Event::AmbiguousSettled { key, outcome, readbacks });
        settled
    }

    /// A conditional write settled to applied / rejected. `body(nonce)` renders the record with a fresh
    /// nonce per attempt. A first attempt answered 412/404 is read back once (`FirstRejection::ReadBack`):
    /// a request the network delivered twice applies once and is answered 412 the second time, and only
    /// this write's nonce in the record tells the two apart. A caller that reads the record next anyway
    /// recognises the nonce there instead (`FirstRejection::CallerReads`, with `nonces` collecting this
    /// write's nonces). An ambiguous answer is settled by reading back: our nonce there → applied;
    /// the guard still holding → ours did not land, send again (a fresh nonce; at most one can land);
    /// anything else → rejected, or `Superseded` when an earlier attempt was ambiguous (the guard moved on,
    /// so ours can never land now, but it may have landed before). A readback that does not decode is read
    /// again. Unsettled within the operation's `reconciles` → `ambiguous`.
    pub async fn cas_settled(
        &self,
        key: &str,
        guard: &CasGuard,
        body: &dyn Fn(&str) -> Vec<u8>,
        budget: Budget,
        reconciles: &Reconciles,
    ) -> Result<Settled> {
        self.cas_settled_then(key, guard, body, budget, reconciles, FirstRejection::ReadBack).await
    }

    /// `cas_settled`, taking a first attempt's rejection as `first` says.
    pub async fn cas_settled_then(
        &self,
        key: &str,
        guard: &CasGuard,
        body: &dyn Fn(&str) -> Vec<u8>,
        budget: Budget,
        reconciles: &Reconciles,
        first: FirstRejection<'_>,
    ) -> Result<Settled> {
        let mut nonces: Vec<String> = Vec::new();
        let mut ambiguity: Option<Fault> = None;
        // Why the last attempt did not land, when the store said so without deciding (409, 429).
        let mut turned_away = String::new();
        loop {
            let nonce = self.nonce();
            let answer = self.put_cas(key, guard, body(&nonce), budget).await;
            if let FirstRejection::CallerReads(sent) = &first {
                sent.borrow_mut().push(nonce.clone());
            }
            nonces.push(nonce);
            match answer {
                PutAnswer::Applied { etag } => return Ok(Settled::Applied { etag }),
                PutAnswer::Rejected if nonces.len() == 1 && !self.rules.look_for_own_nonce => {
                    return Ok(Settled::Rejected)
                }
                // A first attempt's rejection is read back once (our nonce there: delivered twice); a
                // later one may be our own earlier write, and is always read back.
                PutAnswer::Rejected if nonces.len() == 1 => match &first {
                    FirstRejection::CallerReads(_) => return Ok(Settled::Rejected),
                    FirstRejection::ReadBack if reconciles.used() >= MAX_RECONCILES => return Ok(Settled::Rejected),
                    FirstRejection::ReadBack => {}
                },
                PutAnswer::Rejected if !self.rules.never_resend_cas => return Ok(Settled::Rejected),
                PutAnswer::Rejected => {}
                PutAnswer::Conflict { .. } if !self.rules.reread_after_conflict => return Ok(Settled::Rejected),
                // Not applied: the readback decides whether the guard still holds.
                PutAnswer::Conflict { code } => turned_away = format!("409 {code}"),
                // Not applied either (never someone else's win): pause, then the readback decides.
                PutAnswer::Throttled(fault) => {
                    self.back_off(budget).await;
                    turned_away = fault.detail;
                }
                PutAnswer::Ambiguous(_) if !self.rules.settle_by_readback => {
                    return Ok(Settled::Applied { etag: "\"unknown\"".to_owned() })
                }
                PutAnswer::Ambiguous(fault) if !self.rules.never_resend_cas && nonces.len() <= MAX_RECONCILES => {
                    ambiguity = Some(fault);
                    continue;
                }
                PutAnswer::Ambiguous(fault) => ambiguity = Some(fault),
                PutAnswer::Refused(e) if ambiguity.is_some() => {
                    let detail = format!("an earlier attempt was ambiguous, then the store refused: {e}");
                    return Err(Error::ambiguous(key.to_owned(), Fault { detail, ..e.fault() }));
                }
                PutAnswer::Refused(e) => return Err(e),
            }
            // The guard no longer holds: ours can never land now, but an ambiguous attempt may have
            // landed before the record moved on.
            let moved_on = if ambiguity.is_some() { Settled::Superseded } else { Settled::Rejected };
            let mut undecodable = false;
            loop {
                if !reconciles.take() {
                    return Err(unsettled(key, ambiguity, undecodable, &turned_away));
                }
                let current = match self.get(key, budget).await {
                    Ok(current) => current,
                    Err(e) if ambiguity.is_some() => {
                        let detail = format!("readback failed: {e}");
                        return Err(Error::ambiguous(key.to_owned(), Fault { detail, ..e.fault() }));
                    }
                    Err(e) => return Err(e),
                };
                let (body, etag) = match (current, guard) {
                    (Some(found), _) => found,
                    // Still absent: ours did not land; send again.
                    (None, CasGuard::Absent) => break,
                    (None, CasGuard::Match(_)) => return Ok(self.settled(key, moved_on, nonces.len())),
                };
                let found = if self.rules.reread_undecodable { decode_nonce(key, &body) } else { Ok(decode_nonce(key, &body)?) };
                match found {
                    // A truncated transfer, or a record another writer left undecodable: neither says
                    // whether ours landed. Read again.
                    Err(_) => undecodable = true,
                    Ok(Some(n)) if nonces.contains(&n) => {
                        return Ok(self.settled(key, Settled::Applied { etag }, nonces.len()));
                    }
                    Ok(_) if !matches!(guard, CasGuard::Match(t) if *t == etag) => {
                        return Ok(self.settled(key, moved_on, nonces.len()));
                    }
                    // The guard still holds: ours did not land; send again.
                    Ok(_) => break,
                }
            }
        }
    }
}

/// Why a write could not be settled within the operation's readbacks.
/// `turned_away`: the last not-applied answer that decided nothing (409 or 429).
fn unsettled(key: &str, ambiguity: Option<Fault>, undecodable: bool, turned_away: &str) -> Error {
    let key = key.to_owned();
    let readbacks = if undecodable { " readbacks (the last did not decode)" } else { " readbacks" };
    match ambiguity {
        Some(last) => {
            let detail = format!("still unsettled after {MAX_RECONCILES}{readbacks}; last: {}", last.detail);
            Error::ambiguous(key, Fault { detail, ..last })
        }
        None if undecodable => {
            Error::transport(key, format!("not applied ({turned_away}), and unsettled after {MAX_RECONCILES}{readbacks}"))
        }
        None => Error::transport(key, format!("not applied: store kept answering {turned_away} through {MAX_RECONCILES} readbacks")),
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
