//! Short-lived credentials as the core rotates them (SPEC 4.2): a provider asked before the first request
//! and again before its keys expire, never by a lease renewal while the keys it holds still work; a
//! failed refresh is an `auth` error only once no usable keys are left, and never costs the lease or the
//! claims.
// Native only: `wasm-pack test` compiles every test target for wasm32 (and runs only the wasm ones).
#![cfg(not(target_arch = "wasm32"))]

// The scripted-fault half of the support Env is for other tests.
#[allow(dead_code)]
mod support;

use celld_edge::env::{Credentials, Env, HttpRequest, HttpResponse, TransportError};
use celld_edge::error::Fault;
use celld_edge::ownership::{ClaimOutcome, Config, ProbePolicy, S3Ownership};
use support::gate::poll;
use support::mem::{block_on, MemEnv, BUCKET, ENDPOINT};

const MINUTE: u64 = 60_000;

fn keys(id: &str, expires_ms: Option<u64>) -> Result<Credentials, String> {
    Ok(Credentials { access_key_id: id.into(), secret_access_key: format!("{id}-secret"), session_token: Some("tok".into()), expires_ms })
}

fn provided(env: &MemEnv) -> S3Ownership<MemEnv> {
    let mut config = Config::new(ENDPOINT, BUCKET, "a", "", "");
    config.credentials_provider = true;
    config.probe = ProbePolicy::Off;
    S3Ownership::new(config, env.clone()).unwrap().observed_by(env.clone())
}

fn now(env: &MemEnv) -> u64 {
    env.0.borrow().wall
}

fn asked(env: &MemEnv) -> usize {
    env.0.borrow().asked
}

fn last_key_id(env: &MemEnv) -> String {
    env.0.borrow().key_ids.last().cloned().unwrap_or_default()
}

fn applied(outcome: ClaimOutcome) -> u64 {
    match outcome {
        ClaimOutcome::Applied { epoch, .. } => epoch,
        other => panic!("expected applied, got {other:?}"),
    }
}

#[test]
fn asked_before_the_first_request_and_again_before_expiry() {
    let env = MemEnv::new();
    let expires = now(&env) + 15 * MINUTE;
    env.0.borrow_mut().provided.push_back(keys("K1", Some(expires)));
    let a = provided(&env);
    assert_eq!(asked(&env), 0, "nothing is asked before a request");
    block_on(a.acquire_lease()).unwrap();
    assert_eq!(asked(&env), 1);
    assert!(env.0.borrow().key_ids.iter().all(|k| k == "K1"), "every request signed with the provider's keys");
    block_on(a.claim("c")).unwrap();
    assert_eq!(asked(&env), 1, "asked once while the keys are good");
    // Five minutes before expiry a refresh is due: the next request (not a renewal) waits for it.
    env.0.borrow_mut().provided.push_back(keys("K2", Some(expires + 15 * MINUTE)));
    env.advance(10 * MINUTE);
    block_on(a.acquire_lease()).unwrap(); // the lease lapsed meanwhile (nothing renewed it): a fresh one
    assert_eq!(asked(&env), 2);
    assert_eq!(last_key_id(&env), "K2");
}

#[test]
fn a_renewal_never_waits_on_the_provider_while_the_keys_work() {
    let env = MemEnv::new();
    let expires = now(&env) + 10 * MINUTE;
    env.0.borrow_mut().provided.push_back(keys("K1", Some(expires)));
    let a = provided(&env);
    block_on(a.acquire_lease()).unwrap();
    // Into the refresh window by renewing every few seconds, as the renewal loop would.
    while now(&env) < expires - 4 * MINUTE {
        env.advance(3_000);
        block_on(a.renew_lease()).unwrap();
    }
    assert_eq!(asked(&env), 1, "renewals used the keys that still work");
    assert_eq!(last_key_id(&env), "K1");
    // Keys about to expire are not used even by a renewal: it waits for fresh ones.
    env.0.borrow_mut().provided.push_back(keys("K2", Some(expires + 10 * MINUTE)));
    while now(&env) < expires - 5_000 {
        env.advance(3_000);
        block_on(a.renew_lease()).unwrap();
    }
    assert_eq!(asked(&env), 2);
    assert_eq!(last_key_id(&env), "K2");
    assert!(a.lease_valid());
}

