//! The `S3Ownership` surface for JS: a wasm class over `ownership::S3Ownership<JsEnv>`, where `JsEnv` is
//! the small host object `js/ownership.js` builds around the injected `fetch` (plus clocks, randomness,
//! timers). Results cross as JSON text that the JS wrapper parses; errors as JS `Error`s with `code`.
//! No protocol logic here, and no panics: every value from JS is checked.
//!
//! JS drives the protocol's futures itself, instead of wasm-bindgen-futures turning them into Promises:
//! `start` makes an operation's future, `poll` advances it, and each request or timer it waits on goes
//! out through the host with an id that `resume` answers before JS polls again. No closure or Promise
//! crosses the boundary, which keeps both the wasm and its glue small.

use crate::prelude::*;
use core::cell::{Cell, RefCell};
use core::future::Future;
use core::pin::Pin;
use alloc::rc::Rc;
use core::task::{Context, Poll, Waker};

use wasm_bindgen::prelude::*;

use super::js_error;
use crate::env::{Env, Event, HttpRequest, HttpResponse, TransportError};
use crate::error::{msg, Error};
use crate::ownership::json::{self, ObjectWriter};
use crate::ownership::{CasGuard, CasOutcome, ClaimOptions, ClaimOutcome, Config, OwnerInfo, OwnerRecord, S3Ownership};

#[wasm_bindgen]
extern "C" {
    /// What `js/ownership.js` passes in; see `makeHost` there.
    pub type Host;

    /// Starts request `io` for task `task` and later hands its answer to `resume(io, ...)`, then polls
    /// `task` again. Returns at once; must not call into wasm before returning. `headers` is each name and
    /// value followed by a newline (neither can contain one): one string instead of an array of them.
    #[wasm_bindgen(method)]
    fn send(this: &Host, task: u32, io: u32, method: &str, url: &str, headers: &str, body: &[u8], timeout_ms: u32);
    /// Like `send`, for a timer of `ms` milliseconds.
    #[wasm_bindgen(method)]
    fn sleep(this: &Host, task: u32, io: u32, ms: u32);
    #[wasm_bindgen(method)]
    fn wall(this: &Host) -> f64;
    #[wasm_bindgen(method)]
    fn mono(this: &Host) -> f64;
    /// A uniformly random integer in [0, 2^32).
    #[wasm_bindgen(method)]
    fn random32(this: &Host) -> f64;
    /// True when the caller passed `onEvent`.
    #[wasm_bindgen(method, getter)]
    fn events(this: &Host) -> bool;
    /// Hands one event, as JSON plus its `ms` (NaN: none), to `onEvent`.
    #[wasm_bindgen(method)]
    fn event(this: &Host, json: &str, ms: f64);
}

type Answer = Result<HttpResponse, TransportError>;

/// The I/O in flight: which task is being polled, and the answers JS has handed back that their
/// futures have not taken yet. Ids are never reused within an instance.
#[derive(Default)]
struct Io {
    task: Cell<u32>,
    next: Cell<u32>,
    /// Ids whose future is still waiting; an answer for any other id (a future dropped early) is ignored.
    waiting: RefCell<Vec<u32>>,
    answers: RefCell<Vec<(u32, Answer)>>,
}

impl Io {
    fn open(&self) -> u32 {
        let id = self.next.get().wrapping_add(1);
        self.next.set(id);
        self.waiting.borrow_mut().push(id);
        id
    }

    /// Stops waiting on `id` (ids are unique, so order is free to change); false when it was not waited on.
    fn unwait(&self, id: u32) -> bool {
        let mut waiting = self.waiting.borrow_mut();
        let i = waiting.iter().position(|w| *w == id);
        if let Some(i) = i {
            waiting.swap_remove(i);
        }
        i.is_some()
    }

    /// Takes the answer to `id`, if JS has handed it back.
    fn take(&self, id: u32) -> Option<Answer> {
        let mut answers = self.answers.borrow_mut();
        let i = answers.iter().position(|(a, _)| *a == id)?;
        Some(answers.swap_remove(i).1)
    }
}

/// Waits for the answer to one `Io` id. Polled only when JS polls its task after a `resume`.
struct Wait<'a> {
    io: &'a Io,
    id: u32,
}

impl Future for Wait<'_> {
    type Output = Answer;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Answer> {
        self.io.take(self.id).map_or(Poll::Pending, Poll::Ready)
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.io.unwait(self.id);
        self.io.take(self.id);
    }
}

pub struct JsEnv {
    host: Host,
    io: Rc<Io>,
}

