//! Conformance runner for one real S3-compatible server (called by scripts/conformance, one server at a
//! time; `#[ignore]`d otherwise): the Rust core itself, over plain HTTP on loopback, with real concurrency
//! (a thread per request, so a probe's racers really overlap at the server). It qualifies fresh prefixes
//! many times (verdicts, requests by kind, time), measures the catch rate of several race layouts, counts
//! what a first and a later instance's acquireLease + claim send, and checks whether the server checks
//! signatures. It prints one JSON object; verdicts come from the library, never from this file.
//!
//!   CONF_NAME=.. CONF_ENDPOINT=http://127.0.0.1:PORT CONF_BUCKET=.. CONF_KEY=.. CONF_SECRET=.. \
//!   [CONF_RUNS=50] [CONF_LAYOUT_RUNS=40] cargo test --release --test conformance -- --ignored --nocapture
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

use std::future::Future;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use celld_edge::env::{Env, HttpRequest, HttpResponse, TransportError};
use celld_edge::ownership::cas::{Budget, Store};
use celld_edge::ownership::probe::{Answer, Layout, Next, Probe, Request};
use celld_edge::ownership::{ClaimOutcome, Config, ProbePolicy, S3Ownership};
use celld_edge::s3::Bucket;
use celld_edge::sigv4::{AmzDate, Credentials, Payload, SignInput, Signer};

/// Sends over a fresh TCP connection per request, on its own thread; counts requests by method.
#[derive(Clone)]
struct Net {
    counts: Arc<Mutex<Vec<(&'static str, String)>>>,
    seed: Arc<AtomicU64>,
    started: Instant,
}

impl Net {
    fn new() -> Self {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
        Net { counts: Arc::default(), seed: Arc::new(AtomicU64::new(seed)), started: Instant::now() }
    }
    fn take(&self) -> Vec<(&'static str, String)> {
        std::mem::take(&mut *self.counts.lock().unwrap())
    }
}

/// What a thread hands back to the future waiting for it.
struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
}

struct OnThread<T>(Arc<Mutex<Slot<T>>>);

impl<T> Future for OnThread<T> {
    type Output = T;
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut slot = self.0.lock().unwrap();
        match slot.value.take() {
            Some(v) => Poll::Ready(v),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

fn on_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> OnThread<T> {
    let slot = Arc::new(Mutex::new(Slot { value: None, waker: None }));
    let theirs = slot.clone();
    std::thread::spawn(move || {
        let v = work();
        let mut s = theirs.lock().unwrap();
        s.value = Some(v);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    });
    OnThread(slot)
}

/// One HTTP/1.1 exchange (`Connection: close`); the status, ETag and body, de-chunked.
fn exchange(req: &HttpRequest, timeout: Duration) -> Result<HttpResponse, TransportError> {
    let net = |e: std::io::Error| {
        if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
            TransportError::TimedOut
        } else {
            TransportError::Network(e.to_string().into())
        }
    };
    let rest = req.url.strip_prefix("http://").ok_or_else(|| TransportError::Network("http only".into()))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(host).map_err(net)?;
    stream.set_read_timeout(Some(timeout)).map_err(net)?;
    stream.set_nodelay(true).map_err(net)?;
    let mut head = format!("{} {} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\ncontent-length: {}\r\n", req.method, if path.is_empty() { "/" } else { path }, req.body.len());
    for (n, v) in &req.headers {
        head += &format!("{n}: {v}\r\n");
    }
    head += "\r\n";
    let mut wire = head.into_bytes();
    wire.extend_from_slice(&req.body);
    stream.write_all(&wire).map_err(net)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(net)?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| TransportError::Network("no header end".into()))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status: u16 = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).ok_or_else(|| TransportError::Network("bad status line".into()))?;
    let (mut etag, mut date, mut chunked, mut length) = (None, None, false, None);
    for line in lines {
        let Some((n, v)) = line.split_once(':') else { continue };
        match n.trim().to_ascii_lowercase().as_str() {
            "etag" => etag = Some(v.trim().to_owned()),
            "date" => date = Some(v.trim().to_owned()),
            "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
            "content-length" => length = v.trim().parse::<usize>().ok(),
            _ => {}
        }
    }
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..eol]).split(';').next().unwrap_or("0").trim(), 16).unwrap_or(0);
            if size == 0 || rest.len() < eol + 2 + size {
                break;
            }
            out.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest = &rest[(eol + 4 + size).min(rest.len())..];
        }
        body = out;
    } else if let Some(n) = length {
        body.truncate(n);
    }
    Ok(HttpResponse { status, etag, body, date })
}

