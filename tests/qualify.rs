//! Qualifying a bucket once (SPEC §6): what a first and a later instance send (counted on the wire), how
//! the recorded verdict is trusted, replaced and refused, that one instance's concurrent callers share one
//! qualification and that a refusal is not kept; what a non-S3 endpoint is reported as; and how often the
//! probe catches stores that check conditions non-atomically (seeded timing models of such stores).
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

mod support;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use celld_edge::env::{Env, HttpRequest, HttpResponse, TransportError};
use celld_edge::ownership::probe::{Answer, Layout, Next, Probe, Request};
use celld_edge::ownership::{CasGuard, ClaimOutcome, Config, ProbePolicy, S3Ownership};
use celld_edge::s3::PutAnswer;
use support::mem::{block_on, Fault, MemEnv, BUCKET, ENDPOINT};
use support::overlap::{run_all, Yielding};

const RECORD: &str = "probe/qualified.json";
const DAY: u64 = 86_400_000;

fn instance(env: &MemEnv, node: &str, probe: ProbePolicy) -> S3Ownership<MemEnv> {
    let mut config = Config::new(ENDPOINT, BUCKET, node, "AKIDEXAMPLE", "secret");
    config.probe = probe;
    S3Ownership::new(config, env.clone()).unwrap()
}

/// What `call` sent, as `METHOD key [condition]`, celld's fleet marker included.
fn full_wire_of<T>(env: &MemEnv, call: impl Future<Output = T>) -> (T, Vec<String>) {
    let from = env.sent_count();
    let out = block_on(call);
    (out, env.wire_since(from))
}

/// What `call` sent for the qualification and the protocol: `full_wire_of` without the reads of the fleet
/// marker and `wake/format.json` (once per instance, tested in tests/celld_compat.rs; counted in the two
/// budget tests here).
fn wire_of<T>(env: &MemEnv, call: impl Future<Output = T>) -> (T, Vec<String>) {
    let (out, wire) = full_wire_of(env, call);
    (out, wire.into_iter().filter(|w| !w.contains(MARKER) && !w.contains(WAKE)).collect())
}

const MARKER: &str = "fleet/control.json";
const WAKE: &str = "wake/format.json";

