//! The seeded, single-threaded executor of the simulation: one true clock, an ordered event queue, the
//! network between the nodes and the store (latency, loss, brownouts), per-node clocks with bounded skew
//! and drift, and the `Env` each node's real `S3Ownership` runs on. Nodes pause (not polled, clocks keep
//! running), sleep like a machine (not polled, the monotonic clock stops while the wall clock runs), crash
//! (their task and instance are dropped; requests already sent still land), restart, or start late (a
//! second process). Tasks get real wakers: a future woken by another one of its node (a shared lease
//! write, a shared claim) is polled again at once.
//!
//! It must never read real time, spawn threads or iterate a hash map: every run is a pure function of its
//! seed, which is what lets a failing seed reproduce exactly.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use celld_edge::env::{Credentials, Env, Event as DriverEvent, HttpRequest, HttpResponse, Observer, TransportError};
use celld_edge::s3::format_http_date;

use crate::store::{Fault, FaultMix, SimStore, Tag};

/// Unix ms at true time 0 (any fixed instant works; this one is in 2023).
pub const EPOCH_MS: u64 = 1_700_000_000_000;

/// SplitMix64: tiny, fast, and good enough to draw a simulation from a seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    /// A child generator, so that adding draws in one place does not shift every other draw.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

/// One node's view of time: wall = true + offset + drift·true + the steps taken so far; mono = base +
/// (1 + drift)·(true − time asleep), for the machine sleeps in `stops` (true-time intervals during which
/// the monotonic clock stood). `steps` are (true time, ms) jumps of the wall clock, forward or back (NTP
/// stepping a clock, a user setting one). `preempted` are the (true time, ms) its thread lost the core right
/// after reading one of these clocks (a loaded machine, [`Load`]): the clocks ran on, the thread did not.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    pub offset_ms: f64,
    pub drift: f64,
    pub mono_base: f64,
    pub stops: Vec<(u64, u64)>,
    pub steps: Vec<(u64, f64)>,
    pub preempted: Vec<(u64, u64)>,
}

impl Clock {
    pub fn new(offset_ms: f64, drift: f64, mono_base: f64) -> Self {
        Clock { offset_ms, drift, mono_base, stops: Vec::new(), steps: Vec::new(), preempted: Vec::new() }
    }
    /// Whether anything but time moved the wall clock's lead over the monotonic clock in `(from, to]`: a
    /// step of the wall clock or a machine sleep, of any size (what a fence of the node's own lease for a
    /// lapse may rest on, beside its authority running out).
    pub fn stepped_or_slept(&self, from: u64, to: u64) -> bool {
        self.stops.iter().any(|&(a, b)| a < to && b > from) || self.steps.iter().any(|&(at, _)| at > from && at <= to)
    }
    /// How long its thread was preempted in `[from, to]` (true ms, of preemptions that began then).
    pub fn preempted_ms(&self, from: u64, to: u64) -> u64 {
        self.preempted.iter().filter(|&&(at, _)| at >= from && at <= to).map(|&(_, ms)| ms).sum()
    }
    /// Whether the wall clock's lead over the monotonic clock moved in `(from, to]` by more than the node's
    /// `OffsetWatch` lets pass: a machine sleep or a step of the wall clock (issue 34 A). The node's next
    /// reading ends every authority anchored before (the world draws no step that cancels a sleep).
    pub fn offset_moved(&self, from: u64, to: u64) -> bool {
        let slack = celld_edge::ownership::clock::OFFSET_SLACK_MS;
        let slept = self.stops.iter().any(|&(a, b)| a < to && b > from && (b.min(to) - a.max(from)) as f64 > slack);
        slept || self.steps.iter().any(|&(at, ms)| at > from && at <= to && ms.abs() > slack)
    }
    pub fn wall_ms(&self, now: u64) -> u64 {
        let stepped: f64 = self.steps.iter().filter(|&&(at, _)| at <= now).map(|&(_, ms)| ms).sum();
        (EPOCH_MS as f64 + now as f64 * (1.0 + self.drift) + self.offset_ms + stepped) as u64
    }
    pub fn mono_ms(&self, now: u64) -> f64 {
        let asleep: u64 = self.stops.iter().map(|&(a, b)| now.min(b).saturating_sub(a)).sum();
        self.mono_base + (now - asleep) as f64 * (1.0 + self.drift)
    }
}

/// A step back that cancels a sleep to within this (ms) leaves both clocks' advance, and their offset, as
/// if nothing had happened: no clock of the machine can see it (docs/protocol.md, "A sleep and a step
/// back"). The world draws none (the slack of `OffsetWatch`, and some).
const CANCELLING_MS: f64 = 100.0;

/// The store's clock at true time `at` (what its `Date` headers say, before rounding to the second): the
/// one true clock of the world.
pub fn store_ms(at: u64) -> u64 {
    EPOCH_MS + at
}

/// The true instant whose store clock an answer's `Date` shows when it is stamped at `at`: `at` itself, or
/// the store's last refresh of its cached `Date` (every second at `refresh` ms into it).
fn date_stamped_at(refresh: Option<u64>, at: u64) -> u64 {
    match refresh {
        Some(phase) if at >= phase => at - (at - phase) % 1_000,
        _ => at,
    }
}

/// Draws clocks whose pairwise wall difference stays within `max_skew_ms` for the whole run: offsets
/// within ±(skew/2 - drift budget), half of them pushed to the edges, where skew bugs show. The store's
/// clock ([`store_ms`]) is true time, so each is also within the skew of the store's.
pub fn draw_clocks(rng: &mut Rng, nodes: usize, max_skew_ms: u64, run_ms: u64, max_drift: f64) -> Vec<Clock> {
    let half = max_skew_ms as f64 / 2.0 - max_drift * run_ms as f64 - 1.0;
    assert!(half > 0.0, "drift budget exceeds the skew bound");
    (0..nodes)
        .map(|_| {
            let offset_ms = match rng.range(0, 3) {
                0 => -half,
                1 => half,
                _ => (rng.unit() * 2.0 - 1.0) * half,
            };
            let drift = (rng.unit() * 2.0 - 1.0) * max_drift;
            Clock::new(offset_ms, drift, rng.range(0, 1_000_000) as f64)
        })
        .collect()
}