impl Env for Net {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        self.counts.lock().unwrap().push((req.method, req.url.clone()));
        let timeout = Duration::from_millis(u64::from(timeout_ms.unwrap_or(10_000)));
        // A TransportError may hold a source, which is not Send: only its text crosses the thread.
        let detached = |e| match e {
            TransportError::TimedOut => None,
            TransportError::Network(n) => Some(n.detail),
            TransportError::Unreadable { detail, .. } => Some(detail),
            TransportError::Unsent(_, n) => Some(n.detail),
        };
        let answer = on_thread(move || exchange(&req, timeout).map_err(detached)).await;
        answer.map_err(|e| e.map_or(TransportError::TimedOut, |detail| TransportError::Network(detail.into())))
    }
    fn wall_ms(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
    }
    fn mono_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }
    fn random_u64(&self) -> u64 {
        let mut x = self.seed.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed.store(x, Ordering::Relaxed);
        x
    }
    async fn sleep(&self, ms: u32) {
        on_thread(move || std::thread::sleep(Duration::from_millis(u64::from(ms)))).await
    }
}

struct Unpark(Thread);
impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(50));
    }
}

struct Server {
    name: String,
    endpoint: String,
    bucket: String,
    key: String,
    secret: String,
}

fn env_var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run through scripts/conformance"))
}

fn config(s: &Server, node: &str, prefix: &str, probe: ProbePolicy) -> Config {
    let mut c = Config::new(&s.endpoint, &s.bucket, node, &s.key, &s.secret);
    c.prefix = prefix.to_owned();
    c.probe = probe;
    c
}

/// `{"GET":n,"PUT":n,"DELETE":n}` of what was sent.
fn by_kind(sent: &[(&'static str, String)]) -> serde_json::Value {
    let n = |m: &str| sent.iter().filter(|(k, _)| *k == m).count();
    serde_json::json!({ "GET": n("GET"), "PUT": n("PUT"), "DELETE": n("DELETE"), "total": sent.len() })
}

fn create_bucket(s: &Server, net: &Net) -> String {
    let url = format!("{}/{}", s.endpoint, s.bucket);
    let credentials = Credentials { access_key_id: &s.key, secret_access_key: &s.secret, session_token: None };
    let datetime = AmzDate::from_unix_ms(net.wall_ms());
    let signed = Signer::new()
        .sign(&SignInput {
            method: "PUT",
            url: &url,
            headers: &[],
            payload: Payload::Bytes(b""),
            region: "us-east-1",
            service: "s3",
            credentials: &credentials,
            datetime: &datetime,
        })
        .unwrap();
    let req = HttpRequest { method: "PUT", url: signed.url, headers: signed.headers, body: Vec::new() };
    // Some servers (localstack) start their S3 service on the first request: give it time.
    let mut last = String::new();
    for _ in 0..5 {
        match exchange(&req, Duration::from_secs(30)) {
            Ok(r) => return format!("{} {}", r.status, celld_edge::s3::parse_error(&r.body).0),
            Err(e) => last = format!("{e:?}"),
        }
    }
    last
}

/// One probe with `layout` through the machine, on this server: `Ok(())` passed, else the error code and step.
fn probe_with(s: &Server, net: &Net, prefix: &str, layout: Layout) -> Result<(), (String, String)> {
    let bucket = Bucket::new(&s.endpoint, &s.bucket, "us-east-1", true, &s.key, &s.secret, None).unwrap();
    let store = Store::new(net.clone(), bucket);
    let budget = Budget::PerRequest(10_000);
    let (mut probe, mut next) = Probe::with_layout(prefix, store.nonce(), layout);
    block_on(async {
        loop {
            let batch = match next {
                // Turned away: sent again (after a pause, in the library; a conformance run measures
                // answers, not rates).
                Next::Send(batch) | Next::Resend { requests: batch, .. } => batch,
                Next::Done(_) => return Ok(()),
                Next::Failed(e) => return Err((e.code().to_owned(), step_of(&e))),
            };
            let store = &store;
            let answers = futures_join(batch.into_iter().map(|r| async move {
                match r {
                    Request::Put { key, guard, body } => {
                        let (status, a) = store.put_cas_status(&key, &guard, body, budget).await;
                        Answer::Written(status, a)
                    }
                    Request::Get { key } => Answer::Read(store.get(&key, budget).await.map(|f| f.map(|(_, e)| e))),
                    Request::Delete { key, guard } => {
                        let (status, a) = store.delete(&key, guard.as_ref(), budget).await;
                        Answer::Written(status, a)
                    }
                }
            }))
            .await;
            next = probe.step(answers);
        }
    })
}

/// Polls every future until all are done (the crate's own `join_all` is private).
async fn futures_join<F: Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *o = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(out.iter_mut().map(|o| o.take().unwrap()).collect())
        }
    })
    .await
}

fn step_of(e: &celld_edge::Error) -> String {
    match e {
        celld_edge::Error::StoreViolation(f) => f.key.clone(),
        e => e.code().to_owned(),
    }
}

