//! The history checker: judges one run from the store's version history (the truth: what landed, when,
//! sent by which node and operation) and the ledger of what each node did and believed (operation results,
//! and every instant it was in a position to act as an owner). Rules, per SPEC §2-§5:
//!
//! - owner records: every claim advances the epoch; a release keeps it and only clears the releaser's own
//!   claim; each (cell, epoch) has one writer; records always decode; nothing is ever deleted;
//! - no takeover while the owner's lease, as the owner installed it, was live by the peer rule
//!   (`expires_ms + maxClockSkewMs > wall_now` of the taker when its write landed);
//! - a node acts for (cell, epoch) only if it wrote that record, never after another node's record
//!   with a higher epoch landed, and only within the authority of a lease it installed in that claim's
//!   generation (monotonic `ttl - skew` after sending it, and wall `expires_ms - skew`);
//! - a release is written only under a valid lease of the releasing process;
//! - `close()`: a process acts for no cell once it has called it; a lease it retired (an expired copy
//!   over its own token) lets peers take over at once, and is never another process's lease;
//! - an honest store (which the simulated one is, however flaky) never makes an operation fail with
//!   `corrupt-record`, `store-violation`, `invalid-input`, `auth` or `request`;
//! - results agree with the store: nothing reported rejected landed, nothing reported applied is missing,
//!   what a read/verify/rejection reports was the record at some instant of the operation;
//! - the wire contract (conditions on every write, keys encoded once, known keys only);
//! - sharing a bucket with celld (`celld.rs`): no takeover of a holder whose node log is not sealed; a
//!   claim that waits for recovery names a dead holder with an unsealed log; no edge write at all when
//!   the fleet's backend marker names another backend, no edge write of the marker (read, never
//!   created), and the marker never replaced. celld nodes take over by celld's own rule (`expires_ms <= wall`, no skew margin), and may
//!   write another node's lease only to seal its log.
//!
//! It must never consult the driver's own view of anything: only the store's history and the ledger.

use std::collections::{BTreeMap, BTreeSet};

use celld_edge::ownership::control::{judge, MARKER_KEY};
use celld_edge::ownership::credentials::expired;
use celld_edge::ownership::records::{decode_lease, decode_owner, NodeLeaseRecord};

use crate::exec::Clock;
use crate::store::{SimStore, Version};

/// What one workload operation was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    Acquire,
    Renew,
    Claim(String),
    Release(String),
    Verify(String, u64),
    Owner(String),
    ReadOwner(String),
    ReadLease(usize),
    /// `close()`: its writes are the optional releases and the retirement (and a delete) of the lease.
    Close,
    /// `remove_dead_lease` of a node (by index).
    RemoveLease(usize),
}

/// How it ended, as the driver reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// Still running when the run ended or the node crashed.
    Unfinished,
    /// A lease write (acquire/renew) installed.
    LeaseOk,
    /// `prior`: the (node, epoch) the claim reported replacing.
    Claimed {
        epoch: u64,
        took_over: bool,
        prior: Option<(String, u64)>,
    },
    ClaimRejected {
        node: String,
        epoch: u64,
        live: bool,
    },
    /// Not claimable: the holder is dead but its celld node log is not sealed.
    ClaimAwaitsRecovery {
        node: String,
        epoch: u64,
    },
    Released,
    ReleaseRejected,
    Verified(bool),
    /// Owner / read: `(node, epoch)` of the record read, `None` when absent.
    Read(Option<(String, u64)>),
    /// `owner`: the record's (node, epoch) and whether that node's lease was reported live.
    OwnerSeen(Option<(String, u64, bool)>),
    LeaseRead(Option<u64>),
    /// What `remove_dead_lease` said it did.
    LeaseRemoval(String),
    /// `close()` finished: whether it retired (and deleted) the lease.
    Closed { retired: bool, deleted: bool },
    Failed(&'static str),
}

#[derive(Debug, Clone)]
pub struct OpRecord {
    pub id: u64,
    pub node: usize,
    pub incarnation: u32,
    /// The lease generation the node was in (a new one at every acquire).
    pub gen: u64,
    pub kind: OpKind,
    pub start: u64,
    pub end: u64,
    pub result: OpResult,
}

/// What nodes did and believed. `acts` keeps, per (node, incarnation, cell, epoch), the first and last
/// true time the node held a valid lease while believing it owned that epoch.
#[derive(Debug, Default)]
pub struct Ledger {
    pub ops: BTreeMap<u64, OpRecord>,
    /// Leases the driver reported installed (its `LeaseAcquired` / `LeaseRenewed` events, which also come
    /// from its own renewal loop): (process, lease generation) → expires_ms of each, and when.
    pub installs: BTreeMap<(usize, u64), Vec<(u64, u64)>>,
    /// Fences the driver reported (its `Fenced` events): (process, incarnation, when, reason).
    pub fences: Vec<(usize, u32, u64, String)>,
    pub acts: BTreeMap<(usize, u32, String, u64), (u64, u64)>,
    /// Claims made with `expect_new` (they create before reading).
    pub expect_new: BTreeSet<u64>,
    /// Claims that waited for the holder's lease to run out (`claim_waiting`).
    pub waiting: BTreeSet<u64>,
    /// Writes a life sent after it called `close()`: (process, incarnation, operation, `METHOD url`, when).
    pub sent_after_close: Vec<(usize, u32, u64, String, u64)>,
    /// `close()` operations begun by a user callback in the middle of another operation (re-entrant).
    pub reentrant_closes: BTreeSet<u64>,
    /// The lease generation each edge write was sent in: (process, incarnation, operation, sent) → generation.
    /// A waiting claim's operation takes the generation it was answered in, but a void attempt of it may
    /// have been sent under an earlier lease.
    pub write_gens: BTreeMap<(usize, u32, u64, u64), u64>,
    /// Every lease install the driver reported, by (process, life), when.
    pub installed: Vec<(usize, u32, u64)>,
    /// The driver's renewal loops (`renew_until_stopped`) of (process, life): when one started (true) or
    /// returned (false).
    pub loops: Vec<(usize, u32, u64, bool)>,
}

impl Ledger {
    /// The lease generation the write `tag` was sent in (its operation's, when not recorded).
    fn gen_of_write(&self, tag: &crate::store::Tag) -> Option<u64> {
        let recorded = self.write_gens.get(&(tag.node, tag.incarnation, tag.op, tag.sent)).copied();
        recorded.or_else(|| self.ops.get(&tag.op).map(|o| o.gen))
    }
}

impl Ledger {
    pub fn act(&mut self, node: usize, incarnation: u32, cell: &str, epoch: u64, at: u64) {
        let e = self.acts.entry((node, incarnation, cell.to_owned(), epoch)).or_insert((at, at));
        e.1 = at;
    }
}

/// The run's fixed facts the rules need.
pub struct Facts<'a> {
    pub nodes: &'a [String],
    pub cells: &'a [String],
    pub clocks: &'a [Clock],
    /// The key prefix every record sits under (SPEC §2).
    pub prefix: &'a str,
    pub lease_ttl_ms: u64,
    pub max_clock_skew_ms: u64,
    /// The process that plays celld's dead-node clean-up (it writes other nodes' lease keys).
    pub gc: Option<usize>,
    /// Which processes are celld-like nodes (`celld.rs`), by index.
    pub celld: &'a [bool],
    /// The simulated run's length (true ms): what a process would have done after it is not judged.
    pub run_ms: u64,
    /// Edge processes sign with a credentials provider's keys (which is slow at times).
    pub provider: bool,
    /// The process playing a backup tool that puts old versions of edge leases back.
    pub restorer: Option<usize>,
    /// Edge processes' wall clocks are arbitrary (issue 25): the rules that compared them judge instead
    /// whether the holder's own authority had ended ([`spent`]); celld's processes keep clocks within the
    /// skew of the store's, and their rules.
    pub clock_proof: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: &'static str,
    pub detail: String,
}

/// Counts that show what a run exercised (a checker that saw no takeovers proves little about them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    pub claims: u64,
    pub takeovers: u64,
    pub releases: u64,
    pub acts: u64,
    pub rejected_claims: u64,
    /// Claims that started with a write, not a read: with `expect_new`, or over a version seen earlier.
    pub fresh_starts: u64,
    pub known_starts: u64,
    /// Of those, the ones that went on to read (a refused guard's fallback, or settling an ambiguous write).
    pub unread_then_read: u64,
    /// Operations that ended in an error, by error code (ambiguous, fenced, transport, ...).
    pub failures: BTreeMap<&'static str, u64>,
    /// Claims refused because the dead holder's node log awaited recovery.
    pub recovery_waits: u64,
    /// Takeovers between an edge node and a celld node, either way.
    pub mixed_takeovers: u64,
    /// `close()` calls that finished, retired leases, and deleted ones.
    pub closes: u64,
    pub retirements: u64,
    pub deleted_leases: u64,
    /// Takeovers of a cell whose holder had retired its lease (before its expiry would have allowed it).
    pub retired_takeovers: u64,
    /// Waiting claims that ended applied, and those of them that took over a holder.
    pub waits_applied: u64,
    pub waits_took_over: u64,
    /// Dead leases another edge process removed.
    pub leases_removed: u64,
    /// `close()` calls made by a user callback in the middle of another operation.
    pub reentrant_closes: u64,
}

struct OwnerVersion<'a> {
    v: &'a Version,
    node: String,
    epoch: u64,
}

impl Facts<'_> {
    fn owner_key(&self, cell: &str) -> String {
        format!("{}cells/{cell}/own.json", self.prefix)
    }

    fn lease_key(&self, node: &str) -> String {
        format!("{}nodes/{node}.json", self.prefix)
    }
}

/// Was some version matching `pred` the current one at an instant of [start, end]?
fn current_during(hist: &[OwnerVersion], start: u64, end: u64, pred: impl Fn(&OwnerVersion) -> bool) -> bool {
    hist.iter().enumerate().any(|(i, ov)| {
        let superseded_at = hist.get(i + 1).map_or(u64::MAX, |n| n.v.at);
        pred(ov) && ov.v.at <= end && superseded_at >= start
    })
}