/// Makes a clock arbitrary (issue 25: no wall clock may decide safety): its wall clock is off by anything
/// up to half a day (a third of them by exactly ±30 s, the cross-process race's setting, or not at all),
/// and in half of them it is stepped once or twice mid-run, forward or back, by 1 s to 2 h. Its drift and
/// monotonic clock are kept.
pub fn make_wild(rng: &mut Rng, clock: &mut Clock, run_ms: u64) {
    clock.offset_ms += match rng.range(0, 5) {
        0 => 30_000.0,
        1 => -30_000.0,
        2 => 0.0,
        _ => (rng.unit() * 2.0 - 1.0) * 43_200_000.0,
    };
    if rng.chance(0.5) {
        for _ in 0..rng.range(1, 2) {
            let ms = [1_000.0, 60_000.0, 7_200_000.0][rng.range(0, 2) as usize] * rng.unit().max(0.001);
            let ms = if rng.chance(0.5) { ms } else { -ms };
            clock.steps.push((rng.range(0, run_ms), ms));
        }
    }
}

/// A loaded machine (issue 34): each read of a clock by the node's thread is, with `chance`, followed by
/// the thread losing the core for a while, mostly a few ms, at times tens, now and then a few hundred (more
/// than `OffsetWatch`'s slack): the clocks run on meanwhile, so the next read (the wall clock read after
/// the monotonic one, say) comes that much later. Now and then (`starve`, per read) the thread is starved
/// for 50..500 ms: most of its reads then lose the core (`starved_chance`) for another thread's time slice,
/// 5..80 ms, so that every retry of a reading may come out wide. Drawn per life (`World::load_threads`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub chance: f64,
    pub starve: f64,
    pub starved_chance: f64,
}

/// A process's load in its current life: the life it was drawn for, the load, and until when (true time)
/// its thread is starved.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LifeLoad {
    life: u32,
    load: Option<Load>,
    starved_until: u64,
}

impl Load {
    /// A life's load: none in three lives of five, else up to 3 % of its clock reads preempted, and up to
    /// 0.2 % of them beginning a starved stretch where 50..95 % are.
    fn draw(rng: &mut Rng) -> Option<Load> {
        rng.chance(0.4).then(|| Load {
            chance: 0.002 + rng.unit() * 0.028,
            starve: rng.unit() * 0.002,
            starved_chance: 0.5 + rng.unit() * 0.45,
        })
    }
    /// Another thread's time slice, while this one is starved (ms).
    fn starved_ms(rng: &mut Rng) -> u64 {
        rng.range(5, 80)
    }
    /// How long one preemption lasts (ms).
    fn preemption_ms(rng: &mut Rng) -> u64 {
        match rng.range(0, 19) {
            0..=12 => rng.range(1, 10),
            13..=18 => rng.range(10, 60),
            _ => rng.range(60, 400),
        }
    }
}

/// What happens to nodes during a run, drawn from the seed before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chaos {
    /// Not polled for `ms` (a GC-like freeze); clocks keep running, answers queue up.
    Pause { node: usize, ms: u64 },
    /// The machine sleeps for `ms`: not polled, and its monotonic clock stops while its wall clock (and
    /// everyone else) goes on, as `performance.now()` does in Node, Deno and browsers.
    Sleep { node: usize, ms: u64 },
    /// Issue 34 A: the machine sleeps `ms` from the moment it sends its next lease write (the request queued,
    /// its answer waiting for the wake), and its wall clock is stepped by `step_ms` (forward or back, up to
    /// minutes) at a drawn instant of the sleep.
    SleepStepped { node: usize, ms: u64, step_ms: i64 },
    /// Task and instance dropped; a fresh instance under the same node id starts `ms` later.
    Crash { node: usize, ms: u64 },
    /// Every request of the node is lost for `ms` (its lease runs out while it keeps running).
    Partition { node: usize, ms: u64 },
    /// The store holds every request for `ms`; callers without a timeout wait it out.
    Brownout { ms: u64 },
}

#[derive(Debug)]
enum Event {
    /// A request reaches the store.
    Arrive(u64),
    /// The answer (or a network error) reaches the caller.
    Deliver(u64, Result<HttpResponse, TransportError>),
    /// The caller's timeout for a request fires.
    Timeout(u64),
    /// A `sleep` ends.
    Wake(u64),
    Chaos(Chaos),
    Resume(usize),
    Restart(usize),
}

struct Pending {
    node: usize,
    incarnation: u32,
    tag: Tag,
    req: Option<HttpRequest>,
    done: bool,
}

#[derive(Debug, Clone, Default)]
struct NodeState {
    incarnation: u32,
    paused_until: u64,
    crashed: bool,
    partitioned_until: u64,
    op: u64,
    runnable: bool,
    /// The workload loop returned (the run is over for this node).
    finished: bool,
    /// Its requests may be delivered twice (`FaultMix::twice`): an edge process's runtime.
    resent: bool,
    /// It is not shown the `Date` header (a browser whose bucket's CORS rule does not expose it).
    no_dates: bool,
    /// A machine sleep of (ms, wall step ms) armed to begin as its next lease write is sent (`Chaos::SleepStepped`).
    sleep_on_lease_write: Option<(u64, f64)>,
    /// Its next owner-record write is held this long on its way to the store (a slow request: issue 34 B).
    hold_owner_write: Option<u64>,
    /// Its thread is preempted between clock reads (`World::load_threads`).
    load: Option<LifeLoad>,
}

/// The mutable state of one simulated world (network, store, nodes), shared by the nodes' `Env`s.
pub struct World {
    now: Cell<u64>,
    /// The node being polled, if any, and how far its thread is ahead of `now` (preempted in this poll:
    /// its clocks read, and what it sends leaves, that much later; it is not polled again before).
    polling: Cell<Option<usize>>,
    thread_at: Cell<u64>,
    inner: RefCell<Inner>,
    /// Per node: woken since its last poll.
    wakes: Vec<Arc<NodeWake>>,
}

/// A node's waker: records that something of the node's task asked to be polled again.
#[derive(Default)]
struct NodeWake(AtomicBool);

