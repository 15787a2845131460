//! One simulated run: draws a scenario from a seed (nodes, cells, clocks, fault mix, chaos, a second
//! process started with a live node's id, celld's dead-node clean-up, machine sleeps, in half the seeds
//! one or two celld-like nodes of `celld.rs` sharing the bucket), runs every edge process's real
//! `S3Ownership` through concurrent workload loops on one instance (lease upkeep by the
//! driver's own renewal loop or inline, contended claims — two at once of one cell too —, releases,
//! verifies, owner lookups, callers' renewals beside the loop, claims that wait for the holder's lease to
//! run out, and in some lives `close()` followed by a restart under the same node id) on the seeded
//! executor, records results,
//! installed leases and acting instants in the ledger, and hands store + ledger to the checker.
//!
//! It must never decide correctness itself (that is the checker's job) and never reach the store except
//! through the driver's requests (and the clean-up's and the celld-like nodes', which are celld's requests,
//! not this library's).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll};

use celld_edge::env::{Env, Event, Lost};
use celld_edge::ownership::teeth::Tooth;
use celld_edge::ownership::{CasGuard, CasOutcome, OwnerRecord};
use celld_edge::ownership::{ClaimOptions, ClaimOutcome, CloseOptions, Config, IdSet, ProbePolicy, S3Ownership};
use celld_edge::ownership::control::MARKER_KEY;
use celld_edge::s3::Bucket;
use celld_edge::Error;

use crate::celld::{self, Backend, CelldSlot, CelldTooth};
use crate::checker::{self, Coverage, Facts, Ledger, OpKind, OpRecord, OpResult, Violation};
use crate::exec::{self, Both, Chaos, Hooked, Provider, Rng, SimEnv, World};
use crate::store::{Fault, FaultMix, SimStore, Tag};

pub const BUCKET: &str = "sim-bucket";
pub const ENDPOINT: &str = "http://store.sim";
/// The name of the process playing celld's dead-node clean-up.
const GC_NAME: &str = "celld-gc";
/// The name of the process playing a backup tool that restores old lease versions.
const RESTORER_NAME: &str = "backup-restore";

/// Knobs of a run that are not drawn from the seed.
#[derive(Debug, Clone)]
pub struct Params {
    pub tooth: Option<Tooth>,
    /// Simulated length of the run, ms.
    pub run_ms: u64,
    pub ttl_ms: u64,
    pub skew_ms: u64,
    pub max_drift: f64,
    /// Upper bound of each per-request fault rate.
    pub max_fault_rate: f64,
    /// A rule the celld-like nodes break (`celld.rs`).
    pub celld_tooth: Option<CelldTooth>,
    /// Edge processes get arbitrary wall clocks (`exec::make_wild`: hours off, stepped mid-run); celld's
    /// processes keep theirs within the skew of the store's clock, which celld's own rule needs.
    pub wild_clocks: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            tooth: None,
            run_ms: 20_000,
            ttl_ms: 3_000,
            skew_ms: 400,
            max_drift: 5e-4,
            max_fault_rate: 0.08,
            celld_tooth: None,
            wild_clocks: true,
        }
    }
}

/// What one seed did and what the checker found.
#[derive(Debug)]
pub struct Report {
    pub seed: u64,
    pub nodes: usize,
    pub ops: u64,
    pub faults: BTreeMap<Fault, u64>,
    pub violations: Vec<Violation>,
    pub coverage: Coverage,
}

/// Shared between the process tasks and the observer.
pub(crate) struct Ctx {
    pub(crate) world: Rc<World>,
    pub(crate) params: Params,
    pub(crate) seed: u64,
    /// Per process: its node id (a second process shares a live edge node's), the clean-up's name last.
    pub(crate) names: Vec<String>,
    /// The distinct node ids.
    nodes: usize,
    pub(crate) cells: Vec<String>,
    /// The last cells, which only celld-like nodes claim.
    pub(crate) fresh: usize,
    pub(crate) prefix: &'static str,
    pub(crate) path_style: bool,
    /// Renew from the driver's own loop (`renew_until_stopped`) beside the operations, not between them.
    background_renewal: bool,
    probe: bool,
    /// Concurrent operation loops per instance.
    workers: usize,
    /// Edge processes sign with a credentials provider's keys.
    provider: Option<Provider>,
    gc: Option<usize>,
    ledger: RefCell<Ledger>,
    /// Each process's current instance and the (cell → epoch) it believes it owns.
    live: RefCell<Vec<Option<NodeSlot>>>,
    pub(crate) next_gen: Cell<u64>,
    /// Per process: whether it is a celld-like node, and the backend it was set up for; their lives.
    celld: Vec<Option<Backend>>,
    pub(crate) celld_live: RefCell<Vec<Option<CelldSlot>>>,
}

struct NodeSlot {
    incarnation: u32,
    own: Rc<S3Ownership<SimEnv>>,
    beliefs: Rc<RefCell<BTreeMap<String, u64>>>,
}

impl Ctx {
    pub(crate) fn begin(&self, node: usize, incarnation: u32, gen: u64, kind: OpKind) -> u64 {
        let id = self.world.new_op();
        let now = self.world.now();
        let rec = OpRecord { id, node, incarnation, gen, kind, start: now, end: now, result: OpResult::Unfinished };
        self.ledger.borrow_mut().ops.insert(id, rec);
        id
    }
    pub(crate) fn end(&self, id: u64, result: OpResult) {
        let now = self.world.now();
        let mut ledger = self.ledger.borrow_mut();
        let rec = ledger.ops.get_mut(&id).expect("ops are begun before they end");
        rec.end = now;
        rec.result = result;
    }
}

fn failed(e: &Error) -> OpResult {
    OpResult::Failed(e.code())
}

fn claim_result(r: &Result<ClaimOutcome, Error>) -> OpResult {
    match r {
        Ok(ClaimOutcome::Applied { epoch, took_over, prior }) => OpResult::Claimed {
            epoch: *epoch,
            took_over: *took_over,
            prior: prior.as_ref().map(|r| (r.node.clone(), r.epoch)),
        },
        Ok(ClaimOutcome::Rejected { owner }) if owner.awaiting_recovery => {
            OpResult::ClaimAwaitsRecovery { node: owner.node.clone(), epoch: owner.epoch }
        }
        Ok(ClaimOutcome::Rejected { owner }) => {
            OpResult::ClaimRejected { node: owner.node.clone(), epoch: owner.epoch, live: owner.live }
        }
        Err(e) => failed(e),
    }
}

/// The node names and cells a seed uses. One cell needs percent-encoding, to keep the wire honest.
fn names(rng: &mut Rng) -> (Vec<String>, Vec<String>) {
    let n = rng.range(5, 16) as usize;
    let cells = rng.range(3, 8) as usize;
    let nodes = (0..n).map(|i| format!("n{i}")).collect();
    let mut cells: Vec<String> = (0..cells).map(|i| format!("c{i}")).collect();
    cells[0] = "cell é+1".to_owned();
    (nodes, cells)
}