#[test]
#[ignore = "needs a server: run through scripts/conformance"]
fn conformance() {
    let s = Server {
        name: env_var("CONF_NAME"),
        endpoint: env_var("CONF_ENDPOINT"),
        bucket: env_var("CONF_BUCKET"),
        key: env_var("CONF_KEY"),
        secret: env_var("CONF_SECRET"),
    };
    let runs: usize = std::env::var("CONF_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let layout_runs: usize = std::env::var("CONF_LAYOUT_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let run_id = format!("{:x}", Net::new().random_u64() & 0xffff_ffff);
    let net = Net::new();
    let bucket_created = create_bucket(&s, &net);
    net.take();

    // Qualifications of fresh prefixes, as `probe()` runs them (record read, probe, record write).
    let mut quals = Vec::new();
    for i in 0..runs {
        let own = S3Ownership::new(config(&s, &format!("q{i}"), &format!("conf-{run_id}-q{i}/"), ProbePolicy::Recorded), net.clone()).unwrap();
        let t = Instant::now();
        let verdict = block_on(own.probe());
        let ms = t.elapsed().as_millis() as u64;
        let sent = net.take();
        quals.push(match verdict {
            Ok(r) => serde_json::json!({ "ok": true, "ms": ms, "requests": by_kind(&sent),
                "report": { "ifMatchMissingStatus": r.if_match_missing_status, "conditionalDelete": r.conditional_delete, "etagQuoted": r.etag_quoted } }),
            Err(e) => serde_json::json!({ "ok": false, "ms": ms, "requests": by_kind(&sent), "code": e.code(), "step": step_of(&e), "message": e.to_string() }),
        });
    }

    // A first and a later instance on one fresh prefix: acquireLease + first claim, counted.
    let prefix = format!("conf-{run_id}-inst/");
    let mut instances = serde_json::json!(null);
    let first = S3Ownership::new(config(&s, "first", &prefix, ProbePolicy::Recorded), net.clone()).unwrap();
    let t = Instant::now();
    let first_ok = block_on(async { first.acquire_lease().await?; first.claim("cell-1").await });
    let first_ms = t.elapsed().as_millis() as u64;
    let first_sent = net.take();
    if let Ok(ClaimOutcome::Applied { .. }) = first_ok {
        let later = S3Ownership::new(config(&s, "later", &prefix, ProbePolicy::Recorded), net.clone()).unwrap();
        let t = Instant::now();
        let later_ok = block_on(async { later.acquire_lease().await?; later.claim("cell-2").await });
        let later_ms = t.elapsed().as_millis() as u64;
        let later_sent = net.take();
        instances = serde_json::json!({
            "first": { "ms": first_ms, "requests": by_kind(&first_sent) },
            "later": { "ms": later_ms, "requests": by_kind(&later_sent), "ok": matches!(later_ok, Ok(ClaimOutcome::Applied { .. })),
                "wire": later_sent.iter().map(|(m, u)| format!("{m} {}", u.rsplit_once(&prefix).map_or(u.as_str(), |(_, k)| k))).collect::<Vec<_>>() },
        });
    } else {
        let err = first_ok.err().map(|e| e.to_string());
        instances = serde_json::json!({ "first": { "ms": first_ms, "requests": by_kind(&first_sent), "error": err } });
    }

    // Race layouts, probed through the machine alone: how often each refuses this server.
    let layouts = [
        Layout::DEFAULT,
        Layout { keys: 6, writers: 2, wide: 2, pad: 0 },
        Layout { keys: 3, writers: 4, wide: 4, pad: 0 },
        Layout { keys: 1, writers: 16, wide: 16, pad: 0 },
        Layout { keys: 6, writers: 2, wide: 2, pad: 65_536 },
    ];
    let mut catch = Vec::new();
    for layout in layouts {
        let mut refused = std::collections::BTreeMap::<String, usize>::new();
        let mut sent = 0;
        for i in 0..layout_runs {
            let prefix = format!("conf-{run_id}-l{}x{}w{}p{}-{i}/", layout.keys, layout.writers, layout.wide, layout.pad);
            if let Err((code, step)) = probe_with(&s, &net, &prefix, layout) {
                *refused.entry(format!("{code} at {step}")).or_default() += 1;
            }
            sent += net.take().len();
        }
        catch.push(serde_json::json!({ "keys": layout.keys, "writers": layout.writers, "pad": layout.pad,
            "requests": layout.requests(), "runs": layout_runs, "refused": refused, "sent": sent }));
    }

    // Signatures: a read signed with a wrong secret.
    let wrong = Server { secret: format!("{}-wrong", s.secret), ..Server { name: String::new(), endpoint: s.endpoint.clone(), bucket: s.bucket.clone(), key: s.key.clone(), secret: String::new() } };
    let bad = S3Ownership::new(config(&wrong, "badsig", &format!("conf-{run_id}-sig/"), ProbePolicy::Off), net.clone()).unwrap();
    let signatures = match block_on(bad.read_owner("c")) {
        Ok(_) => serde_json::json!({ "strict": false, "answer": "a read signed with a wrong secret was served" }),
        Err(e) => serde_json::json!({ "strict": e.code() == "auth", "answer": e.to_string() }),
    };
    net.take();

    let out = serde_json::json!({ "name": s.name, "endpoint": s.endpoint, "bucketCreated": bucket_created,
        "qualifications": quals, "instances": instances, "layouts": catch, "signatures": signatures });
    // On a line of its own: libtest prints "test conformance ... " before it.
    println!("\nCONFORMANCE-RESULT {out}");
}