impl Wake for NodeWake {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

struct Inner {
    queue: BTreeMap<(u64, u64), Event>,
    seq: u64,
    pending: BTreeMap<u64, Pending>,
    completions: BTreeMap<u64, Result<HttpResponse, TransportError>>,
    next_id: u64,
    next_op: u64,
    nodes: Vec<NodeState>,
    clocks: Vec<Clock>,
    rngs: Vec<Rng>,
    /// Per node: the draws of its load and preemptions (apart, so that the other draws keep theirs).
    loads: Vec<Rng>,
    net: Rng,
    mix: FaultMix,
    brownout_until: u64,
    store: SimStore,
    /// The true instant (mod 1 s) at which the store refreshes the `Date` it caches, if it caches one.
    date_refresh: Option<u64>,
    /// Requests already delivered twice.
    resent: std::collections::BTreeSet<u64>,
    /// A line per request event, when tracing (replaying one seed).
    trace: Option<Vec<String>>,
}

impl Inner {
    fn schedule(&mut self, at: u64, ev: Event) {
        self.seq += 1;
        self.queue.insert((at, self.seq), ev);
    }
}

impl World {
    pub fn new(seed: u64, clocks: Vec<Clock>, mix: FaultMix, store: SimStore) -> Rc<World> {
        let mut rng = Rng::new(seed);
        let n = clocks.len();
        let rngs = (0..n).map(|_| rng.fork()).collect();
        let mut loads = Rng::new(seed ^ 0x10ad_34c);
        let loads = (0..n).map(|_| loads.fork()).collect();
        Rc::new(World {
            wakes: (0..n).map(|_| Arc::default()).collect(),
            now: Cell::new(0),
            polling: Cell::new(None),
            thread_at: Cell::new(0),
            inner: RefCell::new(Inner {
                queue: BTreeMap::new(),
                seq: 0,
                pending: BTreeMap::new(),
                completions: BTreeMap::new(),
                next_id: 0,
                next_op: 0,
                nodes: vec![NodeState::default(); n],
                clocks,
                rngs,
                loads,
                net: rng.fork(),
                mix,
                brownout_until: 0,
                store,
                date_refresh: None,
                resent: Default::default(),
                trace: None,
            }),
        })
    }

    /// Starts keeping a line per request event (see `take_trace`).
    pub fn enable_trace(&self) {
        self.inner.borrow_mut().trace = Some(Vec::new());
    }

    /// Adds a line to the trace, when tracing (`line` is built only then).
    pub fn note(&self, line: impl FnOnce() -> String) {
        if let Some(t) = &mut self.inner.borrow_mut().trace {
            let now = self.now();
            t.push(format!("t={now} {}", line()));
        }
    }

    pub fn take_trace(&self) -> Vec<String> {
        self.inner.borrow_mut().trace.take().unwrap_or_default()
    }

    /// True time: the world's, or inside a node's poll the node's thread's (later, once it was preempted).
    pub fn now(&self) -> u64 {
        match self.polling.get() {
            Some(_) => self.now.get().max(self.thread_at.get()),
            None => self.now.get(),
        }
    }

    /// Lets `node`'s thread be preempted between its clock reads, with a [`Load`] drawn for each of its lives.
    pub fn load_threads(&self, node: usize) {
        self.inner.borrow_mut().nodes[node].load = Some(LifeLoad { life: u32::MAX, load: None, starved_until: 0 });
    }

    /// After `node`'s thread read one of its clocks: with its life's load, it loses the core for a while.
    fn clock_read(&self, node: usize, incarnation: u32) {
        if self.polling.get() != Some(node) {
            return; // the observer's reads between events: no thread of the node
        }
        let now = self.now();
        let mut inner = self.inner.borrow_mut();
        let inner = &mut *inner;
        let Some(life) = &mut inner.nodes[node].load else { return };
        let rng = &mut inner.loads[node];
        if life.life != incarnation {
            *life = LifeLoad { life: incarnation, load: Load::draw(rng), starved_until: 0 };
        }
        let Some(load) = life.load else { return };
        if now >= life.starved_until && rng.chance(load.starve) {
            life.starved_until = now + rng.range(50, 500);
        }
        let starved = now < life.starved_until;
        if !rng.chance(if starved { load.starved_chance } else { load.chance }) {
            return;
        }
        let ms = if starved { Load::starved_ms(rng) } else { Load::preemption_ms(rng) };
        inner.clocks[node].preempted.push((now, ms));
        inner.store.count(Fault::ThreadPreempted);
        if let Some(t) = &mut inner.trace {
            t.push(format!("t={now} node {node} (life {incarnation}) loses the core for {ms} ms after a clock read"));
        }
        self.thread_at.set(now + ms);
    }

    pub fn wall_ms(&self, node: usize) -> u64 {
        let now = self.now();
        self.inner.borrow().clocks[node].wall_ms(now)
    }

    /// A fresh operation id (see [`tagged`]).
    pub fn new_op(&self) -> u64 {
        let mut inner = self.inner.borrow_mut();
        inner.next_op += 1;
        inner.next_op
    }

    pub fn incarnation(&self, node: usize) -> u32 {
        self.inner.borrow().nodes[node].incarnation
    }

    /// True when the node is running now (not paused, not crashed): only then can it act.
    pub fn is_running(&self, node: usize) -> bool {
        let inner = self.inner.borrow();
        let st = &inner.nodes[node];
        !st.crashed && st.paused_until <= self.now()
    }

    /// Puts `body` at `key` before the run, as `writer` (what was in the bucket before the nodes started).
    pub fn plant(&self, key: &str, body: &[u8], writer: Tag) {
        self.inner.borrow_mut().store.plant(key, body, writer, 0);
    }

    pub fn into_store(self: Rc<World>) -> SimStore {
        match Rc::try_unwrap(self) {
            Ok(w) => w.inner.into_inner().store,
            Err(_) => panic!("the world is still shared: drop every node before taking the store"),
        }
    }

    pub fn schedule_chaos(&self, at: u64, chaos: Chaos) {
        self.inner.borrow_mut().schedule(at, Event::Chaos(chaos));
    }

    /// Makes the store answer with a `Date` it caches and refreshes once a second, at `phase` ms into each
    /// second of true time (fasthttp's servers, versitygw among them): up to a second older than its clock.
    pub fn cache_dates(&self, phase: u64) {
        self.inner.borrow_mut().date_refresh = Some(phase % 1_000);
    }