/// The chaos a seed inflicts: pauses longer than the lease, machine sleeps, crashes, partitions, brownouts.
fn draw_chaos(rng: &mut Rng, world: &World, nodes: usize, p: &Params) {
    let events = rng.range(0, (nodes as u64) * 2);
    for _ in 0..events {
        let at = rng.range(p.ttl_ms, p.run_ms);
        let node = rng.range(0, nodes as u64 - 1) as usize;
        let chaos = match rng.range(0, 11) {
            0..=3 => Chaos::Pause { node, ms: rng.range(p.ttl_ms, p.ttl_ms * 5 / 2) },
            4..=5 => Chaos::Crash { node, ms: rng.range(0, p.ttl_ms * 2) },
            6..=7 => Chaos::Partition { node, ms: rng.range(p.ttl_ms, p.ttl_ms * 2) },
            8..=9 => Chaos::Sleep { node, ms: rng.range(p.ttl_ms, p.ttl_ms * 3) },
            _ => Chaos::Brownout { ms: rng.range(300, 4_000) },
        };
        world.schedule_chaos(at, chaos);
    }
}

pub fn run_seed(seed: u64, params: &Params) -> Report {
    run_seed_traced(seed, params, false).0
}

/// Runs one seed; with `trace`, also returns a line per request event and the final owner histories.
pub fn run_seed_traced(seed: u64, params: &Params, trace: bool) -> (Report, Vec<String>) {
    let mut rng = Rng::new(seed);
    let (mut nodes, cells) = names(&mut rng);
    let n = nodes.len();
    // Half the seeds share the bucket with one or two celld-like nodes (the last node ids); in one of
    // ten of those, the first is set up for celld's DynamoDB backend and races to mark the fleet so.
    let mut celld_roles: Vec<Option<Backend>> = vec![None; n];
    let mut edge = n;
    if rng.chance(0.5) {
        let k = rng.range(1, 2) as usize;
        let dynamo = rng.chance(0.1);
        edge = n - k;
        for (j, i) in (edge..n).enumerate() {
            nodes[i] = format!("celld-{j}");
            celld_roles[i] = Some(if dynamo && j == 0 { Backend::DynamoDb } else { Backend::Bucket });
        }
    }
    // With celld-like nodes, eight more cells that only they claim (edge nodes look them up): celld writes
    // no nonce, so the records it creates there (`{"node":"celld-0","epoch":1}`, ...) repeat byte for byte
    // across keys, and so do their ETags on an MD5-ETag store.
    let mut cells = cells;
    let fresh = if edge < n { 8 } else { 0 };
    cells.extend((0..fresh).map(|i| format!("f{i}")));
    // Other processes: a second process started with a live edge node's id, and celld's clean-up.
    let mut procs = nodes.clone();
    let twin = rng.chance(0.35).then(|| (rng.range(0, edge as u64 - 1) as usize, rng.range(0, params.run_ms / 2)));
    if let Some((of, _)) = twin {
        procs.push(nodes[of].clone());
    }
    // celld's clean-up runs in half the seeds, and in every seed with celld-like nodes (whose leases its
    // late deletes remove after they re-acquired, while their records repeat across keys).
    let gc = (rng.chance(0.5) || edge < n).then(|| {
        procs.push(GC_NAME.to_owned());
        procs.len() - 1
    });
    // In a quarter of the seeds another tool restores old versions of edge nodes' leases (a backup).
    let restorer = rng.chance(0.25).then(|| {
        procs.push(RESTORER_NAME.to_owned());
        procs.len() - 1
    });
    celld_roles.resize(procs.len(), None);
    let is_celld: Vec<bool> = celld_roles.iter().map(Option::is_some).collect();
    let mut clocks = exec::draw_clocks(&mut rng, procs.len(), params.skew_ms, params.run_ms + 60_000, params.max_drift);
    // A quarter of the edge processes are never shown the store's `Date` (browsers whose bucket's CORS rule
    // does not expose it): they judge only by observation, and write expiries on their own wall clocks.
    let dateless: Vec<usize> = if params.wild_clocks {
        // Drawn apart from the seed's other draws, which keep their histories.
        let mut wild = Rng::new(seed ^ 0x0c10_c25c_10c2_5c10);
        for p in (0..procs.len()).filter(|&p| !is_celld[p] && Some(p) != gc && Some(p) != restorer) {
            exec::make_wild(&mut wild, &mut clocks[p], params.run_ms);
        }
        // Not beside celld's processes (celld-like nodes, its clean-up): they judge leases with their wall
        // clocks, which needs edge expiries on the store's clock (docs/protocol.md, Browsers).
        let shared = edge < n || gc.is_some();
        let edge_procs = (0..procs.len()).filter(|&p| !is_celld[p] && Some(p) != gc && Some(p) != restorer);
        edge_procs.filter(|_| !shared && wild.chance(0.25)).collect()
    } else {
        Vec::new()
    };
    let mix = FaultMix::draw(&mut rng, params.max_fault_rate);
    let world = World::new(rng.next_u64(), clocks, mix, SimStore::new(BUCKET));
    draw_chaos(&mut rng, &world, n, params);
    // celld-like nodes also crash twice more each: the clean-up fences their dead leases, and its delete,
    // held on its way, can remove the lease they acquire again.
    for node in edge..n {
        for _ in 0..2 {
            let at = rng.range(params.ttl_ms, params.run_ms);
            world.schedule_chaos(at, Chaos::Crash { node, ms: rng.range(params.ttl_ms, params.ttl_ms * 2) });
        }
    }
    // Issue 34 A: machine sleeps that begin as an edge node sends a lease write (its answer waits for the
    // wake), the wall clock stepped meanwhile: back by a little less than the sleep (the larger advance of
    // the two clocks then counts a few hundred ms of it), or by up to three minutes either way. Drawn apart,
    // so the seed's other draws keep their histories.
    if params.wild_clocks {
        let mut naps = Rng::new(seed ^ 0x5ee9_57e9_0a34);
        for _ in 0..naps.range(0, 2) {
            let node = naps.range(0, edge as u64 - 1) as usize;
            let at = naps.range(params.ttl_ms, params.run_ms);
            let ms = naps.range(params.ttl_ms, params.ttl_ms * 3);
            let step_ms = match naps.range(0, 2) {
                0 => naps.range(200, params.ttl_ms) as i64 - ms as i64,
                1 => -(naps.range(1_000, 180_000) as i64),
                _ => naps.range(1_000, 180_000) as i64,
            };
            world.schedule_chaos(at, Chaos::SleepStepped { node, ms, step_ms });
        }
    }
    if let Some((_, at)) = twin {
        world.start_at(n, at);
    }
    for p in (0..procs.len()).filter(|&p| !is_celld[p] && Some(p) != gc && Some(p) != restorer) {
        world.resends(p);
        // Issue 34: loaded machines, whose threads lose the core between their clock reads (`exec::Load`).
        world.load_threads(p);
    }
    for &p in &dateless {
        world.hide_dates(p);
    }
    // Half the stores cache their `Date` (drawn apart, so the seed's other draws keep their histories).
    let mut dates = Rng::new(seed ^ 0xda7e_cac4e);
    if dates.range(0, 1) == 0 {
        world.cache_dates(dates.range(0, 999));
    }
    let prefix = ["", "p/", "tenant.x/"][rng.range(0, 2) as usize];
    // A fork fleet of celld's DynamoDB backend marks the bucket before the edge nodes start (the library
    // reads the marker and never creates it: a fleet marked later is the operator's mistake, SPEC §2).
    if celld_roles[edge..n].contains(&Some(Backend::DynamoDb)) {
        world.plant(&format!("{prefix}{MARKER_KEY}"), celld::DYNAMODB_MARKER, Tag { node: edge, incarnation: 0, op: 0, sent: 0 });
    }
    let path_style = rng.chance(0.5);
    let background_renewal = rng.chance(0.5);
    // The store probe (SPEC §6) runs before an instance's first write unless opted out; a quarter of
    // the seeds keep it on, under the same faults (an honest, flaky store must still pass it).
    let probe = rng.chance(0.25);
    let workers = [1, 2, 3][rng.range(0, 2) as usize];
    // A third of the seeds sign with short-lived keys from a credentials provider that is slow at times.
    let provider = rng.chance(0.33).then(|| Provider { slow: 0.2 + rng.unit() * 0.5 });
    if trace {
        world.enable_trace();
    }

    let ctx = Rc::new(Ctx {
        world: world.clone(),
        params: params.clone(),
        seed,
        names: procs.clone(),
        nodes: n,
        cells: cells.clone(),
        fresh,
        prefix,
        path_style,
        background_renewal,
        probe,
        workers,
        provider,
        gc,
        ledger: RefCell::new(Ledger::default()),
        live: RefCell::new((0..procs.len()).map(|_| None).collect()),
        next_gen: Cell::new(0),
        celld: celld_roles,
        celld_live: RefCell::new((0..procs.len()).map(|_| None).collect()),
    });

    let factory_ctx = ctx.clone();
    let observer_ctx = ctx.clone();
    exec::run(
        &world,
        procs.len(),
        params.run_ms,
        move |node, incarnation| match (factory_ctx.gc == Some(node), factory_ctx.celld[node]) {
            (true, _) => Box::pin(gc_life(factory_ctx.clone(), node, incarnation)),
            _ if restorer == Some(node) => Box::pin(restorer_life(factory_ctx.clone(), node, incarnation)),
            (false, Some(backend)) => Box::pin(celld::life(factory_ctx.clone(), node, incarnation, backend)),
            (false, None) => Box::pin(node_life(factory_ctx.clone(), node, incarnation)),
        },
        move || observe(&observer_ctx),
    );
    ctx.live.borrow_mut().clear();
    ctx.celld_live.borrow_mut().clear();
    let mut lines = world.take_trace();
    let ctx = Rc::try_unwrap(ctx).unwrap_or_else(|_| panic!("node tasks still hold the context"));
    let ledger = ctx.ledger.into_inner();
    drop(ctx.world);
    let clocks = world.clocks();
    let store = world.into_store();
    let facts = Facts {
        nodes: &procs,
        cells: &cells,
        clocks: &clocks,
        prefix,
        lease_ttl_ms: params.ttl_ms,
        max_clock_skew_ms: params.skew_ms,
        gc,
        celld: &is_celld,
        run_ms: params.run_ms,
        provider: provider.is_some(),
        restorer,
        clock_proof: params.wild_clocks,
    };
    let (violations, coverage) = checker::check(&store, &ledger, &facts);
    if trace {
        lines.push(format!(
            "processes {procs:?} (twin: {twin:?}, clean-up: {gc:?}, restorer: {restorer:?}, celld-like: {:?}), {workers} workers each, renewal loop: \
             {background_renewal}, credentials: {provider:?} ({} asked, {} slow)",
            (0..procs.len()).filter(|&i| is_celld[i]).collect::<Vec<_>>(),
            store.credentials_asked,
            store.credentials_slow
        ));
        for op in ledger.ops.values() {
            lines.push(format!(
                "op {} {}#{} life {} gen {} {:?} [{}..{}] -> {:?}",
                op.id, procs[op.node], op.node, op.incarnation, op.gen, op.kind, op.start, op.end, op.result
            ));
        }
        for ((p, gen), installs) in &ledger.installs {
            lines.push(format!("installs of {}#{p} gen {gen}: {installs:?}", procs[*p]));
        }
        for (key, hist) in &store.objects {
            for v in hist {
                let body = v.body.as_deref().map(String::from_utf8_lossy);
                lines.push(format!("{key} t={} {:?} {body:?} {}", v.at, v.writer, v.etag));
            }
        }
    }
    let report = Report { seed, nodes: n, ops: ledger.ops.len() as u64, faults: store.faults, violations, coverage };
    (report, lines)
}