impl Env for JsEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Answer {
        let id = self.io.open();
        let mut headers = String::new();
        for (name, value) in &req.headers {
            for part in [name, value] {
                headers.push_str(part);
                headers.push('\n');
            }
        }
        self.host.send(self.io.task.get(), id, req.method, &req.url, &headers, &req.body, timeout_ms.unwrap_or(0));
        Wait { io: &self.io, id }.await
    }
    fn wall_ms(&self) -> u64 {
        let ms = self.host.wall();
        if ms.is_finite() && ms > 0.0 { ms as u64 } else { 0 }
    }
    fn mono_ms(&self) -> f64 {
        self.host.mono()
    }
    fn random_u64(&self) -> u64 {
        let word = || self.host.random32() as u64 & 0xffff_ffff;
        (word() << 32) | word()
    }
    async fn sleep(&self, ms: u32) {
        let id = self.io.open();
        self.host.sleep(self.io.task.get(), id, ms);
        // A timer's answer carries nothing; a timer that fails to fire only shortens a read backoff.
        let _ = Wait { io: &self.io, id }.await;
    }
    fn observe(&self, event: Event<'_>) {
        if self.host.events() {
            let (json, ms) = event_json(&event);
            self.host.event(&json, ms);
        }
    }
}

/// An event as JSON, and its duration apart (NaN when it has none): `ms` is a fraction, and formatting an
/// f64 in Rust would bring ~10 KB of float printing into the wasm, so JS adds it to the object.
fn event_json(event: &Event<'_>) -> (String, f64) {
    let mut w = ObjectWriter::new();
    match *event {
        Event::LeaseAcquired { node, expires_ms, ms } => {
            (w.str("type", "lease-acquired").str("node", node).uint("expiresMs", expires_ms).finish(), ms)
        }
        Event::LeaseRenewed { node, expires_ms, ms } => {
            (w.str("type", "lease-renewed").str("node", node).uint("expiresMs", expires_ms).finish(), ms)
        }
        Event::Fenced { node, reason } => (w.str("type", "fenced").str("node", node).str("reason", reason).finish(), f64::NAN),
        Event::ClaimApplied { cell, epoch, took_over, ms } => {
            let kind = if took_over { "claim-took-over" } else { "claim-applied" };
            (w.str("type", kind).str("cell", cell).uint("epoch", epoch).finish(), ms)
        }
        Event::ClaimRejected { cell, owner, epoch, ms } => {
            (w.str("type", "claim-rejected").str("cell", cell).str("owner", owner).uint("epoch", epoch).finish(), ms)
        }
        Event::AmbiguousSettled { key, outcome, readbacks } => {
            let w = w.str("type", "ambiguous-settled").str("key", key).str("outcome", outcome);
            (w.uint("readbacks", readbacks as u64).finish(), f64::NAN)
        }
        Event::ReadRetried { key, attempt, backoff_ms, detail } => {
            let w = w.str("type", "read-retried").str("key", key).uint("attempt", attempt.into());
            (w.uint("backoffMs", backoff_ms.into()).str("detail", detail).finish(), f64::NAN)
        }
    }
}

/// The options object as JSON (the JS wrapper drops `fetch` and checks types and required fields first);
/// absent options keep the SPEC's defaults, and an empty required one fails `S3Ownership::new`'s checks.
fn config(options_json: &str) -> Result<Config, Error> {
    let mut c = Config::new("", "", "", "", "");
    json::object(options_json.as_bytes(), |name, r| {
        // Options of one type share one read: each written-out read is another call and drop.
        let text = match name {
            "endpoint" => Some(&mut c.endpoint),
            "bucket" => Some(&mut c.bucket),
            "region" => Some(&mut c.region),
            "accessKeyId" => Some(&mut c.access_key_id),
            "secretAccessKey" => Some(&mut c.secret_access_key),
            "node" => Some(&mut c.node),
            "addr" => Some(&mut c.addr),
            "prefix" => Some(&mut c.prefix),
            _ => None,
        };
        if let Some(slot) = text {
            *slot = r.string()?;
            return Ok(());
        }
        let flag = match name {
            "pathStyle" => Some(&mut c.path_style),
            "probe" => Some(&mut c.probe),
            _ => None,
        };
        if let Some(slot) = flag {
            *slot = r.boolean()?;
            return Ok(());
        }
        match name {
            "sessionToken" => c.session_token = r.opt_string()?.filter(|t| !t.is_empty()),
            "leaseTtlMs" => c.lease_ttl_ms = r.uint()?,
            "maxClockSkewMs" => c.max_clock_skew_ms = r.uint()?,
            "requestTimeoutMs" => {
                c.request_timeout_ms = u32::try_from(r.uint()?).map_err(|_| "requestTimeoutMs is too large".to_owned())?
            }
            _ => return Err(msg!("unknown option ", name)),
        }
        Ok(())
    })
    .map_err(|d| Error::invalid(msg!("S3Ownership options: ", d)))?;
    Ok(c)
}