pub fn check(store: &SimStore, ledger: &Ledger, facts: &Facts) -> (Vec<Violation>, Coverage) {
    let mut out = Vec::new();
    let mut cov = Coverage::default();
    let mut bad = |rule: &'static str, detail: String| out.push(Violation { rule, detail });

    for a in &store.anomalies {
        bad("wire", a.clone());
    }
    check_marker(store, facts, &mut bad);
    let known: BTreeSet<String> =
        facts.cells.iter().map(|c| facts.owner_key(c)).chain(facts.nodes.iter().map(|n| facts.lease_key(n))).collect();
    let probe_keys = format!("{}probe/", facts.prefix); // the probe's scratch keys and its recorded verdict
    let marker = format!("{}{MARKER_KEY}", facts.prefix);
    for key in store.objects.keys() {
        if !known.contains(key) && !key.starts_with(&probe_keys) && *key != marker {
            bad("wire", format!("write to unexpected key {key:?}"));
        }
    }

    // Decoded owner histories.
    let mut owners: BTreeMap<&str, Vec<OwnerVersion>> = BTreeMap::new();
    for cell in facts.cells {
        let key = facts.owner_key(cell);
        let mut hist = Vec::new();
        for v in store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]) {
            let Some(body) = &v.body else {
                bad("owner-history", format!("{key} deleted by {:?} at {}", v.writer, v.at));
                continue;
            };
            match decode_owner(&key, body, &v.etag) {
                Ok(r) => hist.push(OwnerVersion { v, node: r.node, epoch: r.epoch }),
                Err(e) => bad("owner-history", format!("{key} written undecodable by {:?}: {e}", v.writer)),
            }
        }
        owners.insert(cell.as_str(), hist);
    }

    let name = |n: usize| facts.nodes[n].as_str();
    // Per (process, life): an operation of each lease generation it was in.
    let mut gens_of: BTreeMap<(usize, u32), BTreeMap<u64, u64>> = BTreeMap::new();
    for o in ledger.ops.values() {
        gens_of.entry((o.node, o.incarnation)).or_default().entry(o.gen).or_insert(o.id);
    }
    // Owner-record rules.
    for (cell, hist) in &owners {
        let mut writers: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
        for (i, ov) in hist.iter().enumerate() {
            let w = ov.v.writer;
            let prev = i.checked_sub(1).map(|j| &hist[j]);
            if ov.node.is_empty() {
                cov.releases += 1;
                // Judged when the release was asked for: a resend settling an ambiguous attempt may follow
                // after the lease lapsed, which is harmless (the record still names the releaser).
                // A release may also wait (for a claim of the cell in flight) and find a renewed lease: it
                // needs authority when asked or when this attempt was sent.
                if Some(w.node) != facts.gc {
                    // Any lease generation of the releasing instance will do: it releases its node's record.
                    let asked = ledger.ops.get(&w.op).map_or(w.sent, |o| o.start);
                    let gens = gens_of.get(&(w.node, w.incarnation)).cloned().unwrap_or_default();
                    let mut found: Vec<String> = Vec::new();
                    'judge: for at in [asked, w.sent] {
                        for &op_of_gen in gens.values() {
                            let before = found.len();
                            check_authority(store, ledger, facts, w.node, op_of_gen, at, &mut |_, d| found.push(d), || {
                                format!("{cell}: {} (life {}) released epoch {} (at t={at})", name(w.node), w.incarnation, ov.epoch)
                            });
                            if found.len() == before {
                                found.clear();
                                break 'judge;
                            }
                        }
                    }
                    if let Some(d) = found.pop() {
                        bad("release-without-lease", d);
                    }
                }
                match prev {
                    Some(p) if p.node == name(w.node) && p.epoch == ov.epoch => {}
                    _ => bad(
                        "release-of-other",
                        format!(
                            "{cell}: {} released epoch {} over {:?} at t={}",
                            name(w.node),
                            ov.epoch,
                            prev.map(|p| (&p.node, p.epoch)),
                            ov.v.at
                        ),
                    ),
                }
                continue;
            }
            cov.claims += 1;
            // Claims only: a release keeps the epoch, and a second process of the node may write it.
            writers.entry(ov.epoch).or_default().insert(w.node);
            if ov.node != name(w.node) {
                bad("owner-history", format!("{cell}: {} wrote a record naming {}", name(w.node), ov.node));
            }
            if let Some(p) = prev {
                if ov.epoch <= p.epoch {
                    bad(
                        "epoch-order",
                        format!("{cell}: epoch {} by {} after epoch {} at t={}", ov.epoch, ov.node, p.epoch, ov.v.at),
                    );
                }
                if !p.node.is_empty() && p.node != ov.node {
                    cov.takeovers += 1;
                    cov.mixed_takeovers += u64::from(facts.celld[p.v.writer.node] != facts.celld[w.node]);
                    let retired = retired_before(store, ledger, facts, p.v.writer.node, p.v.writer.incarnation, ov.v.at);
                    cov.retired_takeovers += u64::from(retired);
                    check_takeover(store, ledger, facts, cell, p, ov, &mut bad);
                    check_recovered(store, ledger, facts, cell, p, ov, &mut bad);
                }
            } else if ov.epoch == 0 {
                bad("epoch-order", format!("{cell}: first claim at epoch 0"));
            }
        }
        for (epoch, ws) in writers {
            if ws.len() > 1 {
                let names: Vec<&str> = ws.iter().map(|&n| name(n)).collect();
                bad("one-writer-per-epoch", format!("{cell}: epoch {epoch} written by {names:?}"));
            }
        }
    }

    // Lease records: only a process of the node itself (or the clean-up) writes its lease, and it decodes;
    // a celld node recovers a dead node's log by sealing it in that node's lease, changing nothing else.
    let lease_owners: BTreeSet<&String> = facts.nodes.iter().enumerate().filter(|(i, _)| Some(*i) != facts.gc).map(|(_, n)| n).collect();
    for node in lease_owners {
        let key = facts.lease_key(node);
        let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        for (i, v) in hist.iter().enumerate() {
            let sealing = facts.celld[v.writer.node] && i > 0 && {
                let lease = |v: &Version| v.body.as_deref().and_then(|b| decode_lease(&key, b, "").ok());
                matches!((lease(&hist[i - 1]), lease(v)), (Some(b), Some(a)) if a.expires_ms == b.expires_ms
                    && a.node == b.node && a.log.as_ref().is_some_and(|l| l.state == "sealed"))
            };
            // An edge process's dead-lease clean-up: a deletion, of a version dead by the peer rule on the
            // remover's clock when the delete landed (it judged with a clock read earlier).
            let removal = v.body.is_none()
                && ledger.ops.get(&v.writer.op).is_some_and(|o| matches!(o.kind, OpKind::RemoveLease(_)));
            if removal {
                cov.leases_removed += 1;
                let over = i.checked_sub(1).and_then(|j| lease_expiry(&key, &hist[j]));
                let wall = facts.clocks[v.writer.node].wall_ms(v.at);
                let live = if facts.clock_proof {
                    i.checked_sub(1).is_none_or(|j| !spent(store, facts, &key, &hist[j], v.at))
                } else {
                    over.is_none_or(|e| e + facts.max_clock_skew_ms > wall)
                };
                if live {
                    bad("remove-of-live-lease", format!("{} deleted {key} at t={} over a lease to {over:?} (its wall {wall})", name(v.writer.node), v.at));
                }
            }
            let restored = Some(v.writer.node) == facts.restorer;
            if name(v.writer.node) != node && Some(v.writer.node) != facts.gc && !sealing && !removal && !restored {
                bad("lease-history", format!("{key} written by {}", name(v.writer.node)));
            }
            if let Some(body) = &v.body {
                if let Err(e) = decode_lease(&key, body, &v.etag) {
                    bad("lease-history", format!("{key} undecodable: {e}"));
                }
            }
        }
    }

    // Acting as owner.
    for ((n, inc, cell, epoch), &(first, last)) in &ledger.acts {
        cov.acts += 1;
        let Some(hist) = owners.get(cell.as_str()) else { continue };
        let wrote = hist
            .iter()
            .any(|ov| ov.node == name(*n) && ov.epoch == *epoch && ov.v.writer.node == *n && ov.v.at <= first);
        if !wrote {
            bad(
                "act-without-write",
                format!("{} (life {inc}) acted for {cell}@{epoch} at t={first} but never wrote it", name(*n)),
            );
        }
        if let Some(claim) = hist.iter().find(|ov| ov.node == name(*n) && ov.epoch == *epoch) {
            check_authority(store, ledger, facts, *n, claim.v.writer.op, last, &mut bad, || {
                format!("{} (life {inc}) acted for {cell}@{epoch} at t={last}", name(*n))
            });
        }
        // A holder whose lease another tool put back to an older version cannot know before its next lease
        // write: peers may take over by the restored lease meanwhile (`restored-lease-adopted` holds it to
        // stopping then, and `act-beyond-authority` to the authority it had).
        let claimed_at = hist.iter().find(|ov| ov.node == name(*n) && ov.epoch == *epoch).map_or(0, |ov| ov.v.at);
        let superseded = hist.iter().find(|ov| ov.epoch > *epoch && ov.v.writer.node != *n && ov.v.at < last);
        let authority_from = claimed_at.saturating_sub(facts.lease_ttl_ms);
        if let Some(ov) = superseded.filter(|ov| !restored_during(store, facts, *n, authority_from, ov.v.at)) {
            bad(
                "split-brain",
                format!(
                    "{} (life {inc}) acted for {cell}@{epoch} until t={last}, but {} wrote epoch {} at t={}",
                    name(*n),
                    name(ov.v.writer.node),
                    ov.epoch,
                    ov.v.at
                ),
            );
        }
    }

    // Closing: a life acts for no cell after it called close(); what close() wrote over its lease was over
    // a version of its own life (never another process's lease).
    for op in ledger.ops.values().filter(|o| o.kind == OpKind::Close) {
        if let OpResult::Closed { retired, deleted } = op.result {
            cov.closes += 1;
            cov.retirements += u64::from(retired);
            cov.deleted_leases += u64::from(deleted);
        }
        for ((n, inc, cell, epoch), &(_, last)) in ledger.acts.range((op.node, op.incarnation, String::new(), 0)..) {
            if (*n, *inc) != (op.node, op.incarnation) {
                break;
            }
            if last > op.start {
                bad(
                    "act-after-close",
                    format!("{} (life {inc}) acted for {cell}@{epoch} at t={last}, after calling close() at t={}", name(*n), op.start),
                );
            }
        }
        let key = facts.lease_key(name(op.node));
        let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        for (i, _) in hist.iter().enumerate().filter(|(_, v)| v.writer.op == op.id) {
            let over = i.checked_sub(1).map(|j| &hist[j]);
            // celld's clean-up may have fenced the retired lease meanwhile: its copy is the same record.
            let mine = |o: &Version| (o.writer.node, o.writer.incarnation) == (op.node, op.incarnation);
            // ...or the restorer's copy of an earlier write of its own.
            let restored_mine = |o: &Version| {
                Some(o.writer.node) == facts.restorer && hist[..i].iter().any(|e| mine(e) && e.body == o.body)
            };
            let other = |o: &Version| {
                !(mine(o) || restored_mine(o) || (Some(o.writer.node) == facts.gc && lease_expiry(&key, o) == Some(0)))
            };
            if over.is_some_and(other) {
                bad(
                    "retire-of-other",
                    format!("{} (life {}) closed over {key} written by {:?}", name(op.node), op.incarnation, over.map(|o| o.writer)),
                );
            }
        }
    }

    // Issue 34 B and C: close() settles every owner-record write naming its node before it deletes the
    // lease (no such record of that life lands after the delete), and a delete answers what happened: one
    // that removed a lease (a DELETE delivered twice is answered 412/404) says so.
    for op in ledger.ops.values() {
        let (key, said) = match (&op.kind, &op.result) {
            (OpKind::Close, OpResult::Closed { deleted, .. }) => (facts.lease_key(name(op.node)), *deleted),
            (OpKind::RemoveLease(peer), OpResult::LeaseRemoval(r)) => (facts.lease_key(name(*peer)), r == "Removed"),
            (OpKind::Close, _) => (facts.lease_key(name(op.node)), true),
            _ => continue,
        };
        let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        let Some(removed) = hist.iter().find(|v| v.body.is_none() && v.writer.op == op.id) else { continue };
        // A version written over the removal before the operation ended (a process re-acquired the lease):
        // its readback saw that version, which is exactly what it sees when its delete never landed (412, a
        // different version), so "changed" is as true as the store lets it be (docs/simulation.md).
        let rewritten = hist.iter().any(|v| v.body.is_some() && v.at > removed.at && v.at <= op.end);
        if !said && !rewritten {
            bad("delete-report", format!("op {} of {} deleted {key} at t={}, but answered {:?}", op.id, name(op.node), removed.at, op.result));
        }
        if op.kind == OpKind::Close {
            let late = owners.values().flatten().find(|ov| {
                ov.node == name(op.node) && (ov.v.writer.node, ov.v.writer.incarnation) == (op.node, op.incarnation) && ov.v.at > removed.at
            });
            if let Some(ov) = late {
                bad(
                    "record-after-lease-delete",
                    format!("{} (life {}) deleted {key} at t={} in close(), then its write naming it landed at t={}", name(op.node), op.incarnation, removed.at, ov.v.at),
                );
            }
        }
    }

    // No write leaves a life after it called close() (a user callback may call it mid-operation), except
    // close()'s own: its releases, the retirement, the delete.
    cov.reentrant_closes = ledger.reentrant_closes.len() as u64;
    for (n, inc, op, what, at) in &ledger.sent_after_close {
        let closing = ledger.ops.get(op).is_some_and(|o| o.kind == OpKind::Close && (o.node, o.incarnation) == (*n, *inc));
        if !closing {
            bad("write-after-close", format!("{} (life {inc}) sent {what} at t={at} (op {op}) after calling close()", name(*n)));
        }
    }

    // A fence that blames another writer of this node's lease needs one (else this instance fenced itself,
    // as two of its own renewals in flight at once would).
    for (n, inc, at, why) in &ledger.fences {
        if why.contains("another writer") || why.contains("deleted") {
            let key = facts.lease_key(name(*n));
            let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
            if !hist.iter().any(|v| v.at <= *at && (v.writer.node, v.writer.incarnation) != (*n, *inc)) {
                bad("needless-fence", format!("{} (life {inc}) fenced at t={at} ({why}), but only it wrote {key}", name(*n)));
            }
        }
    }

    // A fence for a lapse needs one too (issue 34): the lease in force had run out by its holder's own rule,
    // or its clocks' offset had moved since its anchor (a step of the wall clock or a machine sleep).
    for i in 0..ledger.fences.len() {
        if let Some(detail) = lapse_without_cause(store, ledger, facts, i) {
            bad("needless-fence", detail);
        }
    }

    check_renewal_timing(store, ledger, facts, &mut bad);
    check_restores(store, ledger, facts, &mut bad);

    // Every lease the driver reported installed landed, written by that process.
    for (&(n, gen), installs) in &ledger.installs {
        let key = facts.lease_key(name(n));
        let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        for &(expires, at) in installs {
            if !hist.iter().any(|v| v.writer.node == n && v.at <= at && lease_expiry(&key, v) == Some(expires)) {
                bad(
                    "applied-but-missing",
                    format!("{} (gen {gen}) reported a lease to {expires} installed at t={at}, but none landed", name(n)),
                );
            }
        }
    }

    // Results against the store.
    let written_by = |op: u64| -> Vec<(&str, &Version)> {
        store
            .objects
            .iter()
            .flat_map(|(k, h)| h.iter().filter(move |v| v.writer.op == op).map(move |v| (k.as_str(), v)))
            .collect()
    };
    // Claim operations by (process, life, cell): the candidates for sharing one attempt.
    let mut claims_of: BTreeMap<(usize, u32, &str), Vec<&OpRecord>> = BTreeMap::new();
    for o in ledger.ops.values() {
        if let OpKind::Claim(cell) = &o.kind {
            claims_of.entry((o.node, o.incarnation, cell.as_str())).or_default().push(o);
        }
    }
    for op in ledger.ops.values() {
        let me = name(op.node);
        let tag = format!("op {} of {} (life {}) {:?} [{}..{}]", op.id, me, op.incarnation, op.kind, op.start, op.end);
        if let (OpKind::Claim(_), Some(&("PUT", sent))) = (&op.kind, store.sent_by_op.get(&op.id)) {
            if ledger.expect_new.contains(&op.id) {
                cov.fresh_starts += 1;
            } else {
                cov.known_starts += 1;
            }
            cov.unread_then_read += u64::from(sent > 1);
        }
        if let OpResult::Failed(code) = op.result {
            *cov.failures.entry(code).or_default() += 1;
            if code == "store-violation" {
                bad(
                    "probe-false-alarm",
                    format!("{tag}: the (honest, if flaky) store was judged to violate conditions"),
                );
            } else if ["corrupt-record", "invalid-input", "auth", "request"].contains(&code) && !(code == "auth" && facts.provider) {
                // `auth` is right when a slow credentials provider left no usable keys in time.
                bad("error-code", format!("{tag}: failed {code:?}, which an honest store never causes"));
            }
        }
        // Concurrent claims of one cell on one instance share one attempt and its answer: the attempt may
        // be another claim's of the same process, overlapping, with the same answer (and earlier start).
        // A waiting claim makes several attempts: any of them may be the one another claim shared.
        let shared = |o: &OpRecord| {
            o.id == op.id
                || (matches!(o.kind, OpKind::Claim(_))
                    && o.node == op.node
                    && o.incarnation == op.incarnation
                    && o.kind == op.kind
                    && (o.result == op.result || ledger.waiting.contains(&o.id) || ledger.waiting.contains(&op.id))
                    && o.start <= op.end
                    && (op.start <= o.end || o.result == OpResult::Unfinished))
        };
        let shared_start = match &op.kind {
            OpKind::Claim(cell) => claims_of
                .get(&(op.node, op.incarnation, cell.as_str()))
                .into_iter()
                .flatten()
                .filter(|o| shared(o))
                .map(|o| o.start)
                .min()
                .unwrap_or(op.start),
            _ => op.start,
        };
        match (&op.kind, &op.result) {
            (OpKind::Claim(cell), OpResult::ClaimRejected { node, epoch, live }) => {
                cov.rejected_claims += 1;
                let hist = &owners[cell.as_str()];
                // A claim is about ownership, not one write: an earlier attempt of it may have landed if
                // another node's record replaced it before the claim answered (the named owner then
                // holds the cell). A landed write still standing at the answer is a lie, though.
                let standing = hist.iter().enumerate().any(|(i, ov)| {
                    ov.v.writer.op == op.id
                        && hist.get(i + 1).is_none_or(|next| next.v.writer.node == op.node || next.v.at > op.end)
                });
                if standing {
                    bad("rejected-but-landed", format!("{tag}: reported rejected, but its write landed and stood"));
                }
                // Naming its own node id is right only for a record another process of that id wrote.
                let other_process_of_mine = node == me
                    && current_during(hist, shared_start, op.end, |ov| {
                        &ov.node == node
                            && ov.epoch == *epoch
                            && (ov.v.writer.node, ov.v.writer.incarnation) != (op.node, op.incarnation)
                    });
                if node.is_empty() || (node == me && !other_process_of_mine) || !*live {
                    bad("bad-rejection", format!("{tag}: rejected naming owner {node:?}@{epoch} live={live}"));
                } else if !current_during(hist, shared_start, op.end, |ov| &ov.node == node && ov.epoch == *epoch) {
                    bad(
                        "bad-rejection",
                        format!("{tag}: rejected naming {node}@{epoch}, never the record during the claim"),
                    );
                }
            }
            (OpKind::Claim(cell), OpResult::ClaimAwaitsRecovery { node, epoch }) => {
                cov.recovery_waits += 1;
                let hist = &owners[cell.as_str()];
                let named = current_during(hist, shared_start, op.end, |ov| &ov.node == node && ov.epoch == *epoch);
                // Dead by the claimer's own rule: celld's has no skew margin.
                let margin = if facts.celld[op.node] { 0 } else { facts.max_clock_skew_ms };
                let versions = lease_versions_during(store, facts, node, shared_start, op.end);
                let unsealed_dead = versions.iter().any(|(l, until)| {
                    // An edge claimer judges a celld lease by the store's clock, celld by its own wall clock.
                    let now = if facts.clock_proof && !facts.celld[op.node] {
                        crate::exec::store_ms(*until)
                    } else {
                        facts.clocks[op.node].wall_ms(*until)
                    };
                    l.log.as_ref().is_some_and(|g| g.state != "sealed") && l.expires_ms + margin <= now
                });
                if !named || !unsealed_dead || node == me {
                    bad(
                        "bad-recovery-wait",
                        format!("{tag}: waited for {node}@{epoch}'s log (named: {named}, dead and unsealed: {unsealed_dead})"),
                    );
                }
            }
            // A release whose write landed (a request delivered twice is answered 412) may report rejected
            // only if another write (another node's claim, or a claim of its own instance) replaced it
            // before the answer: the record did not name this node at that epoch then.
            (OpKind::Release(cell), OpResult::ReleaseRejected)
                if owners[cell.as_str()].iter().enumerate().any(|(i, ov)| {
                    ov.v.writer.op == op.id
                        && owners[cell.as_str()].get(i + 1).is_none_or(|next| next.v.writer.op == op.id || next.v.at > op.end)
                }) =>
            {
                bad("rejected-but-landed", format!("{tag}: reported rejected, but its write landed and stood"));
            }
            (OpKind::Claim(cell), OpResult::Claimed { epoch, took_over, prior }) => {
                if ledger.waiting.contains(&op.id) {
                    cov.waits_applied += 1;
                    cov.waits_took_over += u64::from(*took_over);
                }
                let hist = &owners[cell.as_str()];
                let landed = hist.iter().position(|ov| {
                    ov.node == me && ov.epoch == *epoch && ledger.ops.get(&ov.v.writer.op).is_some_and(shared)
                });
                match landed {
                    None => bad(
                        "applied-but-missing",
                        format!("{tag}: reported applied at epoch {epoch}, but no such write landed"),
                    ),
                    Some(i) => {
                        // What it replaced is what it read and guarded on: the version just before.
                        let before = i.checked_sub(1).map(|j| (hist[j].node.clone(), hist[j].epoch));
                        let replaced_live_peer = before.as_ref().is_some_and(|(n, _)| !n.is_empty() && n != me);
                        if *prior != before || *took_over != replaced_live_peer {
                            bad(
                                "claim-report",
                                format!(
                                    "{tag}: reported prior {prior:?} took_over={took_over}, but replaced {before:?}"
                                ),
                            );
                        }
                    }
                }
            }
            (OpKind::Release(cell), OpResult::Released) => {
                let key = facts.owner_key(cell);
                let landed = written_by(op.id).iter().any(|(k, v)| {
                    *k == key
                        && v.body
                            .as_deref()
                            .and_then(|b| decode_owner(k, b, "").ok())
                            .is_some_and(|r| r.node.is_empty())
                });
                if !landed {
                    bad("applied-but-missing", format!("{tag}: reported released, but no release landed"));
                }
            }
            (OpKind::Acquire | OpKind::Renew, OpResult::LeaseOk) => {
                // Callers share one lease write in flight: the write may be another caller's (or the
                // renewal loop's); what this one needs is an install while it waited.
                let key = facts.lease_key(me);
                let own_write = written_by(op.id).iter().any(|(k, _)| *k == key);
                let installed = ledger
                    .installs
                    .range((op.node, 0)..=(op.node, u64::MAX))
                    .any(|(_, is)| is.iter().any(|&(_, at)| op.start <= at && at <= op.end));
                if !own_write && !installed {
                    bad("applied-but-missing", format!("{tag}: lease reported installed, but no lease write landed"));
                }
            }
            (OpKind::Verify(cell, epoch), OpResult::Verified(true))
                if !current_during(&owners[cell.as_str()], op.start, op.end, |ov| {
                    ov.node == me && ov.epoch == *epoch
                }) =>
            {
                bad("stale-read", format!("{tag}: verify true, but {me}@{epoch} was not the record during the call"));
            }
            (OpKind::Owner(cell), OpResult::OwnerSeen(seen)) => {
                let hist = &owners[cell.as_str()];
                let ok = match seen {
                    Some((node, epoch, _)) => {
                        current_during(hist, op.start, op.end, |ov| &ov.node == node && ov.epoch == *epoch)
                    }
                    None => hist.first().is_none_or(|ov| ov.v.at >= op.start),
                };
                if !ok {
                    bad("stale-read", format!("{tag}: owner {seen:?}, never the record during the call"));
                }
                if let Some((node, epoch, false)) = seen {
                    if !node.is_empty() && node != me && !lease_dead_during(store, facts, node, op) {
                        bad("owner-liveness", format!("{tag}: reported {node} dead, but no lease of it read then was"));
                    }
                    // Nor while that holder acts for that very record after the call (a missing lease too).
                    let acting = ledger.acts.iter().find(|((n, _, c, e), (_, last))| {
                        name(*n) == node && node != me && c == cell && e == epoch && *last > op.end
                            && !restored_during(store, facts, *n, op.start, op.end)
                    });
                    if let Some(((n, inc, _, _), (_, last))) = acting {
                        bad(
                            "owner-liveness",
                            format!("{tag}: reported {node}@{epoch} dead, but {} (life {inc}) acted for it until t={last}", name(*n)),
                        );
                    }
                }
            }
            (OpKind::ReadOwner(cell), OpResult::Read(seen)) => {
                let hist = &owners[cell.as_str()];
                let ok = match seen {
                    Some((node, epoch)) => {
                        current_during(hist, op.start, op.end, |ov| &ov.node == node && ov.epoch == *epoch)
                    }
                    None => hist.first().is_none_or(|ov| ov.v.at >= op.start),
                };
                if !ok {
                    bad("stale-read", format!("{tag}: read {seen:?}, never the record during the call"));
                }
            }
            (OpKind::ReadLease(peer), OpResult::LeaseRead(seen)) => {
                let key = facts.lease_key(name(*peer));
                let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
                let ok = hist.iter().enumerate().any(|(i, v)| {
                    let superseded_at = hist.get(i + 1).map_or(u64::MAX, |n| n.at);
                    let expires = v.body.as_deref().and_then(|b| decode_lease(&key, b, "").ok()).map(|r| r.expires_ms);
                    expires == *seen && v.at <= op.end && superseded_at >= op.start
                }) || (seen.is_none() && hist.first().is_none_or(|v| v.at >= op.start));
                if !ok {
                    bad("stale-read", format!("{tag}: read lease expiring {seen:?}, never the record during the call"));
                }
            }
            _ => {}
        }
    }
    (out, cov)
}