/// After every event: each running process with a valid lease could act for every cell it believes it
/// owns, so record that instant.
fn observe(ctx: &Ctx) {
    let now = ctx.world.now();
    let live = ctx.live.borrow();
    let mut ledger = ctx.ledger.borrow_mut();
    for (node, slot) in live.iter().enumerate() {
        let Some(slot) = slot else { continue };
        if !ctx.world.is_running(node) || ctx.world.incarnation(node) != slot.incarnation {
            continue;
        }
        if !slot.own.lease_valid() {
            continue;
        }
        for (cell, &epoch) in slot.beliefs.borrow().iter() {
            ledger.act(node, slot.incarnation, cell, epoch, now);
        }
    }
    for (node, slot) in ctx.celld_live.borrow().iter().enumerate() {
        let Some(slot) = slot else { continue };
        if !ctx.world.is_running(node) || ctx.world.incarnation(node) != slot.incarnation || !slot.node.may_act() {
            continue;
        }
        for (cell, &epoch) in slot.node.beliefs.borrow().iter() {
            ledger.act(node, slot.incarnation, cell, epoch, now);
        }
    }
}

/// One life of one process's lease bookkeeping, shared by its operation loops and its renewal loop.
struct Life {
    ctx: Rc<Ctx>,
    node: usize,
    incarnation: u32,
    own: Rc<S3Ownership<SimEnv>>,
    beliefs: Rc<RefCell<BTreeMap<String, u64>>>,
    leased: Cell<bool>,
    /// Cells a release is in flight for (how many): the instance stops using them, including claims of
    /// them answered meanwhile (the release waits for those, then releases what they claimed).
    releasing: RefCell<BTreeMap<String, usize>>,
    /// The lease generation the driver reports (a new one at every `LeaseAcquired`).
    gen: Rc<Cell<u64>>,
    last_renew: Cell<u64>,
    /// When this life calls `close()` (true time), if it does, and whether with `release`.
    close_at: Option<u64>,
    release_on_close: bool,
    /// `close()` was called: the loops stop.
    closed: Cell<bool>,
    /// The `close()` operation once begun (by this life's worker, or by a user callback mid-operation).
    close_op: Rc<Cell<Option<u64>>>,
}

