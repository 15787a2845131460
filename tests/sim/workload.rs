//! One simulated run: draws a scenario from a seed (nodes, cells, clocks, fault mix, chaos), runs every
//! node's real `S3Ownership` through a workload loop (lease upkeep, contended claims, releases, verifies,
//! owner lookups) on the seeded executor, records results and acting instants in the ledger, and hands
//! store + ledger to the checker.
//!
//! It must never decide correctness itself (that is the checker's job) and never reach the store except
//! through the driver's requests.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;

use celld_edge::env::Env;
use celld_edge::ownership::teeth::Tooth;
use celld_edge::ownership::CasOutcome;
use celld_edge::ownership::{ClaimOptions, ClaimOutcome, Config, IdSet, ProbePolicy, S3Ownership};
use celld_edge::Error;

use crate::celld::{self, Backend, CelldSlot, CelldTooth};
use crate::checker::{self, Coverage, Facts, Ledger, OpKind, OpRecord, OpResult, Violation};
use crate::exec::{self, Both, Chaos, Rng, SimEnv, World};
use crate::store::{Fault, FaultMix, SimStore};

pub const BUCKET: &str = "sim-bucket";
pub const ENDPOINT: &str = "http://store.sim";

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
}

impl Default for Params {
    fn default() -> Self {
        Params { tooth: None, run_ms: 20_000, ttl_ms: 3_000, skew_ms: 400, max_drift: 5e-4, max_fault_rate: 0.08, celld_tooth: None }
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

/// Shared between the node tasks and the observer.
pub(crate) struct Ctx {
    pub(crate) world: Rc<World>,
    pub(crate) params: Params,
    pub(crate) seed: u64,
    pub(crate) names: Vec<String>,
    pub(crate) cells: Vec<String>,
    pub(crate) prefix: &'static str,
    pub(crate) path_style: bool,
    /// Renew from a loop of its own beside the operations (`startRenewing`), not between them.
    background_renewal: bool,
    probe: bool,
    ledger: RefCell<Ledger>,
    /// Each node's current instance and the (cell → epoch) it believes it owns.
    live: RefCell<Vec<Option<NodeSlot>>>,
    pub(crate) next_gen: Cell<u64>,
    /// Which nodes are celld-like, and the backend each was set up for; their current lives.
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

/// The node names and cells a seed uses. One cell needs percent-encoding, to keep the wire honest.
fn names(rng: &mut Rng) -> (Vec<String>, Vec<String>) {
    let n = rng.range(5, 16) as usize;
    let cells = rng.range(3, 8) as usize;
    let nodes = (0..n).map(|i| format!("n{i}")).collect();
    let mut cells: Vec<String> = (0..cells).map(|i| format!("c{i}")).collect();
    cells[0] = "cell é+1".to_owned();
    (nodes, cells)
}

/// The chaos a seed inflicts: pauses longer than the lease, crashes, partitions, brownouts.
fn draw_chaos(rng: &mut Rng, world: &World, nodes: usize, p: &Params) {
    let events = rng.range(0, (nodes as u64) * 2);
    for _ in 0..events {
        let at = rng.range(p.ttl_ms, p.run_ms);
        let node = rng.range(0, nodes as u64 - 1) as usize;
        let chaos = match rng.range(0, 9) {
            0..=3 => Chaos::Pause { node, ms: rng.range(p.ttl_ms, p.ttl_ms * 5 / 2) },
            4..=5 => Chaos::Crash { node, ms: rng.range(0, p.ttl_ms * 2) },
            6..=7 => Chaos::Partition { node, ms: rng.range(p.ttl_ms, p.ttl_ms * 2) },
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
    let (nodes, cells) = names(&mut rng);
    let n = nodes.len();
    let clocks = exec::draw_clocks(&mut rng, n, params.skew_ms, params.run_ms + 60_000, params.max_drift);
    let mix = FaultMix::draw(&mut rng, params.max_fault_rate);
    let world = World::new(rng.next_u64(), clocks.clone(), mix, SimStore::new(BUCKET));
    draw_chaos(&mut rng, &world, n, params);
    // Drawn last, so that adding them kept every earlier seed's scenario.
    let prefix = ["", "p/", "tenant.x/"][rng.range(0, 2) as usize];
    let path_style = rng.chance(0.5);
    let background_renewal = rng.chance(0.5);
    // The store probe (SPEC §6) runs before an instance's first write unless opted out; a quarter of
    // the seeds keep it on, under the same faults (an honest, flaky store must still pass it).
    let probe = rng.chance(0.25);
    // Half the seeds share the bucket with one or two celld-like nodes (the last node ids); in one of
    // ten of those, the first is set up for celld's DynamoDB backend and races to mark the fleet so.
    let mut nodes = nodes;
    let mut celld_roles: Vec<Option<Backend>> = vec![None; n];
    if rng.chance(0.5) {
        let k = rng.range(1, 2) as usize;
        let dynamo = rng.chance(0.1);
        for (j, i) in (n - k..n).enumerate() {
            nodes[i] = format!("celld-{j}");
            celld_roles[i] = Some(if dynamo && j == 0 { Backend::DynamoDb } else { Backend::Bucket });
        }
    }
    let is_celld: Vec<bool> = celld_roles.iter().map(Option::is_some).collect();
    if trace {
        world.enable_trace();
    }

    let ctx = Rc::new(Ctx {
        world: world.clone(),
        params: params.clone(),
        seed,
        names: nodes.clone(),
        cells: cells.clone(),
        prefix,
        path_style,
        background_renewal,
        probe,
        ledger: RefCell::new(Ledger::default()),
        live: RefCell::new((0..n).map(|_| None).collect()),
        next_gen: Cell::new(0),
        celld: celld_roles,
        celld_live: RefCell::new((0..n).map(|_| None).collect()),
    });

    let factory_ctx = ctx.clone();
    let observer_ctx = ctx.clone();
    exec::run(
        &world,
        n,
        params.run_ms,
        move |node, incarnation| match factory_ctx.celld[node] {
            Some(backend) => Box::pin(celld::life(factory_ctx.clone(), node, incarnation, backend)),
            None => Box::pin(node_life(factory_ctx.clone(), node, incarnation)),
        },
        move || observe(&observer_ctx),
    );
    ctx.live.borrow_mut().clear();
    ctx.celld_live.borrow_mut().clear();
    let mut lines = world.take_trace();
    let ctx = Rc::try_unwrap(ctx).unwrap_or_else(|_| panic!("node tasks still hold the context"));
    let ledger = ctx.ledger.into_inner();
    drop(ctx.world);
    let store = world.into_store();
    let facts = Facts {
        nodes: &nodes,
        cells: &cells,
        clocks: &clocks,
        prefix,
        lease_ttl_ms: params.ttl_ms,
        max_clock_skew_ms: params.skew_ms,
        celld: &is_celld,
    };
    let (violations, coverage) = checker::check(&store, &ledger, &facts);
    if trace {
        for op in ledger.ops.values() {
            lines.push(format!(
                "op {} {} life {} gen {} {:?} [{}..{}] -> {:?}",
                op.id, nodes[op.node], op.incarnation, op.gen, op.kind, op.start, op.end, op.result
            ));
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

/// After every event: each running node with a valid lease could act for every cell it believes it
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

/// One life of one node's lease bookkeeping, shared by its operation loop and its renewal loop.
struct Life {
    ctx: Rc<Ctx>,
    node: usize,
    incarnation: u32,
    own: Rc<S3Ownership<SimEnv>>,
    beliefs: Rc<RefCell<BTreeMap<String, u64>>>,
    leased: Cell<bool>,
    gen: Cell<u64>,
    last_renew: Cell<u64>,
}

impl Life {
    /// Runs one driver call as a ledger operation: begun now, its requests tagged, its result recorded.
    async fn op<T: std::fmt::Debug, F: Future<Output = T>>(
        &self,
        kind: OpKind,
        call: F,
        result: impl FnOnce(&T) -> OpResult,
    ) -> T {
        self.op_noting(kind, call, false, result).await
    }

    /// `op`, noting in the ledger whether it was a claim with `expect_new`.
    async fn op_noting<T: std::fmt::Debug, F: Future<Output = T>>(
        &self,
        kind: OpKind,
        call: F,
        expect_new: bool,
        result: impl FnOnce(&T) -> OpResult,
    ) -> T {
        let op = self.ctx.begin(self.node, self.incarnation, self.gen.get(), kind);
        if expect_new {
            self.ctx.ledger.borrow_mut().expect_new.insert(op);
        }
        let out = exec::tagged(&self.ctx.world, self.node, op, call).await;
        self.ctx.world.note(|| format!("op {op} of {} returned {out:?}", self.ctx.names[self.node]));
        self.ctx.end(op, result(&out));
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
}

/// One life of one node: a fresh `S3Ownership` under the node's id, looping over operations until the
/// run ends (or the executor drops it in a crash), with renewals inline or from a loop of their own.
async fn node_life(ctx: Rc<Ctx>, node: usize, incarnation: u32) {
    let p = &ctx.params;
    let mut cfg = Config::new(ENDPOINT, BUCKET, &ctx.names[node], "AKIDSIMULATION", "sim-secret");
    cfg.lease_ttl_ms = p.ttl_ms;
    cfg.max_clock_skew_ms = p.skew_ms;
    cfg.addr = format!("10.0.0.{node}:7000");
    cfg.prefix = ctx.prefix.to_owned();
    cfg.path_style = ctx.path_style;
    cfg.probe = if ctx.probe { ProbePolicy::Recorded } else { ProbePolicy::Off };
    // One cell id (`cell é+1`) is outside celld's sets, to keep the wire's encoding honest.
    cfg.ids = IdSet::Utf8;
    let env = SimEnv::new(ctx.world.clone(), node, incarnation);
    let own = S3Ownership::new(cfg, env).expect("the simulation's config is valid");
    let own = Rc::new(match p.tooth {
        Some(t) => own.with_tooth(t),
        None => own,
    });
    let beliefs: Rc<RefCell<BTreeMap<String, u64>>> = Rc::default();
    ctx.live.borrow_mut()[node] = Some(NodeSlot { incarnation, own: own.clone(), beliefs: beliefs.clone() });
    let life = Rc::new(Life {
        ctx: ctx.clone(),
        node,
        incarnation,
        own,
        beliefs,
        leased: Cell::new(false),
        gen: Cell::new(0),
        last_renew: Cell::new(0),
    });
    let seed = ctx.seed ^ ((node as u64) << 40) ^ ((incarnation as u64) << 20);
    if ctx.background_renewal {
        Both(
            Some(Box::pin(operations(life.clone(), Rng::new(seed ^ 0x5eed)))),
            Some(Box::pin(renewals(life, Rng::new(seed ^ 0x4e4e)))),
        )
        .await
    } else {
        operations(life, Rng::new(seed ^ 0x5eed)).await
    }
}

/// The renewal loop of `startRenewing`: every ttl/3, renew the held lease (also after a freeze).
async fn renewals(life: Rc<Life>, mut rng: Rng) {
    let every = life.ctx.params.ttl_ms / 3;
    while life.ctx.world.now() < life.ctx.params.run_ms {
        life.own.env().sleep(every as u32).await;
        if life.leased.get() {
            life.renew(&mut rng).await;
        }
    }
}

async fn operations(life: Rc<Life>, mut rng: Rng) {
    let ctx = &life.ctx;
    let p = &ctx.params;
    let own = &life.own;
    let beliefs = &life.beliefs;
    let renew_every = p.ttl_ms / 3;
    while ctx.world.now() < p.run_ms {
        if !life.leased.get() {
            // A new lease generation: nothing claimed before it counts any more.
            beliefs.borrow_mut().clear();
            life.gen.set(ctx.next_gen.get() + 1);
            ctx.next_gen.set(life.gen.get());
            let r = life
                .op(OpKind::Acquire, own.acquire_lease(), |r| r.as_ref().map_or_else(failed, |_| OpResult::LeaseOk))
                .await;
            life.leased.set(r.is_ok());
            life.last_renew.set(ctx.world.now());
            if r.is_err() {
                life.sleep(&mut rng, 500).await;
            }
            continue;
        }
        // A renewal loop does not know it was frozen: after a pause it simply renews (the driver must
        // refuse to restore a lapsed lease), so a lapsed lease is renewed before it is re-acquired.
        if !ctx.background_renewal && (ctx.world.now() - life.last_renew.get() >= renew_every || !own.lease_valid()) {
            life.renew(&mut rng).await;
            continue;
        }
        let believed: Vec<(String, u64)> = beliefs.borrow().iter().map(|(c, &e)| (c.clone(), e)).collect();
        let pick = rng.range(0, 99);
        let random_cell = ctx.cells[rng.range(0, ctx.cells.len() as u64 - 1) as usize].clone();
        let read =
            |o: &Result<Option<(String, u64)>, Error>| o.as_ref().map_or_else(failed, |o| OpResult::Read(o.clone()));
        match pick {
            0..=44 => {
                // A third of the claims expect a new cell (create first): right on the first claim of a
                // cell, wrong (a refused create, then the usual read) on every later one.
                let options = ClaimOptions { expect_new: rng.chance(0.33) };
                let kind = OpKind::Claim(random_cell.clone());
                let r = life
                    .op_noting(kind, own.claim_with(&random_cell, options), options.expect_new, |r| match r {
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
                    })
                    .await;
                match r {
                    Ok(ClaimOutcome::Applied { epoch, .. }) => {
                        beliefs.borrow_mut().insert(random_cell, epoch);
                    }
                    Err(Error::Fenced(_) | Error::NotLeased(_)) => life.leased.set(false),
                    _ => {}
                }
            }
            45..=54 if !believed.is_empty() => {
                let (cell, _) = &believed[rng.range(0, believed.len() as u64 - 1) as usize];
                // Stop acting before asking to release: the release may land before its answer does.
                beliefs.borrow_mut().remove(cell);
                let _ = life
                    .op(OpKind::Release(cell.clone()), own.release(cell), |r| match r {
                        Ok(CasOutcome::Applied) => OpResult::Released,
                        Ok(CasOutcome::Rejected) => OpResult::ReleaseRejected,
                        Err(e) => failed(e),
                    })
                    .await;
            }
            55..=74 if !believed.is_empty() => {
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
            75..=84 => {
                let call = async { own.owner(&random_cell).await.map(|o| o.map(|o| (o.node, o.epoch, o.live))) };
                let _ = life
                    .op(OpKind::Owner(random_cell.clone()), call, |o| {
                        o.as_ref().map_or_else(failed, |o| OpResult::OwnerSeen(o.clone()))
                    })
                    .await;
            }
            85..=89 => {
                let call = async { own.read_owner(&random_cell).await.map(|o| o.map(|o| (o.node, o.epoch))) };
                let _ = life.op(OpKind::ReadOwner(random_cell.clone()), call, read).await;
            }
            90..=94 => {
                let peer = rng.range(0, ctx.names.len() as u64 - 1) as usize;
                let _ = life
                    .op(OpKind::ReadLease(peer), own.read_node_lease(&ctx.names[peer]), |r| {
                        r.as_ref().map_or_else(failed, |l| OpResult::LeaseRead(l.as_ref().map(|l| l.expires_ms)))
                    })
                    .await;
            }
            _ => {}
        }
        life.sleep(&mut rng, p.ttl_ms / 6).await;
    }
}