/// How much later than its ttl/3 sleep a renewal loop's next lease write may go out (a failed attempt is
/// retried 100..199 ms later; a loop restarted after an acquisition polls every 20..100 ms).
const RENEWAL_SLACK_MS: u64 = 300;

/// The renewal loop renews on time (issue 21 B, `renewal-stalled`): after every lease install of a life
/// whose renewal loop is running, a lease write of that life goes out within ttl/3 + `RENEWAL_SLACK_MS`
/// (true time; the loop sleeps ttl/3 after its own renewals, and a renewal never waits on anything but
/// its own requests), unless the node could not run meanwhile, a loop of that life started or returned,
/// or the life lost its lease or closed. A loop that waits on something else — a slow credentials
/// provider, while the keys it holds still work — lets a lease lapse that nothing threatened.
fn check_renewal_timing(store: &SimStore, ledger: &Ledger, facts: &Facts, bad: &mut impl FnMut(&'static str, String)) {
    let closed: BTreeMap<(usize, u32), u64> = ledger
        .ops
        .values()
        .filter(|o| o.kind == OpKind::Close)
        .map(|o| ((o.node, o.incarnation), o.start))
        .collect();
    let interval = facts.lease_ttl_ms / 3;
    for &(n, inc, r) in &ledger.installed {
        let deadline = r + interval + RENEWAL_SLACK_MS;
        if deadline > facts.run_ms || closed.get(&(n, inc)).is_some_and(|&c| c <= deadline) {
            continue;
        }
        let (mut running, mut changed) = (0i64, false);
        for &(_, _, at, start) in ledger.loops.iter().filter(|l| (l.0, l.1) == (n, inc)) {
            match at <= r {
                true => running += if start { 1 } else { -1 },
                false => changed |= at <= deadline,
            }
        }
        let down = store.downtime.iter().any(|&(m, a, b)| m == n && a <= deadline && b >= r);
        // A renewal waits for keys when none are usable (the driver's rule: not in their last quarter or
        // ten seconds): only keys that work throughout the window oblige it.
        let keys = store.keys.iter().rev().find(|k| (k.0, k.1) == (n, inc) && k.2 <= r);
        let wall = facts.clocks[n].wall_ms(deadline);
        let keyless = facts.provider && keys.is_none_or(|k| expired(k.3, k.4, wall));
        let fenced = ledger.fences.iter().any(|&(m, i, at, _)| (m, i) == (n, inc) && r <= at && at <= deadline);
        // Its clocks' offset moved (a sleep, a step): the lease lost its authority then (issue 34 A), and the
        // loop's next renewal joins the acquisition of another caller, if one is in flight, or fences.
        let moved = facts.clock_proof && facts.clocks[n].offset_moved(r, deadline);
        if running <= 0 || changed || down || fenced || keyless || moved {
            continue;
        }
        // A lease write sent at the install's instant counts (another caller's, starting as that one ended).
        let from = store.lease_sends.partition_point(|t| t.sent < r);
        let sent = store.lease_sends[from..].iter().take_while(|t| t.sent <= deadline).any(|t| (t.node, t.incarnation) == (n, inc));
        if !sent {
            bad(
                "renewal-stalled",
                format!(
                    "{} (life {inc}) installed a lease at t={r} with its renewal loop running, but sent no lease write by t={deadline}",
                    facts.nodes[n]
                ),
            );
        }
    }
}

/// Could a reader have judged `node` dead during `op` by the peer rule? Only if some version of its lease,
/// while current during the call, was dead on the reader's clock by the time it was replaced (a read
/// sees a version while it is current, and the rule's clock is read before the read is sent), or the
/// lease was absent at some instant of the call.
fn lease_dead_during(store: &SimStore, facts: &Facts, node: &str, op: &OpRecord) -> bool {
    let key = facts.lease_key(node);
    let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
    let clock = &facts.clocks[op.node];
    hist.first().is_none_or(|v| v.at >= op.start)
        || hist.iter().enumerate().any(|(i, v)| {
            let until = hist.get(i + 1).map_or(u64::MAX, |n| n.at).min(op.end);
            let expires = v.body.as_deref().and_then(|b| decode_lease(&key, b, "").ok()).map(|r| r.expires_ms);
            let dead = if facts.clock_proof {
                spent(store, facts, &key, v, until)
            } else {
                expires.is_some_and(|e| e + facts.max_clock_skew_ms <= clock.wall_ms(until))
            };
            v.at <= op.end && until >= op.start && (v.body.is_none() || dead)
        })
}

/// The versions of `node`'s lease current at some instant of [start, end], decoded, each with the last
/// instant of the call it was current at.
fn lease_versions_during(store: &SimStore, facts: &Facts, node: &str, start: u64, end: u64) -> Vec<(NodeLeaseRecord, u64)> {
    let key = facts.lease_key(node);
    let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
    hist.iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let until = hist.get(i + 1).map_or(u64::MAX, |n| n.at).min(end);
            let lease = decode_lease(&key, v.body.as_deref()?, "").ok()?;
            (v.at <= end && until >= start).then_some((lease, until))
        })
        .collect()
}