impl Life {
    /// Runs one driver call as a ledger operation: begun now, its requests tagged, its result recorded.
    async fn op<T: std::fmt::Debug, F: Future<Output = T>>(
        &self,
        kind: OpKind,
        call: F,
        result: impl FnOnce(&T) -> OpResult,
    ) -> T {
        self.op_noting(kind, call, |_, _| {}, result).await
    }

    /// `op`, noting in the ledger what kind of call it was (a claim with `expect_new`, a waiting claim).
    async fn op_noting<T: std::fmt::Debug, F: Future<Output = T>>(
        &self,
        kind: OpKind,
        call: F,
        note: impl FnOnce(&mut Ledger, u64),
        result: impl FnOnce(&T) -> OpResult,
    ) -> T {
        let op = self.ctx.begin(self.node, self.incarnation, self.gen.get(), kind);
        note(&mut self.ctx.ledger.borrow_mut(), op);
        let out = exec::tagged(&self.ctx.world, self.node, op, call).await;
        self.ctx.world.note(|| format!("op {op} of {}#{} returned {out:?}", self.ctx.names[self.node], self.node));
        self.ctx.end(op, result(&out));
        let mut ledger = self.ctx.ledger.borrow_mut();
        let waited = ledger.waiting.contains(&op);
        if let Some(rec) = ledger.ops.get_mut(&op).filter(|r| r.kind == OpKind::Acquire || waited) {
            // What an acquisition installs belongs to the generation it began; a waiting claim's last
            // attempt, to the generation it was answered in (its attempts may span several).
            rec.gen = self.gen.get();
        }
        drop(ledger);
        out
    }

    async fn sleep(&self, rng: &mut Rng, hi: u64) {
        self.own.env().sleep(rng.range(0, hi) as u32).await
    }

    async fn renew(&self, rng: &mut Rng) {
        let r = self
            .op(OpKind::Renew, self.own.renew_lease(), |r| r.as_ref().map_or_else(failed, |_| OpResult::LeaseOk))
            .await;
        match r {
            Ok(()) => self.last_renew.set(self.ctx.world.now()),
            Err(Error::Fenced(_) | Error::NotLeased(_)) => self.leased.set(false),
            Err(_) => self.sleep(rng, 100).await,
        }
    }

    async fn acquire(&self, rng: &mut Rng) {
        // Issue 34 A: now and then the machine sleeps with the acquisition's write queued, its wall clock
        // stepped meanwhile (drawn apart, so the seed's other draws keep their histories).
        let p = &self.ctx.params;
        let mut naps = Rng::new(self.ctx.seed ^ 0xacc_34a ^ ((self.node as u64) << 40) ^ self.ctx.world.now());
        if p.wild_clocks && naps.chance(0.15) {
            let ms = naps.range(p.ttl_ms, p.ttl_ms * 3);
            let step_ms = match naps.range(0, 3) {
                0 => -(naps.range(1_000, 180_000) as i64),
                1 => naps.range(1_000, 180_000) as i64,
                _ => naps.range(200, p.ttl_ms) as i64 - ms as i64,
            };
            self.ctx.world.nap_on_next_lease_write(self.node, ms, step_ms);
        }
        let r = self
            .op(OpKind::Acquire, self.own.acquire_lease(), |r| r.as_ref().map_or_else(failed, |_| OpResult::LeaseOk))
            .await;
        self.leased.set(r.is_ok());
        self.last_renew.set(self.ctx.world.now());
        if r.is_err() {
            self.sleep(rng, 500).await;
        }
    }

    /// What this node believes after a claim of `cell` answered `r`: the epoch it holds, or that its lease
    /// is gone.
    fn believe(&self, cell: &str, r: &Result<ClaimOutcome, Error>) {
        match r {
            Ok(ClaimOutcome::Applied { epoch, .. }) if !self.releasing.borrow().contains_key(cell) => {
                self.beliefs.borrow_mut().insert(cell.to_owned(), *epoch);
            }
            Err(Error::Fenced(_) | Error::NotLeased(_)) => self.leased.set(false),
            _ => {}
        }
    }

    async fn claim(&self, cell: &str, options: ClaimOptions) {
        let kind = OpKind::Claim(cell.to_owned());
        let r = self
            .op_noting(
                kind,
                self.own.claim_with(cell, options),
                |ledger, op| {
                    if options.expect_new {
                        ledger.expect_new.insert(op);
                    }
                },
                claim_result,
            )
            .await;
        self.believe(cell, &r);
    }

    /// A claim (creating the record first, so its write is sent at once) that its caller drops after
    /// `patience` ms if unanswered, a request handler giving up (issue 34 B): its write may land later.
    async fn dropped_claim(&self, cell: &str, patience: u32) {
        self.dropped_claim_with(cell, ClaimOptions { expect_new: true }, patience).await
    }

    async fn dropped_claim_with(&self, cell: &str, options: ClaimOptions, patience: u32) {
        let kind = OpKind::Claim(cell.to_owned());
        let claim = self.own.claim_with(cell, options);
        let call = Race(Box::pin(claim), Box::pin(self.own.env().sleep(patience)));
        let r = self.op(kind, call, |r| r.as_ref().map_or(OpResult::Failed("dropped"), claim_result)).await;
        if let Some(r) = r {
            self.believe(cell, &r);
        }
    }

    /// `cas_owner` creating `cell`'s record at epoch 1 (a caller writing owner records itself, issue 34 B).
    async fn cas_owner(&self, cell: &str) {
        self.cas_owner_at(cell, &CasGuard::Absent, 1).await
    }

    /// `cas_owner` over a free cell's record as this caller read it (`free_cell`): none, or a released one.
    async fn cas_owner_over(&self, cell: &str, rec: Option<&OwnerRecord>) {
        match rec {
            None => self.cas_owner_at(cell, &CasGuard::Absent, 1).await,
            Some(r) => self.cas_owner_at(cell, &CasGuard::Match(r.etag.clone()), r.epoch + 1).await,
        }
    }