    /// Hides the `Date` header of every answer from `node` (a browser whose bucket's CORS rule does not
    /// expose it): it never learns the store's clock.
    pub fn hide_dates(&self, node: usize) {
        self.inner.borrow_mut().nodes[node].no_dates = true;
    }

    /// Arms a machine sleep of `ms` to begin as `node` sends its next lease write, its wall clock stepped by
    /// `step_ms` during it (`Chaos::SleepStepped`, at once).
    pub fn nap_on_next_lease_write(&self, node: usize, ms: u64, step_ms: i64) {
        let mut inner = self.inner.borrow_mut();
        if !inner.nodes[node].crashed {
            inner.nodes[node].sleep_on_lease_write = Some((ms, step_ms as f64));
        }
    }

    /// Holds `node`'s next owner-record write `ms` on its way to the store (a slow request in a queue):
    /// a write that lands after the operations sent after it.
    pub fn hold_next_owner_write(&self, node: usize, ms: u64) {
        self.inner.borrow_mut().nodes[node].hold_owner_write = Some(ms);
    }

    /// Lets `node`'s requests be delivered twice (`FaultMix::twice`).
    pub fn resends(&self, node: usize) {
        self.inner.borrow_mut().nodes[node].resent = true;
    }

    /// Starts `node` only at `at` (a second process started later), as its life 1.
    pub fn start_at(&self, node: usize, at: u64) {
        let mut inner = self.inner.borrow_mut();
        inner.nodes[node].crashed = true;
        inner.schedule(at, Event::Restart(node));
    }

    /// The clocks as they ran (with the machine sleeps that happened).
    pub fn clocks(&self) -> Vec<Clock> {
        self.inner.borrow().clocks.clone()
    }

    /// Registers a request sent now by `node`; returns its id. Decides at once whether the network
    /// loses it, and schedules its arrival at the store or the caller's network error and timeout.
    fn submit(&self, node: usize, incarnation: u32, req: HttpRequest, timeout_ms: Option<u32>) -> u64 {
        self.submit_held(node, incarnation, req, timeout_ms, 0)
    }

    /// `submit`, with the request held `hold_ms` on its way to the store (a delete that lands late).
    fn submit_held(&self, node: usize, incarnation: u32, req: HttpRequest, timeout_ms: Option<u32>, hold_ms: u64) -> u64 {
        let now = self.now();
        let mut inner = self.inner.borrow_mut();
        let inner = &mut *inner;
        inner.next_id += 1;
        let id = inner.next_id;
        let tag = Tag { node, incarnation, op: inner.nodes[node].op, sent: now };
        if let Some(t) = timeout_ms {
            inner.schedule(now + t as u64, Event::Timeout(id));
        }
        inner.store.note_sent(tag.op, req.method);
        if req.method == "PUT" && req.url.contains("/nodes/") {
            let cond = req.header("if-match").or(req.header("if-none-match")).unwrap_or("");
            inner.store.note_lease_send(tag, cond, &req.body);
        }
        if req.method == "PUT" && req.url.contains("/nodes/") {
            if let Some((ms, step_ms)) = inner.nodes[node].sleep_on_lease_write.take() {
                World::sleep_machine(inner, node, now, ms, step_ms);
            }
        }
        let mut hold_ms = hold_ms;
        if req.method == "PUT" && req.url.contains("/cells/") {
            hold_ms += inner.nodes[node].hold_owner_write.take().unwrap_or(0);
        }
        let partitioned = inner.nodes[node].partitioned_until > now;
        let lost = partitioned || inner.net.chance(inner.mix.lose_request);
        if let Some(t) = &mut inner.trace {
            let cond = req.header("if-match").or(req.header("if-none-match")).unwrap_or("");
            let body = String::from_utf8_lossy(&req.body);
            let key = req.url.rsplit_once(".sim/").map_or(req.url.as_str(), |(_, k)| k);
            t.push(format!(
                "t={now} req#{id} {tag:?} {} {key} [{cond}] {body} timeout={timeout_ms:?} lost={lost}",
                req.method
            ));
        }
        if lost {
            inner.store.count(Fault::RequestLost);
            // Either the connection fails fast, or the request vanishes and only a timeout ends it
            // (a runtime's fetch gives up on its own eventually).
            let after = if inner.net.chance(0.5) { inner.net.range(1, 50) } else { inner.net.range(2_000, 10_000) };
            inner.schedule(now + after, Event::Deliver(id, Err(TransportError::Network("connection reset".into()))));
            inner.pending.insert(id, Pending { node, incarnation, tag, req: None, done: false });
        } else {
            let latency = inner.mix.latency(&mut inner.net) + hold_ms;
            inner.schedule(now + latency, Event::Arrive(id));
            inner.pending.insert(id, Pending { node, incarnation, tag, req: Some(req), done: false });
        }
        id
    }

    /// The machine of `node` sleeps `ms` from `at` (not polled; its monotonic clock stands), its wall clock
    /// stepped by `step_ms` at an instant of the sleep (none when the step would cancel the sleep).
    fn sleep_machine(inner: &mut Inner, node: usize, at: u64, ms: u64, step_ms: f64) {
        if inner.nodes[node].crashed {
            return;
        }
        inner.store.count(Fault::NodeSlept);
        inner.store.downtime.push((node, at, at + ms));
        // Never over a sleep still running (a life restarted within it keeps its machine's stopped clock).
        let asleep_until = inner.clocks[node].stops.iter().map(|&(_, b)| b).max().unwrap_or(0);
        let (from, until) = (at.max(inner.nodes[node].paused_until).max(asleep_until), at + ms);
        if from < until {
            inner.clocks[node].stops.push((from, until));
            let asleep = (until - from) as f64;
            if step_ms != 0.0 && (asleep + step_ms).abs() > CANCELLING_MS {
                let when = inner.net.range(from, until);
                inner.clocks[node].steps.push((when, step_ms));
            }
        }
        inner.nodes[node].paused_until = inner.nodes[node].paused_until.max(until);
        inner.schedule(until, Event::Resume(node));
    }