/// The node-log gate, observed: `p` (by A, in A's lease generation G) replaced by `ov` (by B). When the
/// takeover landed, A's lease must not carry an unsealed log of generation G or earlier (the celld-like
/// node's log `epoch` is the generation it was opened in); a later generation's open log belongs to the
/// cells claimed under it, not to `p`.
fn check_recovered(
    store: &SimStore,
    ledger: &Ledger,
    facts: &Facts,
    cell: &str,
    p: &OwnerVersion,
    ov: &OwnerVersion,
    bad: &mut impl FnMut(&'static str, String),
) {
    let holder = &facts.nodes[p.v.writer.node];
    let key = facts.lease_key(holder);
    let Some(current) = store.objects.get(&key).and_then(|h| h.iter().rev().find(|v| v.at <= ov.v.at)) else { return };
    let Some(lease) = current.body.as_deref().and_then(|b| decode_lease(&key, b, "").ok()) else { return };
    let Some(gen) = ledger.gen_of_write(&p.v.writer) else { return };
    if let Some(log) = lease.log.filter(|l| l.state != "sealed" && l.epoch <= gen) {
        bad(
            "takeover-before-recovery",
            format!(
                "{cell}: {} took epoch {} from {holder}@{} at t={}, while {holder}'s log (generation {}) was {:?}",
                facts.nodes[ov.v.writer.node], ov.epoch, p.epoch, ov.v.at, log.epoch, log.state
            ),
        );
    }
}

/// Sharing the bucket's backend marker: no edge write when it names another backend, the edge never
/// writes it, and it is written once. (The celld-like nodes and celld's clean-up are celld's processes:
/// the rule is the edge's.)
fn check_marker(store: &SimStore, facts: &Facts, bad: &mut impl FnMut(&'static str, String)) {
    let key = format!("{}{MARKER_KEY}", facts.prefix);
    let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
    if hist.len() > 1 {
        bad("backend-marker", format!("{key} written {} times", hist.len()));
    }
    let first = hist.first();
    let foreign = first.and_then(|v| v.body.as_deref()).is_some_and(|b| judge(&key, b).is_err());
    let outside = |n: usize| facts.celld[n] || Some(n) == facts.gc || Some(n) == facts.restorer;
    for (k, h) in &store.objects {
        for v in h.iter().filter(|v| !outside(v.writer.node)) {
            let who = &facts.nodes[v.writer.node];
            if *k == key {
                bad("backend-marker", format!("{who} wrote the fleet's marker {k} at t={}: it is read, never created", v.at));
            } else if foreign && first.is_some_and(|m| m.at <= v.at) {
                bad("backend-marker", format!("{who} wrote {k} at t={} in a fleet whose marker names another backend", v.at));
            }
        }
    }
}

/// The lease writes node `n` installed in lease generation `gen`, as store versions.
fn installed_leases<'s>(store: &'s SimStore, ledger: &Ledger, facts: &Facts, n: usize, gen: Option<u64>) -> Vec<&'s Version> {
    let Some(gen) = gen else { return Vec::new() };
    let installed: BTreeSet<u64> = ledger
        .ops
        .values()
        .filter(|o| {
            o.node == n
                && o.gen == gen
                && matches!(o.kind, OpKind::Acquire | OpKind::Renew)
                && o.result == OpResult::LeaseOk
        })
        .map(|o| o.id)
        .collect();
    let reported = ledger.installs.get(&(n, gen)).map(Vec::as_slice).unwrap_or(&[]);
    let key = facts.lease_key(&facts.nodes[n]);
    store
        .objects
        .get(&key)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .filter(|v| v.writer.node == n)
        .filter(|v| {
            installed.contains(&v.writer.op)
                || lease_expiry(&key, v).is_some_and(|e| reported.iter().any(|&(x, at)| x == e && at >= v.at))
        })
        .collect()
}

fn lease_expiry(key: &str, v: &Version) -> Option<u64> {
    v.body.as_deref().and_then(|b| decode_lease(key, b, &v.etag).ok()).map(|r| r.expires_ms)
}