    async fn cas_owner_at(&self, cell: &str, guard: &CasGuard, epoch: u64) {
        let kind = OpKind::Claim(cell.to_owned());
        let call = self.own.cas_owner(cell, guard, epoch);
        let r = self
            .op(kind, call, |r| match r {
                Ok(CasOutcome::Applied) => OpResult::Claimed { epoch, took_over: false, prior: None },
                Ok(CasOutcome::Rejected) => OpResult::Failed("cas-rejected"),
                Err(e) => failed(e),
            })
            .await;
        match r {
            Ok(CasOutcome::Applied) => self.believe(cell, &Ok(ClaimOutcome::Applied { epoch, took_over: false, prior: None })),
            Err(e) => self.believe(cell, &Err(e)),
            Ok(CasOutcome::Rejected) => {}
        }
    }

    /// Reads the owner records of the edge cells from the `start`th on until one is free (none, or
    /// released: naming no node), as a caller looking for a cell to take does; that cell and its record.
    async fn free_cell(&self, start: usize) -> Option<(String, Option<OwnerRecord>)> {
        let cells = &self.ctx.cells[..self.ctx.cells.len() - self.ctx.fresh];
        for i in 0..cells.len() {
            let cell = cells[(start + i) % cells.len()].clone();
            let call = self.own.read_owner(&cell);
            let read = self
                .op(OpKind::ReadOwner(cell.clone()), call, |r| {
                    r.as_ref().map_or_else(failed, |o| OpResult::Read(o.as_ref().map(|o| (o.node.clone(), o.epoch))))
                })
                .await;
            match read {
                Ok(None) => return Some((cell, None)),
                Ok(Some(rec)) if rec.node.is_empty() => return Some((cell, Some(rec))),
                Ok(Some(_)) => {}
                Err(_) => return None,
            }
        }
        None
    }

    /// Waits for the cell (`claim_waiting`), giving up after `patience` ms (the cancel future).
    async fn claim_waiting(&self, cell: &str, patience: u32) {
        let kind = OpKind::Claim(cell.to_owned());
        let cancel = self.own.env().sleep(patience);
        let call = self.own.claim_waiting(cell, ClaimOptions::default(), cancel);
        let r = self
            .op_noting(kind, call, |ledger, op| {
                ledger.waiting.insert(op);
            }, |r| match r {
                Ok(ClaimOutcome::Applied { epoch, took_over, prior }) => OpResult::Claimed {
                    epoch: *epoch,
                    took_over: *took_over,
                    prior: prior.as_ref().map(|r| (r.node.clone(), r.epoch)),
                },
                Ok(ClaimOutcome::Rejected { owner }) => {
                    OpResult::ClaimRejected { node: owner.node.clone(), epoch: owner.epoch, live: owner.live }
                }
                Err(e) => failed(e),
            })
            .await;
        self.believe(cell, &r);
    }

    /// `close()`, then the process lingers a while (still polled and watched: it must not act) and exits;
    /// it restarts later as a fresh instance under the same node id (a crash of a closed process).
    async fn close(&self, rng: &mut Rng) {
        // Beliefs stay as they are: close() itself must end every authority.
        let options = CloseOptions { release: self.release_on_close };
        // A callback may have called it already (it ended authority then): this call retires the lease.
        let op = self.close_op.get().unwrap_or_else(|| {
            let op = self.ctx.begin(self.node, self.incarnation, self.gen.get(), OpKind::Close);
            self.close_op.set(Some(op));
            op
        });
        let out = exec::tagged(&self.ctx.world, self.node, op, self.own.close(options)).await;
        self.ctx.world.note(|| format!("op {op} of {}#{} returned {out:?}", self.ctx.names[self.node], self.node));
        self.ctx.end(op, match &out {
            Ok(c) => OpResult::Closed { retired: c.retired, deleted: c.deleted },
            Err(e) => failed(e),
        });
        self.closed.set(true);
        let ttl = self.ctx.params.ttl_ms;
        let now = self.ctx.world.now();
        self.ctx.world.schedule_chaos(now + rng.range(0, ttl), Chaos::Crash { node: self.node, ms: rng.range(0, ttl * 2) });
        self.own.env().sleep((ttl * 10) as u32).await;
    }

    async fn release(&self, cell: &str) {
        // Stop acting before asking to release: the release may land before its answer does.
        self.beliefs.borrow_mut().remove(cell);
        *self.releasing.borrow_mut().entry(cell.to_owned()).or_default() += 1;
        let _ = self
            .op(OpKind::Release(cell.to_owned()), self.own.release(cell), |r| match r {
                Ok(CasOutcome::Applied) => OpResult::Released,
                Ok(CasOutcome::Rejected) => OpResult::ReleaseRejected,
                Err(e) => failed(e),
            })
            .await;
        let mut releasing = self.releasing.borrow_mut();
        if let Some(n) = releasing.get_mut(cell) {
            *n -= 1;
            if *n == 0 {
                releasing.remove(cell);
            }
        }
    }
}

/// Polls two futures until both finish (two operations of one instance at once).
struct Join2<A: Future<Output = ()>, B: Future<Output = ()>>(Option<Pin<Box<A>>>, Option<Pin<Box<B>>>);

impl<A: Future<Output = ()>, B: Future<Output = ()>> Future for Join2<A, B> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.as_mut().is_some_and(|f| f.as_mut().poll(cx).is_ready()) {
            self.0 = None;
        }
        if self.1.as_mut().is_some_and(|f| f.as_mut().poll(cx).is_ready()) {
            self.1 = None;
        }
        if self.0.is_none() && self.1.is_none() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// The first of two futures: `Some` of the first's output, `None` when the second finished first (the first
/// is then dropped, as a caller that gives up drops it).
struct Race<A: Future, B: Future>(Pin<Box<A>>, Pin<Box<B>>);

