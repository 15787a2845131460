#![cfg(not(target_arch = "wasm32"))]
//! Seeing the bucket (`listing::Inspector`, `S3Ownership::list_cells` / `list_nodes`) over the in-memory
//! store, which here also answers ListObjectsV2 like S3 (sorted keys, `prefix`, `max-keys`, opaque
//! continuation tokens, XML-escaped keys, or URL-encoded ones with `encoding-type=url`, `delimiter`
//! roll-ups into common prefixes): owners, epochs, released cells, live / dead / missing leases at
//! the peer rule's boundary, celld logs awaiting recovery, corrupt records, pagination, prefixes, store
//! failures, and that listing writes nothing.

#[allow(dead_code)] // the helpers the driver tests use
mod support;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use celld_edge::env::{Env, HttpRequest, HttpResponse, TransportError};
use celld_edge::ownership::{CellEntry, Config, Inspector, LeaseView, NodeEntry, ProbePolicy, S3Ownership};
use support::mem::{block_on, MemEnv, BUCKET, ENDPOINT};

const TTL: u64 = 10_000;
const SKEW: u64 = 1_000;

/// A scripted answer: status and body, or no answer.
type Scripted = Result<(u16, String), TransportError>;
/// A list request's query, decoded: prefix, continuation token, max-keys.
type ListQuery = (String, Option<String>, Option<usize>);