/// When the write that landed as lease version `v` was first sent. Its writer read its anchor (both clocks)
/// before that, and a resend of an ambiguous or turned-away attempt keeps that anchor and expiry
/// (`anchored_lease_write` in node/lease.rs): its authority counts from there, not from the attempt that
/// landed, whose wall clock may have been stepped since (docs/simulation.md, seeds 4150 and 5914).
fn first_sent(store: &SimStore, v: &Version) -> u64 {
    store.lease_first_sent.get(&v.writer).copied().unwrap_or(v.writer.sent)
}

/// Whether lease version `v` (at `key`) gave its writer no authority any more at true time `t`, by the
/// writer's own rule: `ttl - skew` had passed since it sent the write, by the larger advance of its
/// monotonic and wall clocks (a celld-like node: also by its wall clock against `expires_ms - skew`, which
/// celld's rule keeps). A retired or tombstoned version (`expires_ms: 0`) and a deletion give none, and a
/// version the backup tool put back is not held against anyone (its writer cannot know of it).
fn spent(store: &SimStore, facts: &Facts, key: &str, v: &Version, t: u64) -> bool {
    let Some(lease) = v.body.as_deref().and_then(|b| decode_lease(key, b, "").ok()) else { return true };
    let (w, expires) = (v.writer.node, lease.expires_ms);
    if expires == 0 || Some(w) == facts.restorer || Some(w) == facts.gc {
        return true;
    }
    // The writer anchored its authority before the first attempt of this write was sent (`first_sent`): an
    // expiry on the store's clock says the anchor was at most `expires_ms - ttl` too (it is the store's clock
    // at the anchor, at its upper bound).
    let sent = first_sent(store, v);
    let anchor = match lease.store_clock {
        true => sent.min(expires.saturating_sub(facts.lease_ttl_ms + crate::exec::EPOCH_MS)),
        false => sent,
    };
    let clock = &facts.clocks[w];
    let authority = (facts.lease_ttl_ms - facts.max_clock_skew_ms) as f64;
    let mono = clock.mono_ms(t) - clock.mono_ms(anchor);
    let wall = clock.wall_ms(t) as f64 - clock.wall_ms(anchor) as f64;
    // An edge node's authority ends when its clocks' offset moves (a sleep, a step): at its next reading.
    let moved = facts.clock_proof && !facts.celld[w] && clock.offset_moved(anchor, t);
    moved || mono.max(wall) >= authority || (facts.celld[w] && clock.wall_ms(t) + facts.max_clock_skew_ms >= expires)
}

/// How far before a lease write's first send its writer may have read the anchor its authority counts from
/// without waiting on its credentials provider: the preemptions of its thread that began this long before.
const ANCHOR_PREEMPTED_WINDOW_MS: u64 = 3_000;

/// Fence `i` of the ledger, when it blames a lapse (`lapsed`) that had no cause: an edge life, not closed,
/// fenced for the first time since it installed the lease then in force (the last install it reported), while
/// (a) no step of its wall clock and no machine sleep, of any size, fell between that lease's anchor and
/// the fence, and (b) less than `ttl - skew` had passed since the anchor by the larger advance of its two
/// clocks, counted as the node counts it (`× (1 + RATE)`: its authority had not run out). The anchor is read before the write's first send,
/// and after nothing but the thread's preemptions in between (taken all as anchor-to-send time, within
/// `ANCHOR_PREEMPTED_WINDOW_MS`); a write that may have waited for keys (a credentials fetch of the life
/// within 3.5 s of its send) is not judged. A preempted thread is no cause: the monotonic clock runs through
/// it (issue 34).
fn lapse_without_cause(store: &SimStore, ledger: &Ledger, facts: &Facts, i: usize) -> Option<String> {
    let (n, inc, at, why) = &ledger.fences[i];
    let (n, inc, at) = (*n, *inc, *at);
    if !why.contains("lapsed") || facts.celld[n] {
        return None;
    }
    // close() ends authority: a claim answered after it may report a lapse.
    if ledger.ops.values().any(|o| o.kind == OpKind::Close && (o.node, o.incarnation) == (n, inc) && o.start <= at) {
        return None;
    }
    let (expires, installed) = ledger
        .installs
        .iter()
        .filter(|((p, _), _)| *p == n)
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|&(_, t)| t <= at)
        .max_by_key(|&(_, t)| t)?;
    // That install is this life's, and this is the first fence since (a second one reports the same loss).
    let again = ledger.fences[..i].iter().any(|&(m, l, t, _)| (m, l) == (n, inc) && t >= installed);
    if !ledger.installed.contains(&(n, inc, installed)) || again {
        return None;
    }
    let key = facts.lease_key(&facts.nodes[n]);
    let v = store.objects.get(&key)?.iter().rfind(|v| {
        (v.writer.node, v.writer.incarnation) == (n, inc) && v.at <= installed && lease_expiry(&key, v) == Some(expires)
    })?;
    let sent = first_sent(store, v);
    if facts.provider && store.keys.iter().any(|k| (k.0, k.1) == (n, inc) && k.2 + 3_500 >= sent && k.2 <= sent + 3_500) {
        return None;
    }
    let clock = &facts.clocks[n];
    let anchor = sent.saturating_sub(clock.preempted_ms(sent.saturating_sub(ANCHOR_PREEMPTED_WINDOW_MS), sent));
    if clock.stepped_or_slept(anchor, at) {
        return None;
    }
    let authority = (facts.lease_ttl_ms - facts.max_clock_skew_ms) as f64;
    let mono = clock.mono_ms(at) - clock.mono_ms(anchor);
    let wall = clock.wall_ms(at) as f64 - clock.wall_ms(anchor) as f64;
    // The node counts the larger advance at its upper bound (`elapsed_at_most`: its clocks may run slow by
    // `RATE`), and ms of rounding.
    if mono.max(wall) * (1.0 + celld_edge::ownership::clock::RATE) + 2.0 >= authority {
        return None;
    }
    let preempted = clock.preempted_ms(anchor, at);
    Some(format!(
        "{} (life {inc}) fenced at t={at} ({why}), {:.0} ms into the authority of its lease anchored by t={anchor} \
         (authority {authority} ms), with no step of its wall clock and no sleep since ({preempted} ms of its \
         thread preempted meanwhile)",
        facts.nodes[n],
        mono.max(wall)
    ))
}