impl<A: Future, B: Future> Future for Race<A, B> {
    type Output = Option<A::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(out) = self.0.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        if self.1.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

fn join2<A: Future<Output = ()>, B: Future<Output = ()>>(a: A, b: B) -> Join2<A, B> {
    Join2(Some(Box::pin(a)), Some(Box::pin(b)))
}

/// One life of one process: a fresh `S3Ownership` under its node id, with its operation loops (and the
/// driver's renewal loop in half the seeds) running concurrently on it until the run ends (or the
/// executor drops it in a crash).
async fn node_life(ctx: Rc<Ctx>, node: usize, incarnation: u32) {
    let p = &ctx.params;
    let mut cfg = Config::new(ENDPOINT, BUCKET, &ctx.names[node], "AKIDSIMULATION", "sim-secret");
    cfg.lease_ttl_ms = p.ttl_ms;
    cfg.max_clock_skew_ms = p.skew_ms;
    cfg.addr = format!("10.0.0.{node}:7000");
    cfg.prefix = ctx.prefix.to_owned();
    cfg.path_style = ctx.path_style;
    // Issue 34 B needs a close() that deletes the lease, which needs the probe's verdict on conditional
    // DELETEs: a share of the lives probe in seeds that do not (drawn apart, so the other draws keep theirs).
    let probes = ctx.probe || Rng::new(ctx.seed ^ 0x9be_34b ^ ((node as u64) << 40) ^ ((incarnation as u64) << 20)).chance(0.2);
    cfg.probe = if probes { ProbePolicy::Recorded } else { ProbePolicy::Off };
    // One cell id (`cell é+1`) is outside celld's sets, to keep the wire's encoding honest.
    cfg.ids = IdSet::Utf8;
    let beliefs: Rc<RefCell<BTreeMap<String, u64>>> = Rc::default();
    let gen: Rc<Cell<u64>> = Rc::default();
    let seed = ctx.seed ^ ((node as u64) << 40) ^ ((incarnation as u64) << 20);
    // The `close()` of this life once called (its op), and the instance, for a user callback that calls it.
    let close_op: Rc<Cell<Option<u64>>> = Rc::default();
    let me: Rc<RefCell<Weak<S3Ownership<SimEnv>>>> = Rc::default();
    // In some lives a user callback closes the instance in the middle of an operation: an abort listener
    // of `signal(cell)` when a re-claim ends the claim it replaces (just before the re-claim's write), or
    // an `onEvent` handler when a write is answered (mostly one not applied: between it and its resend).
    // Only in seeds without a second process of a node id: those keep their histories as they were, since
    // F9's situation there is rare (its tooth, TrustOwnNodeId, is caught on about 1 seed in 200).
    let mut reentrant_rng = Rng::new(seed ^ 0x4ee47);
    let twin = (1..ctx.names.len()).any(|i| ctx.names[..i].contains(&ctx.names[i]));
    let reentrant = (!twin && reentrant_rng.chance(0.15)).then(|| RefCell::new(reentrant_rng));
    // What the driver installed, as it reports it: the checker's record of every lease's authority.
    let hook = {
        let (weak, beliefs, gen): (Weak<Ctx>, _, _) = (Rc::downgrade(&ctx), beliefs.clone(), gen.clone());
        let (close_op, me) = (close_op.clone(), me.clone());
        Rc::new(move |event: &Event<'_>| {
            let Some(ctx) = weak.upgrade() else { return };
            if let Some(rng) = &reentrant {
                let closes = match *event {
                    Event::AuthorityLost { lost: Lost::Reclaimed, .. } => rng.borrow_mut().chance(0.5),
                    Event::Request { op: "write", outcome, .. } => {
                        rng.borrow_mut().chance(if outcome == "applied" { 0.02 } else { 0.3 })
                    }
                    _ => false,
                };
                let own = me.borrow().upgrade();
                if let Some(own) = own.filter(|_| closes && close_op.get().is_none()) {
                    let op = ctx.begin(node, incarnation, gen.get(), OpKind::Close);
                    ctx.ledger.borrow_mut().reentrant_closes.insert(op);
                    close_op.set(Some(op));
                    ctx.world.note(|| format!("{}#{node} closes from a callback (op {op}) on {event:?}", ctx.names[node]));
                    own.shut(); // what the JS close() does before it returns its Promise
                }
            }
            let expires = match *event {
                Event::LeaseAcquired { expires_ms, .. } => {
                    // A new generation: nothing claimed before it counts any more.
                    beliefs.borrow_mut().clear();
                    ctx.next_gen.set(ctx.next_gen.get() + 1);
                    gen.set(ctx.next_gen.get());
                    expires_ms
                }
                Event::LeaseRenewed { expires_ms, .. } => expires_ms,
                Event::Fenced { reason, .. } => {
                    let now = ctx.world.now();
                    ctx.ledger.borrow_mut().fences.push((node, incarnation, now, reason.to_owned()));
                    return;
                }
                _ => return,
            };
            let now = ctx.world.now();
            let mut ledger = ctx.ledger.borrow_mut();
            ledger.installs.entry((node, gen.get())).or_default().push((expires, now));
            ledger.installed.push((node, incarnation, now));
        })
    };
    // The lease generation each write is sent in, and every write this life sends once it has called
    // close() (the checker allows only close()'s own).
    let watch = {
        let (weak, close_op, gen): (Weak<Ctx>, _, _) = (Rc::downgrade(&ctx), close_op.clone(), gen.clone());
        Rc::new(move |op: u64, what: String| {
            let Some(ctx) = weak.upgrade() else { return };
            let now = ctx.world.now();
            let mut ledger = ctx.ledger.borrow_mut();
            ledger.write_gens.insert((node, incarnation, op, now), gen.get());
            if close_op.get().is_some() {
                ledger.sent_after_close.push((node, incarnation, op, what, now));
            }
        })
    };
    let mut env = SimEnv::new(ctx.world.clone(), node, incarnation).with_write_watch(watch);
    if let Some(provider) = ctx.provider {
        cfg.credentials_provider = true;
        env = env.with_provider(provider);
    }
    let own = S3Ownership::new(cfg, env).expect("the simulation's config is valid").observed_by(Hooked(hook));
    let own = Rc::new(match p.tooth {
        Some(t) => own.with_tooth(t),
        None => own,
    });
    *me.borrow_mut() = Rc::downgrade(&own);
    ctx.live.borrow_mut()[node] = Some(NodeSlot { incarnation, own: own.clone(), beliefs: beliefs.clone() });
    let mut draw = Rng::new(seed ^ 0xc105e);
    let now = ctx.world.now();
    // A third of the lives end with close() at some point of the run.
    let close_at = draw.chance(0.33).then(|| now + draw.range(p.ttl_ms / 2, p.ttl_ms * 4)).filter(|&t| t < p.run_ms);
    let release_on_close = draw.chance(0.5);
    let life = Rc::new(Life {
        ctx: ctx.clone(),
        node,
        incarnation,
        own,
        beliefs,
        leased: Cell::new(false),
        releasing: RefCell::default(),
        gen,
        last_renew: Cell::new(0),
        close_at,
        release_on_close,
        closed: Cell::new(false),
        close_op,
    });
    let mut work: Option<exec::Task> = None;
    for w in (0..ctx.workers).rev() {
        let worker: exec::Task = Box::pin(operations(life.clone(), Rng::new(seed ^ 0x5eed ^ (w as u64) << 8), w));
        work = Some(match work {
            None => worker,
            Some(rest) => Box::pin(Both(Some(worker), Some(rest))),
        });
    }
    if ctx.background_renewal {
        // Its requests are tagged with an op of their own (no ledger entry): never another operation's.
        let tag = ctx.world.new_op();
        let loop_task = exec::tagged(&ctx.world, node, tag, renewals(life, Rng::new(seed ^ 0x4e4e)));
        Both(work, Some(Box::pin(loop_task))).await
    } else if let Some(work) = work {
        work.await
    }
}