    fn timer(&self, node: usize, incarnation: u32, ms: u32) -> u64 {
        let now = self.now();
        let mut inner = self.inner.borrow_mut();
        inner.next_id += 1;
        let id = inner.next_id;
        let tag = Tag { node, incarnation, op: 0, sent: now };
        inner.pending.insert(id, Pending { node, incarnation, tag, req: None, done: false });
        inner.schedule(now + ms as u64, Event::Wake(id));
        id
    }

    fn take_completion(&self, id: u64) -> Option<Result<HttpResponse, TransportError>> {
        self.inner.borrow_mut().completions.remove(&id)
    }

    /// Completes a pending request/timer for its caller, if the caller still waits for it.
    fn complete(inner: &mut Inner, id: u64, result: Result<HttpResponse, TransportError>) {
        let Some(p) = inner.pending.get_mut(&id) else { return };
        if p.done {
            return;
        }
        p.done = true;
        let (node, incarnation) = (p.node, p.incarnation);
        if p.req.is_none() {
            inner.pending.remove(&id);
        }
        if inner.nodes[node].incarnation == incarnation && !inner.nodes[node].crashed {
            inner.completions.insert(id, result);
            inner.nodes[node].runnable = true;
        }
    }

    /// Handles the next event; returns false when the queue is empty or the next event is past `until`.
    fn step(&self, until: u64, factory: &mut dyn FnMut(usize, u32) -> Task, tasks: &mut [Option<Task>]) -> bool {
        let (at, ev) = {
            let mut inner = self.inner.borrow_mut();
            match inner.queue.first_key_value() {
                Some((&(at, _), _)) if at <= until => {}
                _ => return false,
            }
            let ((at, _), ev) = inner.queue.pop_first().expect("checked non-empty");
            (at, ev)
        };
        self.now.set(at);
        let mut guard = self.inner.borrow_mut();
        let inner = &mut *guard;
        match ev {
            Event::Arrive(id) => {
                if inner.brownout_until > at {
                    inner.store.count(Fault::BrownoutHeld);
                    let release = inner.brownout_until + inner.net.range(0, 20);
                    inner.schedule(release, Event::Arrive(id));
                } else {
                    let p = inner.pending.get_mut(&id).expect("arrivals belong to pending requests");
                    let req = p.req.take().expect("a request arrives once");
                    let tag = p.tag;
                    if p.done {
                        // Its caller gave up already; the request still lands, nobody hears the answer.
                        inner.pending.remove(&id);
                    }
                    let (answer, latency) = inner.store.serve(&req, tag, at, &mut inner.net, &inner.mix);
                    // Every answer carries the store's clock, in whole seconds, as real stores send it.
                    let dated = !inner.nodes[tag.node].no_dates;
                    let stamped = date_stamped_at(inner.date_refresh, at);
                    let answer = answer.map(|r| HttpResponse { date: dated.then(|| format_http_date(store_ms(stamped))), ..r });
                    // Delivered twice: this answer dies with its connection, and the request is sent again.
                    // Not the store probe's scratch writes: its verdict on a store that sees a request twice is
                    // not modelled (docs/simulation.md, Limits).
                    let again = inner.nodes[tag.node].resent
                        && !req.url.contains("/probe/")
                        && !inner.resent.contains(&id)
                        // DELETEs (close()'s, a dead lease's clean-up) are few: delivered twice more often.
                        && inner.net.chance(if req.method == "DELETE" { inner.mix.twice.max(0.25) } else { inner.mix.twice });
                    if again {
                        inner.store.count(Fault::DeliveredTwice);
                        inner.resent.insert(id);
                        if let Some(t) = &mut inner.trace {
                            t.push(format!("t={at} req#{id} lands, its answer is lost and the request is sent again"));
                        }
                        let p = inner.pending.entry(id).or_insert(Pending { node: tag.node, incarnation: tag.incarnation, tag, req: None, done: true });
                        p.req = Some(req);
                        let after = inner.net.range(1, 30);
                        inner.schedule(at + after, Event::Arrive(id));
                        return true;
                    }
                    if let Some(t) = &mut inner.trace {
                        let what = answer.as_ref().map(|r| (r.status, r.etag.clone()));
                        t.push(format!("t={at} req#{id} lands: answer {what:?} due t={}", at + latency));
                    }
                    match answer {
                        Some(resp) => inner.schedule(at + latency, Event::Deliver(id, Ok(resp))),
                        None => {
                            // The answer is lost: a reset soon, or silence until the caller's timeout.
                            if inner.net.chance(0.5) {
                                let err = Err(TransportError::Network("connection closed".into()));
                                inner.schedule(at + latency, Event::Deliver(id, err));
                            } else {
                                let err = Err(TransportError::Network("no answer".into()));
                                let after = inner.net.range(2_000, 10_000);
                                inner.schedule(at + after, Event::Deliver(id, err));
                            }
                        }
                    }
                }
            }
            Event::Deliver(id, result) => {
                if let Some(t) = &mut inner.trace {
                    let waiting = inner.pending.get(&id).is_some_and(|p| !p.done);
                    let what = result.as_ref().map(|r| r.status);
                    t.push(format!("t={at} req#{id} delivered {what:?} (caller waiting: {waiting})"));
                }
                World::complete(inner, id, result)
            }
            Event::Timeout(id) => {
                if let Some(t) = &mut inner.trace {
                    if inner.pending.get(&id).is_some_and(|p| !p.done) {
                        t.push(format!("t={at} req#{id} timed out"));
                    }
                }
                World::complete(inner, id, Err(TransportError::TimedOut))
            }
            Event::Wake(id) => World::complete(inner, id, Ok(HttpResponse { status: 0, etag: None, body: Vec::new(), date: None })),
            Event::Chaos(chaos) => match chaos {
                Chaos::Pause { node, ms } => {
                    if !inner.nodes[node].crashed {
                        inner.store.count(Fault::NodePaused);
                        inner.store.downtime.push((node, at, at + ms));
                        let until = at + ms;
                        inner.nodes[node].paused_until = inner.nodes[node].paused_until.max(until);
                        inner.schedule(until, Event::Resume(node));
                    }
                }
                Chaos::Sleep { node, ms } => World::sleep_machine(inner, node, at, ms, 0.0),
                Chaos::SleepStepped { node, ms, step_ms } => {
                    if !inner.nodes[node].crashed {
                        inner.nodes[node].sleep_on_lease_write = Some((ms, step_ms as f64));
                    }
                }
                Chaos::Crash { node, ms } => {
                    if !inner.nodes[node].crashed {
                        inner.store.count(Fault::NodeCrashed);
                        inner.store.downtime.push((node, at, at + ms));
                        inner.nodes[node].crashed = true;
                        inner.nodes[node].runnable = false;
                        tasks[node] = None;
                        inner.schedule(at + ms, Event::Restart(node));
                    }
                }
                Chaos::Partition { node, ms } => {
                    inner.store.count(Fault::NodePartitioned);
                    inner.nodes[node].partitioned_until = at + ms;
                }
                Chaos::Brownout { ms } => {
                    inner.store.count(Fault::Brownout);
                    inner.brownout_until = inner.brownout_until.max(at + ms);
                }
            },
            Event::Resume(node) => inner.nodes[node].runnable = true,
            Event::Restart(node) => {
                let st = &mut inner.nodes[node];
                st.crashed = false;
                st.paused_until = 0;
                st.incarnation += 1;
                st.runnable = true;
            }
        }
        // Restarted nodes need a task; built after releasing the borrow.
        let restarts: Vec<(usize, u32)> = inner
            .nodes
            .iter()
            .enumerate()
            .filter(|(n, st)| !st.crashed && !st.finished && tasks[*n].is_none())
            .map(|(n, st)| (n, st.incarnation))
            .collect();
        drop(guard);
        for (node, incarnation) in restarts {
            tasks[node] = Some(factory(node, incarnation));
        }
        true
    }

