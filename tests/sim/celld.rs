//! A celld-like node (issue 14): a second implementation of celld's ownership rules, written from celld's
//! code (v0.3-v0.6: `ownership_store.rs`, `control.rs`, `dead_node_gc.rs`, the takeover interlock of
//! `crates/logic`), racing the real `S3Ownership` nodes in the same simulated bucket. As celld does, it
//! - resolves the fleet's marker first, as the ewhauser fork does: reads `fleet/control.json`, creates its
//!   backend's marker with `If-None-Match: *` when absent, and refuses to start when the marker names
//!   another backend (a node set up for DynamoDB then keeps its records in the table, which is not
//!   simulated; such a fleet's marker is in the bucket before the run);
//! - writes celld's lease (`probe_public_key`, `peer_protocol`, `ownership_index_generation`, `load`) with
//!   its folded node log, `open` for the lease generation it was opened in (the log's `epoch`);
//! - judges a holder live while `expires_ms > now`, the lease names it and its `addr` is not empty: no
//!   skew margin; a holder whose lease is missing is not taken over (celld's dead-node clean-up deletes
//!   leases with no condition, late: a missing lease is no proof of death, SPEC §5);
//! - recovers a dead holder's unsealed log (seals it in the holder's lease, a conditional write that
//!   changes nothing else) before it takes the holder's cells, and seals its own previous log before it
//!   opens a new one;
//! - writes owner records without a nonce, so an ambiguous write is abandoned, never believed.
//!
//! Its own authority ends `ttl - skew` after the monotonic instant its lease write was sent, and at its
//! wall `expires_ms - skew` (a machine that sleeps stops the monotonic clock), the rules the checker holds
//! every node to. It must never call the driver, and the checker sees it only through the store and the
//! ledger, like every node.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use celld_edge::env::Env;
use celld_edge::ownership::control::{judge, MARKER_KEY};
use celld_edge::ownership::records::{decode_lease, decode_owner, CasGuard, NodeLeaseRecord, OwnerRecord};
use celld_edge::s3::{classify_get, Bucket, GetAnswer, PutAnswer};
use serde_json::{json, Value};

use crate::checker::{OpKind, OpResult};
use crate::exec::{self, Rng, SimEnv};
use crate::workload::{Ctx, BUCKET, ENDPOINT};

/// Where a celld node was told to keep its records (`CELLD_CONTROL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Bucket,
    DynamoDb,
}

/// A rule the celld-like node can be told to break, to show the checker catches it on that side too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CelldTooth {
    /// Take over a dead holder without recovering its unsealed log first.
    SkipRecovery,
    /// Keep acting after its own lease's authority ended.
    NoSelfFence,
}

const REQUEST_TIMEOUT_MS: u32 = 2_000;

/// One life of a celld node, as the observer sees it.
pub struct CelldSlot {
    pub incarnation: u32,
    pub node: Rc<CelldNode>,
}

pub struct CelldNode {
    env: SimEnv,
    bucket: RefCell<Bucket>,
    prefix: String,
    name: String,
    addr: String,
    ttl_ms: u64,
    skew_ms: u64,
    tooth: Option<CelldTooth>,
    /// The held lease: its token, its `expires_ms`, and the monotonic deadline of its authority.
    lease: RefCell<Option<(String, u64, f64)>>,
    /// The lease generation (`Ctx::next_gen`) of the held lease; also its log's `epoch`.
    gen: Cell<u64>,
    /// Monotonic instant of the last lease write sent.
    anchor: Cell<f64>,
    /// Cells believed owned under the held lease.
    pub beliefs: RefCell<BTreeMap<String, u64>>,
    writes: Cell<u64>,
}

impl CelldNode {
    /// True while the node may act for its cells (celld's self-fence).
    pub fn may_act(&self) -> bool {
        match &*self.lease.borrow() {
            Some(_) if self.tooth == Some(CelldTooth::NoSelfFence) => true,
            Some((_, expires, deadline)) => {
                self.env.mono_ms() < *deadline && self.env.wall_ms() + self.skew_ms < *expires
            }
            None => false,
        }
    }

    fn fence(&self) {
        *self.lease.borrow_mut() = None;
        self.beliefs.borrow_mut().clear();
    }

    fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.prefix)
    }

    /// One GET, classified: `Err` when it did not answer (retried by the caller's next round).
    async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, ()> {
        let req = self.bucket.borrow_mut().get(key, self.env.wall_ms()).map_err(drop)?;
        match classify_get(key, self.env.send(req, Some(REQUEST_TIMEOUT_MS)).await) {
            GetAnswer::Found { body, etag } => Ok(Some((body, etag))),
            GetAnswer::Missing => Ok(None),
            GetAnswer::Retryable { .. } | GetAnswer::Refused(_) => Err(()),
        }
    }

    async fn put(&self, key: &str, guard: &CasGuard, body: Vec<u8>) -> PutAnswer {
        let req = match self.bucket.borrow_mut().put(key, guard, body, self.env.wall_ms()) {
            Ok(req) => req,
            Err(e) => return PutAnswer::Refused(e),
        };
        celld_edge::s3::classify_put(key, self.env.send(req, Some(REQUEST_TIMEOUT_MS)).await)
    }

    async fn read_lease(&self, node: &str) -> Result<Option<(NodeLeaseRecord, Value)>, ()> {
        let key = self.key(&format!("nodes/{node}.json"));
        let Some((body, etag)) = self.get(&key).await? else { return Ok(None) };
        let lease = decode_lease(&key, &body, &etag).map_err(drop)?;
        Ok(Some((lease, serde_json::from_slice(&body).map_err(drop)?)))
    }

    async fn read_owner(&self, cell: &str) -> Result<Option<OwnerRecord>, ()> {
        let key = self.key(&format!("cells/{cell}/own.json"));
        let Some((body, etag)) = self.get(&key).await? else { return Ok(None) };
        decode_owner(&key, &body, &etag).map(Some).map_err(drop)
    }

    /// This node's lease as celld writes it; `sampled_ms` differs in every write, so a readback can
    /// tell its own body from any other.
    fn lease_body(&self, expires_ms: u64) -> Value {
        self.writes.set(self.writes.get() + 1);
        json!({
            "node": self.name,
            "expires_ms": expires_ms,
            "addr": self.addr,
            "probe_public_key": format!("key-{}-{}", self.name, self.gen.get()),
            "peer_protocol": 2,
            "paced_handoff": true,
            "ownership_index_generation": format!("key-{}-{}", self.name, self.gen.get()),
            "log": { "state": "open", "epoch": self.gen.get(), "ensemble": [], "tiered": 0, "active": true,
                     "claimant": null, "claimed_ms": null },
            "load": { "sampled_ms": self.env.wall_ms() * 1_000 + self.writes.get() % 1_000, "resident_cells": 0,
                      "host_websockets": 0, "rss_bytes": 1, "cpu_percent_x100": 0, "open_fds": 0, "fd_limit": 0,
                      "pressured": false, "shed_cells": 0 },
        })
    }

    /// Seals the log a lease carries (celld's recovery, reduced to its outcome), changing nothing else.
    async fn seal(&self, node: &str, lease: &NodeLeaseRecord, mut body: Value) -> bool {
        body["log"]["state"] = json!("sealed");
        body["log"]["active"] = json!(false);
        let key = self.key(&format!("nodes/{node}.json"));
        let body = serde_json::to_vec(&body).expect("a lease serializes");
        matches!(self.put(&key, &CasGuard::Match(lease.etag.clone()), body).await, PutAnswer::Applied { .. })
    }
}

/// celld's liveness rule: no skew margin, an `addr`, and a lease that names the record's holder.
fn live(lease: &NodeLeaseRecord, holder: &str, now: u64) -> bool {
    lease.expires_ms > now && !lease.addr.is_empty() && lease.node == holder
}

fn unsealed(lease: &NodeLeaseRecord) -> bool {
    lease.log.as_ref().is_some_and(|l| l.state != "sealed")
}