/// The driver's own renewal loop (what `startRenewing` runs), restarted after every new lease; in some
/// lives a second loop is started beside the first (stop + start during a tick), which must retire it.
async fn renewals(life: Rc<Life>, mut rng: Rng) {
    let ctx = &life.ctx;
    let run_ms = ctx.params.run_ms;
    while ctx.world.now() < run_ms && !life.closed.get() {
        if !life.leased.get() {
            life.own.env().sleep(rng.range(20, 100) as u32).await;
            continue;
        }
        let outcome: Rc<Cell<bool>> = Rc::new(Cell::new(true));
        let run = |out: Rc<Cell<bool>>| {
            let life = life.clone();
            async move {
                let stop = || life.ctx.world.now() >= run_ms;
                let me = (life.node, life.incarnation);
                life.ctx.ledger.borrow_mut().loops.push((me.0, me.1, life.ctx.world.now(), true));
                let ended = life.own.renew_until_stopped(&stop, &mut |_| {}).await;
                life.ctx.ledger.borrow_mut().loops.push((me.0, me.1, life.ctx.world.now(), false));
                if let Err(Error::Fenced(_) | Error::NotLeased(_)) = ended {
                    out.set(false);
                }
            }
        };
        if rng.chance(0.3) {
            let delay = rng.range(0, ctx.params.ttl_ms) as u32;
            let second = {
                let life = life.clone();
                let out = outcome.clone();
                async move {
                    life.own.env().sleep(delay).await;
                    run(out).await
                }
            };
            join2(run(outcome.clone()), second).await;
        } else {
            run(outcome.clone()).await;
        }
        if !outcome.get() {
            life.leased.set(false);
        }
    }
}

async fn operations(life: Rc<Life>, mut rng: Rng, worker: usize) {
    let ctx = &life.ctx;
    let p = &ctx.params;
    let own = &life.own;
    let beliefs = &life.beliefs;
    let renew_every = p.ttl_ms / 3;
    while ctx.world.now() < p.run_ms && !life.closed.get() {
        if worker == 0 && (life.close_at.is_some_and(|t| ctx.world.now() >= t) || life.close_op.get().is_some()) {
            // Issue 34 B: close() overlapping writes that name the node: a claim its caller dropped with its
            // write in flight, and another caller's cas_owner sent as close() begins. Drawn apart, so the
            // seed's other draws keep their histories.
            let mut racing = Rng::new(ctx.seed ^ 0xb34 ^ ((life.node as u64) << 40) ^ ((life.incarnation as u64) << 20));
            let cell = ctx.cells[racing.range(0, ctx.cells.len() as u64 - 1) as usize].clone();
            if life.close_op.get().is_none() && racing.chance(0.25) {
                life.dropped_claim(&cell, racing.range(1, 40) as u32).await;
            }
            if life.close_op.get().is_none() && racing.chance(0.25) {
                let other = ctx.cells[racing.range(0, ctx.cells.len() as u64 - 1) as usize].clone();
                join2(life.cas_owner(&other), life.close(&mut rng)).await;
                return;
            }
            // The same two races where the write can land: over a free cell (no record, or a released one)
            // this caller just read, with the write slow on its way (held in a queue 40..400 ms, longer than
            // close()'s few round trips and short enough that no peer takes the cell first), so that it lands
            // after what close() sends after it. Drawn after the draws above (which keep theirs).
            let slow = racing.range(40, 400);
            let (drop_it, cas_it) = (racing.chance(0.4), racing.chance(0.4));
            let patience = racing.range(1, 40) as u32;
            // Only with a lease (without one the write is refused and close() has nothing to retire).
            if life.close_op.get().is_none() && (drop_it || cas_it) && life.own.lease_valid() {
                let start = racing.range(0, ctx.cells.len() as u64 - 1) as usize;
                if let Some((free, rec)) = life.free_cell(start).await {
                    ctx.world.hold_next_owner_write(life.node, slow);
                    if life.close_op.get().is_none() && cas_it {
                        join2(life.cas_owner_over(&free, rec.as_ref()), life.close(&mut rng)).await;
                        ctx.world.hold_next_owner_write(life.node, 0); // if it was never sent
                        return;
                    }
                    if life.close_op.get().is_none() {
                        let options = ClaimOptions { expect_new: rec.is_none() };
                        life.dropped_claim_with(&free, options, patience).await;
                    }
                    ctx.world.hold_next_owner_write(life.node, 0);
                }
            }
            life.close(&mut rng).await;
            return;
        }
        if !life.leased.get() {
            life.acquire(&mut rng).await;
            continue;
        }
        // A renewal loop does not know it was frozen: after a pause it simply renews (the driver must
        // refuse to restore a lapsed lease), so a lapsed lease is renewed before it is re-acquired.
        if worker == 0
            && !ctx.background_renewal
            && (ctx.world.now() - life.last_renew.get() >= renew_every || !own.lease_valid())
        {
            life.renew(&mut rng).await;
            continue;
        }
        let believed: Vec<(String, u64)> = beliefs.borrow().iter().map(|(c, &e)| (c.clone(), e)).collect();
        let pick = rng.range(0, 99);
        let random_cell = ctx.cells[rng.range(0, (ctx.cells.len() - ctx.fresh) as u64 - 1) as usize].clone();
        let read =
            |o: &Result<Option<(String, u64)>, Error>| o.as_ref().map_or_else(failed, |o| OpResult::Read(o.clone()));
        match pick {
            0..=39 => {
                // A third of the claims expect a new cell (create first): right on the first claim of a
                // cell, wrong (a refused create, then the usual read) on every later one.
                let options = ClaimOptions { expect_new: rng.chance(0.33) };
                life.claim(&random_cell, options).await;
            }
            40..=43 => {
                // Two claims of one cell at once on this instance: their answers may cross.
                join2(life.claim(&random_cell, ClaimOptions::default()), life.claim(&random_cell, ClaimOptions::default()))
                    .await;
            }
            44..=51 if !believed.is_empty() => {
                let (cell, _) = &believed[rng.range(0, believed.len() as u64 - 1) as usize];
                life.release(cell).await;
            }
            // A process cleaning up what its node id may still hold (as a restarted one does).
            52..=54 => life.release(&random_cell).await,
            55..=72 if !believed.is_empty() => {
                let (cell, epoch) = &believed[rng.range(0, believed.len() as u64 - 1) as usize];
                let r = life
                    .op(OpKind::Verify(cell.clone(), *epoch), own.verify(cell, *epoch), |r| {
                        r.as_ref().map_or_else(failed, |&b| OpResult::Verified(b))
                    })
                    .await;
                if r == Ok(false) && beliefs.borrow().get(cell) == Some(epoch) {
                    beliefs.borrow_mut().remove(cell);
                }
            }
            73..=80 => {
                // Half of the lookups in seeds with celld-like nodes are of the cells only they claim.
                let random_cell = match ctx.fresh > 0 && rng.chance(0.5) {
                    true => ctx.cells[ctx.cells.len() - 1 - rng.range(0, ctx.fresh as u64 - 1) as usize].clone(),
                    false => random_cell,
                };
                let call = async { own.owner(&random_cell).await.map(|o| o.map(|o| (o.node, o.epoch, o.live))) };
                let _ = life
                    .op(OpKind::Owner(random_cell.clone()), call, |o| {
                        o.as_ref().map_or_else(failed, |o| OpResult::OwnerSeen(o.clone()))
                    })
                    .await;
            }
            81..=85 => {
                let call = async { own.read_owner_and_judge(&random_cell).await.map(|o| o.map(|o| (o.node, o.epoch))) };
                let _ = life.op(OpKind::ReadOwner(random_cell.clone()), call, read).await;
            }
            86..=90 => {
                let peer = rng.range(0, ctx.nodes as u64 - 1) as usize;
                let _ = life
                    .op(OpKind::ReadLease(peer), own.read_node_lease(&ctx.names[peer]), |r| {
                        r.as_ref().map_or_else(failed, |l| OpResult::LeaseRead(l.as_ref().map(|l| l.expires_ms)))
                    })
                    .await;
            }
            // A caller's own renewal beside the loop (or beside another worker's).
            91..=94 => life.renew(&mut rng).await,
            // Wait for a cell until its holder's lease runs out, giving up after a while.
            95..=97 => life.claim_waiting(&random_cell, rng.range(0, p.ttl_ms * 2) as u32).await,
            // Clean up a peer's lease if it is dead and no cell's record names it.
            98 => {
                let peer = rng.range(0, ctx.nodes as u64 - 1) as usize;
                let cells: Vec<&str> = ctx.cells.iter().map(String::as_str).collect();
                let _ = life
                    .op(OpKind::RemoveLease(peer), own.remove_dead_lease(&ctx.names[peer], &cells), |r| {
                        r.as_ref().map_or_else(failed, |r| OpResult::LeaseRemoval(format!("{r:?}")))
                    })
                    .await;
            }
            99 if rng.chance(0.7) => life.dropped_claim(&random_cell, rng.range(1, 200) as u32).await,
            99 => life.cas_owner(&random_cell).await,
            _ => {}
        }
        life.sleep(&mut rng, p.ttl_ms / 6).await;
    }
}

