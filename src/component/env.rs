//! [`WasiEnv`]: the protocol's [`Env`] in a WebAssembly component. Requests go out through
//! `wasi:http/outgoing-handler`, clocks are `wasi:clocks` (wall and monotonic), randomness `wasi:random`,
//! and the waiting (a response, a body, a sleep, a timeout) is on WASI pollables, run by `wstd`'s reactor.
//! Like the wasm-bindgen shell's `WebEnv`, it only sends and reads: it never retries and never decides.
//!
//! What wasi:http changes for a SigV4 client (docs/component.md):
//! - `host` may not be set: the request goes to the authority the signer signed as `host` (the URL's,
//!   port included), and the runtime sends it.
//! - Without a `content-length` the body goes chunked, which S3's PutObject refuses: it is set here.
//! - The body is written after the request is handed over, so a store that answers early (a 403) makes
//!   the write fail: the write's error is kept, the body finished, and the response read anyway; only
//!   when no response comes either is the write's error the answer.

use std::time::Duration as StdDuration;

use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, IncomingBody, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme};
use wstd::future::FutureExt;
use wstd::io::{AsyncInputStream, AsyncOutputStream, AsyncPollable};
use wstd::time::Duration;

use crate::env::{Env, HttpRequest, HttpResponse, NetworkError, TransportError};

/// The `Env` of a component: stateless, every call goes to the host.
#[derive(Debug, Default, Clone, Copy)]
pub struct WasiEnv;

impl Env for WasiEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        match timeout_ms.filter(|&ms| ms > 0) {
            // Dropping the exchange drops its resources: the host cancels the request.
            Some(ms) => exchange(&req).timeout(Duration::from_millis(ms.into())).await.unwrap_or(Err(TransportError::TimedOut)),
            None => exchange(&req).await,
        }
    }

    fn wall_ms(&self) -> u64 {
        let now = wasip2::clocks::wall_clock::now();
        now.seconds.saturating_mul(1000).saturating_add(u64::from(now.nanoseconds / 1_000_000))
    }

    fn mono_ms(&self) -> f64 {
        wasip2::clocks::monotonic_clock::now() as f64 / 1e6
    }

    fn random_u64(&self) -> u64 {
        wasip2::random::random::get_random_u64()
    }

    async fn sleep(&self, ms: u32) {
        wstd::task::sleep(Duration::from(StdDuration::from_millis(ms.into()))).await;
    }
}

fn network(detail: impl Into<String>) -> TransportError {
    TransportError::Network(NetworkError::from(detail.into()))
}

/// What the host said went wrong, with the POSIX-ish name Node gives the same failure, so that logs
/// read the same from every runtime.
fn describe(e: &ErrorCode) -> String {
    match e {
        ErrorCode::ConnectionRefused => "connection refused (ECONNREFUSED)".into(),
        ErrorCode::ConnectionTerminated => "connection reset (ECONNRESET)".into(),
        ErrorCode::DnsError(d) => format!("DNS lookup failed (ENOTFOUND): {}", d.rcode.as_deref().unwrap_or("no answer")),
        ErrorCode::ConnectionTimeout => "connection timed out (ETIMEDOUT)".into(),
        other => format!("wasi:http error {other:?}"),
    }
}

/// One request and its answer.
async fn exchange(req: &HttpRequest) -> Result<HttpResponse, TransportError> {
    let url = crate::sigv4::parse_url(&req.url).map_err(|e| network(e.message()))?;
    let mut fields: Vec<(String, Vec<u8>)> = req.headers.iter().map(|(n, v)| (n.clone(), v.clone().into_bytes())).collect();
    let sends_body = !req.body.is_empty() || matches!(req.method, "PUT" | "POST");
    if sends_body {
        fields.push(("content-length".into(), req.body.len().to_string().into_bytes()));
    }
    let headers = Fields::from_list(&fields).map_err(|e| network(format!("the host refused a header: {e:?}")))?;
    let request = OutgoingRequest::new(headers);
    let method = match req.method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "PUT" => Method::Put,
        "POST" => Method::Post,
        "DELETE" => Method::Delete,
        other => Method::Other(other.to_owned()),
    };
    let path = if url.query.is_empty() { url.path.to_owned() } else { format!("{}?{}", url.path, url.query) };
    let scheme = if url.scheme == "https" { Scheme::Https } else { Scheme::Http };
    let refused = |what: &str| network(format!("the host refused the request's {what}"));
    request.set_method(&method).map_err(|()| refused("method"))?;
    request.set_scheme(Some(&scheme)).map_err(|()| refused("scheme"))?;
    request.set_authority(Some(&url.host)).map_err(|()| refused("authority"))?;
    request.set_path_with_query(Some(if path.is_empty() { "/" } else { &path })).map_err(|()| refused("path"))?;
    let body = request.body().map_err(|()| refused("body"))?;

    let pending = outgoing_handler::handle(request, None).map_err(|e| network(describe(&e)))?;
    // Written after the hand-over: a store that refuses early closes the stream under the write.
    let written = if sends_body { write_body(body, &req.body).await } else { finish_body(body) };

    AsyncPollable::new(pending.subscribe()).wait_for().await;
    let answer = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => {
            // No answer: the write's own failure, if it failed, says more.
            return Err(network(written.err().unwrap_or_else(|| describe(&e))));
        }
        Some(Err(())) | None => return Err(network("the host gave no response")),
    };
    read_response(answer).await
}

/// Writes the whole body and finishes it; `Err` keeps why the write failed.
async fn write_body(body: OutgoingBody, bytes: &[u8]) -> Result<(), String> {
    let stream = body.write().map_err(|()| "the request body could not be opened".to_owned())?;
    let out = AsyncOutputStream::new(stream);
    let mut written = out.write_all(bytes).await;
    if written.is_ok() {
        written = out.flush().await;
    }
    // The stream is a child of the body: it goes before the body is finished.
    drop(out);
    let finished = finish_body(body);
    written.map_err(|e| format!("writing the request body failed: {e}")).and(finished)
}

fn finish_body(body: OutgoingBody) -> Result<(), String> {
    OutgoingBody::finish(body, None).map_err(|e| describe(&e))
}

/// Status, `ETag`, `Date` and the whole body.
async fn read_response(response: IncomingResponse) -> Result<HttpResponse, TransportError> {
    let status = response.status();
    let headers = response.headers();
    let header = |name: &str| headers.get(name).into_iter().next().and_then(|v| String::from_utf8(v).ok());
    let (etag, date) = (header("etag"), header("date"));
    drop(headers);
    let incoming = response.consume().map_err(|()| network("the response body could not be opened"))?;
    let body = read_body(&incoming).await;
    // Children before parents: the body's stream is gone (read_body), then the body, then the response.
    let _trailers = IncomingBody::finish(incoming);
    drop(response);
    Ok(HttpResponse { status, etag, date, body: body? })
}

async fn read_body(incoming: &IncomingBody) -> Result<Vec<u8>, TransportError> {
    let stream = AsyncInputStream::new(incoming.stream().map_err(|()| network("the response body could not be read"))?);
    let mut body = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) => return Ok(body),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(network(format!("reading the response body failed: {e}"))),
        }
    }
}
