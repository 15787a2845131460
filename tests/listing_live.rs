//! The listing against the real local servers `scripts/test` starts (ministack, and moto in auth mode,
//! which checks every signature: the list GET's query is where a signer goes wrong). Records are made by
//! `S3Ownership` itself, then listed in pages of 2 so that the server's own continuation tokens are sent
//! back; more than 1000 records are listed in the store's own pages. Needs CELLD_TEST_ATOMIC_* /
//! CELLD_TEST_STRICT_* (scripts/lib/servers.sh); without them each test says it skipped.
#![cfg(not(target_arch = "wasm32"))]

#[path = "support/http.rs"]
mod http;

use std::cell::RefCell;

use celld_edge::env::{Env, HttpRequest, HttpResponse, TransportError};
use celld_edge::ownership::{Config, Inspector, ProbePolicy, S3Ownership};
use celld_edge::s3::{classify_put, Bucket, PutAnswer};
use celld_edge::ownership::records::CasGuard;
use http::{block_on, HttpEnv};

/// The shared HttpEnv, noting the query of every listing GET it sends.
struct Noting(HttpEnv, RefCell<Vec<String>>);

impl Env for Noting {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        if let Some((_, query)) = req.url.split_once("?list-type=2") {
            self.1.borrow_mut().push(query.to_owned());
        }
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
}

/// The server's coordinates as a `Config` under a fresh prefix, or `None` (saying so) when not started.
fn server(kind: &str, node: &str) -> Option<Config> {
    let var = |name: &str| std::env::var(format!("CELLD_TEST_{kind}_{name}")).ok();
    let Some(endpoint) = var("ENDPOINT") else {
        eprintln!("skipped: CELLD_TEST_{kind}_* unset (scripts/test sets them)");
        return None;
    };
    let mut config = Config::new(&endpoint, &var("BUCKET")?, node, &var("KEY_ID")?, &var("SECRET")?);
    config.prefix = format!("t-listing-{}/", HttpEnv::new().random_u64() % 1_000_000_000);
    config.probe = ProbePolicy::Off; // the probe has suites of its own
    Some(config)
}

fn lists_what_the_protocol_wrote(kind: &str) {
    let Some(config) = server(kind, "live-a") else { return };
    let a = S3Ownership::new(config.clone(), HttpEnv::new()).unwrap();
    block_on(a.acquire_lease()).unwrap();
    // celld's id set, punctuation included (`:` and `$` are percent-encoded in the keys).
    let cells = ["c0", "c1", "c:2", "c$3", "c.4", "c-5", "c6"];
    for cell in cells {
        block_on(a.claim(cell)).unwrap();
    }
    block_on(a.claim("c1")).unwrap(); // epoch 2
    block_on(a.release("c6")).unwrap();

    let inspector = Inspector::new(&Config { node: String::new(), ..config.clone() }, HttpEnv::new()).unwrap();
    let inspector = inspector.with_page_size(2).unwrap();
    let listed = block_on(inspector.list_cells()).unwrap();
    let mut want: Vec<&str> = cells.to_vec();
    want.sort_unstable(); // S3 lists in UTF-8 byte order
    assert_eq!(listed.iter().map(|c| c.cell.as_str()).collect::<Vec<_>>(), want);
    for c in &listed {
        let owner = c.record.as_ref().unwrap();
        assert_eq!(owner.epoch, if c.cell == "c1" { 2 } else { 1 }, "{}", c.cell);
        assert_eq!(c.status(), if c.cell == "c6" { "released" } else { "live" }, "{}", c.cell);
        assert!(c.modified_ms.is_some(), "LastModified read for {}", c.cell);
    }
    let lease = listed[0].lease().unwrap();
    assert!(lease.modified_ms.is_some(), "the owner's lease age comes from the nodes/ listing");
    let nodes = block_on(inspector.list_nodes()).unwrap();
    assert_eq!(nodes.iter().map(|n| (n.node.as_str(), n.lease.name())).collect::<Vec<_>>(), [("live-a", "live")]);
    assert_eq!(nodes[0].key, format!("{}nodes/live-a.json", config.prefix));

    // Wrong credentials: the strict server refuses the listing itself.
    if kind == "STRICT" {
        let bad = Config { secret_access_key: "wrong".into(), ..config };
        let e = block_on(Inspector::new(&bad, HttpEnv::new()).unwrap().list_cells()).unwrap_err();
        assert_eq!(e.code(), "auth", "{e}");
    }
}

#[test]
fn lists_a_fleet_on_ministack() {
    lists_what_the_protocol_wrote("ATOMIC");
}

#[test]
fn lists_a_fleet_on_moto_checking_signatures() {
    lists_what_the_protocol_wrote("STRICT");
}

/// 1,234 released-cell records written straight to the store: the listing follows the store's own
/// 1000-key pages and its own continuation token.
#[test]
fn pages_past_a_thousand_keys_on_ministack() {
    let Some(config) = server("ATOMIC", "") else { return };
    let env = HttpEnv::new();
    let mut bucket = Bucket::new(&config.endpoint, &config.bucket, &config.region, true, &config.access_key_id, &config.secret_access_key, None).unwrap();
    for i in 0..1_234 {
        let key = format!("{}cells/p{i:04}/own.json", config.prefix);
        let req = bucket.put(&key, &CasGuard::Absent, br#"{"node":"","epoch":1}"#.to_vec(), env.wall_ms()).unwrap();
        assert!(matches!(classify_put(&key, block_on(env.send(req, Some(10_000)))), PutAnswer::Applied { .. }), "{key}");
    }
    let inspector = Inspector::new(&config, Noting(env, RefCell::default())).unwrap();
    let listed = block_on(inspector.list_cells()).unwrap();
    assert_eq!(listed.len(), 1_234);
    let lists = inspector.env().1.borrow();
    let cell_pages: Vec<&String> = lists.iter().filter(|q| q.contains("cells%2F")).collect();
    assert_eq!(cell_pages.len(), 2, "{lists:?}");
    assert!(cell_pages[1].contains("&continuation-token="), "the second page follows the store's token: {lists:?}");
    assert!(listed.iter().enumerate().all(|(i, c)| c.cell == format!("p{i:04}") && c.status() == "released"));
}
