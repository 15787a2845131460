//! A blocking native `Env` over plain HTTP/1.1 to a loopback test server (the ones `scripts/lib/servers.sh`
//! starts): real clocks, real sockets, one connection per request. For tests only; it must never be used
//! for anything but `http://127.0.0.1` servers (no TLS, no redirects).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use celld_edge::env::{Env, HttpRequest, HttpResponse, NetworkError, TransportError};
use celld_edge::error::Source;

pub struct HttpEnv {
    started: Instant,
    rng: std::cell::Cell<u64>,
}

impl HttpEnv {
    pub fn new() -> Self {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1;
        HttpEnv { started: Instant::now(), rng: std::cell::Cell::new(seed) }
    }
}

/// Runs a future over `HttpEnv` to its end: every request it sends blocks, so it never pends.
pub fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("the blocking HttpEnv never pends"),
    }
}

fn exchange(req: &HttpRequest, timeout: Duration) -> std::io::Result<HttpResponse> {
    let rest = req.url.strip_prefix("http://").expect("a loopback http:// URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(host)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut head = format!("{} {} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n", req.method, path);
    for (name, value) in &req.headers {
        head += &format!("{name}: {value}\r\n");
    }
    head += &format!("content-length: {}\r\n\r\n", req.body.len());
    stream.write_all(head.as_bytes())?;
    stream.write_all(&req.body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or(std::io::ErrorKind::InvalidData)?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).ok_or(std::io::ErrorKind::InvalidData)?;
    let (mut etag, mut date) = (None, None);
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        match name.trim().to_ascii_lowercase().as_str() {
            "etag" => etag = Some(value.trim().to_owned()),
            "date" => date = Some(value.trim().to_owned()),
            "transfer-encoding" => chunked = value.trim().eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    if chunked {
        body = dechunk(&body).ok_or(std::io::ErrorKind::InvalidData)?;
    }
    Ok(HttpResponse { status, etag, body, date })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&data[..eol]).ok()?.split(';').next()?.trim(), 16).ok()?;
        data = &data[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

impl Env for HttpEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        let timeout = Duration::from_millis(u64::from(timeout_ms.unwrap_or(10_000)));
        exchange(&req, timeout).map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => TransportError::TimedOut,
            // The io::Error itself travels on to the caller's error (`Fault::source`).
            _ => TransportError::Network(NetworkError { detail: e.to_string(), source: Some(Source::new(e)) }),
        })
    }
    fn wall_ms(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }
    fn mono_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1_000.0
    }
    fn random_u64(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }
    async fn sleep(&self, ms: u32) {
        std::thread::sleep(Duration::from_millis(u64::from(ms)));
    }
}