/// `MemEnv` that also answers ListObjectsV2 GETs of the bucket, and records them.
#[derive(Clone)]
struct ListEnv {
    mem: MemEnv,
    /// Answers to give the next list requests instead of listing.
    list_script: Rc<RefCell<VecDeque<Scripted>>>,
    /// Every list request.
    lists: Rc<RefCell<Vec<ListQuery>>>,
    /// Hand back the token it was given (a broken store).
    echo_token: Rc<RefCell<bool>>,
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A key as S3 sends it with `encoding-type=url`: form-encoded, `/` kept.
fn url_encoded(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => char::from(b).to_string(),
            b' ' => "+".to_owned(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// An opaque token, as stores make them: the hex of the last key listed.
fn token_for(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect::<String>() + "+/="
}

impl ListEnv {
    fn new() -> Self {
        ListEnv {
            mem: MemEnv::new(),
            list_script: Rc::default(),
            lists: Rc::default(),
            echo_token: Rc::default(),
        }
    }

    fn list(&self, query: &str) -> HttpResponse {
        let mut params = std::collections::HashMap::new();
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            params.insert(k.to_owned(), decode(v));
        }
        assert_eq!(params.get("list-type").map(String::as_str), Some("2"), "{query}");
        let prefix = params.get("prefix").cloned().unwrap_or_default();
        let token = params.get("continuation-token").cloned();
        let max: Option<usize> = params.get("max-keys").map(|v| v.parse().unwrap());
        let encoded = params.get("encoding-type").is_some_and(|t| t == "url");
        let delimiter = params.get("delimiter").cloned();
        self.lists.borrow_mut().push((prefix.clone(), token.clone(), max));
        let m = self.mem.0.borrow();
        let after = token.as_ref().map(|t| {
            let hex = t.strip_suffix("+/=").expect("our own token");
            String::from_utf8((0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()).unwrap()
        });
        // Keys, and common prefixes (a key holding the delimiter past the prefix, cut after it), in order.
        let mut keys: Vec<(String, bool)> = Vec::new();
        for k in m.objects.keys().filter(|k| k.starts_with(&prefix)) {
            let rolled = delimiter.as_ref().and_then(|d| k[prefix.len()..].find(d.as_str()).map(|at| k[..prefix.len() + at + d.len()].to_owned()));
            let entry = match rolled {
                Some(common) => (common, true),
                None => (k.clone(), false),
            };
            if keys.last() != Some(&entry) && after.as_ref().is_none_or(|a| entry.0.as_str() > a.as_str()) {
                keys.push(entry);
            }
        }
        let limit = max.unwrap_or(1000).min(1000);
        let page = &keys[..keys.len().min(limit)];
        let truncated = keys.len() > limit;
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
        xml += &format!("<Name>{BUCKET}</Name><Prefix>{}</Prefix><KeyCount>{}</KeyCount>", escape(&prefix), page.len());
        xml += &format!("<IsTruncated>{truncated}</IsTruncated>");
        if truncated {
            let next = if *self.echo_token.borrow() && token.is_some() { token.clone().unwrap() } else { token_for(&page.last().unwrap().0) };
            xml += &format!("<NextContinuationToken>{}</NextContinuationToken>", escape(&next));
        }
        if encoded {
            xml += "<EncodingType>url</EncodingType>";
        }
        // Without encoding-type=url a control character goes out raw, as moto and ministack send it.
        let shown = |key: &str| if encoded { url_encoded(key) } else { escape(key) };
        for (key, common) in page {
            if *common {
                xml += &format!("\n  <CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>", shown(key));
                continue;
            }
            xml += &format!(
                "\n  <Contents><Key>{}</Key><LastModified>2027-01-15T08:00:00.000Z</LastModified><ETag>&quot;x&quot;</ETag><Size>1</Size></Contents>",
                shown(key)
            );
        }
        xml += "\n</ListBucketResult>\n";
        HttpResponse { status: 200, etag: None, body: xml.into_bytes(), date: None }
    }

    fn list_count(&self) -> usize {
        self.lists.borrow().len()
    }

    fn writes(&self) -> usize {
        self.mem.0.borrow().writes.len()
    }
}

impl Env for ListEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        if let Some(query) = req.url.strip_prefix(&format!("{ENDPOINT}/{BUCKET}?")) {
            assert_eq!(req.method, "GET");
            assert!(req.header("authorization").is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 ")), "unsigned list");
            assert_eq!(timeout_ms, Some(10_000));
            let scripted = self.list_script.borrow_mut().pop_front();
            return match scripted {
                Some(answer) => {
                    self.list(query); // recorded like any list request
                    answer.map(|(status, body)| HttpResponse { status, etag: None, body: body.into_bytes(), date: None })
                }
                None => Ok(self.list(query)),
            };
        }
        self.mem.send(req, timeout_ms).await
    }
    fn wall_ms(&self) -> u64 {
        self.mem.wall_ms()
    }
    fn mono_ms(&self) -> f64 {
        self.mem.mono_ms()
    }
    fn random_u64(&self) -> u64 {
        self.mem.random_u64()
    }
    async fn sleep(&self, ms: u32) {
        self.mem.sleep(ms).await
    }
}

fn config(node: &str, prefix: &str) -> Config {
    let mut config = Config::new(ENDPOINT, BUCKET, node, "AKIDEXAMPLE", "secret");
    config.lease_ttl_ms = TTL;
    config.max_clock_skew_ms = SKEW;
    config.addr = format!("{node}.internal:7000");
    config.prefix = prefix.to_owned();
    config.probe = ProbePolicy::Off;
    config
}

fn leased(env: &ListEnv, id: &str, prefix: &str) -> S3Ownership<ListEnv> {
    let n = S3Ownership::new(config(id, prefix), env.clone()).unwrap();
    block_on(n.acquire_lease()).unwrap();
    n
}

fn inspector(env: &ListEnv, prefix: &str) -> Inspector<ListEnv> {
    Inspector::new(&config("", prefix), env.clone()).unwrap()
}

fn cells(env: &ListEnv, prefix: &str) -> Vec<CellEntry> {
    block_on(inspector(env, prefix).list_cells()).unwrap()
}

fn nodes(env: &ListEnv, prefix: &str) -> Vec<NodeEntry> {
    block_on(inspector(env, prefix).list_nodes()).unwrap()
}

/// (cell, status, owner, epoch) of each entry.
fn summary(cells: &[CellEntry]) -> Vec<(String, &'static str, Option<String>, Option<u64>)> {
    cells
        .iter()
        .map(|c| {
            let owner = c.record.as_ref().ok();
            (c.cell.clone(), c.status(), owner.and_then(|o| o.node.clone()), owner.map(|o| o.epoch))
        })
        .collect()
}

fn row(cell: &str, status: &'static str, node: Option<&str>, epoch: Option<u64>) -> (String, &'static str, Option<String>, Option<u64>) {
    (cell.to_owned(), status, node.map(str::to_owned), epoch)
}

#[test]
fn an_empty_bucket_lists_nothing_with_one_request_per_listing() {
    let env = ListEnv::new();
    assert!(cells(&env, "").is_empty());
    assert!(nodes(&env, "").is_empty());
    // cells/ then nodes/ (for the owners' lease ages), then nodes/ again.
    let lists = env.lists.borrow().iter().map(|(p, t, _)| (p.clone(), t.clone())).collect::<Vec<_>>();
    assert_eq!(lists, [("cells/".to_owned(), None), ("nodes/".to_owned(), None), ("nodes/".to_owned(), None)]);
}

#[test]
fn owners_epochs_released_cells_and_lease_liveness_at_the_peer_rule_boundary() {
    let env = ListEnv::new();
    let a = leased(&env, "a", "");
    let b = leased(&env, "b", "");
    let t0 = env.wall_ms();
    for cell in ["c1", "c2", "c3"] {
        block_on(a.claim(cell)).unwrap();
    }
    block_on(a.claim("c2")).unwrap(); // epoch 2
    block_on(b.claim("d")).unwrap();
    block_on(b.release("d")).unwrap();
    // Not records: data under a cell, the probe's keys, the fleet marker, a stray file.
    for key in ["cells/c1/data/e1/blob", "cells/c1/data/e1/own.json", "probe/cas-x", "fleet/control.json", "cells/README", "nodes/a.json.bak"] {
        env.mem.put_raw(key, "{}");
    }
    let writes = env.writes();

    let listed = cells(&env, "");
    assert_eq!(
        summary(&listed),
        [row("c1", "live", Some("a"), Some(1)), row("c2", "live", Some("a"), Some(2)), row("c3", "live", Some("a"), Some(1)), row("d", "released", None, Some(1))]
    );
    let c1 = listed[0].record.as_ref().unwrap();
    let lease = c1.lease.as_ref().unwrap();
    assert_eq!((lease.node.as_str(), lease.addr.as_str()), ("a", "a.internal:7000"));
    // Written on the store's clock (its upper bound from `Date` headers: a 2 s span), not this machine's.
    let expires = lease.lease.expires_ms().expect("a live lease has an expiry");
    assert!((t0 + TTL..=t0 + TTL + 2_000).contains(&expires), "expires {expires} for a lease written at {t0}");
    assert_eq!(lease.lease, LeaseView::Live { expires_ms: expires });
    assert_eq!(c1.etag, env.mem.0.borrow().objects["cells/c1/own.json"].1);
    assert!(listed[3].record.as_ref().unwrap().lease.is_none(), "a released cell has no owner lease");

    let listed_nodes = nodes(&env, "");
    assert_eq!(listed_nodes.iter().map(|n| (n.node.as_str(), n.lease.name())).collect::<Vec<_>>(), [("a", "live"), ("b", "live")]);
    assert_eq!(env.writes(), writes, "listing wrote nothing");

    // Live while the store's clock is surely before the expiry (its upper bound: a `Date` leaves a 2 s
    // span), then undecided, never dead before the expiry; one look says dead once the store's clock
    // (whole seconds) is past it by the rule's margin.
    env.mem.advance(expires - 2_001 - env.wall_ms());
    assert_eq!(cells(&env, "")[0].status(), "live");
    assert!(nodes(&env, "").iter().all(|n| matches!(n.lease, LeaseView::Live { .. })));
    env.mem.advance(2_000);
    assert_eq!(cells(&env, "")[0].status(), "undecided");
    let mut waited = 0;
    while cells(&env, "")[0].status() != "dead" {
        assert!(waited <= 1000 + TTL / 400 + SKEW, "still not dead {waited} ms after the expiry");
        env.mem.advance(50);
        waited += 50;
    }
    assert_eq!(summary(&cells(&env, ""))[0], row("c1", "dead", Some("a"), Some(1)));
    let dead = nodes(&env, "");
    assert_eq!(dead[0].lease, LeaseView::Dead { expires_ms: expires });
    assert!(!dead[0].awaiting_recovery, "an edge lease has no celld log");
}

#[test]
fn missing_and_corrupt_records_and_celld_logs_awaiting_recovery() {
    let env = ListEnv::new();
    let now = env.wall_ms();
    let put = |k: &str, v: String| env.mem.put_raw(k, &v);
    // An owner whose lease is gone.
    put("cells/orphan/own.json", r#"{"node":"gone","epoch":4}"#.into());
    // A dead celld owner whose node log is open: awaits recovery. Another, sealed: plain dead.
    put("cells/open/own.json", r#"{"node":"celld-1","epoch":7}"#.into());
    put("nodes/celld-1.json", format!(r#"{{"node":"celld-1","expires_ms":{},"addr":"10.0.0.1:4000","load":0.5,"log":{{"state":"open","epoch":2,"ensemble":["celld-1"],"tiered":5,"active":true}}}}"#, now - 60_000));
    put("cells/sealed/own.json", r#"{"node":"celld-2","epoch":3}"#.into());
    put("nodes/celld-2.json", format!(r#"{{"node":"celld-2","expires_ms":{},"addr":"10.0.0.2:4000","log":{{"state":"sealed","epoch":2,"ensemble":[],"tiered":5}}}}"#, now - 60_000));
    // A live celld owner with an open log: live (its log is its own business while it lives).
    put("cells/busy/own.json", r#"{"node":"celld-3","epoch":1}"#.into());
    put("nodes/celld-3.json", format!(r#"{{"node":"celld-3","expires_ms":{},"addr":"10.0.0.3:4000","log":{{"state":"open","epoch":1,"ensemble":["celld-3"],"tiered":0}}}}"#, now + 60_000));
    // Corrupt: an owner record, and a lease of an owner.
    put("cells/bad/own.json", "<html>".into());
    put("cells/badlease/own.json", r#"{"node":"garbled","epoch":2}"#.into());
    put("nodes/garbled.json", r#"{"node":"garbled","expires_ms":"soon"}"#.into());

    let listed = cells(&env, "");
    assert_eq!(
        summary(&listed),
        [
            row("bad", "corrupt", None, None),
            row("badlease", "corrupt", Some("garbled"), Some(2)),
            row("busy", "live", Some("celld-3"), Some(1)),
            row("open", "awaiting-recovery", Some("celld-1"), Some(7)),
            row("orphan", "missing", Some("gone"), Some(4)),
            row("sealed", "dead", Some("celld-2"), Some(3)),
        ]
    );
    let e = listed[0].record.as_ref().unwrap_err();
    assert_eq!(e.code(), "corrupt-record");
    assert!(e.to_string().contains("cells/bad/own.json"), "{e}");
    match &listed[1].record.as_ref().unwrap().lease.as_ref().unwrap().lease {
        LeaseView::Corrupt(e) => assert!(e.to_string().contains("nodes/garbled.json"), "{e}"),
        other => panic!("{other:?}"),
    }
    let orphan = listed[4].record.as_ref().unwrap().lease.as_ref().unwrap();
    assert_eq!((orphan.lease.clone(), orphan.key.as_str()), (LeaseView::Missing, "nodes/gone.json"));

    let listed_nodes = nodes(&env, "");
    let view: Vec<_> = listed_nodes.iter().map(|n| (n.node.as_str(), n.lease.name(), n.awaiting_recovery)).collect();
    assert_eq!(view, [("celld-1", "dead", true), ("celld-2", "dead", false), ("celld-3", "live", false), ("garbled", "corrupt", false)]);
}

#[test]
fn who_recovers_a_dead_celld_log_is_listed_with_its_heartbeat_age() {
    let env = ListEnv::new();
    let now = env.wall_ms();
    let lease = |node: &str, log: String| {
        let body = format!(r#"{{"node":"{node}","expires_ms":{},"addr":"10.0.0.9:4000","log":{log}}}"#, now - 60_000);
        env.mem.put_raw(&format!("nodes/{node}.json"), &body);
        env.mem.put_raw(&format!("cells/of-{node}/own.json"), &format!(r#"{{"node":"{node}","epoch":2}}"#));
    };
    let recovering = |claimant: &str, at: u64| {
        format!(r#"{{"state":"recovering","epoch":2,"ensemble":[],"tiered":1,"claimant":"{claimant}","claimed_ms":{at}}}"#)
    };
    lease("celld-fresh", recovering("celld-c", now - 4_000));
    lease("celld-stale", recovering("celld-d", now - 35_000));
    lease("celld-open", r#"{"state":"open","epoch":2,"ensemble":[],"tiered":1,"claimant":null,"claimed_ms":null}"#.into());
    lease("celld-sealed", r#"{"state":"sealed","epoch":2,"ensemble":[],"tiered":1}"#.into());
    let listed = nodes(&env, "");
    let seen: Vec<_> = listed
        .iter()
        .map(|n| {
            let r = n.recovery.as_ref();
            (n.node.as_str(), r.and_then(|r| r.claimant.as_deref()), r.map(|r| r.heartbeat_age_ms.is_some()), r.map(|r| r.stale))
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("celld-fresh", Some("celld-c"), Some(true), Some(false)),
            ("celld-open", None, Some(false), Some(true)),
            ("celld-sealed", None, None, None),
            ("celld-stale", Some("celld-d"), Some(true), Some(true)),
        ]
    );
    // Aged on the store's clock, estimated as the middle of the 2 s span `Date` headers leave: a second
    // either way.
    let age = |node: &str| listed.iter().find(|n| n.node == node).and_then(|n| n.recovery.as_ref()?.heartbeat_age_ms).unwrap();
    assert!((3_000..=5_000).contains(&age("celld-fresh")), "{}", age("celld-fresh"));
    assert!((34_000..=36_000).contains(&age("celld-stale")), "{}", age("celld-stale"));
    // The owners' leases in the cell listing carry it too.
    let cells = cells(&env, "");
    let fresh = cells.iter().find(|c| c.cell == "of-celld-fresh").unwrap().lease().unwrap();
    assert_eq!(fresh.recovery.as_ref().and_then(|r| r.heartbeat_ms), Some(now - 4_000));
}

#[test]
fn pages_through_more_than_a_thousand_keys() {
    let env = ListEnv::new();
    for i in 0..2_345 {
        env.mem.put_raw(&format!("cells/c{i:05}/own.json"), r#"{"node":"","epoch":1}"#);
        // Data keys in between the records make pages hold fewer records than keys.
        if i % 2 == 0 {
            env.mem.put_raw(&format!("cells/c{i:05}/data/e1/x"), "data");
        }
    }
    let listed = cells(&env, "");
    assert_eq!(listed.len(), 2_345);
    assert!(listed.windows(2).all(|w| w[0].cell < w[1].cell), "each cell once, in key order");
    assert!(listed.iter().all(|c| c.status() == "released"));
    let lists = env.lists.borrow();
    let cell_pages: Vec<_> = lists.iter().filter(|(p, _, _)| p == "cells/").collect();
    assert_eq!(cell_pages.len(), 4, "2,345 records and 1,173 data prefixes in pages of 1,000");
    assert_eq!(cell_pages[0].1, None);
    // Each page after the first sends back the previous page's token exactly.
    assert!(cell_pages[1..].iter().all(|(_, t, _)| t.as_deref().is_some_and(|t| t.ends_with("+/="))));
}

#[test]
fn the_application_s_data_is_not_listed_and_no_data_key_can_break_the_listing() {
    let env = ListEnv::new();
    let a = leased(&env, "a", "");
    block_on(a.claim("c1")).unwrap();
    block_on(a.claim("c 2+")).ok(); // refused by celld's id set: only c1 is claimed
    // The application's data: many keys, one with a control character (sent raw it is not XML).
    for i in 0..40 {
        env.mem.put_raw(&format!("cells/c1/data/e1/k{i:02}"), "d");
    }
    env.mem.put_raw("cells/c1/data/e1/\u{1}\u{1b}]52;c;eA==\u{7}", "d");
    let before = env.list_count();
    let listed = block_on(inspector(&env, "").with_page_size(2).unwrap().list_cells()).unwrap();
    assert_eq!(summary(&listed), [row("c1", "live", Some("a"), Some(1))]);
    // One record and one data prefix: one page of cells (of 2), one of nodes; not 21 pages of data.
    assert_eq!(env.list_count() - before, 2, "{:?}", &env.lists.borrow()[before..]);
}

#[test]
fn url_encoded_keys_are_decoded() {
    let env = ListEnv::new();
    env.mem.put_raw("cells/a b+é/own.json", r#"{"node":"","epoch":3}"#);
    env.mem.put_raw("nodes/n%41.json", r#"{"node":"n%41","expires_ms":1}"#);
    let mut config = config("", "");
    config.ids = celld_edge::ownership::IdSet::Utf8;
    let inspector = Inspector::new(&config, env.clone()).unwrap();
    let listed = block_on(inspector.list_cells()).unwrap();
    assert_eq!(summary(&listed), [row("a b+é", "released", None, Some(3))]);
    let nodes = block_on(inspector.list_nodes()).unwrap();
    assert_eq!(nodes.iter().map(|n| n.node.as_str()).collect::<Vec<_>>(), ["n%41"]);
}

#[test]
fn a_small_page_size_gives_the_same_listing() {
    let env = ListEnv::new();
    let a = leased(&env, "a", "");
    for i in 0..23 {
        block_on(a.claim(&format!("k{i:02}"))).unwrap();
    }
    let all = cells(&env, "");
    let before = env.list_count();
    let paged = block_on(inspector(&env, "").with_page_size(5).unwrap().list_cells()).unwrap();
    assert_eq!(summary(&paged), summary(&all));
    assert_eq!(env.list_count() - before, 5 + 1, "23 cells in pages of 5, and one page of nodes");
    assert!(env.lists.borrow()[before..].iter().all(|(_, _, max)| *max == Some(5)));
    for bad in [0, 1001] {
        assert_eq!(inspector(&env, "").with_page_size(bad).err().unwrap().code(), "invalid-input");
    }
}

#[test]
fn a_prefix_sees_only_its_own_fleet() {
    let env = ListEnv::new();
    let a = leased(&env, "a", "fleet-a/");
    let b = leased(&env, "b", "fleet-b/");
    block_on(a.claim("x")).unwrap();
    block_on(b.claim("x")).unwrap();
    block_on(b.claim("y")).unwrap();
    env.mem.put_raw("cells/z/own.json", r#"{"node":"root","epoch":1}"#);
    assert_eq!(summary(&cells(&env, "fleet-a/")), [row("x", "live", Some("a"), Some(1))]);
    assert_eq!(summary(&cells(&env, "fleet-b/")), [row("x", "live", Some("b"), Some(1)), row("y", "live", Some("b"), Some(1))]);
    assert_eq!(cells(&env, "fleet-b/")[0].key, "fleet-b/cells/x/own.json");
    assert_eq!(summary(&cells(&env, "")), [row("z", "missing", Some("root"), Some(1))]);
    assert_eq!(nodes(&env, "fleet-a/").iter().map(|n| n.key.as_str()).collect::<Vec<_>>(), ["fleet-a/nodes/a.json"]);
    assert_eq!(Inspector::new(&config("", "bad prefix"), env.clone()).err().unwrap().code(), "invalid-input");
}

#[test]
fn s3ownership_lists_without_a_lease_and_keeps_its_own_state() {
    let env = ListEnv::new();
    let a = leased(&env, "a", "");
    block_on(a.claim("c")).unwrap();
    // An instance that never acquired a lease lists all the same, and writes nothing.
    let viewer = S3Ownership::new(config("viewer", ""), env.clone()).unwrap();
    let writes = env.writes();
    assert_eq!(summary(&block_on(viewer.list_cells()).unwrap()), [row("c", "live", Some("a"), Some(1))]);
    assert_eq!(block_on(viewer.list_nodes()).unwrap().len(), 1);
    assert_eq!(env.writes(), writes);
    assert!(!viewer.lease_valid());
    // The holder lists too, and its claim is untouched.
    assert_eq!(block_on(a.list_cells()).unwrap().len(), 1);
    assert!(block_on(a.verify("c", 1)).unwrap());
}

#[test]
fn store_failures_fail_the_whole_listing_with_their_cause() {
    let env = ListEnv::new();
    env.mem.put_raw("cells/c/own.json", r#"{"node":"","epoch":1}"#);
    let script = |answers: Vec<Result<(u16, &str), TransportError>>| {
        *env.list_script.borrow_mut() = answers.into_iter().map(|a| a.map(|(s, b)| (s, b.to_owned()))).collect();
    };
    let fail = || block_on(inspector(&env, "").list_cells()).unwrap_err();

    script(vec![Ok((403, "<Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>"))]);
    let e = fail();
    assert_eq!(e.code(), "auth");
    assert!(e.to_string().contains("SignatureDoesNotMatch"), "{e}");

    script(vec![Ok((200, "<!DOCTYPE html><html><body>Welcome</body></html>"))]);
    let e = fail();
    assert_eq!(e.code(), "request");
    assert!(e.to_string().contains("not an S3 API"), "{e}");

    script(vec![Ok((404, "<Error><Code>NoSuchBucket</Code><Message>none</Message></Error>"))]);
    assert!(fail().to_string().contains("NoSuchBucket"));

    // Transient failures are retried (three more attempts), then reported as transport.
    script(vec![Ok((503, "")), Err(TransportError::Network("ECONNRESET".into()))]);
    assert_eq!(summary(&cells(&env, "")), [row("c", "released", None, Some(1))]);
    script(vec![Ok((503, "")), Ok((503, "")), Ok((500, "")), Err(TransportError::Network("ECONNREFUSED".into()))]);
    let e = fail();
    assert_eq!(e.code(), "transport");
    assert!(e.to_string().contains("ECONNREFUSED") && e.to_string().contains("4 attempts"), "{e}");
}

#[test]
fn a_store_that_repeats_its_continuation_token_is_not_paged_forever() {
    let env = ListEnv::new();
    for i in 0..5 {
        env.mem.put_raw(&format!("cells/c{i}/own.json"), r#"{"node":"","epoch":1}"#);
    }
    *env.echo_token.borrow_mut() = true;
    let e = block_on(inspector(&env, "").with_page_size(2).unwrap().list_cells()).unwrap_err();
    assert_eq!(e.code(), "transport");
    assert!(e.to_string().contains("with itself"), "{e}");
    assert_eq!(env.list_count(), 2);
}

#[test]
fn a_garbled_transfer_is_read_again_and_a_corrupt_record_is_reported_on_its_entry() {
    let env = ListEnv::new();
    env.mem.put_raw("cells/a/own.json", r#"{"node":"","epoch":3}"#);
    env.mem.put_raw("cells/b/own.json", r#"{"node":"n","epoch":1"#);
    // The first GET (cells/a) arrives cut in half: read again, it is a record like any other.
    env.mem.push(support::mem::Fault::Garble);
    let sent = env.mem.sent_count();
    let listed = cells(&env, "");
    assert_eq!(summary(&listed), [row("a", "released", None, Some(3)), row("b", "corrupt", None, None)]);
    let gets = |key: &str| env.mem.0.borrow().sent[sent..].iter().filter(|(m, k, _)| *m == "GET" && k == key).count();
    assert_eq!(gets("cells/a/own.json"), 2, "the garbled read and one more");
    assert_eq!(gets("cells/b/own.json"), 3, "corrupt only once the same bytes failed three reads");
    assert_eq!(listed[1].error().map(|e| e.code()), Some("corrupt-record"));
}

#[test]
fn a_celld_log_celld_could_not_read_makes_that_lease_corrupt_not_the_listing() {
    let env = ListEnv::new();
    let now = env.wall_ms();
    env.mem.put_raw("cells/c/own.json", r#"{"node":"celld-9","epoch":2}"#);
    env.mem.put_raw("nodes/celld-9.json", &format!(r#"{{"node":"celld-9","expires_ms":{now},"log":{{"state":"open"}}}}"#));
    env.mem.put_raw("nodes/fine.json", &format!(r#"{{"node":"fine","expires_ms":{}}}"#, now + 5_000));
    let listed = cells(&env, "");
    assert_eq!(summary(&listed), [row("c", "corrupt", Some("celld-9"), Some(2))]);
    let e = listed[0].error().unwrap();
    assert!(e.code() == "corrupt-record" && e.to_string().contains("nodes/celld-9.json"), "{e}");
    let view: Vec<_> = nodes(&env, "").iter().map(|n| (n.node.clone(), n.lease.name())).collect();
    assert_eq!(view, [("celld-9".to_owned(), "corrupt"), ("fine".to_owned(), "live")]);
}

#[test]
fn probe_qualifies_without_a_node_and_records_the_verdict() {
    let env = ListEnv::new();
    let report = block_on(inspector(&env, "p/").probe()).unwrap();
    assert_eq!(report.if_match_missing_status, env.mem.0.borrow().if_match_missing);
    let record = env.mem.body("p/probe/qualified.json").expect("the verdict is recorded");
    assert!(record.contains(r#""verdict":"qualified""#) && record.contains(r#""prefix":"p/""#), "{record}");
    let objects: Vec<String> = env.mem.0.borrow().objects.keys().cloned().collect();
    assert_eq!(objects, ["p/probe/qualified.json"], "the probe's own keys are deleted; nothing else is written");
    // A store that ignores conditions is refused, naming the step, and recorded so.
    env.mem.0.borrow_mut().ignore_conditions = true;
    let e = block_on(inspector(&env, "p/").probe()).unwrap_err();
    assert_eq!(e.code(), "store-violation");
    let record = env.mem.body("p/probe/qualified.json").unwrap();
    assert!(record.contains(r#""verdict":"refused""#), "{record}");
}

#[test]
fn a_record_naming_a_node_outside_the_id_set_is_corrupt() {
    let env = ListEnv::new();
    let forged = "\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}";
    env.mem.put_raw("cells/c1/own.json", &format!(r#"{{"node":"{}","epoch":2}}"#, forged.replace('\u{1b}', "\\u001b").replace('\u{7}', "\\u0007")));
    env.mem.put_raw("nodes/n1.json", r#"{"node":"n\u001b[2J","expires_ms":1}"#);
    let listed = cells(&env, "");
    assert_eq!(listed.len(), 1);
    let err = listed[0].record.as_ref().err().expect("a corrupt record");
    assert_eq!(err.code(), "corrupt-record");
    assert!(!err.to_string().contains('\u{1b}'), "{err}");
    let nodes = nodes(&env, "");
    assert_eq!(nodes[0].lease.name(), "corrupt");
}