    /// Polls every runnable node that is not paused or crashed.
    fn poll_runnable(&self, tasks: &mut [Option<Task>]) {
        let now = self.now();
        for (node, slot) in tasks.iter_mut().enumerate() {
            let go = {
                let mut inner = self.inner.borrow_mut();
                let st = &mut inner.nodes[node];
                if st.runnable && !st.crashed && st.paused_until <= now {
                    st.runnable = false;
                    true
                } else {
                    false
                }
            };
            if !go {
                continue;
            }
            let waker = Waker::from(self.wakes[node].clone());
            self.polling.set(Some(node));
            self.thread_at.set(now);
            while let Some(task) = slot {
                self.wakes[node].0.store(false, Ordering::SeqCst);
                let mut cx = Context::from_waker(&waker);
                if task.as_mut().poll(&mut cx).is_ready() {
                    *slot = None;
                    self.inner.borrow_mut().nodes[node].finished = true;
                }
                // Woken from inside its own poll (one future finished what another waits for): again.
                if !self.wakes[node].0.load(Ordering::SeqCst) {
                    break;
                }
            }
            self.polling.set(None);
            // Preempted in this poll: its thread is that far ahead, and runs again only once the world is
            // there (what arrives meanwhile queues up, as in a pause).
            let ahead = self.thread_at.get();
            if ahead > now {
                let mut inner = self.inner.borrow_mut();
                let st = &mut inner.nodes[node];
                st.paused_until = st.paused_until.max(ahead);
                inner.store.downtime.push((node, now, ahead));
                inner.schedule(ahead, Event::Resume(node));
            }
        }
    }
}

/// A node's whole life as one future (its workload loop).
pub type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Runs the world until true time `until`: `factory(node, incarnation)` builds each node's task (at start
/// and after every restart); `observe` runs after every event, while no task is being polled.
pub fn run(
    world: &Rc<World>,
    nodes: usize,
    until: u64,
    mut factory: impl FnMut(usize, u32) -> Task,
    mut observe: impl FnMut(),
) {
    let late: Vec<bool> = world.inner.borrow().nodes.iter().map(|st| st.crashed).collect();
    let mut tasks: Vec<Option<Task>> = (0..nodes).map(|n| (!late[n]).then(|| factory(n, 0))).collect();
    {
        let mut inner = world.inner.borrow_mut();
        for st in inner.nodes.iter_mut() {
            st.runnable = !st.crashed;
        }
    }
    world.poll_runnable(&mut tasks);
    while world.step(until, &mut factory, &mut tasks) {
        world.poll_runnable(&mut tasks);
        observe();
    }
    // Drop every node (and its Env's handle on the world) before anyone takes the store.
    tasks.clear();
}

/// Runs `fut` as operation `op` of `node`: every request it sends carries that op id, even while another
/// loop of the same node (a renewal loop) runs operations of its own in between.
pub fn tagged<F: Future>(world: &Rc<World>, node: usize, op: u64, fut: F) -> Tagged<F> {
    Tagged { world: world.clone(), node, op, inner: Box::pin(fut) }
}

pub struct Tagged<F> {
    world: Rc<World>,
    node: usize,
    op: u64,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Tagged<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Requests are sent only from inside a poll, so setting the op here attributes each exactly.
        self.world.inner.borrow_mut().nodes[self.node].op = self.op;
        self.inner.as_mut().poll(cx)
    }
}

/// Polls two futures until both finish (an operation loop beside a renewal loop, as `startRenewing`).
pub struct Both(pub Option<Task>, pub Option<Task>);