/// SPEC §5's self rule, observed: acting at `at` needs an installed lease write of the claim's
/// generation that was *sent* less than `ttl - skew` earlier on the node's monotonic clock (the anchor
/// is sampled before sending, so no correct anchor is later than the first attempt's send, `first_sent`).
#[allow(clippy::too_many_arguments)]
fn check_authority(
    store: &SimStore,
    ledger: &Ledger,
    facts: &Facts,
    n: usize,
    claim_op: u64,
    at: u64,
    bad: &mut impl FnMut(&'static str, String),
    what: impl Fn() -> String,
) {
    let key = facts.lease_key(&facts.nodes[n]);
    let installed = installed_leases(store, ledger, facts, n, ledger.ops.get(&claim_op).map(|o| o.gen));
    let Some(last) = installed.iter().filter(|v| v.writer.sent <= at).max_by_key(|v| v.writer.sent) else {
        bad("act-beyond-authority", format!("{}, with no installed lease in that generation", what()));
        return;
    };
    // Whatever the node's clocks counted (a sleep, a step of its wall clock, both): peers may judge a lease
    // dead `ttl` of true time after its write was first sent (issue 34 A).
    let true_held = at.saturating_sub(first_sent(store, last));
    if true_held >= facts.lease_ttl_ms {
        bad(
            "act-beyond-authority",
            format!("{}, {true_held} ms of true time after sending its last lease write (ttl {})", what(), facts.lease_ttl_ms),
        );
    }
    let clock = &facts.clocks[n];
    let held = clock.mono_ms(at) - clock.mono_ms(first_sent(store, last));
    let authority = (facts.lease_ttl_ms - facts.max_clock_skew_ms) as f64;
    if held >= authority {
        bad(
            "act-beyond-authority",
            format!("{}, {held:.0} ms after sending its last lease write (authority {authority} ms)", what()),
        );
    }
    if facts.clock_proof && !facts.celld[n] {
        // A monotonic clock that stopped (machine sleep) must not stretch authority: the wall clock's
        // advance since the write's first send counts too (its value means nothing). Judged against the
        // lease in force then: the last one the node had installed by `at` (a write sent before `at` but
        // installed after it does not count yet: its wall clock may have stepped since the older anchor,
        // either way).
        let key = facts.lease_key(&facts.nodes[n]);
        let reported = ledger.installs.get(&(n, ledger.ops.get(&claim_op).map_or(0, |o| o.gen))).map(Vec::as_slice).unwrap_or(&[]);
        let installed_at = |v: &Version| {
            let e = lease_expiry(&key, v);
            reported.iter().filter(|&&(x, t)| Some(x) == e && t >= v.at).map(|&(_, t)| t).min().unwrap_or(v.at)
        };
        let in_force = installed.iter().filter(|v| installed_at(v) <= at).max_by_key(|v| v.writer.sent).unwrap_or(last);
        let advanced = clock.wall_ms(at) as f64 - clock.wall_ms(first_sent(store, in_force)) as f64;
        if advanced >= authority {
            bad(
                "act-beyond-authority",
                format!("{}, its wall clock {advanced:.0} ms past sending its last lease write (authority {authority} ms)", what()),
            );
        }
        return;
    }
    // The wall rule: a monotonic clock that stopped (machine sleep) must not stretch authority.
    let wall = clock.wall_ms(at);
    if let Some(expires) = lease_expiry(&key, last) {
        if wall + facts.max_clock_skew_ms >= expires {
            bad(
                "act-beyond-authority",
                format!("{}, at its wall {wall}, past its lease's expiry {expires} - {} skew", what(), facts.max_clock_skew_ms),
            );
        }
    }
}

/// Whether a version of process `n`'s node lease that the restorer put back was current at some instant
/// of [`from`, `to`] (a peer judging the node then may have read it).
fn restored_during(store: &SimStore, facts: &Facts, n: usize, from: u64, to: u64) -> bool {
    let key = facts.lease_key(&facts.nodes[n]);
    let Some(r) = facts.restorer else { return false };
    let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
    // celld's clean-up fencing the restored version (an expired copy of it) keeps the restore's effect: what
    // peers judge by is still the older lease put back, not a write of the node's.
    hist.iter().enumerate().any(|(i, v)| {
        v.writer.node == r
            && v.at <= to
            && hist[i + 1..].iter().find(|next| Some(next.writer.node) != facts.gc).is_none_or(|next| next.at >= from)
    })
}


/// A lease put back to an older version by another tool is never adopted (issue 21 R): no lease write a
/// process installed lands after a restore of its node's lease in the lease generation that held before
/// it (a renewal applies only over the restored version, i.e. after adopting it; a new acquisition starts a
/// new generation).
fn check_restores(store: &SimStore, ledger: &Ledger, facts: &Facts, bad: &mut impl FnMut(&'static str, String)) {
    let Some(r) = facts.restorer else { return };
    for (&(n, gen), installs) in &ledger.installs {
        let key = facts.lease_key(&facts.nodes[n]);
        let hist = store.objects.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        // An install is the last version of that expiry to land before it: a write whose answer was lost may
        // land, be replaced (a restore of the held bytes), and land again as its resend over those bytes,
        // which is what the node installed (the earlier landing gave it nothing).
        let landed: Vec<&Version> = installs
            .iter()
            .filter_map(|&(e, at)| hist.iter().rev().find(|v| v.writer.node == n && v.at <= at && lease_expiry(&key, v) == Some(e)))
            .collect();
        for restore in hist.iter().filter(|v| v.writer.node == r) {
            let latest = landed.iter().filter(|v| v.at < restore.at).max_by_key(|v| v.at);
            // The bytes this generation wrote last (same expires_ms and nonce, so the same ETag) are no older
            // version: peers judging by them learn no earlier death than its authority (docs/simulation.md).
            if latest.is_some_and(|v| v.body == restore.body) {
                continue;
            }
            let after = landed.iter().map(|v| v.at).find(|&t| t > restore.at);
            if let (Some(_), Some(t)) = (latest, after) {
                bad(
                    "restored-lease-adopted",
                    format!(
                        "{} (gen {gen}) renewed at t={t} over its lease put back to an older version at t={}",
                        facts.nodes[n], restore.at
                    ),
                );
            }
        }
    }
}

/// Whether process `n`'s life `incarnation` had a retirement of its lease land by `at` (a lease write of its
/// `close()` operation).
fn retired_before(store: &SimStore, ledger: &Ledger, facts: &Facts, n: usize, incarnation: u32, at: u64) -> bool {
    let key = facts.lease_key(&facts.nodes[n]);
    store.objects.get(&key).is_some_and(|h| {
        h.iter().any(|v| {
            v.writer.node == n
                && v.writer.incarnation == incarnation
                && v.at <= at
                && v.body.is_some()
                && ledger.ops.get(&v.writer.op).is_some_and(|o| o.kind == OpKind::Close)
        })
    })
}

/// No takeover while the owner's lease was live: `p` (by A) replaced by `ov` (by B != A). A's authority
/// for `p` came from the lease generation it claimed `p` in; every lease write A installed in that
/// generation and that landed before the takeover must be dead by the peer rule on B's clock.
fn check_takeover(
    store: &SimStore,
    ledger: &Ledger,
    facts: &Facts,
    cell: &str,
    p: &OwnerVersion,
    ov: &OwnerVersion,
    bad: &mut impl FnMut(&'static str, String),
) {
    let a = p.v.writer.node;
    let b = ov.v.writer.node;
    let key = facts.lease_key(&facts.nodes[a]);
    // The holder's own life retired its lease (`close()`) before the takeover landed: peers may judge it
    // dead at once, which is safe only because it acts no more once close() was called (`act-after-close`
    // holds it to that).
    if retired_before(store, ledger, facts, a, p.v.writer.incarnation, ov.v.at)
        || restored_during(store, facts, a, p.v.at.saturating_sub(facts.lease_ttl_ms), ov.v.at)
    {
        return;
    }
    let installed = installed_leases(store, ledger, facts, a, ledger.gen_of_write(&p.v.writer));
    if facts.clock_proof {
        // Whatever anyone's clock said (an edge taker's, a celld-like taker's, the clean-up's): A's
        // authority from every lease write it installed in that generation, by its own rule, had ended when
        // the takeover landed.
        if let Some(last) = installed.iter().filter(|v| v.at <= ov.v.at).max_by_key(|v| v.writer.sent) {
            if !spent(store, facts, &key, last, ov.v.at) {
                bad(
                    "takeover-of-live-lease",
                    format!(
                        "{cell}: {} took epoch {} from {}@{} at t={}, while {}'s lease write sent at t={} still gave it authority",
                        facts.nodes[b], ov.epoch, facts.nodes[a], p.epoch, ov.v.at, facts.nodes[a], last.writer.sent
                    ),
                );
            }
        }
        return;
    }
    let latest = installed
        .into_iter()
        .filter(|v| v.at <= ov.v.at)
        .filter_map(|v| decode_lease(&key, v.body.as_deref()?, &v.etag).ok())
        .map(|r| r.expires_ms)
        .max();
    let Some(expires) = latest else { return };
    let wall_b = facts.clocks[b].wall_ms(ov.v.at);
    // The clean-up (celld's) tombstoned or deleted A's lease meanwhile: peers may then judge A dead before
    // the peer rule would, which is safe only because A's own authority ended at its wall
    // `expires - skew` (SPEC §5): judge the takeover by that.
    let cleaned = facts.gc.is_some_and(|gc| {
        store.objects.get(&key).is_some_and(|h| h.iter().any(|v| v.writer.node == gc && v.at <= ov.v.at))
    });
    if cleaned {
        if facts.clocks[a].wall_ms(ov.v.at) + facts.max_clock_skew_ms < expires {
            bad(
                "takeover-of-live-lease",
                format!(
                    "{cell}: {} took epoch {} from {}@{} at t={}, after the clean-up wrote its lease, while {} still had authority to {expires} - skew",
                    facts.nodes[b], ov.epoch, facts.nodes[a], p.epoch, ov.v.at, facts.nodes[a]
                ),
            );
        }
        return;
    }
    // celld's rule has no skew margin: its nodes take over as soon as `expires_ms <= now`.
    let margin = if facts.celld[b] { 0 } else { facts.max_clock_skew_ms };
    if expires + margin > wall_b {
        bad(
            "takeover-of-live-lease",
            format!(
                "{cell}: {} took epoch {} from {}@{} at t={} (its wall {wall_b}), but {}'s lease ran to {expires} (+{margin} skew)",
                facts.nodes[b], ov.epoch, facts.nodes[a], p.epoch, ov.v.at, facts.nodes[a]
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Tag;
    use celld_edge::ownership::clock::LeaseTerms;
    use celld_edge::ownership::records::{encode_lease, encode_owner};

    const TTL: u64 = 3_000;
    const SKEW: u64 = 400;

    /// A tiny hand-made world: nodes n0, n1 with exact clocks; cell c.
    struct Hist {
        store: SimStore,
        ledger: Ledger,
        nodes: Vec<String>,
        cells: Vec<String>,
        clocks: Vec<Clock>,
        celld: Vec<bool>,
        clock_proof: bool,
        restorer: Option<usize>,
    }

    impl Hist {
        /// A bucket without a backend marker (the fleet's records are in it).
        fn new() -> Self {
            let clock = Clock::default();
            Hist {
                store: SimStore::new("b"),
                ledger: Ledger::default(),
                nodes: vec!["n0".into(), "n1".into()],
                cells: vec!["c".into()],
                clocks: vec![clock.clone(), clock],
                celld: vec![false, false],
                clock_proof: false,
                restorer: None,
            }
        }
        /// Records op `id` of `node` in lease generation `gen` with its result.
        fn op(&mut self, id: u64, node: usize, gen: u64, kind: OpKind, span: (u64, u64), result: OpResult) {
            let rec = OpRecord { id, node, incarnation: 0, gen, kind, start: span.0, end: span.1, result };
            self.ledger.ops.insert(id, rec);
        }
        fn own(&mut self, op: u64, node: usize, owner: &str, epoch: u64, at: u64) {
            let tag = Tag { node, incarnation: 0, op, sent: at.saturating_sub(2) };
            self.store.plant("cells/c/own.json", &encode_owner(owner, epoch, &format!("n{op}")), tag, at);
        }
        fn lease(&mut self, op: u64, node: usize, expires_wall: u64, at: u64) {
            let tag = Tag { node, incarnation: 0, op, sent: at.saturating_sub(2) };
            let key = format!("nodes/n{node}.json");
            let terms = LeaseTerms { expires_ms: crate::exec::EPOCH_MS + expires_wall, ttl_ms: Some(TTL), store_clock: true };
            let body = encode_lease(&format!("n{node}"), terms, "", &format!("l{op}"));
            self.store.plant(&key, &body, tag, at);
        }
        fn rules(&self) -> Vec<&'static str> {
            let facts = Facts {
                nodes: &self.nodes,
                cells: &self.cells,
                clocks: &self.clocks,
                prefix: "",
                lease_ttl_ms: TTL,
                max_clock_skew_ms: SKEW,
                gc: None,
                celld: &self.celld,
                run_ms: 20_000,
                provider: false,
                restorer: self.restorer,
                clock_proof: self.clock_proof,
            };
            let (v, _) = check(&self.store, &self.ledger, &facts);
            let mut rules: Vec<&'static str> = v.iter().map(|v| v.rule).collect();
            rules.dedup();
            rules
        }
    }

    /// Issue 34 C's report rule: a removal whose DELETE landed says so; "changed" is caught, unless the node
    /// wrote its lease again before the remover's readback (which then sees a new version, exactly as when
    /// the delete never landed: the store answers the DELETE delivered twice 412 either way).
    #[test]
    fn a_removal_reported_changed_is_caught_unless_the_lease_was_written_again_before_its_answer() {
        for (rewritten, expected) in [(false, vec!["delete-report"]), (true, vec![])] {
            let mut h = Hist::new();
            h.op(1, 0, 1, OpKind::Acquire, (0, 5), OpResult::LeaseOk);
            h.lease(1, 0, TTL, 2);
            h.op(2, 1, 2, OpKind::RemoveLease(0), (7_000, 7_100), OpResult::LeaseRemoval("Changed".into()));
            let tag = Tag { node: 1, incarnation: 0, op: 2, sent: 7_010 };
            let removal = crate::store::Version { at: 7_020, body: None, etag: String::new(), writer: tag };
            h.store.objects.get_mut("nodes/n0.json").expect("n0's lease").push(removal);
            if rewritten {
                h.op(3, 0, 3, OpKind::Acquire, (7_030, 7_060), OpResult::LeaseOk);
                h.lease(3, 0, 10_060, 7_050);
            }
            assert_eq!(h.rules(), expected, "written again before the answer: {rewritten}");
        }
    }

    /// n0 leases at t=0 (to t=3000), claims c@1 at t=10, acts until 2000; n1 takes over after n0's lease
    /// is dead by the peer rule (3000 + 400 <= wall).
    fn clean() -> Hist {
        let mut h = Hist::new();
        h.op(1, 0, 1, OpKind::Acquire, (0, 5), OpResult::LeaseOk);
        h.lease(1, 0, TTL, 2);
        h.op(
            2,
            0,
            1,
            OpKind::Claim("c".into()),
            (6, 12),
            OpResult::Claimed { epoch: 1, took_over: false, prior: None },
        );
        h.own(2, 0, "n0", 1, 10);
        h.ledger.act(0, 0, "c", 1, 12);
        h.ledger.act(0, 0, "c", 1, 2_000);
        h.op(3, 1, 2, OpKind::Acquire, (0, 5), OpResult::LeaseOk);
        h.lease(3, 1, 20_000, 3);
        h.op(
            4,
            1,
            2,
            OpKind::Claim("c".into()),
            (3_300, 3_420),
            OpResult::Claimed { epoch: 2, took_over: true, prior: Some(("n0".into(), 1)) },
        );
        h.own(4, 1, "n1", 2, 3_410);
        h.op(15, 1, 2, OpKind::Renew, (3_000, 3_005), OpResult::LeaseOk);
        h.lease(15, 1, 23_000, 3_003);
        h.op(5, 1, 2, OpKind::Verify("c".into(), 2), (3_500, 3_510), OpResult::Verified(true));
        h.op(6, 1, 2, OpKind::Release("c".into()), (3_600, 3_620), OpResult::Released);
        h.own(6, 1, "", 2, 3_610);
        h.op(7, 0, 1, OpKind::Owner("c".into()), (3_605, 3_700), OpResult::OwnerSeen(Some((String::new(), 2, false))));
        h
    }

    #[test]
    fn a_clean_history_passes() {
        assert_eq!(clean().rules(), Vec::<&str>::new());
    }

    #[test]
    fn takeover_within_the_skew_margin_is_caught() {
        let mut h = clean();
        // Move n1's takeover to t=3100: n0's lease ran to 3000, dead only from 3400.
        let v = &mut h.store.objects.get_mut("cells/c/own.json").unwrap()[1];
        v.at = 3_100;
        assert_eq!(h.rules(), vec!["takeover-of-live-lease"]);
    }

    /// `clean()` with n0's wall clock `offset_ms` off, judged by the clock-proof rules.
    fn wild(offset_ms: f64) -> Hist {
        let mut h = clean();
        h.clock_proof = true;
        h.clocks[0].offset_ms = offset_ms;
        h.clocks[1].offset_ms = -offset_ms;
        h
    }

    #[test]
    fn with_wild_clocks_a_takeover_is_judged_by_the_holders_own_authority_whatever_the_clocks_say() {
        for offset in [0.0, 5.0 * 3_600_000.0, -7.0 * 3_600_000.0] {
            assert_eq!(wild(offset).rules(), Vec::<&str>::new(), "offset {offset}");
            // n0 sent its lease write at t=0: it may act until t=2600 (ttl - skew), so a takeover landing
            // at 2500 overlaps its authority, whatever either wall clock reads.
            let mut h = wild(offset);
            h.store.objects.get_mut("cells/c/own.json").unwrap()[1].at = 2_500;
            assert_eq!(h.rules(), vec!["takeover-of-live-lease"], "offset {offset}");
            let mut h = wild(offset);
            h.store.objects.get_mut("cells/c/own.json").unwrap()[1].at = 2_601;
            assert_eq!(h.rules(), Vec::<&str>::new(), "offset {offset}");
        }
    }

    #[test]
    fn with_wild_clocks_a_wall_clock_stepped_forward_or_a_sleep_ends_authority() {
        // n0 sleeps from 100 to 2_500 (its monotonic clock stands still) and acts at 2_700: 200 ms of
        // monotonic time after sending, but its wall clock moved 2_700 ms.
        let mut h = wild(-9.0 * 3_600_000.0);
        h.clocks[0].stops.push((100, 2_500));
        h.ledger.act(0, 0, "c", 1, 2_700);
        assert_eq!(h.rules(), vec!["act-beyond-authority"]);
        // A wall clock stepped back is not a reason to act longer, nor a reason to stop.
        let mut h = wild(0.0);
        h.clocks[0].steps.push((1_000, -3_600_000.0));
        h.ledger.act(0, 0, "c", 1, 2_500);
        assert_eq!(h.rules(), Vec::<&str>::new());
        h.ledger.act(0, 0, "c", 1, 2_650);
        assert_eq!(h.rules(), vec!["act-beyond-authority"]);
    }

    /// Seeds 4150 and 5914: n0's renewal loses its first attempt (t=1_000); its wall clock is stepped back an
    /// hour before the resend (1_198) that lands, and maybe forward 43 s after. n0 anchored before the first
    /// attempt and the resend kept that anchor: its authority runs 2_600 ms of its monotonic clock from
    /// 1_000 (its wall clock's advance since is negative, and no machine slept), whatever the later steps.
    #[test]
    fn a_resent_lease_write_gives_authority_from_its_first_attempt() {
        let resent = |forward: bool| {
            let mut h = Hist::new();
            h.clock_proof = true;
            h.op(1, 0, 1, OpKind::Acquire, (0, 5), OpResult::LeaseOk);
            h.lease(1, 0, TTL, 2);
            let claimed = OpResult::Claimed { epoch: 1, took_over: false, prior: None };
            h.op(2, 0, 1, OpKind::Claim("c".into()), (6, 12), claimed);
            h.own(2, 0, "n0", 1, 10);
            h.ledger.act(0, 0, "c", 1, 12);
            h.op(8, 0, 1, OpKind::Renew, (1_000, 1_210), OpResult::LeaseOk);
            h.lease(8, 0, 4_000, 1_200);
            let body = h.store.objects["nodes/n0.json"][1].body.clone().unwrap();
            for sent in [1_000, 1_198] {
                h.store.note_lease_send(Tag { node: 0, incarnation: 0, op: 8, sent }, "\"e1\"", &body);
            }
            h.clocks[0].steps.push((1_100, -3_600_000.0));
            if forward {
                h.clocks[0].steps.push((1_500, 43_000.0));
            }
            h
        };
        for forward in [false, true] {
            let mut h = resent(forward);
            h.ledger.act(0, 0, "c", 1, 3_500);
            assert_eq!(h.rules(), Vec::<&str>::new(), "forward step: {forward}");
            // 2_650 ms after the first attempt: past the anchor's authority, though 2_452 after the resend.
            h.ledger.act(0, 0, "c", 1, 3_650);
            assert_eq!(h.rules(), vec!["act-beyond-authority"], "forward step: {forward}");
        }
    }

    /// n0's lease, as a celld node writes it, with its log in `state` for generation 1, written by `by`.
    fn plant_log(h: &mut Hist, by: usize, state: &str, at: u64) {
        let body = format!(
            r#"{{"node":"n0","expires_ms":{},"addr":"a","log":{{"state":"{state}","epoch":1,"ensemble":[],"tiered":0}}}}"#,
            crate::exec::EPOCH_MS + TTL
        );
        h.store.plant("nodes/n0.json", body.as_bytes(), Tag { node: by, incarnation: 0, op: 90, sent: at }, at);
    }

    #[test]
    fn a_takeover_before_the_holders_log_is_sealed_is_caught() {
        let mut h = clean();
        h.celld = vec![true, true];
        plant_log(&mut h, 1, "open", 3_000); // written by n1: not a sealing, so also a lease-history breach
        assert_eq!(h.rules(), vec!["takeover-before-recovery", "lease-history"]);
        // Sealed by another celld node (nothing else changed) before the takeover: clean.
        let mut h = clean();
        h.celld = vec![true, true];
        plant_log(&mut h, 1, "sealed", 3_000);
        assert_eq!(h.rules(), Vec::<&str>::new());
        // The same sealing by an edge node is not one: edge nodes never write another node's lease.
        h.celld = vec![false, false];
        assert_eq!(h.rules(), vec!["lease-history"]);
    }

    #[test]
    fn a_claim_waits_for_recovery_only_of_a_dead_unsealed_holder() {
        let mut h = clean();
        h.celld = vec![true, false];
        plant_log(&mut h, 0, "open", 3_000);
        h.store.objects.get_mut("cells/c/own.json").unwrap().truncate(1); // no takeover: n1 waits instead
        h.ledger.acts.retain(|k, _| k.0 == 0);
        h.ledger.ops.retain(|&id, _| id <= 3 || id == 15);
        let waited = OpResult::ClaimAwaitsRecovery { node: "n0".into(), epoch: 1 };
        h.op(4, 1, 2, OpKind::Claim("c".into()), (3_300, 3_420), waited.clone());
        assert_eq!(h.rules(), Vec::<&str>::new(), "dead by the edge rule at 3400, log open");
        h.ledger.ops.get_mut(&4).unwrap().end = 3_350;
        assert_eq!(h.rules(), vec!["bad-recovery-wait"], "still live by the edge rule");
        h.celld = vec![true, true];
        assert_eq!(h.rules(), Vec::<&str>::new(), "a celld claimer: dead at 3000");
        h.ledger.ops.get_mut(&4).unwrap().result = OpResult::ClaimAwaitsRecovery { node: "n0".into(), epoch: 2 };
        assert_eq!(h.rules(), vec!["bad-recovery-wait"], "n0@2 was never the record");
    }

    #[test]
    fn a_celld_taker_needs_no_skew_margin_but_an_edge_taker_does() {
        let mut h = clean();
        h.store.objects.get_mut("cells/c/own.json").unwrap()[1].at = 3_100;
        h.celld = vec![false, true];
        assert_eq!(h.rules(), Vec::<&str>::new(), "celld's rule: dead at expires_ms <= now");
        h.celld = vec![false, false];
        assert_eq!(h.rules(), vec!["takeover-of-live-lease"]);
    }

    #[test]
    fn edge_writes_never_in_a_fleet_of_another_backend_and_never_of_the_marker() {
        // A third process, a celld node of the fork, which may write the marker.
        let with_celld = || {
            let mut h = clean();
            h.nodes.push("celld-0".into());
            h.clocks.push(Clock::default());
            h.celld.push(true);
            h
        };
        let by = |node: usize, op: u64| Tag { node, incarnation: 0, op, sent: 0 };
        let bucket = celld_edge::ownership::control::BUCKET_MARKER;
        let mut h = with_celld();
        h.store.plant(MARKER_KEY, bucket, by(2, 90), 0);
        assert_eq!(h.rules(), Vec::<&str>::new(), "the fork's bucket marker");
        let mut h = with_celld();
        h.store.plant(MARKER_KEY, bucket, by(0, 91), 1);
        assert_eq!(h.rules(), vec!["backend-marker"], "an edge node created it");
        let mut h = with_celld();
        let dynamo = br#"{"format":1,"backend":"dynamodb","table":"t","region":"r","fleet":"f"}"#;
        h.store.plant(MARKER_KEY, dynamo, by(2, 92), 0);
        assert_eq!(h.rules(), vec!["backend-marker"], "edge writes in a DynamoDB fleet");
        let mut h = with_celld();
        h.store.plant(MARKER_KEY, dynamo, by(2, 93), 4_000);
        assert_eq!(h.rules(), Vec::<&str>::new(), "the edge wrote before the fork's fleet marked the bucket");
        let mut h = with_celld();
        h.store.plant(MARKER_KEY, bucket, by(2, 94), 0);
        h.store.plant(MARKER_KEY, bucket, by(2, 95), 1);
        assert_eq!(h.rules(), vec!["backend-marker"], "the marker is never written twice");
    }

    #[test]
    fn late_installed_renewal_counts_for_the_owner() {
        let mut h = clean();
        // n0 installs a renewal in the same generation that lands at 3200 and runs to 6200.
        h.op(8, 0, 1, OpKind::Renew, (3_000, 3_300), OpResult::LeaseOk);
        h.lease(8, 0, 6_200, 3_200);
        assert_eq!(h.rules(), vec!["takeover-of-live-lease"]);
        // The same write, not installed (reported fenced), is fine.
        h.ledger.ops.get_mut(&8).unwrap().result = OpResult::Failed("fenced");
        assert_eq!(h.rules(), Vec::<&str>::new());
    }

    /// `clean()` with a backup tool (process 2) that puts old lease bodies back.
    fn with_restorer() -> Hist {
        let mut h = clean();
        h.nodes.push("backup".into());
        h.clocks.push(Clock::default());
        h.celld.push(false);
        h.restorer = Some(2);
        h
    }

    /// Issue 21 R: a renewal landing over a lease the backup tool put back to an older version is caught;
    /// over the bytes the holder wrote last (the same ETag, expires_ms and nonce) it is not.
    #[test]
    fn a_renewal_over_a_restored_lease_is_caught_only_when_the_restore_was_older() {
        for (restored_op, rules) in [(1, vec!["restored-lease-adopted"]), (8, vec![])] {
            let mut h = with_restorer();
            h.op(8, 0, 1, OpKind::Renew, (1_000, 1_010), OpResult::LeaseOk);
            h.lease(8, 0, 4_000, 1_005);
            let key = "nodes/n0.json";
            let body = h.store.objects[key].iter().find(|v| v.writer.op == restored_op).unwrap().body.clone().unwrap();
            h.store.plant(key, &body, Tag { node: 2, incarnation: 0, op: 20, sent: 1_100 }, 1_102);
            h.op(9, 0, 1, OpKind::Renew, (1_500, 1_510), OpResult::LeaseOk);
            h.lease(9, 0, 4_500, 1_505);
            let installs = [(TTL, 5), (4_000, 1_010), (4_500, 1_510)];
            h.ledger.installs.insert((0, 1), installs.map(|(e, at)| (crate::exec::EPOCH_MS + e, at)).to_vec());
            assert_eq!(h.rules(), rules, "restored the body of op {restored_op}");
        }
    }

    /// Seed 2529: n0's renewal lands but its answer is lost; the backup tool puts back the bytes n0 holds (the
    /// same ETag) before the readback, so the resend, conditional on that ETag, lands over them and is what n0
    /// installs. That renewed over its own held version, not an older one: the restore adopted nothing.
    #[test]
    fn a_resend_over_a_restore_of_the_held_bytes_adopts_nothing() {
        let mut h = with_restorer();
        h.op(8, 0, 1, OpKind::Renew, (1_000, 1_310), OpResult::LeaseOk);
        h.lease(8, 0, 4_000, 1_005);
        let key = "nodes/n0.json";
        let held = h.store.objects[key][0].body.clone().unwrap();
        h.store.plant(key, &held, Tag { node: 2, incarnation: 0, op: 20, sent: 1_100 }, 1_102);
        let terms = LeaseTerms { expires_ms: crate::exec::EPOCH_MS + 4_000, ttl_ms: Some(TTL), store_clock: true };
        h.store.plant(key, &encode_lease("n0", terms, "", "l8-resent"), Tag { node: 0, incarnation: 0, op: 8, sent: 1_298 }, 1_300);
        h.op(9, 0, 1, OpKind::Renew, (1_500, 1_510), OpResult::LeaseOk);
        h.lease(9, 0, 4_500, 1_505);
        let installs = [(TTL, 5), (4_000, 1_310), (4_500, 1_510)];
        h.ledger.installs.insert((0, 1), installs.map(|(e, at)| (crate::exec::EPOCH_MS + e, at)).to_vec());
        assert_eq!(h.rules(), Vec::<&str>::new());
        // Had n0 installed the first landing, the restore would have put back an older version under it.
        h.ledger.installs.get_mut(&(0, 1)).unwrap()[1].1 = 1_010;
        assert_eq!(h.rules(), vec!["restored-lease-adopted"]);
    }

    #[test]
    fn acting_after_being_superseded_is_split_brain() {
        let mut h = clean();
        h.ledger.act(0, 0, "c", 1, 3_411);
        assert_eq!(h.rules(), vec!["act-beyond-authority", "split-brain"], "n0 also outlived its own lease");
    }

    #[test]
    fn acting_past_the_self_deadline_is_caught() {
        let mut h = clean();
        // n0's only lease write was sent at t=0: authority ends at 3000 - 400 = 2600.
        h.ledger.act(0, 0, "c", 1, 2_599);
        assert_eq!(h.rules(), Vec::<&str>::new());
        h.ledger.act(0, 0, "c", 1, 2_600);
        assert_eq!(h.rules(), vec!["act-beyond-authority"]);
    }

    #[test]
    fn acting_past_the_wall_deadline_is_caught_when_the_monotonic_clock_stopped() {
        let mut h = clean();
        // n0's machine slept from 100 to 1900: its monotonic clock says 1000 ms at t=2900, its wall
        // clock (and its lease, to 3000) says authority ended at 3000 - 400.
        h.clocks[0].stops.push((100, 1_900));
        h.ledger.act(0, 0, "c", 1, 2_599);
        assert_eq!(h.rules(), Vec::<&str>::new());
        h.ledger.act(0, 0, "c", 1, 2_900);
        assert_eq!(h.rules(), vec!["act-beyond-authority"]);
    }

    #[test]
    fn errors_an_honest_store_never_causes_are_caught() {
        let mut h = clean();
        h.op(16, 1, 2, OpKind::ReadOwner("c".into()), (3_500, 3_510), OpResult::Failed("ambiguous"));
        assert_eq!(h.rules(), Vec::<&str>::new());
        h.ledger.ops.get_mut(&16).unwrap().result = OpResult::Failed("corrupt-record");
        assert_eq!(h.rules(), vec!["error-code"]);
    }

    #[test]
    fn a_release_without_a_lease_and_a_needless_fence_are_caught() {
        let mut h = clean();
        h.ledger.fences.push((1, 0, 3_550, "the lease record was replaced by another writer".into()));
        assert_eq!(h.rules(), vec!["needless-fence"], "only n1 ever wrote its lease");
        let mut h = clean();
        // n1's release at 3600 with no lease of n1 ever installed (a second process whose acquire failed).
        for id in [3, 15] {
            h.ledger.ops.get_mut(&id).unwrap().result = OpResult::Failed("not-leased");
        }
        assert_eq!(h.rules(), vec!["release-without-lease"]);
    }

    /// Issue 34: a fence for a lapse needs a cause: the lease's authority ran out by its holder's clocks, or
    /// a step of its wall clock or a machine sleep came after its anchor. A thread preempted between its clock
    /// reads is none; preempted before the send, it read the anchor earlier.
    #[test]
    fn a_lapse_fence_needs_an_expiry_a_step_or_a_sleep() {
        let fenced = |at: u64, clock: Clock| {
            let mut h = Hist::new();
            h.clock_proof = true;
            h.op(1, 0, 1, OpKind::Acquire, (990, 1_005), OpResult::LeaseOk);
            h.lease(1, 0, 4_000, 1_002); // sent at t=1000
            h.ledger.installs.entry((0, 1)).or_default().push((crate::exec::EPOCH_MS + 4_000, 1_005));
            h.ledger.installed.push((0, 0, 1_005));
            h.clocks[0] = clock;
            h.ledger.fences.push((0, 0, at, "the lease lapsed before it was renewed".into()));
            h.rules()
        };
        let none: Vec<&str> = Vec::new();
        let exact = Clock::default();
        assert_eq!(fenced(2_000, exact.clone()), vec!["needless-fence"], "1 s into 2.6 s of authority");
        assert_eq!(fenced(3_650, exact.clone()), none, "authority ran out (2.65 s since the send)");
        let stepped = Clock { steps: vec![(1_500, -30_000.0)], ..exact.clone() };
        assert_eq!(fenced(2_000, stepped), none, "the wall clock stepped back after the anchor");
        let slept = Clock { stops: vec![(1_500, 1_520)], ..exact.clone() };
        assert_eq!(fenced(2_000, slept), none, "the machine slept after the anchor");
        let preempted = Clock { preempted: vec![(1_400, 300)], ..exact.clone() };
        assert_eq!(fenced(2_000, preempted), vec!["needless-fence"], "a preempted thread is no cause");
        let before_send = Clock { preempted: vec![(900, 100)], ..exact.clone() };
        assert_eq!(fenced(3_560, before_send.clone()), none, "anchored before a preemption that delayed the send");
        assert_eq!(fenced(3_450, before_send), vec!["needless-fence"]);
        assert_eq!(fenced(3_450, exact), vec!["needless-fence"]);
    }

    #[test]
    fn acting_for_an_epoch_never_written_is_caught() {
        let mut h = clean();
        h.ledger.act(1, 0, "c", 3, 3_500);
        assert_eq!(h.rules(), vec!["act-without-write"]);
    }

    #[test]
    fn results_must_agree_with_the_store() {
        let mut h = clean();
        h.ledger.ops.get_mut(&4).unwrap().result = OpResult::ClaimRejected { node: "n0".into(), epoch: 1, live: true };
        assert_eq!(h.rules(), vec!["rejected-but-landed"]);

        let mut h = clean();
        h.ledger.ops.get_mut(&2).unwrap().result = OpResult::Claimed { epoch: 5, took_over: false, prior: None };
        assert_eq!(h.rules(), vec!["applied-but-missing"]);

        let mut h = clean();
        h.ledger.ops.get_mut(&4).unwrap().result = OpResult::Claimed { epoch: 2, took_over: false, prior: None };
        assert_eq!(h.rules(), vec!["claim-report"]);

        let mut h = clean();
        h.ledger.ops.get_mut(&5).unwrap().end = 3_700;
        assert_eq!(h.rules(), Vec::<&str>::new(), "verify overlapping the release still saw n1@2");
        h.ledger.ops.get_mut(&5).unwrap().start = 3_650;
        assert_eq!(h.rules(), vec!["stale-read"]);

        let mut h = clean();
        h.op(
            9,
            0,
            1,
            OpKind::Claim("c".into()),
            (3_700, 3_800),
            OpResult::ClaimRejected { node: String::new(), epoch: 2, live: true },
        );
        assert_eq!(h.rules(), vec!["bad-rejection"]);
    }

    #[test]
    fn lease_reads_must_see_a_version_of_their_time() {
        let mut h = clean();
        let real = crate::exec::EPOCH_MS + TTL;
        h.op(13, 1, 2, OpKind::ReadLease(0), (100, 120), OpResult::LeaseRead(Some(real)));
        assert_eq!(h.rules(), Vec::<&str>::new());
        h.ledger.ops.get_mut(&13).unwrap().result = OpResult::LeaseRead(Some(real + 1));
        assert_eq!(h.rules(), vec!["stale-read"]);
        h.ledger.ops.get_mut(&13).unwrap().result = OpResult::LeaseRead(None);
        assert_eq!(h.rules(), vec!["stale-read"], "the lease existed since t=2");
    }

    #[test]
    fn owner_reports_a_node_dead_only_when_its_lease_was() {
        let mut h = clean();
        // n0's lease (to 3000) is dead by the peer rule from wall 3400 on.
        let seen = Some(("n0".to_owned(), 1, false));
        h.op(14, 1, 2, OpKind::Owner("c".into()), (3_390, 3_405), OpResult::OwnerSeen(seen.clone()));
        assert_eq!(h.rules(), Vec::<&str>::new());
        h.ledger.ops.get_mut(&14).unwrap().end = 3_399;
        assert_eq!(h.rules(), vec!["owner-liveness"]);
        h.ledger.ops.get_mut(&14).unwrap().result = OpResult::OwnerSeen(Some(("n0".to_owned(), 1, true)));
        assert_eq!(h.rules(), Vec::<&str>::new(), "reporting a node live is never unsafe");
    }

    #[test]
    fn record_history_rules() {
        let mut h = clean();
        h.own(10, 0, "", 2, 3_700); // n0 "releases" n1's epoch (already released: not n0's claim)
        assert_eq!(h.rules(), vec!["release-without-lease", "release-of-other"], "and n0's lease had lapsed");

        let mut h = clean();
        h.op(11, 0, 1, OpKind::Claim("c".into()), (3_700, 3_800), OpResult::Unfinished);
        h.own(11, 0, "n0", 2, 3_750); // epoch 2 again, by a second writer
        assert_eq!(h.rules(), vec!["epoch-order", "one-writer-per-epoch"]);

        let mut h = clean();
        h.store.plant("cells/other/own.json", b"{}", Tag { node: 0, incarnation: 0, op: 1, sent: 0 }, 1);
        h.own(12, 0, "n0", 3, 3_800);
        h.store.objects.get_mut("cells/c/own.json").unwrap().last_mut().unwrap().body = Some(b"{".to_vec());
        assert_eq!(h.rules(), vec!["wire", "owner-history"]);
    }
}
