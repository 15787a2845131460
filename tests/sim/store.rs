//! The simulated S3-compatible store: conditional PUT semantics exactly as SPEC §3 (quoted ETags that are
//! a hash of the body, like MD5 stores; 412 on a failed precondition; 404 NoSuchKey on a GET of a missing
//! key and on an `If-Match` PUT of one), the full version history of every key with the true time and the
//! request (node, incarnation, op) that wrote it, and the store-side faults a seed chooses: 409
//! ConditionalRequestConflict, 500 / 503 SlowDown applied or not, 2xx without an ETag, truncated or garbage
//! bodies, lost answers, slow answers.
//!
//! It must never apply a write that a failed precondition refused, and never report a fault as something
//! it is not: the checker trusts this history as the truth.

use std::collections::BTreeMap;

use celld_edge::env::{HttpRequest, HttpResponse};
use celld_edge::ownership::records::decode_lease;

use crate::exec::Rng;

/// Who sent a request: the node, which life of it, which workload operation, and when (true time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tag {
    pub node: usize,
    pub incarnation: u32,
    pub op: u64,
    pub sent: u64,
}

/// One state of a key. `body == None` is a deletion.
#[derive(Debug, Clone)]
pub struct Version {
    /// True time it landed.
    pub at: u64,
    pub body: Option<Vec<u8>>,
    pub etag: String,
    pub writer: Tag,
}

/// Every fault the simulation injects, counted by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    RequestLost,
    ResponseLost,
    Conflict409,
    ServerErrorNotApplied,
    ServerErrorApplied,
    NoEtag,
    GarbageBody,
    SlowAnswer,
    BrownoutHeld,
    Brownout,
    NodePaused,
    NodeSlept,
    NodeCrashed,
    NodePartitioned,
    DeliveredTwice,
    /// A node's thread lost the core between two clock reads (`exec::Load`).
    ThreadPreempted,
}

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Fault::RequestLost => "request-lost",
            Fault::ResponseLost => "response-lost",
            Fault::Conflict409 => "409-conflict",
            Fault::ServerErrorNotApplied => "5xx-not-applied",
            Fault::ServerErrorApplied => "5xx-applied",
            Fault::NoEtag => "2xx-no-etag",
            Fault::GarbageBody => "garbage-body",
            Fault::SlowAnswer => "slow-answer",
            Fault::BrownoutHeld => "brownout-held",
            Fault::Brownout => "brownout",
            Fault::NodePaused => "node-paused",
            Fault::NodeSlept => "node-slept",
            Fault::NodeCrashed => "node-crashed",
            Fault::NodePartitioned => "node-partitioned",
            Fault::DeliveredTwice => "delivered-twice",
            Fault::ThreadPreempted => "thread-preempted",
        }
    }
}

/// The probabilities of one seed's faults (per request), and its latency shape.
#[derive(Debug, Clone, Default)]
pub struct FaultMix {
    pub lose_request: f64,
    pub lose_response: f64,
    pub conflict: f64,
    pub error_before: f64,
    pub error_after: f64,
    pub no_etag: f64,
    pub garbage: f64,
    /// Chance of a slow leg (200..=3000 ms instead of 1..=20 ms).
    pub slow: f64,
    /// Chance that a request of an edge process reaches the store twice (its first answer lost with the
    /// connection, the runtime or a proxy sending it again): it is served twice, the caller hears the
    /// second answer.
    pub twice: f64,
}

impl FaultMix {
    /// A quarter of the seeds run fault-free (latency only); the rest draw each rate up to `max_rate`.
    pub fn draw(rng: &mut Rng, max_rate: f64) -> FaultMix {
        if rng.chance(0.25) {
            return FaultMix { slow: rng.unit() * 0.05, ..FaultMix::default() };
        }
        let mut r = || if rng.chance(0.2) { 0.0 } else { rng.unit() * max_rate };
        FaultMix {
            lose_request: r(),
            lose_response: r(),
            conflict: r(),
            error_before: r(),
            error_after: r(),
            no_etag: r(),
            garbage: r(),
            slow: r(),
            twice: r(),
        }
    }

    /// One network leg's latency.
    pub fn latency(&self, rng: &mut Rng) -> u64 {
        if rng.chance(self.slow) {
            rng.range(200, 3_000)
        } else {
            rng.range(1, 20)
        }
    }
}