#[test]
fn a_failed_refresh_keeps_the_lease_and_claims_and_is_auth_only_without_usable_keys() {
    let env = MemEnv::new();
    let expires = now(&env) + 10 * MINUTE;
    env.0.borrow_mut().provided.push_back(keys("K1", Some(expires)));
    let a = provided(&env);
    block_on(a.acquire_lease()).unwrap();
    assert_eq!(applied(block_on(a.claim("c")).unwrap()), 1);
    // Keep the lease alive up to the refresh window.
    while now(&env) < expires - 5 * MINUTE + 1_000 {
        env.advance(3_000);
        block_on(a.renew_lease()).unwrap();
    }
    // The provider is down (nothing queued): a request in the window still goes out with K1.
    assert!(block_on(a.verify("c", 1)).unwrap());
    assert_eq!((asked(&env), last_key_id(&env).as_str()), (2, "K1"));
    // Past the point where K1 may be used: the failure is an auth error naming the provider's words.
    while now(&env) < expires - 9_000 {
        env.advance(3_000);
        let _ = block_on(a.renew_lease());
    }
    let err = block_on(a.verify("c", 1)).unwrap_err();
    assert_eq!(err.code(), "auth", "{err}");
    assert!(err.message().contains("provider offline"), "{err}");
    assert!(a.lease_valid(), "the lease is kept");
    assert_eq!(a.authority("c").unwrap().0, 1, "and the claim");
    // The provider is back: the same instance carries on, lease and claim intact.
    env.0.borrow_mut().provided.push_back(keys("K2", Some(expires + 10 * MINUTE)));
    assert!(block_on(a.verify("c", 1)).unwrap());
    assert_eq!(last_key_id(&env), "K2");
}

#[test]
fn keys_without_expiry_are_asked_for_once_and_bad_keys_are_refused() {
    let env = MemEnv::new();
    env.0.borrow_mut().provided.push_back(Ok(Credentials { access_key_id: String::new(), secret_access_key: "s".into(), session_token: None, expires_ms: None }));
    env.0.borrow_mut().provided.push_back(keys("K1", None));
    let a = provided(&env);
    let err = block_on(a.acquire_lease()).unwrap_err();
    assert_eq!(err.code(), "auth", "{err}");
    assert!(err.message().contains("non-empty"), "{err}");
    // With no usable keys at all, the next request asks again.
    env.advance(1_000);
    block_on(a.acquire_lease()).unwrap();
    env.advance(365 * 24 * 60 * MINUTE);
    block_on(a.acquire_lease()).unwrap();
    assert_eq!(asked(&env), 2);
}

#[test]
fn a_provider_that_never_answers_is_auth_after_the_request_timeout_not_a_hang() {
    let env = MemEnv::new();
    env.0.borrow_mut().provider_hangs = true;
    let mut config = Config::new(ENDPOINT, BUCKET, "a", "", "");
    config.credentials_provider = true;
    config.probe = ProbePolicy::Off;
    // Timers side by side, as on a real runtime: the instance's first reads go out together, and each
    // waits for the one credentials call.
    let timed = Timed { mem: env.clone(), timers: Default::default() };
    let a = S3Ownership::new(config, timed.clone()).unwrap();
    let (before, timeout) = (now(&env), u64::from(a.config().request_timeout_ms));
    let mut acquire = Box::pin(a.acquire_lease());
    let err = loop {
        if let Some(out) = poll(&mut acquire) {
            break out.unwrap_err();
        }
        let now = env.0.borrow().mono;
        let next = timed.timers.borrow().iter().copied().filter(|t| *t > now).fold(f64::INFINITY, f64::min);
        env.advance((next - now).ceil() as u64);
    };
    assert_eq!(err.code(), "auth", "{err}");
    assert!(err.message().contains("did not answer within"), "{err}");
    assert_eq!(now(&env) - before, timeout, "it waited exactly one request's timeout");
    assert!(env.0.borrow().sent.is_empty(), "nothing was sent unsigned or with placeholder keys");
    // The provider answers again: the next request asks it and goes out.
    env.0.borrow_mut().provider_hangs = false;
    env.0.borrow_mut().provided.push_back(keys("K1", None));
    env.advance(1_000);
    poll(&mut Box::pin(a.acquire_lease())).expect("nothing to wait for").unwrap();
    assert_eq!((asked(&env), last_key_id(&env).as_str()), (2, "K1"));
}

