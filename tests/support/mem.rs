//! A scripted in-memory S3 for driving `S3Ownership` natively: honours If-None-Match / If-Match like
//! AWS (412, 404 NoSuchKey on If-Match of a missing key), gives equal bodies equal ETags like MD5 stores,
//! and lets a test script the next answers (land-then-fail, fail-without-landing, slow requests).

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use celld_edge::env::{Credentials, Env, Event, HttpRequest, HttpResponse, Lost, Observer, TransportError};
use celld_edge::s3::format_http_date;

/// What to do with the next request, instead of answering it plainly.
#[allow(dead_code)]
pub enum Fault {
    /// Apply it, then answer this instead (a lost or broken response).
    LandThen(Result<(u16, &'static str), TransportError>),
    /// Do not apply it; answer this.
    Drop(Result<(u16, &'static str), TransportError>),
    /// Apply it and answer 200 without an ETag.
    LandWithoutEtag,
    /// Do not apply it; another writer's body lands at the same key; answer this.
    DropAndPlant(&'static str, TransportError),
    /// Answer plainly, but with the body cut in half (a truncated transfer).
    Garble,
    /// The request takes this long (both clocks advance), then is answered plainly.
    Slow(f64),
    /// The request is served at once, and its answer takes this long to arrive (both clocks advance).
    SlowAnswer(f64),
    /// Applied, then the machine sleeps `.0` ms with the answer queued (the store's clock and the wall clock
    /// run, the monotonic clock stands) and its wall clock is stepped by `.1` ms before the answer arrives.
    SleepThenStep(u64, i64),
}

pub struct Mem {
    pub objects: BTreeMap<String, (Vec<u8>, String)>,
    /// Every applied write: (key, body).
    pub writes: Vec<(String, Vec<u8>)>,
    /// The store's clock, which stamps every answer's `Date`; the node's wall clock is this plus `wall_off`.
    pub wall: u64,
    pub mono: f64,
    /// How far the node's wall clock is from the store's (steps, `Fault::SleepThenStep`).
    pub wall_off: i64,
    /// The next this many reads of the wall clock each come `preempt_ms` after the read before them: the
    /// thread lost the core between reading the monotonic clock and the wall clock (a loaded machine).
    pub preempted_reads: u32,
    pub preempt_ms: f64,
    /// Answers carry no `Date` (a browser whose bucket's CORS rule hides it).
    pub no_dates: bool,
    /// How far the `Date` of answers lags the store's clock (a store that caches its `Date`).
    pub date_lag_ms: u64,
    rng: u64,
    pub script: VecDeque<Fault>,
    /// (method, key, timeout) of every request sent.
    pub sent: Vec<(&'static str, String, Option<u32>)>,
    /// The request line and condition of every request sent: `GET k`, `PUT k if-none-match`, `PUT k if-match`.
    pub wire: Vec<String>,
    pub bucket_prefix: String,
    /// Behave like a store that accepts conditional headers and ignores them.
    pub ignore_conditions: bool,
    /// Status for If-Match on a missing key (404 like AWS, or 412).
    pub if_match_missing: u16,
    /// Every `AuthorityLost` the driver emitted, in order: (cell, epoch, why, requests sent before it).
    pub lost: Vec<(String, u64, Lost, usize)>,
    /// What the credentials provider answers next, one per call (none left: it fails).
    pub provided: VecDeque<Result<Credentials, String>>,
    /// The credentials provider never answers (a hung token service).
    pub provider_hangs: bool,
    /// How often the credentials provider was called.
    pub asked: usize,
    /// The access key id of every request sent, in order.
    pub key_ids: Vec<String>,
    /// A user callback run on every `AuthorityLost`, after it is recorded (it may call back into the
    /// instance: `shut()` from an abort listener).
    pub on_lost: Option<Rc<dyn Fn(&str, Lost)>>,
}

#[derive(Clone)]
pub struct MemEnv(pub Rc<RefCell<Mem>>);

pub const ENDPOINT: &str = "http://s3.test";
pub const BUCKET: &str = "bkt";

impl MemEnv {
    pub fn new() -> Self {
        MemEnv(Rc::new(RefCell::new(Mem {
            objects: BTreeMap::new(),
            writes: Vec::new(),
            wall: 1_800_000_000_000,
            mono: 5_000.0,
            wall_off: 0,
            preempted_reads: 0,
            preempt_ms: 0.0,
            no_dates: false,
            date_lag_ms: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            script: VecDeque::new(),
            sent: Vec::new(),
            wire: Vec::new(),
            bucket_prefix: format!("{ENDPOINT}/{BUCKET}/"),
            ignore_conditions: false,
            if_match_missing: 404,
            lost: Vec::new(),
            provided: VecDeque::new(),
            provider_hangs: false,
            asked: 0,
            key_ids: Vec::new(),
            on_lost: None,
        })))
    }
    pub fn advance(&self, ms: u64) {
        let mut m = self.0.borrow_mut();
        m.wall += ms;
        m.mono += ms as f64;
    }
    pub fn push(&self, fault: Fault) {
        self.0.borrow_mut().script.push_back(fault);
    }
    pub fn body(&self, key: &str) -> Option<String> {
        self.0.borrow().objects.get(key).map(|(b, _)| String::from_utf8(b.clone()).unwrap())
    }
    pub fn put_raw(&self, key: &str, body: &str) {
        let etag = etag_of(body.as_bytes());
        self.0.borrow_mut().objects.insert(key.to_owned(), (body.as_bytes().to_vec(), etag));
    }
    /// `wire` from request `from` on.
    pub fn wire_since(&self, from: usize) -> Vec<String> {
        self.0.borrow().wire[from..].to_vec()
    }
    pub fn sent_count(&self) -> usize {
        self.0.borrow().sent.len()
    }
}

fn etag_of(body: &[u8]) -> String {
    let h = body.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
    format!("\"{h:016x}\"")
}

fn decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&path[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn xml(code: &str) -> Vec<u8> {
    format!("<Error><Code>{code}</Code><Message>{code} happened</Message></Error>").into_bytes()
}

impl Mem {
    pub fn apply(&mut self, req: &HttpRequest) -> HttpResponse {
        let key = decode(req.url.strip_prefix(&self.bucket_prefix).expect("request for the test bucket"));
        let current = self.objects.get(&key).cloned();
        match req.method {
            "GET" => match current {
                Some((body, etag)) => HttpResponse { status: 200, etag: Some(etag), body, date: None },
                None => HttpResponse { status: 404, etag: None, body: xml("NoSuchKey"), date: None },
            },
            "PUT" => {
                let precondition = match (req.header("if-none-match"), req.header("if-match"), &current) {
                    _ if self.ignore_conditions => None,
                    (Some("*"), _, Some(_)) => Some(412),
                    (_, Some(_), None) => Some(self.if_match_missing),
                    (_, Some(t), Some((_, etag))) if t != etag => Some(412),
                    _ => None,
                };
                match precondition {
                    Some(412) => HttpResponse { status: 412, etag: None, body: xml("PreconditionFailed"), date: None },
                    Some(_) => HttpResponse { status: 404, etag: None, body: xml("NoSuchKey"), date: None },
                    None => {
                        let etag = etag_of(&req.body);
                        self.objects.insert(key.clone(), (req.body.clone(), etag.clone()));
                        self.writes.push((key, req.body.clone()));
                        HttpResponse { status: 200, etag: Some(etag), body: Vec::new(), date: None }
                    }
                }
            }
            "DELETE" => {
                let holds = match (req.header("if-match"), &current) {
                    (Some(t), Some((_, etag))) => t == etag,
                    _ => true,
                };
                if !holds && !self.ignore_conditions {
                    return HttpResponse { status: 412, etag: None, body: xml("PreconditionFailed"), date: None };
                }
                self.objects.remove(&key);
                HttpResponse { status: 204, etag: None, body: Vec::new(), date: None }
            }
            _ => HttpResponse { status: 405, etag: None, body: xml("MethodNotAllowed"), date: None },
        }
    }
}

fn scripted(answer: &Result<(u16, &'static str), TransportError>) -> Result<HttpResponse, TransportError> {
    answer.clone().map(|(status, code)| HttpResponse { status, etag: None, body: xml(code), date: None })
}

impl MemEnv {
    /// The store's answer to `req`, as scripted.
    fn exchange(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        let mut m = self.0.borrow_mut();
        assert!(req.header("authorization").is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 ")), "unsigned request");
        let key_id = req.header("authorization").and_then(|a| a.split("Credential=").nth(1)).and_then(|c| c.split('/').next());
        m.key_ids.push(key_id.unwrap_or_default().to_owned());
        let key = req.url.strip_prefix(&m.bucket_prefix).map(decode).unwrap_or_default();
        m.sent.push((req.method, key.clone(), timeout_ms));
        let condition = ["if-none-match", "if-match"].into_iter().find(|h| req.header(h).is_some());
        m.wire.push(format!("{} {key}{}", req.method, condition.map(|h| format!(" {h}")).unwrap_or_default()));
        match m.script.pop_front() {
            None => Ok(m.apply(&req)),
            Some(Fault::LandThen(answer)) => {
                m.apply(&req);
                scripted(&answer)
            }
            Some(Fault::Drop(answer)) => scripted(&answer),
            Some(Fault::DropAndPlant(body, answer)) => {
                let etag = etag_of(body.as_bytes());
                m.objects.insert(key, (body.as_bytes().to_vec(), etag));
                Err(answer)
            }
            Some(Fault::LandWithoutEtag) => {
                let mut resp = m.apply(&req);
                resp.etag = None;
                Ok(resp)
            }
            Some(Fault::Garble) => {
                let mut resp = m.apply(&req);
                let half = resp.body.len() / 2;
                resp.body.truncate(half);
                Ok(resp)
            }
            Some(Fault::Slow(ms)) => {
                m.wall += ms as u64;
                m.mono += ms;
                Ok(m.apply(&req))
            }
            Some(Fault::SleepThenStep(sleep_ms, step_ms)) => {
                let answer = m.apply(&req);
                m.wall += sleep_ms;
                m.wall_off += step_ms;
                Ok(answer)
            }
            Some(Fault::SlowAnswer(ms)) => {
                let answer = m.apply(&req);
                m.wall += ms as u64;
                m.mono += ms;
                Ok(HttpResponse { date: Some(format_http_date(m.wall - ms as u64)), ..answer })
            }
        }
    }
}

impl Env for MemEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        // Every answer carries the store's clock (this world's one clock), in whole seconds.
        let answer = self.exchange(req, timeout_ms);
        let m = self.0.borrow();
        let date = (!m.no_dates).then(|| format_http_date(m.wall - m.date_lag_ms));
        answer.map(|r| HttpResponse { date: r.date.or(date), ..r })
    }
    fn wall_ms(&self) -> u64 {
        let mut m = self.0.borrow_mut();
        if m.preempted_reads > 0 {
            m.preempted_reads -= 1;
            let ms = m.preempt_ms;
            m.wall += ms as u64;
            m.mono += ms;
        }
        (m.wall as i64 + m.wall_off) as u64
    }
    fn mono_ms(&self) -> f64 {
        self.0.borrow().mono
    }
    fn random_u64(&self) -> u64 {
        let mut m = self.0.borrow_mut();
        m.rng ^= m.rng << 13;
        m.rng ^= m.rng >> 7;
        m.rng ^= m.rng << 17;
        m.rng
    }
    async fn sleep(&self, ms: u32) {
        self.advance(u64::from(ms));
    }
    async fn credentials(&self) -> Result<Credentials, celld_edge::error::Fault> {
        let hangs = {
            let mut m = self.0.borrow_mut();
            m.asked += 1;
            m.provider_hangs
        };
        if hangs {
            std::future::pending::<()>().await;
        }
        self.0.borrow_mut().provided.pop_front().unwrap_or_else(|| Err("provider offline".into())).map_err(celld_edge::error::Fault::from)
    }
}

/// A `MemEnv` whose every request goes through `hook` first, which may check or rewrite it, or change the
/// store before the request reaches it (a test's stand-in for an adapter, or for other writers getting in
/// first). Clocks, randomness, sleeps and credentials are the `MemEnv`'s.
#[allow(dead_code)] // tests/driver.rs's; the other test crates sharing this module send as they are
#[derive(Clone)]
pub struct Hooked<F>(pub MemEnv, pub F);

impl<F: Fn(&mut HttpRequest)> Env for Hooked<F> {
    async fn send(&self, mut req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        (self.1)(&mut req);
        self.0.send(req, timeout_ms).await
    }
    fn wall_ms(&self) -> u64 {
        self.0.wall_ms()
    }
    fn mono_ms(&self) -> f64 {
        self.0.mono_ms()
    }
    fn random_u64(&self) -> u64 {
        self.0.random_u64()
    }
    async fn sleep(&self, ms: u32) {
        self.0.sleep(ms).await
    }
    async fn credentials(&self) -> Result<Credentials, celld_edge::error::Fault> {
        self.0.credentials().await
    }
}

/// Records every claim's end (`lost`) and calls `on_lost`: the tests' observer (`observed_by`).
impl Observer for MemEnv {
    fn observe(&self, event: Event<'_>) {
        if let Event::AuthorityLost { cell, epoch, lost, .. } = event {
            let hook = {
                let mut m = self.0.borrow_mut();
                let sent = m.sent.len();
                m.lost.push((cell.to_owned(), epoch, lost, sent));
                m.on_lost.clone()
            };
            if let Some(hook) = hook {
                hook(cell, lost);
            }
        }
    }
}

/// Runs a future that never waits on anything outside the `MemEnv` (every await completes at once).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("MemEnv futures never pend"),
    }
}