/// The store: objects with their histories, fault counts, and requests it found malformed.
#[derive(Debug, Default)]
pub struct SimStore {
    pub bucket: String,
    pub objects: BTreeMap<String, Vec<Version>>,
    pub faults: BTreeMap<Fault, u64>,
    /// Requests that break the wire contract (unconditional writes, double encoding, ...).
    pub anomalies: Vec<String>,
    /// Per workload operation: the method of the first request it sent, and how many it sent (lost ones
    /// included). Coverage only: it shows which claims started without a read.
    pub sent_by_op: BTreeMap<u64, (&'static str, u32)>,
    /// Every lease write (PUT to a `nodes/` key) as sent, lost ones included: who sent it and when, by send time.
    pub lease_sends: Vec<Tag>,
    /// For every lease write attempt as sent: when the first attempt of its write went out (`note_lease_send`).
    pub lease_first_sent: BTreeMap<Tag, u64>,
    /// Per (node, life, operation): the condition and `expires_ms` of its last lease write attempt, and
    /// when that write was first sent.
    lease_writing: BTreeMap<(usize, u32, u64), (String, Option<u64>, u64)>,
    /// When each node could not run (paused, asleep, crashed until its restart): (node, from, until).
    pub downtime: Vec<(usize, u64, u64)>,
    /// Credentials provider calls (`Env::credentials`) and how many of them were slow.
    pub credentials_asked: u64,
    pub credentials_slow: u64,
    /// Keys the provider handed out: (node, life, true time of the answer, the node's wall clock then,
    /// expires_ms).
    pub keys: Vec<(usize, u32, u64, u64, u64)>,
}

fn xml_error(status: u16, code: &str, message: &str) -> HttpResponse {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>"
    );
    HttpResponse { status, etag: None, body: body.into_bytes(), date: None }
}

/// FNV-1a: a deterministic stand-in for MD5 (equal bodies get equal ETags, as on real stores).
fn etag_of(body: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in body {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{h:016x}\"")
}