type Task = Pin<Box<dyn Future<Output = Result<String, Error>>>>;

/// The wasm half of `S3Ownership`; `js/ownership.js` is the public class.
#[wasm_bindgen]
pub struct WasmOwnership {
    inner: Rc<S3Ownership<JsEnv>>,
    io: Rc<Io>,
    /// Operations in progress, by task id. A task is taken out while it is polled, so that anything
    /// JS does from inside a poll (an `onEvent` observer starting another operation) finds no borrow held.
    tasks: RefCell<Vec<(u32, Task)>>,
    next_task: Cell<u32>,
}

/// `node` as JSON: `null` when empty (a released record).
fn node_or_null(node: &str) -> Option<&str> {
    Some(node).filter(|n| !n.is_empty())
}

fn owner_record_json(r: &OwnerRecord) -> String {
    ObjectWriter::new().opt_str("node", node_or_null(&r.node)).uint("epoch", r.epoch).str("etag", &r.etag).finish()
}

fn owner_info_json(o: &OwnerInfo) -> String {
    let mut w = ObjectWriter::new();
    w.opt_str("node", node_or_null(&o.node)).uint("epoch", o.epoch);
    w.str("addr", &o.addr).boolean("live", o.live).finish()
}

/// `"applied"` / `"rejected"` as a JSON string.
fn outcome_json(o: CasOutcome) -> String {
    String::from(match o {
        CasOutcome::Applied => "\"applied\"",
        CasOutcome::Rejected => "\"rejected\"",
    })
}

/// JSON `null` as a result, made at one place (inlined, each `"null".into()` is an allocation and a copy).
#[inline(never)]
fn null() -> String {
    String::from("null")
}

/// Epochs cross as JS numbers: positive safe integers only.
fn epoch(e: f64) -> Result<u64, Error> {
    if super::is_whole(e) && (1.0..=9_007_199_254_740_991.0).contains(&e) {
        Ok(e as u64)
    } else {
        // No `{e}`: formatting an f64 would bring ~15 KB of float printing into the wasm.
        Err(Error::invalid("epoch is not a positive safe integer"))
    }
}

/// A non-negative safe integer (a lease expiry in Unix ms).
fn expires(ms: f64) -> Result<u64, Error> {
    if super::is_whole(ms) && (0.0..=9_007_199_254_740_991.0).contains(&ms) {
        Ok(ms as u64)
    } else {
        Err(Error::invalid("expiresMs is not a non-negative safe integer"))
    }
}

/// The guard of a conditional write: an ETag to match, or (none) "absent".
fn guard(etag: Option<&str>) -> CasGuard {
    etag.map_or(CasGuard::Absent, |t| CasGuard::Match(t.to_owned()))
}

/// The asynchronous operations, numbered as `OP` in `js/ownership.js`. They cross as one entry point,
/// `start`, instead of one method each: every exported method costs a wasm shim and a JS wrapper.
const READ_OWNER: u32 = 0;
const CAS_OWNER: u32 = 1;
const RELEASE_OWNER: u32 = 2;
const READ_NODE_LEASE: u32 = 3;
const CAS_NODE_LEASE: u32 = 4;
const ACQUIRE_LEASE: u32 = 5;
const RENEW_LEASE: u32 = 6;
const CLAIM: u32 = 7;
const RELEASE: u32 = 8;
const OWNER: u32 = 9;
const VERIFY: u32 = 10;
const PROBE: u32 = 11;
/// `claim(cell, { expectNew: true })`.
const CLAIM_NEW: u32 = 12;