/// One life of celld node `node`.
pub async fn life(ctx: Rc<Ctx>, node: usize, incarnation: u32, backend: Backend) {
    let p = &ctx.params;
    let bucket = Bucket::new(ENDPOINT, BUCKET, "us-east-1", ctx.path_style, "AKIDSIMULATION", "sim-secret", None)
        .expect("the simulation's bucket is valid");
    let me = Rc::new(CelldNode {
        env: SimEnv::new(ctx.world.clone(), node, incarnation),
        bucket: RefCell::new(bucket),
        prefix: ctx.prefix.to_owned(),
        name: ctx.names[node].clone(),
        addr: format!("10.1.0.{node}:9000"),
        ttl_ms: p.ttl_ms,
        skew_ms: p.skew_ms,
        tooth: p.celld_tooth,
        lease: RefCell::new(None),
        gen: Cell::new(0),
        anchor: Cell::new(0.0),
        beliefs: RefCell::default(),
        writes: Cell::new(0),
    });
    ctx.celld_live.borrow_mut()[node] = Some(CelldSlot { incarnation, node: me.clone() });
    let mut rng = Rng::new(ctx.seed ^ ((node as u64) << 40) ^ ((incarnation as u64) << 20) ^ 0xce11d);
    if !resolve_marker(&ctx, &me, node, backend).await {
        return; // another backend: celld refuses to start (or keeps its records in the table)
    }
    // celld's ids: the one cell outside them is never touched by celld.
    let cells: Vec<String> = ctx.cells.iter().skip(1).cloned().collect();
    while ctx.world.now() < p.run_ms {
        if me.lease.borrow().is_none() {
            acquire(&ctx, &me, node, incarnation).await;
            me.env.sleep(rng.range(0, p.ttl_ms / 6) as u32).await;
            continue;
        }
        if me.env.mono_ms() - me.anchor.get() >= (p.ttl_ms / 3) as f64 {
            renew(&ctx, &me, node, incarnation).await;
            continue;
        }
        // Now and then one of the cells only celld-like nodes claim (`Ctx::fresh`).
        let shared = cells.len() - ctx.fresh;
        // In quiet seeds with a celld-like node, mostly those (`workload::QuietKind::Celld`).
        let mine = if ctx.quiet.is_some() { 0.9 } else { 0.06 };
        let cell = match rng.chance(mine) {
            true => cells[shared + rng.range(0, ctx.fresh as u64 - 1) as usize].clone(),
            false => cells[rng.range(0, shared as u64 - 1) as usize].clone(),
        };
        let believed: Vec<(String, u64)> = me.beliefs.borrow().iter().map(|(c, e)| (c.clone(), *e)).collect();
        match rng.range(0, 99) {
            0..=59 => claim(&ctx, &me, node, incarnation, &cell).await,
            60..=74 if !believed.is_empty() => {
                let (cell, epoch) = believed[rng.range(0, believed.len() as u64 - 1) as usize].clone();
                release(&ctx, &me, node, incarnation, &cell, epoch).await;
            }
            _ => {}
        }
        me.env.sleep(rng.range(0, p.ttl_ms / 6) as u32).await;
    }
}

/// The marker of a fork fleet that keeps its records in DynamoDB.
pub const DYNAMODB_MARKER: &[u8] =
    br#"{"format":1,"backend":"dynamodb","table":"celld-sim","region":"us-east-1","fleet":"5be0c7a1d3f24e8e"}"#;

/// celld's `resolve` for a serving node: follow the marker, or record the fleet's choice when there is
/// none. True when this node keeps its records in the bucket.
async fn resolve_marker(ctx: &Rc<Ctx>, me: &CelldNode, node: usize, backend: Backend) -> bool {
    let key = me.key(MARKER_KEY);
    let ours: &[u8] = match backend {
        Backend::Bucket => br#"{"format":1,"backend":"bucket"}"#,
        Backend::DynamoDb => DYNAMODB_MARKER,
    };
    let op = ctx.world.new_op();
    loop {
        let found = exec::tagged(&ctx.world, node, op, me.get(&key)).await;
        match found {
            Ok(Some((body, _))) => return judge(&key, &body).is_ok() && backend == Backend::Bucket,
            Ok(None) => {
                let put = exec::tagged(&ctx.world, node, op, me.put(&key, &CasGuard::Absent, ours.to_vec())).await;
                if matches!(put, PutAnswer::Applied { .. }) {
                    return backend == Backend::Bucket;
                }
            }
            Err(()) => {}
        }
        me.env.sleep(100).await;
        if ctx.world.now() >= ctx.params.run_ms {
            return false;
        }
    }
}