/// An `Env` over the in-memory store whose sleeps end when the test moves the clock past them (requests
/// are answered at once): timers of different lengths run side by side, as on a real runtime.
#[derive(Clone)]
struct Timed {
    mem: MemEnv,
    /// Monotonic instants at which the sleeps asked for end.
    timers: std::rc::Rc<std::cell::RefCell<Vec<f64>>>,
}

struct Until {
    mem: MemEnv,
    at: f64,
}

impl std::future::Future for Until {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.mem.0.borrow().mono >= self.at {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    }
}

impl Env for Timed {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
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
        let at = self.mem.mono_ms() + f64::from(ms);
        self.timers.borrow_mut().push(at);
        Until { mem: self.mem.clone(), at }.await
    }
    async fn credentials(&self) -> Result<Credentials, Fault> {
        self.mem.credentials().await
    }
}

/// Issue 21 B: the renewal loop refreshes due keys after a renewal, beside the loop: a provider that hangs
/// (keys still valid) delays no renewal. Renewals go out every ttl/3 while the refresh waits, and the lease
/// and the claim survive.
#[test]
fn the_renewal_loop_never_waits_on_a_slow_provider_while_the_keys_work() {
    let mem = MemEnv::new();
    // Keys of a 6-minute life: due for a refresh halfway (3 minutes from now), usable until ten seconds
    // before they expire; the provider hangs from then on.
    let expires = mem.0.borrow().wall + 6 * MINUTE;
    mem.0.borrow_mut().provided.push_back(keys("K1", Some(expires)));
    let mut config = Config::new(ENDPOINT, BUCKET, "a", "", "");
    config.credentials_provider = true;
    config.probe = ProbePolicy::Off;
    let timed = Timed { mem: mem.clone(), timers: Default::default() };
    let a = S3Ownership::new(config, timed.clone()).unwrap().observed_by(mem.clone());
    let mut acquire = Box::pin(a.acquire_lease());
    poll(&mut acquire).unwrap().unwrap();
    let mut claim = Box::pin(a.claim("c"));
    assert_eq!(applied(poll(&mut claim).unwrap().unwrap()), 1);
    mem.0.borrow_mut().provider_hangs = true;
    let until = mem.0.borrow().mono + (5 * MINUTE) as f64;
    let mut errors = Vec::new();
    let stop = || mem.0.borrow().mono >= until;
    let mut on_error = |e: &celld_edge::Error| errors.push(e.code());
    let mut renewing = Box::pin(a.renew_until_stopped(&stop, &mut on_error));
    let mut renewals = Vec::new();
    loop {
        let sent = mem.0.borrow().sent.len();
        if let Some(ended) = poll(&mut renewing) {
            assert!(ended.is_ok(), "{ended:?}");
            break;
        }
        if mem.0.borrow().sent.len() > sent {
            renewals.push(mem.0.borrow().mono);
        }
        // On to the earliest timer still ahead.
        let now = mem.0.borrow().mono;
        let next = timed.timers.borrow().iter().copied().filter(|t| *t > now).fold(f64::INFINITY, f64::min);
        mem.advance((next - now).ceil() as u64);
    }
    drop(renewing);
    assert!(asked(&mem) >= 2, "the loop did ask the provider again");
    let longest = renewals.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    assert!(longest <= (10_000 / 3) as f64 + 1.0, "renewals every ttl/3, the longest gap {longest} ms");
    assert!(a.lease_valid(), "renewed on time all along");
    assert_eq!(a.authority("c").unwrap().0, 1, "and the claim kept");
    assert_eq!(last_key_id(&mem), "K1");
    assert!(errors.is_empty(), "keys that still work: nothing to report ({errors:?})");
}

// The listings run over a borrowed `Env` (`Env for &E`, what `S3Ownership::list_cells` builds its
// inspector on): it must pass the provider on, or they fail with "no credentials provider".
#[test]
fn a_borrowed_env_asks_the_same_provider() {
    async fn ask<E: Env>(env: E) -> Result<Credentials, Fault> {
        env.credentials().await
    }
    let env = MemEnv::new();
    env.0.borrow_mut().provided.push_back(keys("K1", None));
    let got = block_on(ask(&env)).expect("the provider's keys through &MemEnv");
    assert_eq!(got.access_key_id, "K1");
    assert_eq!(asked(&env), 1);
}