impl Future for Both {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        for slot in [&mut this.0, &mut this.1] {
            if slot.as_mut().is_some_and(|f| f.as_mut().poll(cx).is_ready()) {
                *slot = None;
            }
        }
        if self.0.is_none() && self.1.is_none() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// Waits for a request or timer of the world to complete.
struct Completion {
    world: Rc<World>,
    id: u64,
}

impl Future for Completion {
    type Output = Result<HttpResponse, TransportError>;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.world.take_completion(self.id) {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }
}

/// What a node hands on of the driver's events (the workload's ledger of installed leases).
pub type EventHook = Rc<dyn Fn(&DriverEvent<'_>)>;

/// A node's observer: its events to the workload's hook.
pub struct Hooked(pub EventHook);

impl Observer for Hooked {
    fn observe(&self, event: DriverEvent<'_>) {
        (self.0)(&event)
    }
}

/// Told of every write (PUT, DELETE) a node's `Env` sends, as it is sent: the operation it is tagged
/// with, and `METHOD url`.
pub type WriteWatch = Rc<dyn Fn(u64, String)>;

/// A credentials provider (a token service): it answers after 1..20 ms, or with chance `slow` after
/// 500..3000 ms (a provider that hangs a while), with keys that live 12..24 s: by the driver's rule due for
/// a refresh halfway (6..12 s after they were fetched) and not used in their last quarter.
#[derive(Debug, Clone, Copy)]
pub struct Provider {
    pub slow: f64,
}

/// One node incarnation's `Env`: its own clocks and randomness, the shared simulated network and store.
pub struct SimEnv {
    world: Rc<World>,
    node: usize,
    incarnation: u32,
    writes: Option<WriteWatch>,
    provider: Option<Provider>,
}

impl SimEnv {
    pub fn new(world: Rc<World>, node: usize, incarnation: u32) -> Self {
        SimEnv { world, node, incarnation, writes: None, provider: None }
    }

    pub fn with_write_watch(mut self, watch: WriteWatch) -> Self {
        self.writes = Some(watch);
        self
    }

    pub fn with_provider(mut self, provider: Provider) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Sends a request that is held `hold_ms` on its way to the store (an outside actor's late delete).
    pub async fn send_held(&self, req: HttpRequest, hold_ms: u64) -> Result<HttpResponse, TransportError> {
        let id = self.world.submit_held(self.node, self.incarnation, req, None, hold_ms);
        Completion { world: self.world.clone(), id }.await
    }
}

impl Env for SimEnv {
    async fn send(&self, req: HttpRequest, timeout_ms: Option<u32>) -> Result<HttpResponse, TransportError> {
        if let Some(watch) = self.writes.as_ref().filter(|_| req.method != "GET") {
            let op = self.world.inner.borrow().nodes[self.node].op;
            watch(op, format!("{} {}", req.method, req.url));
        }
        let id = self.world.submit(self.node, self.incarnation, req, timeout_ms);
        Completion { world: self.world.clone(), id }.await
    }
    fn wall_ms(&self) -> u64 {
        let wall = self.world.wall_ms(self.node);
        self.world.clock_read(self.node, self.incarnation);
        wall
    }
    fn mono_ms(&self) -> f64 {
        let now = self.world.now();
        let mono = self.world.inner.borrow().clocks[self.node].mono_ms(now);
        self.world.clock_read(self.node, self.incarnation);
        mono
    }
    fn random_u64(&self) -> u64 {
        self.world.inner.borrow_mut().rngs[self.node].next_u64()
    }
    async fn sleep(&self, ms: u32) {
        let id = self.world.timer(self.node, self.incarnation, ms);
        let _ = Completion { world: self.world.clone(), id }.await;
    }
    async fn credentials(&self) -> Result<Credentials, celld_edge::error::Fault> {
        let Some(provider) = self.provider else { return Err("no credentials provider".into()) };
        let (ms, n, life) = {
            let mut inner = self.world.inner.borrow_mut();
            let rng = &mut inner.rngs[self.node];
            let slow = rng.chance(provider.slow);
            let ms = if slow { rng.range(500, 3_000) } else { rng.range(1, 20) };
            let life = rng.range(12_000, 24_000);
            inner.store.credentials_asked += 1;
            inner.store.credentials_slow += u64::from(slow);
            (ms, inner.store.credentials_asked, life)
        };
        self.world.note(|| format!("node {} (life {}) asks its credentials provider: {ms} ms", self.node, self.incarnation));
        self.sleep(ms as u32).await;
        let (now, wall) = (self.world.now(), self.wall_ms());
        self.world.inner.borrow_mut().store.keys.push((self.node, self.incarnation, now, wall, wall + life));
        let expires_ms = Some(wall + life);
        self.world.note(|| format!("node {} (life {}) got keys #{n}, {life} ms to live", self.node, self.incarnation));
        Ok(Credentials { access_key_id: format!("ASIASIM{n}"), secret_access_key: format!("sim-secret-{n}"), session_token: Some(format!("token-{n}")), expires_ms })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(url: &str) -> HttpRequest {
        HttpRequest {
            method: "GET",
            url: url.to_owned(),
            headers: vec![("authorization".into(), "x".into())],
            body: Vec::new(),
        }
    }

    #[test]
    fn clocks_stay_within_the_skew_bound_for_the_whole_run() {
        let mut rng = Rng::new(7);
        for _ in 0..200 {
            let clocks = draw_clocks(&mut rng, 16, 400, 80_000, 5e-4);
            for t in [0, 40_000, 80_000] {
                let walls: Vec<u64> = clocks.iter().map(|c| c.wall_ms(t)).collect();
                let spread = walls.iter().max().unwrap() - walls.iter().min().unwrap();
                assert!(spread <= 400, "spread {spread} at t={t}");
            }
            for c in &clocks {
                assert!(c.mono_ms(1_000) > c.mono_ms(999), "monotonic clocks move forward");
            }
        }
    }

    #[test]
    fn wild_clocks_are_hours_off_and_step_both_ways_while_the_monotonic_clock_runs_on() {
        let mut rng = Rng::new(11);
        let (mut far, mut forward, mut back) = (0, 0, 0);
        for _ in 0..300 {
            let mut c = draw_clocks(&mut rng, 1, 400, 80_000, 5e-4).remove(0);
            let before = c.clone();
            make_wild(&mut rng, &mut c, 20_000);
            far += usize::from(c.wall_ms(0).abs_diff(store_ms(0)) > 3_600_000);
            for &(at, ms) in &c.steps {
                let jump = c.wall_ms(at) as f64 - c.wall_ms(at.saturating_sub(1)) as f64;
                assert!(at == 0 || (jump - ms).abs() < 2.0, "a step of {ms} shows as {jump}");
                forward += usize::from(ms > 0.0);
                back += usize::from(ms < 0.0);
            }
            assert_eq!(c.mono_ms(12_345), before.mono_ms(12_345), "the monotonic clock is untouched");
        }
        assert!(far > 100 && forward > 50 && back > 50, "{far} hours off, {forward} steps forward, {back} back");
    }


    /// Two nodes: one sends with a short timeout into a brownout, one sleeps; returns what each saw.
    fn scenario(seed: u64) -> Vec<(u64, String)> {
        let clocks = vec![Clock::default(); 2];
        let world = World::new(seed, clocks, FaultMix::default(), SimStore::new("b"));
        world.schedule_chaos(0, Chaos::Brownout { ms: 1_000 });
        let seen: Rc<RefCell<Vec<(u64, String)>>> = Rc::default();
        let (w, s) = (world.clone(), seen.clone());
        run(
            &world,
            2,
            5_000,
            move |node, inc| {
                let env = SimEnv::new(w.clone(), node, inc);
                let (w, s) = (w.clone(), s.clone());
                Box::pin(async move {
                    if node == 0 {
                        env.sleep(1).await; // let the brownout begin
                        let r = env.send(get("http://h/b/k"), Some(300)).await;
                        s.borrow_mut().push((w.now(), format!("timeout {r:?}")));
                        let r = env.send(get("http://h/b/k"), None).await;
                        s.borrow_mut().push((w.now(), format!("waited {:?}", r.map(|r| r.status))));
                    } else {
                        env.sleep(2_000).await;
                        s.borrow_mut().push((w.now(), "slept".into()));
                    }
                })
            },
            || {},
        );
        let out = seen.borrow().clone();
        out
    }

    #[test]
    fn brownouts_hold_requests_until_the_timeout_or_their_end_and_runs_replay() {
        let a = scenario(3);
        assert_eq!(a.len(), 3, "{a:?}");
        assert_eq!(a[0], (301, "timeout Err(TimedOut)".to_owned()));
        assert!(a[1].0 >= 1_000 && a[1].1 == "waited Ok(404)", "{a:?}");
        assert_eq!(a[2], (2_000, "slept".to_owned()));
        assert_eq!(a, scenario(3), "the same seed replays exactly");
    }

    /// One node on an exact clock (mono = true time, wall = EPOCH + true time) whose thread may be loaded,
    /// reading its clocks as `Store::clocks_read` does every 10 ms: (mono, wall, mono, true time after).
    fn loaded_reads(seed: u64) -> Vec<(f64, u64, f64, u64)> {
        let world = World::new(seed, vec![Clock::default()], FaultMix::default(), SimStore::new("b"));
        world.load_threads(0);
        let seen: Rc<RefCell<Vec<(f64, u64, f64, u64)>>> = Rc::default();
        let (w, s) = (world.clone(), seen.clone());
        run(
            &world,
            1,
            20_000,
            move |node, inc| {
                let env = SimEnv::new(w.clone(), node, inc);
                let (w, s) = (w.clone(), s.clone());
                Box::pin(async move {
                    loop {
                        let (a, wall, b) = (env.mono_ms(), env.wall_ms(), env.mono_ms());
                        s.borrow_mut().push((a, wall, b, w.now()));
                        env.sleep(10).await;
                    }
                })
            },
            || {},
        );
        let out = seen.borrow().clone();
        out
    }

    #[test]
    fn a_loaded_thread_reads_its_wall_clock_up_to_a_preemption_after_its_monotonic_clock_and_runs_on_that_late() {
        let (mut loaded, mut wider_than_slack, mut starved) = (0, 0, 0);
        for seed in 0..20 {
            let reads = loaded_reads(seed);
            assert_eq!(reads, loaded_reads(seed), "seed {seed} replays exactly");
            let mut last: Option<(f64, u64)> = None;
            for &(a, wall, b, after) in &reads {
                // The wall clock is read between the two monotonic reads: its lead over the first is at most
                // their distance (the time the thread lost in between).
                let lead = (wall - EPOCH_MS) as f64 - a;
                assert!(b >= a && (0.0..=b - a).contains(&lead), "seed {seed}: {a} {wall} {b}");
                assert!(after as f64 >= b, "the thread's time runs on from its last read");
                if let Some((prev, slept_from)) = last {
                    assert!(a >= prev, "the monotonic clock never goes back");
                    assert!(a >= (slept_from + 10) as f64, "a sleep counts from the thread's own (late) time");
                }
                last = Some((b, after));
                wider_than_slack += usize::from(lead > celld_edge::ownership::clock::OFFSET_SLACK_MS);
            }
            loaded += usize::from(reads.iter().any(|r| r.2 > r.0));
            // A starved stretch: four readings in a row wider than a tight one (every retry of one would be).
            let tight = celld_edge::ownership::clock::TIGHT_READ_MS;
            starved += reads.windows(4).filter(|w| w.iter().all(|r| r.2 - r.0 > tight)).count();
        }
        assert!((3..20).contains(&loaded), "some lives loaded, not all: {loaded} of 20");
        assert!(wider_than_slack > 0, "some preemptions between the two reads outlast the offset watch's slack");
        assert!(starved > 0, "some threads are starved: runs of wide readings");
    }

    #[test]
    fn paused_nodes_are_not_polled_and_crashed_nodes_restart_fresh() {
        let clocks = vec![Clock::default(); 1];
        let world = World::new(1, clocks, FaultMix::default(), SimStore::new("b"));
        world.schedule_chaos(100, Chaos::Pause { node: 0, ms: 1_000 });
        world.schedule_chaos(3_000, Chaos::Crash { node: 0, ms: 500 });
        let wakes: Rc<RefCell<Vec<(u32, u64)>>> = Rc::default();
        let (w, log) = (world.clone(), wakes.clone());
        run(
            &world,
            1,
            4_000,
            move |node, inc| {
                let env = SimEnv::new(w.clone(), node, inc);
                let (w, log) = (w.clone(), log.clone());
                Box::pin(async move {
                    loop {
                        env.sleep(250).await;
                        log.borrow_mut().push((inc, w.now()));
                    }
                })
            },
            || {},
        );
        let wakes = wakes.borrow();
        // Life 0's first wake-up (due at 250) falls in the pause (100..1100): it runs only at 1100.
        assert_eq!(&wakes[..3], &[(0, 1_100), (0, 1_350), (0, 1_600)]);
        assert!(wakes.iter().all(|&(inc, t)| inc == 1 || t < 3_000), "life 0 never runs after its crash");
        assert_eq!(wakes.iter().find(|w| w.0 == 1), Some(&(1, 3_750)), "life 1 starts at 3500");
    }
}