/// A new lease generation: seal the log an earlier one left open (once that lease is dead), then write a
/// lease with a fresh open log.
async fn acquire(ctx: &Rc<Ctx>, me: &CelldNode, node: usize, incarnation: u32) {
    let current = {
        let op = ctx.world.new_op();
        exec::tagged(&ctx.world, node, op, me.read_lease(&me.name)).await
    };
    let guard = match current {
        Err(()) => return,
        Ok(None) => CasGuard::Absent,
        Ok(Some((lease, _))) if lease.expires_ms > me.env.wall_ms() => return, // wait for it to die
        Ok(Some((lease, body))) if unsealed(&lease) => {
            let op = ctx.world.new_op();
            exec::tagged(&ctx.world, node, op, me.seal(&me.name, &lease, body)).await;
            return; // the next round reads the sealed lease
        }
        Ok(Some((lease, _))) => CasGuard::Match(lease.etag),
    };
    let gen = ctx.next_gen.get() + 1;
    ctx.next_gen.set(gen);
    me.gen.set(gen);
    me.beliefs.borrow_mut().clear();
    let op = ctx.begin(node, incarnation, gen, OpKind::Acquire);
    let result = exec::tagged(&ctx.world, node, op, write_lease(me, &guard, f64::INFINITY, u64::MAX)).await;
    ctx.end(op, result);
}

async fn renew(ctx: &Rc<Ctx>, me: &CelldNode, node: usize, incarnation: u32) {
    let Some((etag, expires, deadline)) = me.lease.borrow().clone() else { return };
    let op = ctx.begin(node, incarnation, me.gen.get(), OpKind::Renew);
    let result = exec::tagged(&ctx.world, node, op, write_lease(me, &CasGuard::Match(etag), deadline, expires)).await;
    if result != OpResult::LeaseOk {
        me.fence();
    }
    ctx.end(op, result);
}

/// Writes this node's lease under `guard`, anchored before sending; an ambiguous write is settled by
/// reading back its own body. Installs the lease only if the answer came while the authority it renews
/// still held (`held_until`, monotonic, and wall `held_expires - skew`: a machine that slept keeps its
/// monotonic clock): a renewal that lands after the old lease could be judged dead does not restore
/// authority.
async fn write_lease(me: &CelldNode, guard: &CasGuard, held_until: f64, held_expires: u64) -> OpResult {
    let anchor = me.env.mono_ms();
    me.anchor.set(anchor);
    let expires = me.env.wall_ms() + me.ttl_ms;
    let body = me.lease_body(expires);
    let key = me.key(&format!("nodes/{}.json", me.name));
    let bytes = serde_json::to_vec(&body).expect("a lease serializes");
    let etag = match me.put(&key, guard, bytes.clone()).await {
        PutAnswer::Applied { etag } => Some(etag),
        PutAnswer::Ambiguous { .. } | PutAnswer::Conflict { .. } | PutAnswer::Throttled(_) => match me.get(&key).await {
            Ok(Some((read, etag))) if read == bytes => Some(etag),
            _ => None,
        },
        PutAnswer::Rejected | PutAnswer::Refused(_) => None,
    };
    let deadline = anchor + (me.ttl_ms - me.skew_ms) as f64;
    match etag {
        Some(etag)
            if me.env.mono_ms() < deadline.min(held_until) && me.env.wall_ms() + me.skew_ms < expires.min(held_expires) =>
        {
            *me.lease.borrow_mut() = Some((etag, expires, deadline));
            OpResult::LeaseOk
        }
        _ => {
            me.fence();
            OpResult::Failed("fenced")
        }
    }
}

async fn claim(ctx: &Rc<Ctx>, me: &CelldNode, node: usize, incarnation: u32, cell: &str) {
    if !me.may_act() {
        return;
    }
    let op = ctx.begin(node, incarnation, me.gen.get(), OpKind::Claim(cell.to_owned()));
    let result = exec::tagged(&ctx.world, node, op, claim_once(me, cell)).await;
    if let OpResult::Claimed { epoch, .. } = &result {
        me.beliefs.borrow_mut().insert(cell.to_owned(), *epoch);
    }
    ctx.end(op, result);
}