/// Plants a celld fork's bucket marker: this instance's check is then the marker's and
/// `wake/format.json`'s GETs, which `pass_marker_check` lets through before the faults a test aims at the
/// qualification.
fn plant_marker(env: &MemEnv) {
    env.put_raw(MARKER, r#"{"format":1,"backend":"bucket"}"#);
}

fn pass_marker_check(env: &MemEnv) {
    env.push(Fault::Slow(0.0));
    env.push(Fault::Slow(0.0));
}

fn count(wire: &[String], method: &str) -> usize {
    wire.iter().filter(|w| w.starts_with(method)).count()
}

fn record(env: &MemEnv) -> serde_json::Value {
    serde_json::from_str(&env.body(RECORD).expect("a recorded verdict")).unwrap()
}

fn acquire_and_claim(a: &S3Ownership<MemEnv>, cell: &str) -> Result<(), celld_edge::Error> {
    block_on(a.acquire_lease())?;
    match block_on(a.claim(cell))? {
        ClaimOutcome::Applied { .. } => Ok(()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_first_instance_qualifies_within_50_requests_and_records_the_verdict() {
    let env = MemEnv::new();
    let a = instance(&env, "a", ProbePolicy::Recorded);
    let (done, full) = full_wire_of(&env, async { acquire_and_claim(&a, "c") });
    done.unwrap();
    // First, the fleet marker and celld's wake/format.json: read together, never created.
    assert_eq!(full[..2], [format!("GET {MARKER}"), format!("GET {WAKE}")]);
    assert!(full.len() <= 50, "{full:#?}");
    let wire: Vec<String> = full.into_iter().filter(|w| !w.contains(MARKER) && !w.contains(WAKE)).collect();
    // Qualification: the record's GET, the probe (38), the record's create; then the lease's create (sent
    // unread) and the claim (1 + 2).
    assert_eq!(Layout::DEFAULT.requests(), 38);
    assert_eq!(wire.len(), 1 + 38 + 1 + 3, "{wire:#?}");
    // Qualification: 2 GET (record, a key never written), 32 PUT (31 probe + record), 6 DELETE.
    assert_eq!((count(&wire, "GET"), count(&wire, "PUT"), count(&wire, "DELETE")), (2 + 1, 32 + 2, 6));
    assert_eq!(wire[0], format!("GET {RECORD}"));
    assert_eq!(wire[39], format!("PUT {RECORD} if-none-match"));
    let rec = record(&env);
    assert_eq!(rec["format"], 1);
    assert_eq!(rec["verdict"], "qualified");
    assert_eq!(rec["endpoint"], ENDPOINT);
    assert_eq!(rec["bucket"], BUCKET);
    assert_eq!(rec["prefix"], "");
    assert_eq!(rec["at_ms"], env.0.borrow().wall);
    assert_eq!(rec["library"], concat!("celld-edge ", env!("CARGO_PKG_VERSION")));
    assert_eq!((rec["if_match_missing_status"].as_u64(), rec["conditional_delete"].as_bool()), (Some(404), Some(true)));
    assert_eq!(rec["races"], 6);
    let keys: Vec<String> = env.0.borrow().objects.keys().cloned().collect();
    assert_eq!(keys, ["cells/c/own.json", "nodes/a.json", RECORD], "the probe's keys were deleted");
    // This instance keeps its verdict: no second qualification.
    let (_, wire) = wire_of(&env, a.claim("d"));
    assert_eq!(wire, ["GET cells/d/own.json", "PUT cells/d/own.json if-none-match"]);
}

/// What a later instance made from `config` (the bucket qualified a day earlier by another) sends for its
/// `acquireLease()` and first claim, and its node id.
fn later_instance_wire(config: Config) -> (String, Vec<String>) {
    let env = MemEnv::new();
    acquire_and_claim(&instance(&env, "a", ProbePolicy::Recorded), "c").unwrap();
    env.advance(DAY);
    let b = S3Ownership::new(config, env.clone()).unwrap();
    let (done, wire) = full_wire_of(&env, async { acquire_and_claim(&b, "d") });
    done.unwrap();
    (b.config().node.clone(), wire)
}

/// The first reads, then `lease`'s requests, then the claim of a cell never seen.
fn cold_wire(lease: &[String]) -> Vec<String> {
    let first = [format!("GET {MARKER}"), format!("GET {WAKE}"), format!("GET {RECORD}")];
    let claim = ["GET cells/d/own.json".to_owned(), "PUT cells/d/own.json if-none-match".to_owned()];
    first.into_iter().chain(lease.iter().cloned()).chain(claim).collect()
}

#[test]
fn a_later_instance_with_a_made_up_node_id_acquires_and_claims_in_6_requests() {
    // No node id given: the instance makes one up, and its lease is created without reading it first.
    let mut config = Config::new(ENDPOINT, BUCKET, "", "AKIDEXAMPLE", "secret");
    config.made_up_node = true;
    let (node, wire) = later_instance_wire(config);
    assert_eq!(wire, cold_wire(&[format!("PUT nodes/{node}.json if-none-match")]));
    // SPEC §6's 6, the fleet's two reads included (they go out with the record's: one round trip).
    assert!(wire.len() <= 6);
}

#[test]
fn a_later_instance_given_a_node_id_creates_its_first_lease_unread_in_6_requests() {
    // A given node id nobody has used: its create lands as the made-up id's does, and the instance
    // sends what a made-up id's does (SPEC §6's 6; docs/protocol.md, "The cold path").
    let (_, wire) = later_instance_wire(Config::new(ENDPOINT, BUCKET, "b", "AKIDEXAMPLE", "secret"));
    assert_eq!(wire, cold_wire(&["PUT nodes/b.json if-none-match".into()]));
    assert!(wire.len() <= 6);
}

#[test]
fn a_later_instance_reusing_a_node_id_reads_its_predecessors_lease_once_after_the_refused_create() {
    // Instance "a" left its lease (a day old, dead): the create is refused (412) and not read back on its
    // own, since the read that judges the record comes next and would find this create's nonce there.
    let (_, wire) = later_instance_wire(Config::new(ENDPOINT, BUCKET, "a", "AKIDEXAMPLE", "secret"));
    let lease = ["PUT nodes/a.json if-none-match", "GET nodes/a.json", "PUT nodes/a.json if-match"].map(String::from);
    assert_eq!(wire, cold_wire(&lease));
}

#[test]
fn an_unread_create_delivered_twice_is_recognised_and_inherits_nothing() {
    // The create lands, and the answer is a 412 (the network delivered it twice). The read that follows
    // finds this instance's own nonce: the lease was missing when it landed, so a record naming the node
    // that this instance did not write is not its own for ttl + skew (a late delete may have removed the
    // live lease of another process of this id), exactly as when the create's answer is seen.
    let env = MemEnv::new();
    acquire_and_claim(&instance(&env, "a", ProbePolicy::Recorded), "c").unwrap();
    env.put_raw("cells/x/own.json", r#"{"node":"b","epoch":3}"#);
    for _ in 0..3 {
        env.push(Fault::Slow(0.0)); // the first reads
    }
    env.push(Fault::LandThen(Ok((412, "PreconditionFailed"))));
    let b = instance(&env, "b", ProbePolicy::Recorded);
    let (done, wire) = full_wire_of(&env, b.acquire_lease());
    done.unwrap();
    assert_eq!(wire[3..], ["PUT nodes/b.json if-none-match", "GET nodes/b.json", "PUT nodes/b.json if-match"]);
    match block_on(b.claim("x")).unwrap() {
        ClaimOutcome::Rejected { owner } => assert_eq!((owner.node.as_str(), owner.epoch, owner.live), ("b", 3, true)),
        other => panic!("a record this instance did not write was taken as its own: {other:?}"),
    }
}

#[test]
fn the_record_is_trusted_for_probe_trust_ms_then_the_bucket_is_qualified_again_on_its_etag() {
    let env = MemEnv::new();
    block_on(instance(&env, "a", ProbePolicy::Recorded).acquire_lease()).unwrap();
    let first_at = record(&env)["at_ms"].as_u64().unwrap();
    env.advance(7 * DAY - 1);
    let (_, wire) = wire_of(&env, instance(&env, "b", ProbePolicy::Recorded).acquire_lease());
    assert_eq!(count(&wire, "PUT"), 1, "still trusted: only the lease is written");
    env.advance(1);
    let (_, wire) = wire_of(&env, instance(&env, "c", ProbePolicy::Recorded).acquire_lease());
    assert_eq!(wire.len(), 1 + 38 + 1 + 1, "expired: qualified again");
    assert_eq!(wire[39], format!("PUT {RECORD} if-match"), "the expired record is replaced on its ETag");
    assert_eq!(record(&env)["at_ms"].as_u64(), Some(first_at + 7 * DAY));
    // A shorter trust, per instance.
    env.advance(DAY);
    let mut config = Config::new(ENDPOINT, BUCKET, "d", "k", "s");
    config.probe_trust_ms = DAY / 2;
    let (_, wire) = wire_of(&env, S3Ownership::new(config, env.clone()).unwrap().acquire_lease());
    assert_eq!(wire.len(), 41);
    // More than 90 days is refused before anything is sent.
    let mut config = Config::new(ENDPOINT, BUCKET, "e", "k", "s");
    config.probe_trust_ms = 91 * DAY;
    assert_eq!(S3Ownership::new(config, env.clone()).err().map(|e| e.code()), Some("invalid-input"));
}

#[test]
fn the_policies_always_and_off() {
    let env = MemEnv::new();
    block_on(instance(&env, "a", ProbePolicy::Recorded).acquire_lease()).unwrap();
    // Always: probes whatever is recorded (reading the record only for its ETag) and refreshes it.
    let (_, wire) = wire_of(&env, instance(&env, "b", ProbePolicy::Always).acquire_lease());
    assert_eq!(wire.len(), 1 + 38 + 1 + 1);
    assert_eq!(wire[39], format!("PUT {RECORD} if-match"));
    // Off: nothing but the protocol's own requests, even on a bucket with no record.
    let fresh = MemEnv::new();
    let (_, wire) = wire_of(&fresh, instance(&fresh, "c", ProbePolicy::Off).acquire_lease());
    assert_eq!(wire, ["PUT nodes/c.json if-none-match"]);
    // An explicit probe() always probes, and records.
    let (report, wire) = wire_of(&fresh, instance(&fresh, "d", ProbePolicy::Off).probe());
    assert_eq!(report.unwrap().if_match_missing_status, 404);
    assert_eq!(wire.len(), 40);
    assert_eq!(record(&fresh)["verdict"], "qualified");
}

#[test]
fn a_corrupt_or_foreign_record_is_not_trusted_and_is_replaced_on_its_etag() {
    let env = MemEnv::new();
    let good = {
        block_on(instance(&env, "a", ProbePolicy::Recorded).acquire_lease()).unwrap();
        env.body(RECORD).unwrap()
    };
    let foreign = [
        "<html>hello</html>".to_owned(),
        r#"{"format":9}"#.to_owned(),
        good.replace(ENDPOINT, "https://elsewhere.example"),
        good.replace("\"probe_revision\":4", "\"probe_revision\":3"),
        good.replace("\"verdict\":\"qualified\"", "\"verdict\":\"fine\""),
        good[..good.len() / 2].to_owned(),
    ];
    for (i, body) in foreign.iter().enumerate() {
        env.put_raw(RECORD, body);
        let (done, wire) = wire_of(&env, instance(&env, &format!("n{i}"), ProbePolicy::Recorded).acquire_lease());
        done.unwrap();
        assert_eq!(wire.len(), 41, "{body}: qualified again");
        assert_eq!(wire[39], format!("PUT {RECORD} if-match"), "{body}");
        assert_eq!(record(&env)["verdict"], "qualified", "{body}");
        assert_eq!(record(&env)["endpoint"], ENDPOINT);
    }
}

#[test]
fn a_recorded_refusal_refuses_from_one_get_and_outranks_a_pass() {
    let env = MemEnv::new();
    env.0.borrow_mut().ignore_conditions = true;
    let a = instance(&env, "a", ProbePolicy::Recorded);
    let err = block_on(a.acquire_lease()).unwrap_err();
    assert_eq!(err.code(), "store-violation");
    assert!(env.body("nodes/a.json").is_none(), "nothing of the protocol was written");
    let rec = record(&env);
    assert_eq!((rec["verdict"].as_str(), rec["step"].as_str()), (Some("refused"), Some("create-again")));
    // The instance keeps its proof: no second probe.
    let (e, wire) = wire_of(&env, a.acquire_lease());
    assert_eq!((e.unwrap_err().code(), wire.len()), ("store-violation", 0));
    // A later instance is refused from the record alone, even if the store now seems fine.
    env.0.borrow_mut().ignore_conditions = false;
    let (e, wire) = wire_of(&env, instance(&env, "b", ProbePolicy::Recorded).acquire_lease());
    let e = e.unwrap_err();
    assert_eq!((e.code(), wire.len()), ("store-violation", 1));
    assert!(e.to_string().contains("create-again") && e.to_string().contains(RECORD), "{e}");
    // Another instance's own pass (probe: "always") lets it work, but does not erase the recorded proof.
    let (done, wire) = wire_of(&env, instance(&env, "c", ProbePolicy::Always).acquire_lease());
    done.unwrap();
    assert_eq!(count(&wire, &format!("PUT {RECORD}")), 0, "{wire:#?}");
    assert_eq!(record(&env)["verdict"], "refused");
    // An explicit probe() re-qualifies the bucket: its pass replaces the refusal, on its ETag.
    let (report, wire) = wire_of(&env, instance(&env, "d", ProbePolicy::Recorded).probe());
    report.unwrap();
    assert_eq!(wire[39], format!("PUT {RECORD} if-match"));
    assert_eq!(record(&env)["verdict"], "qualified");
    // A refusal replaces a recorded pass.
    env.0.borrow_mut().ignore_conditions = true;
    let (e, wire) = wire_of(&env, instance(&env, "e", ProbePolicy::Always).acquire_lease());
    assert_eq!(e.unwrap_err().code(), "store-violation");
    assert_eq!(record(&env)["verdict"], "refused");
    assert!(wire.iter().any(|w| w == &format!("PUT {RECORD} if-match")), "{wire:#?}");
}

#[test]
fn a_refusal_of_the_qualification_is_reported_and_the_next_operation_tries_again() {
    let env = MemEnv::new();
    let a = instance(&env, "a", ProbePolicy::Recorded);
    plant_marker(&env);
    pass_marker_check(&env);
    env.push(Fault::Drop(Ok((403, "AccessDenied"))));
    let err = block_on(a.acquire_lease()).unwrap_err();
    assert_eq!(err.code(), "auth");
    assert!(err.to_string().contains("AccessDenied"), "{err}");
    // Not kept: fixed credentials (or a passing glitch) let the next call through.
    block_on(a.acquire_lease()).unwrap();
    assert_eq!(record(&env)["verdict"], "qualified");
    // An inconclusive probe is transport, and is not kept either.
    let env = MemEnv::new();
    let b = instance(&env, "b", ProbePolicy::Recorded);
    plant_marker(&env);
    pass_marker_check(&env);
    env.push(Fault::Drop(Ok((404, "NoSuchKey")))); // the record's read
    for _ in 0..12 {
        env.push(Fault::Drop(Ok((503, "ServiceUnavailable")))); // every racer of the creates
    }
    let err = block_on(b.acquire_lease()).unwrap_err();
    assert_eq!(err.code(), "transport", "{err}");
    assert!(env.body(RECORD).is_none(), "an inconclusive probe records nothing");
    block_on(b.acquire_lease()).unwrap();
}

type Op<'a> = Pin<Box<dyn Future<Output = Result<celld_edge::ownership::CasOutcome, celld_edge::Error>> + 'a>>;


/// A first write that needs no lease of its own (every owner-record write does): the low-level lease
/// create, as an owner-record write's outcome.
async fn lease_write<E: celld_edge::env::Env>(own: &S3Ownership<E>, expires_ms: u64) -> celld_edge::Result<celld_edge::ownership::CasOutcome> {
    own.cas_node_lease(&CasGuard::Absent, expires_ms).await.map(|(outcome, _)| outcome)
}

#[test]
fn concurrent_callers_of_one_instance_share_one_qualification() {
    let mem = MemEnv::new();
    let mut config = Config::new(ENDPOINT, BUCKET, "a", "k", "s");
    config.probe = ProbePolicy::Recorded;
    let a = S3Ownership::new(config, Yielding(mem.clone())).unwrap();
    let writes: Vec<Op> =
        (1..=4).map(|e| Box::pin(lease_write(&a, e)) as _).collect();
    let outcomes = run_all(writes);
    assert!(outcomes.iter().all(|o| o.is_ok()), "{outcomes:?}");
    let wire = mem.wire_since(0);
    assert_eq!(count(&wire, &format!("GET {RECORD}")), 1, "one qualification: {wire:#?}");
    assert_eq!(count(&wire, &format!("GET {MARKER}")), 1, "one marker check: {wire:#?}");
    // Three of the four creates are refused (412): each reads the lease back once for its own nonce (a
    // write delivered twice is answered 412 too).
    assert_eq!(count(&wire, "GET nodes/a.json"), 3, "one readback per refused create: {wire:#?}");
    assert_eq!(wire.len(), 40 + 2 + 4 + 3, "qualification, marker and wake/format.json reads, four writes, three readbacks");
    // And they share its failure, which is not kept: the next call qualifies again.
    let mem = MemEnv::new();
    let b = S3Ownership::new(Config::new(ENDPOINT, BUCKET, "b", "k", "s"), Yielding(mem.clone())).unwrap();
    plant_marker(&mem);
    pass_marker_check(&mem);
    mem.push(Fault::Drop(Ok((403, "InvalidAccessKeyId"))));
    let writes: Vec<Op> =
        (1..=3).map(|e| Box::pin(lease_write(&b, e)) as _).collect();
    let outcomes = run_all(writes);
    assert!(outcomes.iter().all(|o| o.as_ref().is_err_and(|e| e.code() == "auth")), "{outcomes:?}");
    assert_eq!(mem.sent_count(), 3, "the fleet's two reads, then the three callers shared one refused read");
    let again: Vec<Op> = vec![Box::pin(lease_write(&b, 1))];
    assert!(run_all(again)[0].is_ok());
}

/// An endpoint that answers every request with the same thing.
#[derive(Clone)]
struct Fixed {
    status: u16,
    etag: Option<&'static str>,
    body: &'static str,
    sent: Rc<Cell<usize>>,
}

impl Env for Fixed {
    async fn send(&self, _: HttpRequest, _: Option<u32>) -> Result<HttpResponse, TransportError> {
        self.sent.set(self.sent.get() + 1);
        Ok(HttpResponse { status: self.status, etag: self.etag.map(str::to_owned), body: self.body.as_bytes().to_vec(), date: None })
    }
    fn wall_ms(&self) -> u64 {
        1_800_000_000_000
    }
    fn mono_ms(&self) -> f64 {
        0.0
    }
    fn random_u64(&self) -> u64 {
        7
    }
    async fn sleep(&self, _: u32) {}
}

#[test]
fn an_endpoint_that_is_not_s3_is_a_request_error_saying_so_never_a_store_violation() {
    const PAGE: &str = "<!doctype html><html><body>Welcome to nginx!</body></html>";
    let cases: &[(u16, Option<&'static str>, &'static str)] = &[
        (200, Some("\"5f1a\""), PAGE),      // a web server, with ETags
        (200, None, PAGE),                  // a single-page app answering every path
        (404, None, PAGE),                  // a web server's 404 page
        (200, Some("\"j\""), r#"{"ok":true}"#), // a JSON API that says yes to everything
        (404, None, r#"{"error":"not found"}"#),
        (200, Some("\"t\""), "OK"),
        (404, None, "404 page not found\n"), // Go's default mux
    ];
    for &(status, etag, body) in cases {
        let env = Fixed { status, etag, body, sent: Rc::new(Cell::new(0)) };
        let a = S3Ownership::new(Config::new(ENDPOINT, BUCKET, "a", "k", "s"), env.clone()).unwrap();
        let err = block_on(a.acquire_lease()).unwrap_err();
        assert_eq!(err.code(), "request", "{status} {body}: {err}");
        assert!(err.to_string().contains("not an S3 API"), "{status} {body}: {err}");
        assert!(env.sent.get() <= 50, "{status} {body}: {} requests", env.sent.get());
    }
}

// ---- how often racy stores are caught ----

/// A store that checks a write's condition when the request arrives and applies it `window` later: two
/// writers of one key arriving within that gap both win. Arrivals of one batch are spaced by exponential
/// gaps of mean `gap` (the client sends them one after another); `window` is exponential too. With
/// `window == 0` it is atomic.
struct Racy {
    gap: f64,
    window: f64,
    rng: u64,
    /// key → (ETag, applied at): every version, in order of application.
    objects: BTreeMap<String, Vec<(String, f64)>>,
    deleted: BTreeMap<String, f64>,
    now: f64,
    writes: u64,
}

impl Racy {
    fn new(gap: f64, window: f64, seed: u64) -> Self {
        Racy { gap, window, rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1, objects: BTreeMap::new(), deleted: BTreeMap::new(), now: 0.0, writes: 0 }
    }

    fn uniform(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// The ETag current at `t`, if any.
    fn at(&self, key: &str, t: f64) -> Option<String> {
        let gone = self.deleted.get(key).is_some_and(|d| *d <= t);
        let current = self.objects.get(key)?.iter().rev().find(|(_, applied)| *applied <= t).map(|(e, _)| e.clone());
        if gone { None } else { current }
    }

    fn answer(&mut self, batch: Vec<Request>) -> Vec<Answer> {
        let mut out = Vec::new();
        let mut t = self.now;
        let mut last = t;
        for request in batch {
            t += self.exp(self.gap);
            let commit = t + self.exp(self.window).max(if self.window == 0.0 { 0.0 } else { 1e-9 });
            last = last.max(commit);
            out.push(match request {
                Request::Put { key, guard, .. } => {
                    let current = self.at(&key, t);
                    let holds = match &guard {
                        CasGuard::Absent => current.is_none(),
                        CasGuard::Match(e) => current.as_ref() == Some(e),
                    };
                    if holds {
                        self.writes += 1;
                        let etag = format!("\"w{}\"", self.writes);
                        // An atomic store applies at the check; a racy one later.
                        let applied = if self.window == 0.0 { t } else { commit };
                        let versions = self.objects.entry(key).or_default();
                        versions.push((etag.clone(), applied));
                        versions.sort_by(|a, b| a.1.total_cmp(&b.1));
                        Answer::Written(200, PutAnswer::Applied { etag })
                    } else if current.is_none() && matches!(guard, CasGuard::Match(_)) {
                        Answer::Written(404, PutAnswer::Rejected)
                    } else {
                        Answer::Written(412, PutAnswer::Rejected)
                    }
                }
                Request::Get { key } => Answer::Read(Ok(self.at(&key, t))),
                Request::Delete { key, guard } => {
                    let current = self.at(&key, t);
                    if guard.is_some_and(|g| !matches!(g, CasGuard::Match(e) if current.as_ref() == Some(&e))) {
                        Answer::Written(412, PutAnswer::Rejected)
                    } else {
                        self.deleted.insert(key.clone(), t);
                        self.objects.remove(&key);
                        Answer::Written(204, PutAnswer::Applied { etag: String::new() })
                    }
                }
            });
        }
        // The next batch is sent once every answer of this one is in.
        self.now = last + self.gap;
        out
    }
}

/// Runs the probe with `layout` against a fresh `Racy` store per seed: how many of `runs` it refused
/// (each refusal must be a `store-violation`).
fn refusals(layout: Layout, gap: f64, window: f64, runs: u64) -> u64 {
    let mut refused = 0;
    for seed in 0..runs {
        let mut store = Racy::new(gap, window, seed + 1);
        let (mut probe, mut next) = Probe::with_layout("", format!("s{seed}"), layout);
        loop {
            next = match next {
                Next::Send(batch) | Next::Resend { requests: batch, .. } => probe.step(store.answer(batch)),
                Next::Done(_) => break,
                Next::Failed(e) => {
                    assert_eq!(e.code(), "store-violation", "{e}");
                    refused += 1;
                    break;
                }
            };
        }
    }
    refused
}

#[test]
fn an_atomic_store_is_never_refused() {
    assert_eq!(refusals(Layout::DEFAULT, 1.0, 0.0, 2_000), 0);
}

#[test]
fn racy_stores_are_caught_by_many_small_races() {
    // window / gap: how long a store takes from check to write, in arrival gaps. s3s-fs let 2-4 of 16
    // concurrent writers win (window ~ 1-3 gaps); moto a double win in ~1 of 200 pairs (~0.005).
    let runs = 2_000;
    let rate = |layout, ratio: f64| refusals(layout, 1.0, ratio, runs) as f64 / runs as f64;
    let pairs = Layout { keys: 6, writers: 2, wide: 2, pad: 0 };
    let mut table = String::new();
    for ratio in [0.05, 0.1, 0.25, 0.5, 1.0] {
        let twelve = rate(pairs, ratio);
        let default = rate(Layout::DEFAULT, ratio);
        let wide = rate(Layout { keys: 1, writers: 16, wide: 16, pad: 0 }, ratio);
        // A pair is caught when its second writer arrives within the first one's window: P = r / (1 + r)
        // for exponential gaps and windows. Twelve independent pairs; the default's eight races (six
        // pairs, two of 8 writers whose later writers add a little) at least as six pairs.
        let model = |races: i32| 1.0 - (1.0 + ratio).powi(-races);
        table += &format!(
            "window/gap {ratio}: 6 keys x 2 caught {twelve:.4} (model {:.4}); default (8 + 2 x 2) {default:.4} (model >= {:.4}); 1 key x 16 caught {wide:.4}\n",
            model(12),
            model(6)
        );
        assert!((twelve - model(12)).abs() < 0.04, "{table}");
        assert!(default > model(6) - 0.04, "{table}");
        assert!(twelve >= wide - 0.02, "{table}");
    }
    eprintln!("{table}");
    assert!(rate(Layout::DEFAULT, 1.0) > 0.98);
}

#[test]
fn a_record_replaced_while_we_probed_is_left_as_theirs() {
    let mem = MemEnv::new();
    mem.put_raw(RECORD, "corrupt");
    plant_marker(&mem);
    let a = S3Ownership::new(Config::new(ENDPOINT, BUCKET, "a", "k", "s"), Yielding(mem.clone())).unwrap();
    let planter = mem.clone();
    // Another instance records its verdict once our probe's last batch (the cleanup) is out.
    let plant = std::future::poll_fn(move |_| {
        if planter.sent_count() < 2 + 39 {
            return Poll::Pending;
        }
        planter.put_raw(RECORD, r#"{"theirs":true}"#);
        Poll::Ready(Ok(celld_edge::ownership::CasOutcome::Applied))
    });
    let ops: Vec<Op> = vec![Box::pin(lease_write(&a, 1)), Box::pin(plant)];
    let done = run_all(ops);
    assert!(done[0].is_ok(), "{done:?}");
    let wire = mem.wire_since(0);
    assert_eq!(wire[2 + 39], format!("PUT {RECORD} if-match"), "{wire:#?}");
    assert_eq!(mem.body(RECORD).as_deref(), Some(r#"{"theirs":true}"#));
    assert!(!mem.0.borrow().writes.iter().any(|(k, _)| k == RECORD), "our conditional replace was refused (412)");
}

/// `Yielding` that gives every request a depth, one more than the deepest request already answered when it
/// was sent (as tests/common/round-trips.mjs does in JS): requests sent before any of them is answered share
/// a round trip, so the deepest is how many round trips a caller waits for one after another.
#[derive(Clone)]
struct Trips {
    inner: Yielding,
    /// (request, depth) in the order sent, and the deepest depth answered so far.
    log: Rc<std::cell::RefCell<(Vec<(String, u64)>, u64)>>,
}

impl Trips {
    fn new(env: &MemEnv) -> Self {
        Trips { inner: Yielding(env.clone()), log: Rc::default() }
    }

    /// The requests since the last call, by round trip (`METHOD key [condition]`), and forgets them.
    fn waves(&self) -> Vec<Vec<String>> {
        let (sent, _) = &mut *self.log.borrow_mut();
        let mut waves: Vec<Vec<String>> = Vec::new();
        for (label, depth) in sent.drain(..) {
            let i = depth as usize - 1;
            waves.resize(waves.len().max(i + 1), Vec::new());
            waves[i].push(label);
        }
        let base = waves.iter().position(|w| !w.is_empty()).unwrap_or(0);
        waves.drain(..base);
        waves.into_iter().map(|mut w| {
            w.sort();
            w
        }).collect()
    }
}

impl Env for Trips {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        let key = req.url.split_once(&format!("/{BUCKET}/")).map_or(req.url.clone(), |(_, k)| k.to_owned());
        let condition = ["if-none-match", "if-match"].into_iter().find(|h| req.header(h).is_some());
        let label = format!("{} {key}{}", req.method, condition.map(|h| format!(" {h}")).unwrap_or_default());
        let depth = {
            let (sent, answered) = &mut *self.log.borrow_mut();
            sent.push((label, *answered + 1));
            *answered + 1
        };
        let answer = self.inner.send(req, timeout_ms).await;
        let answered = &mut self.log.borrow_mut().1;
        *answered = (*answered).max(depth);
        answer
    }
    fn wall_ms(&self) -> u64 {
        self.inner.wall_ms()
    }
    fn mono_ms(&self) -> f64 {
        self.inner.mono_ms()
    }
    fn random_u64(&self) -> u64 {
        self.inner.random_u64()
    }
    async fn sleep(&self, ms: u32) {
        self.inner.sleep(ms).await
    }
}

type TripOp<'a> = Pin<Box<dyn Future<Output = Result<(), celld_edge::Error>> + 'a>>;

fn claimed(outcome: celld_edge::Result<ClaimOutcome>) -> Result<(), celld_edge::Error> {
    match outcome? {
        ClaimOutcome::Applied { epoch: 1, .. } => Ok(()),
        other => panic!("{other:?}"),
    }
}

/// The cold path in round trips (docs/protocol.md, "The cold path"): on a bucket qualified by another
/// instance, a new instance's `acquireLease()` and first claim, for a made-up and a given node id, with and
/// without `expectNew`, and with the cell's read sent beside the acquisition (the Workers quick start). The
/// owner-record write always waits for the lease write's answer: 3 round trips in sequence is the least.
#[test]
fn the_cold_path_reaches_3_round_trips_with_the_owner_write_after_the_leases_answer() {
    let env = MemEnv::new();
    acquire_and_claim(&instance(&env, "q", ProbePolicy::Recorded), "q").unwrap();
    let first = |lease: &str| {
        let mut reads = vec![format!("GET {MARKER}"), format!("GET {RECORD}"), format!("GET {WAKE}")];
        reads.sort();
        (reads, vec![format!("PUT nodes/{lease}.json if-none-match")])
    };
    let made_up = || {
        let mut config = Config::new(ENDPOINT, BUCKET, "", "k", "s");
        config.made_up_node = true;
        config
    };
    for (config, expect_new) in [(made_up(), true), (made_up(), false), (Config::new(ENDPOINT, BUCKET, "g1", "k", "s"), true), (Config::new(ENDPOINT, BUCKET, "g2", "k", "s"), false)] {
        let trips = Trips::new(&env);
        let own = S3Ownership::new(config, trips.clone()).unwrap();
        let cell = format!("c-{}-{expect_new}", own.config().node);
        let op: TripOp<'_> = Box::pin(async {
            own.acquire_lease().await?;
            claimed(own.claim_with(&cell, celld_edge::ownership::ClaimOptions { expect_new }).await)
        });
        run_all(vec![op]).pop().unwrap().unwrap();
        let (reads, lease) = first(&own.config().node);
        let own_key = format!("cells/{cell}/own.json");
        let claim: Vec<Vec<String>> = match expect_new {
            true => vec![vec![format!("PUT {own_key} if-none-match")]],
            false => vec![vec![format!("GET {own_key}")], vec![format!("PUT {own_key} if-none-match")]],
        };
        let expected: Vec<Vec<String>> = [vec![reads, lease], claim].concat();
        assert_eq!(trips.waves(), expected, "{} expect_new={expect_new}", own.config().node);
    }
    // The Workers quick start: owner() (a read, no lease needed) beside acquireLease(), then the claim writes
    // over the version owner() saw: 6 requests, 3 round trips.
    let trips = Trips::new(&env);
    let own = S3Ownership::new(made_up(), trips.clone()).unwrap();
    let both: Vec<TripOp<'_>> = vec![Box::pin(async { own.owner("qs").await.map(|o| assert!(o.is_none())) }), Box::pin(own.acquire_lease())];
    assert!(run_all(both).into_iter().all(|r| r.is_ok()));
    let claim: TripOp<'_> = Box::pin(async { claimed(own.claim("qs").await) });
    run_all(vec![claim]).pop().unwrap().unwrap();
    let (mut reads, lease) = first(&own.config().node);
    reads.push("GET cells/qs/own.json".into());
    reads.sort();
    assert_eq!(trips.waves(), [reads, lease, vec!["PUT cells/qs/own.json if-none-match".to_owned()]]);
}