/// Runs operation `op` with its arguments (`id`: the cell or node; `etag`: a guard's ETag, none meaning
/// "absent"; `n`: an epoch or expiry) and answers its result as JSON. Borrows its arguments: owned ones
/// would be dropped on every early exit of every operation inlined here.
async fn dispatch(o: &S3Ownership<JsEnv>, op: u32, id: &str, etag: Option<&str>, n: f64) -> Result<String, Error> {
    Ok(match op {
        READ_OWNER => o.read_owner(id).await?.as_ref().map_or_else(null, owner_record_json),
        CAS_OWNER => outcome_json(o.cas_owner(id, &guard(etag), epoch(n)?).await?),
        RELEASE_OWNER => outcome_json(o.release_owner(id, epoch(n)?).await?),
        READ_NODE_LEASE => match o.read_node_lease(id).await? {
            Some(l) => {
                let mut w = ObjectWriter::new();
                w.str("node", &l.node).uint("expiresMs", l.expires_ms);
                w.str("addr", &l.addr).str("etag", &l.etag).finish()
            }
            None => null(),
        },
        CAS_NODE_LEASE => match o.cas_node_lease(&guard(etag), expires(n)?).await? {
            (CasOutcome::Applied, etag) => {
                ObjectWriter::new().str("outcome", "applied").opt_str("etag", etag.as_deref()).finish()
            }
            (CasOutcome::Rejected, _) => ObjectWriter::new().str("outcome", "rejected").finish(),
        },
        ACQUIRE_LEASE => o.acquire_lease().await.map(|()| null())?,
        RENEW_LEASE => o.renew_lease().await.map(|()| null())?,
        CLAIM | CLAIM_NEW => match o.claim_with(id, ClaimOptions { expect_new: op == CLAIM_NEW }).await? {
            ClaimOutcome::Applied { epoch, took_over, prior } => {
                let mut w = ObjectWriter::new();
                w.str("outcome", "applied").uint("epoch", epoch);
                w.boolean("tookOver", took_over).raw("prior", &prior.as_ref().map_or_else(null, owner_record_json)).finish()
            }
            ClaimOutcome::Rejected { owner } => {
                ObjectWriter::new().str("outcome", "rejected").raw("owner", &owner_info_json(&owner)).finish()
            }
        },
        RELEASE => outcome_json(o.release(id).await?),
        OWNER => o.owner(id).await?.as_ref().map_or_else(null, owner_info_json),
        VERIFY => String::from(if o.verify(id, epoch(n)?).await? { "true" } else { "false" }),
        PROBE => {
            let r = o.probe().await?;
            let mut w = ObjectWriter::new();
            w.uint("ifMatchMissingStatus", r.if_match_missing_status.into());
            w.boolean("conditionalDelete", r.conditional_delete).boolean("etagQuoted", r.etag_quoted).finish()
        }
        _ => return Err(Error::invalid("unknown operation")),
    })
}

#[wasm_bindgen]
impl WasmOwnership {
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str, host: Host) -> Result<WasmOwnership, JsValue> {
        let config = config(options_json).map_err(js_error)?;
        let io = Rc::new(Io::default());
        let inner = S3Ownership::new(config, JsEnv { host, io: io.clone() }).map_err(js_error)?;
        Ok(WasmOwnership { inner: Rc::new(inner), io, tasks: RefCell::default(), next_task: Cell::new(0) })
    }

    /// Makes operation `op` (see `dispatch`) a task and answers its id; JS then calls `poll` with it.
    pub fn start(&self, op: u32, id: String, etag: Option<String>, n: f64) -> u32 {
        let inner = self.inner.clone();
        let task = self.next_task.get().wrapping_add(1);
        self.next_task.set(task);
        self.tasks.borrow_mut().push((task, Box::pin(async move { dispatch(&inner, op, &id, etag.as_deref(), n).await })));
        task
    }

    /// Advances task `task`: its JSON when it finished, `undefined` while it waits on I/O (the host was
    /// given every request it waits on), a thrown coded `Error` when it failed. Unknown tasks (finished
    /// ones) answer `undefined`.
    pub fn poll(&self, task: u32) -> Result<Option<String>, JsValue> {
        let taken = {
            let mut tasks = self.tasks.borrow_mut();
            let i = tasks.iter().position(|(t, _)| *t == task);
            i.map(|i| tasks.swap_remove(i).1)
        };
        let Some(mut fut) = taken else { return Ok(None) };
        self.io.task.set(task);
        match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(Ok(json)) => Ok(Some(json)),
            Poll::Ready(Err(e)) => Err(js_error(e)),
            Poll::Pending => {
                self.tasks.borrow_mut().push((task, fut));
                Ok(None)
            }
        }
    }

    /// The answer to request `io`: an HTTP status (100..=599) with its ETag as `text` and its body, or
    /// status 0 with `text` saying why there was none (`timed_out` when our own timer aborted it). Timers
    /// answer 0. One string for both: each optional string argument costs a conversion in the shim.
    pub fn resume(&self, io: u32, status: f64, text: Option<String>, body: Vec<u8>, timed_out: bool) {
        if !self.io.unwait(io) {
            return;
        }
        let answer = if timed_out {
            Err(TransportError::TimedOut)
        } else if (100.0..=599.0).contains(&status) {
            Ok(HttpResponse { status: status as u16, etag: text, body })
        } else {
            Err(TransportError::Network(text.unwrap_or_else(|| "fetch failed".into())))
        };
        self.io.answers.borrow_mut().push((io, answer));
    }

    #[wasm_bindgen(js_name = leaseValid)]
    pub fn lease_valid(&self) -> bool {
        self.inner.lease_valid()
    }

    /// Milliseconds between renewals (ttl / 3).
    #[wasm_bindgen(js_name = renewIntervalMs)]
    pub fn renew_interval_ms(&self) -> f64 {
        crate::ownership::lease::renew_interval_ms(self.inner.config().lease_ttl_ms) as f64
    }
}