/// celld's resolution of one cell: read the record; absent → create at epoch 1; released or ours →
/// epoch + 1; a live holder → route to it; a dead one → recover its log if unsealed, else take over.
async fn claim_once(me: &CelldNode, cell: &str) -> OpResult {
    let Ok(current) = me.read_owner(cell).await else { return OpResult::Failed("transport") };
    let (guard, epoch, took_over) = match &current {
        None => (CasGuard::Absent, 1, false),
        Some(rec) if rec.node.is_empty() || rec.node == me.name => (CasGuard::Match(rec.etag.clone()), rec.epoch + 1, false),
        Some(rec) => {
            let now = me.env.wall_ms();
            let Ok(lease) = me.read_lease(&rec.node).await else { return OpResult::Failed("transport") };
            match lease {
                Some((lease, _)) if live(&lease, &rec.node, now) => {
                    return OpResult::ClaimRejected { node: rec.node.clone(), epoch: rec.epoch, live: true };
                }
                None => return OpResult::ClaimRejected { node: rec.node.clone(), epoch: rec.epoch, live: true },
                Some((lease, body)) if unsealed(&lease) && me.tooth != Some(CelldTooth::SkipRecovery) => {
                    me.seal(&rec.node, &lease, body).await;
                    return OpResult::ClaimAwaitsRecovery { node: rec.node.clone(), epoch: rec.epoch };
                }
                _ => (CasGuard::Match(rec.etag.clone()), rec.epoch + 1, true),
            }
        }
    };
    if !me.may_act() {
        return OpResult::Failed("fenced");
    }
    let key = me.key(&format!("cells/{cell}/own.json"));
    let body = serde_json::to_vec(&json!({ "node": me.name, "epoch": epoch })).expect("a record serializes");
    match me.put(&key, &guard, body).await {
        PutAnswer::Applied { .. } if me.may_act() => {
            OpResult::Claimed { epoch, took_over, prior: current.map(|r| (r.node, r.epoch)) }
        }
        PutAnswer::Applied { .. } => OpResult::Failed("fenced"),
        PutAnswer::Rejected => OpResult::Failed("lost-race"),
        PutAnswer::Ambiguous { .. } | PutAnswer::Conflict { .. } | PutAnswer::Throttled(_) => OpResult::Failed("ambiguous"),
        PutAnswer::Refused(e) => OpResult::Failed(e.code()),
    }
}

/// celld's `release_owner`: stop acting, then read and clear the record if it still names this node at
/// `epoch`. A node whose authority ended has stopped serving and releases nothing (as every node, it
/// writes for itself only under a valid lease).
async fn release(ctx: &Rc<Ctx>, me: &CelldNode, node: usize, incarnation: u32, cell: &str, epoch: u64) {
    me.beliefs.borrow_mut().remove(cell);
    if !me.may_act() {
        return;
    }
    let op = ctx.begin(node, incarnation, me.gen.get(), OpKind::Release(cell.to_owned()));
    let result = exec::tagged(&ctx.world, node, op, async {
        match me.read_owner(cell).await {
            Ok(Some(_)) if !me.may_act() => OpResult::Failed("fenced"),
            Ok(Some(rec)) if rec.node == me.name && rec.epoch == epoch => {
                let key = me.key(&format!("cells/{cell}/own.json"));
                let body = serde_json::to_vec(&json!({ "node": "", "epoch": epoch })).expect("a record serializes");
                match me.put(&key, &CasGuard::Match(rec.etag), body).await {
                    PutAnswer::Applied { .. } => OpResult::Released,
                    PutAnswer::Rejected => OpResult::ReleaseRejected,
                    _ => OpResult::Failed("ambiguous"),
                }
            }
            Ok(_) => OpResult::ReleaseRejected,
            Err(()) => OpResult::Failed("transport"),
        }
    })
    .await;
    ctx.end(op, result);
}

#[cfg(test)]
mod tests {
    use super::CelldTooth;
    use crate::workload::{run_seed, Params};

    // That celld-like and edge nodes take cells from each other both ways, and that edge claims wait for
    // a celld log's recovery, is asserted over the main run's seeds (`correct_protocol_survives_*`).

    /// The checker catches a celld-like node that breaks celld's own rules, within 400 seeds each.
    #[test]
    fn the_celld_side_has_teeth() {
        for tooth in [CelldTooth::SkipRecovery, CelldTooth::NoSelfFence] {
            let armed = Params { celld_tooth: Some(tooth), ..Params::default() };
            let caught = (0..400).find_map(|seed| {
                let r = run_seed(seed, &armed);
                (!r.violations.is_empty() && run_seed(seed, &Params::default()).violations.is_empty())
                    .then(|| (seed, r.violations[0].rule, r.violations[0].detail.clone()))
            });
            let (seed, rule, detail) = caught.unwrap_or_else(|| panic!("{tooth:?} not caught in 400 seeds"));
            println!("{tooth:?}: caught at seed {seed} by [{rule}] {detail}");
        }
    }
}