/// S3's path encoding: every byte but the unreserved ones and `/` as `%XX` (upper-case hex).
pub fn encode_key(key: &str) -> String {
    let mut out = String::new();
    for &b in key.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode_path(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl SimStore {
    pub fn new(bucket: &str) -> Self {
        SimStore { bucket: bucket.to_owned(), ..SimStore::default() }
    }

    /// Notes a request sent on behalf of operation `op`.
    pub fn note_sent(&mut self, op: u64, method: &'static str) {
        self.sent_by_op.entry(op).or_insert((method, 0)).1 += 1;
    }

    /// Notes a lease write attempt sent (`lease_sends`), and when its write was first sent: its own send,
    /// unless the operation's previous lease write attempt had the same condition and `expires_ms` (a resend
    /// of an ambiguous or turned-away attempt: only its nonce differs).
    pub fn note_lease_send(&mut self, tag: Tag, cond: &str, body: &[u8]) {
        let expires = decode_lease("", body, "").ok().map(|r| r.expires_ms);
        let last = self.lease_writing.get(&(tag.node, tag.incarnation, tag.op));
        let first = match last {
            Some((c, e, first)) if c == cond && *e == expires => *first,
            _ => tag.sent,
        };
        self.lease_writing.insert((tag.node, tag.incarnation, tag.op), (cond.to_owned(), expires, first));
        self.lease_first_sent.insert(tag, first);
        // In the order of their send times: a preempted thread's send, noted first, may be the later one.
        let at = self.lease_sends.partition_point(|t| t.sent <= tag.sent);
        self.lease_sends.insert(at, tag);
    }

    pub fn count(&mut self, fault: Fault) {
        *self.faults.entry(fault).or_default() += 1;
    }

    /// The current version of `key`, if it exists (not deleted).
    pub fn current(&self, key: &str) -> Option<&Version> {
        self.objects.get(key).and_then(|h| h.last()).filter(|v| v.body.is_some())
    }

    /// Writes a version directly, without a request (checker tests; what is in the bucket before a run).
    pub fn plant(&mut self, key: &str, body: &[u8], writer: Tag, at: u64) -> String {
        self.append(key, Some(body.to_vec()), writer, at)
    }

    fn append(&mut self, key: &str, body: Option<Vec<u8>>, writer: Tag, at: u64) -> String {
        let etag = body.as_deref().map(etag_of).unwrap_or_default();
        let v = Version { at, body, etag: etag.clone(), writer };
        self.objects.entry(key.to_owned()).or_default().push(v);
        etag
    }

    /// The object key a request addresses, path style (`http://host/<bucket>/<key>`) or virtual-hosted
    /// (`http://<bucket>.host/<key>`), or why not.
    fn key_of(&self, url: &str) -> Result<String, String> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| format!("not an http(s) URL: {url}"))?;
        let (host, path) = rest.split_once('/').ok_or_else(|| format!("no path: {url}"))?;
        if path.contains('?') || path.contains('#') {
            return Err(format!("unexpected query: {url}"));
        }
        let raw_key = match host.strip_prefix(&format!("{}.", self.bucket)) {
            Some(_) => path,
            None => {
                let (bucket, raw_key) = path.split_once('/').ok_or_else(|| format!("no key: {url}"))?;
                if bucket != self.bucket {
                    return Err(format!("wrong bucket {bucket:?}: {url}"));
                }
                raw_key
            }
        };
        let key = decode_path(raw_key).ok_or_else(|| format!("bad percent-encoding: {url}"))?;
        if encode_key(&key) != raw_key {
            return Err(format!("key not encoded exactly once: {raw_key:?} (expected {:?})", encode_key(&key)));
        }
        Ok(key)
    }

    /// The store's true semantics for one request landing at true time `at`, with no faults.
    pub fn handle(&mut self, req: &HttpRequest, writer: Tag, at: u64) -> HttpResponse {
        let key = match self.key_of(&req.url) {
            Ok(k) => k,
            Err(why) => {
                self.anomalies.push(why);
                return xml_error(400, "InvalidURI", "Couldn't parse the specified URI.");
            }
        };
        if req.header("authorization").is_none() {
            self.anomalies.push(format!("unsigned {} {key}", req.method));
            return xml_error(403, "AccessDenied", "Access Denied");
        }
        let current = self.current(&key).map(|v| v.etag.clone());
        match req.method {
            "GET" => match self.current(&key) {
                Some(v) => {
                    HttpResponse { status: 200, etag: Some(v.etag.clone()), body: v.body.clone().unwrap_or_default(), date: None }
                }
                None => xml_error(404, "NoSuchKey", "The specified key does not exist."),
            },
            "PUT" => {
                let none_match = req.header("if-none-match");
                let if_match = req.header("if-match");
                match (none_match, if_match) {
                    (Some("*"), None) => {
                        if current.is_some() {
                            return xml_error(
                                412,
                                "PreconditionFailed",
                                "At least one of the pre-conditions you specified did not hold",
                            );
                        }
                    }
                    (None, Some(tag)) => match &current {
                        None => return xml_error(404, "NoSuchKey", "The specified key does not exist."),
                        Some(cur) if cur != tag => {
                            return xml_error(
                                412,
                                "PreconditionFailed",
                                "At least one of the pre-conditions you specified did not hold",
                            )
                        }
                        Some(_) => {}
                    },
                    other => self.anomalies.push(format!("PUT {key} without exactly one condition: {other:?}")),
                }
                if req.header("content-type") != Some("application/json") {
                    self.anomalies.push(format!("PUT {key} with content-type {:?}", req.header("content-type")));
                }
                let etag = self.append(&key, Some(req.body.clone()), writer, at);
                HttpResponse { status: 200, etag: Some(etag), body: Vec::new(), date: None }
            }
            "DELETE" => {
                if let Some(tag) = req.header("if-match") {
                    if current.as_deref() != Some(tag) {
                        return xml_error(
                            412,
                            "PreconditionFailed",
                            "At least one of the pre-conditions you specified did not hold",
                        );
                    }
                }
                if current.is_some() {
                    self.append(&key, None, writer, at);
                }
                HttpResponse { status: 204, etag: None, body: Vec::new(), date: None }
            }
            other => {
                self.anomalies.push(format!("unexpected method {other} on {key}"));
                xml_error(405, "MethodNotAllowed", "The specified method is not allowed against this resource.")
            }
        }
    }

    /// Serves one request under this seed's faults: the answer (`None` when it is lost on the way back)
    /// and the latency of the way back.
    pub fn serve(
        &mut self,
        req: &HttpRequest,
        writer: Tag,
        at: u64,
        rng: &mut Rng,
        mix: &FaultMix,
    ) -> (Option<HttpResponse>, u64) {
        let is_put = req.method == "PUT";
        let conditional = req.header("if-match").is_some() || req.header("if-none-match").is_some();
        let mut resp = if is_put && conditional && rng.chance(mix.conflict) {
            self.count(Fault::Conflict409);
            xml_error(
                409,
                "ConditionalRequestConflict",
                "A conflicting conditional operation is currently in progress against this resource.",
            )
        } else if rng.chance(mix.error_before) {
            self.count(Fault::ServerErrorNotApplied);
            server_error(rng)
        } else {
            let mut resp = self.handle(req, writer, at);
            if is_put && resp.status == 200 {
                if rng.chance(mix.error_after) {
                    self.count(Fault::ServerErrorApplied);
                    resp = server_error(rng);
                } else if rng.chance(mix.no_etag) {
                    self.count(Fault::NoEtag);
                    resp.etag = None;
                }
            }
            resp
        };
        if req.method == "GET" && resp.status == 200 && rng.chance(mix.garbage) {
            self.count(Fault::GarbageBody);
            resp.body = match rng.range(0, 2) {
                0 => {
                    let keep = rng.range(0, resp.body.len() as u64) as usize;
                    resp.body[..keep].to_vec()
                }
                // A proxy's error page: each names its own request, as real ones do.
                1 => format!("<html><body>502 Bad Gateway (ray {:016x})</body></html>", rng.next_u64()).into_bytes(),
                _ => (0..rng.range(1, 64)).map(|_| rng.next_u64() as u8).collect(),
            };
        }
        let latency = mix.latency(rng);
        if latency >= 200 {
            self.count(Fault::SlowAnswer);
        }
        if rng.chance(mix.lose_response) {
            self.count(Fault::ResponseLost);
            return (None, latency);
        }
        (Some(resp), latency)
    }
}