/// celld's dead-node clean-up (`crates/celld/dead_node_gc.rs`), as it treats a bucket it shares: every
/// pass reads each node's lease; one dead by its rule (`expires_ms <= now`, no skew margin) is fenced with
/// a conditional write of an expired copy (`expires_ms: 0`, every other field kept, the nonce too), then
/// deleted with no condition — a delete that can land long after the node installed a fresh lease.
async fn gc_life(ctx: Rc<Ctx>, node: usize, incarnation: u32) {
    let p = &ctx.params;
    let env = SimEnv::new(ctx.world.clone(), node, incarnation);
    let mut bucket = Bucket::new(ENDPOINT, BUCKET, "us-east-1", ctx.path_style, "AKIDCELLD", "celld-secret", None)
        .expect("the clean-up's bucket is valid");
    let mut rng = Rng::new(ctx.seed ^ 0x6c ^ ((incarnation as u64) << 20));
    let names: std::collections::BTreeSet<String> = ctx.names[..ctx.nodes].iter().cloned().collect();
    while ctx.world.now() < p.run_ms {
        env.sleep(rng.range(p.ttl_ms / 2, p.ttl_ms * 2) as u32).await;
        let observed = env.wall_ms();
        for name in &names {
            let key = format!("{}nodes/{name}.json", ctx.prefix);
            let Ok(get) = bucket.get(&key, env.wall_ms()) else { continue };
            let Ok(found) = env.send(get, Some(10_000)).await else { continue };
            let Some(etag) = found.etag.filter(|_| found.status == 200) else { continue };
            let Ok(mut record) = serde_json::from_slice::<serde_json::Value>(&found.body) else { continue };
            let dead = record["node"].as_str() == Some(name.as_str())
                && record["expires_ms"].as_u64().is_some_and(|e| e <= observed);
            if !dead || record["expires_ms"].as_u64() == Some(0) && rng.chance(0.5) {
                continue;
            }
            record["expires_ms"] = 0.into();
            let body = serde_json::to_vec(&record).expect("a JSON value serializes");
            let Ok(put) = bucket.put(&key, &CasGuard::Match(etag), body, env.wall_ms()) else { continue };
            if env.send(put, Some(10_000)).await.is_ok_and(|r| r.status == 200) {
                let Ok(delete) = bucket.delete(&key, None, env.wall_ms()) else { continue };
                let _ = env.send_held(delete, rng.range(0, p.ttl_ms * 3)).await;
            }
        }
    }
}

/// A backup tool sharing the bucket (a versioned bucket's "restore previous version", a nightly backup put
/// back): every ttl/3..ttl it reads an edge node's lease, keeping the last bodies it saw, and now and then
/// puts an older one back over the current version (`If-Match`: it restores what it meant to replace).
/// The older body is one that node wrote, with an earlier `expires_ms`: peers may judge the node dead by it
/// before the authority the node holds ends.
async fn restorer_life(ctx: Rc<Ctx>, node: usize, incarnation: u32) {
    let p = &ctx.params;
    let env = SimEnv::new(ctx.world.clone(), node, incarnation);
    let mut bucket = Bucket::new(ENDPOINT, BUCKET, "us-east-1", ctx.path_style, "AKIDBACKUP", "backup-secret", None)
        .expect("the restorer's bucket is valid");
    let mut rng = Rng::new(ctx.seed ^ 0xbac ^ ((incarnation as u64) << 20));
    let edge: Vec<String> = (0..ctx.nodes).filter(|&i| ctx.celld[i].is_none()).map(|i| ctx.names[i].clone()).collect();
    let mut seen: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    while ctx.world.now() < p.run_ms {
        env.sleep(rng.range(p.ttl_ms / 3, p.ttl_ms) as u32).await;
        let name = &edge[rng.range(0, edge.len() as u64 - 1) as usize];
        let key = format!("{}nodes/{name}.json", ctx.prefix);
        let Ok(get) = bucket.get(&key, env.wall_ms()) else { continue };
        let Ok(found) = env.send(get, Some(10_000)).await else { continue };
        let Some(etag) = found.etag.filter(|_| found.status == 200) else { continue };
        if celld_edge::ownership::records::decode_lease(&key, &found.body, &etag).is_err() {
            continue; // a garbled transfer: nothing a backup would keep
        }
        let bodies = seen.entry(name.clone()).or_default();
        let older: Vec<&Vec<u8>> = bodies.iter().filter(|b| **b != found.body).collect();
        if !older.is_empty() && rng.chance(0.3) {
            let body = older[rng.range(0, older.len() as u64 - 1) as usize].clone();
            let Ok(put) = bucket.put(&key, &CasGuard::Match(etag), body, env.wall_ms()) else { continue };
            let _ = env.send(put, Some(10_000)).await;
            continue;
        }
        bodies.push(found.body);
        if bodies.len() > 4 {
            bodies.remove(0);
        }
    }
}