fn server_error(rng: &mut Rng) -> HttpResponse {
    if rng.chance(0.5) {
        xml_error(500, "InternalError", "We encountered an internal error. Please try again.")
    } else {
        xml_error(503, "SlowDown", "Please reduce your request rate.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Tag = Tag { node: 1, incarnation: 0, op: 7, sent: 0 };

    fn req(method: &'static str, key: &str, cond: Option<(&str, &str)>, body: &str) -> HttpRequest {
        let mut headers = vec![("authorization".to_owned(), "AWS4-HMAC-SHA256 x".to_owned())];
        if method == "PUT" {
            headers.push(("content-type".to_owned(), "application/json".to_owned()));
        }
        if let Some((n, v)) = cond {
            headers.push((n.to_owned(), v.to_owned()));
        }
        HttpRequest { method, url: format!("http://s/b/{}", encode_key(key)), headers, body: body.as_bytes().to_vec() }
    }

    fn code(resp: &HttpResponse) -> String {
        let text = String::from_utf8_lossy(&resp.body);
        let s = text.find("<Code>").map_or(0, |i| i + 6);
        text[s..].split('<').next().unwrap_or("").to_owned()
    }

    #[test]
    fn conditional_put_semantics_as_spec_section_3() {
        let mut s = SimStore::new("b");
        let k = "cells/c é/own.json";
        let get = s.handle(&req("GET", k, None, ""), W, 1);
        assert_eq!((get.status, code(&get).as_str()), (404, "NoSuchKey"));
        let missing = s.handle(&req("PUT", k, Some(("if-match", "\"x\"")), "{}"), W, 1);
        assert_eq!((missing.status, code(&missing).as_str()), (404, "NoSuchKey"));
        let created = s.handle(&req("PUT", k, Some(("if-none-match", "*")), "a"), W, 2);
        assert_eq!(created.status, 200);
        let t1 = created.etag.unwrap();
        assert!(t1.starts_with('"') && t1.ends_with('"'));
        let again = s.handle(&req("PUT", k, Some(("if-none-match", "*")), "b"), W, 3);
        assert_eq!((again.status, code(&again).as_str()), (412, "PreconditionFailed"));
        let t2 = s.handle(&req("PUT", k, Some(("if-match", &t1)), "b"), W, 4).etag.unwrap();
        assert_ne!(t1, t2);
        let stale = s.handle(&req("PUT", k, Some(("if-match", &t1)), "c"), W, 5);
        assert_eq!(stale.status, 412);
        // Equal bodies, equal ETags (as MD5 stores do): writing "a" back makes t1 valid again.
        let t3 = s.handle(&req("PUT", k, Some(("if-match", &t2)), "a"), W, 6).etag.unwrap();
        assert_eq!(t3, t1);
        let got = s.handle(&req("GET", k, None, ""), W, 7);
        assert_eq!((got.status, got.body.as_slice(), got.etag.as_deref()), (200, &b"a"[..], Some(t1.as_str())));
        let hist: Vec<(u64, &[u8])> = s.objects[k].iter().map(|v| (v.at, v.body.as_deref().unwrap())).collect();
        assert_eq!(hist, vec![(2, &b"a"[..]), (4, b"b"), (6, b"a")]);
        assert!(s.objects[k].iter().all(|v| v.writer == W));
        assert!(s.anomalies.is_empty(), "{:?}", s.anomalies);
    }

    #[test]
    fn wire_contract_breaches_are_recorded() {
        let mut s = SimStore::new("b");
        let r = s.handle(&req("PUT", "k", None, "x"), W, 1);
        assert_eq!(r.status, 200, "an unconditional write still lands (a real store would take it)");
        let mut double = req("GET", "k", None, "");
        double.url = "http://s/b/a%62".to_owned(); // a needless escape: not encoded the S3 way
        assert_eq!(s.handle(&double, W, 2).status, 400);
        let mut unsigned = req("GET", "k", None, "");
        unsigned.headers.clear();
        assert_eq!(s.handle(&unsigned, W, 3).status, 403);
        let mut vhost = req("GET", "k", None, "");
        vhost.url = "http://b.s/k".to_owned();
        assert_eq!(s.handle(&vhost, W, 2).status, 200, "virtual-hosted style addresses the same key");
        let mut wrong = req("GET", "k", None, "");
        wrong.url = "http://s/other/k".to_owned();
        assert_eq!(s.handle(&wrong, W, 4).status, 400);
        assert_eq!(s.anomalies.len(), 4, "{:?}", s.anomalies);
    }

    #[test]
    fn injected_faults_apply_or_not_as_labelled() {
        let mut rng = Rng::new(1);
        let put = |s: &mut SimStore, rng: &mut Rng, mix: &FaultMix| {
            s.serve(&req("PUT", "k", Some(("if-none-match", "*")), "v"), W, 1, rng, mix)
        };
        let mut s = SimStore::new("b");
        let (r, _) = put(&mut s, &mut rng, &FaultMix { conflict: 1.0, ..FaultMix::default() });
        assert_eq!(r.unwrap().status, 409);
        assert!(s.current("k").is_none(), "a 409 never applies");
        let (r, _) = put(&mut s, &mut rng, &FaultMix { error_before: 1.0, ..FaultMix::default() });
        assert!(r.unwrap().status >= 500);
        assert!(s.current("k").is_none());
        let (r, _) = put(&mut s, &mut rng, &FaultMix { error_after: 1.0, ..FaultMix::default() });
        assert!(r.unwrap().status >= 500);
        assert!(s.current("k").is_some(), "this 5xx landed");
        let mut s = SimStore::new("b");
        let (r, _) = put(&mut s, &mut rng, &FaultMix { no_etag: 1.0, ..FaultMix::default() });
        let r = r.unwrap();
        assert_eq!((r.status, r.etag), (200, None));
        assert!(s.current("k").is_some());
        let mut s = SimStore::new("b");
        let (r, _) = put(&mut s, &mut rng, &FaultMix { lose_response: 1.0, ..FaultMix::default() });
        assert!(r.is_none() && s.current("k").is_some(), "lost answer, landed write");
        let (r, _) =
            s.serve(&req("GET", "k", None, ""), W, 2, &mut rng, &FaultMix { garbage: 1.0, ..FaultMix::default() });
        assert_ne!(r.unwrap().body, b"v");
        assert_eq!((s.faults[&Fault::ResponseLost], s.faults[&Fault::GarbageBody]), (1, 1));
    }
}
