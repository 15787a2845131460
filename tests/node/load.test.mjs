// Stores under load (SPEC §6, "Under load"; issue 36): claimers through the rough front of the test
// command (scripts/lib/store-front.mjs in front of versitygw: R2's one write per second per key answered
// 429, random 503 SlowDown bursts with and without Retry-After, and 8% of applied writes whose answer is
// lost by a reset or by silence). Every answer a claimer reported is checked against what the store did,
// as the front logged it: no `applied` for a write that was not stored, no `rejected` for one that was
// (a stored claim is explained by the claimer's `applied` for that epoch, or by an error that says it may
// have landed), one winner per epoch; and no lease lapsed (no `fenced`, no authority lost to lease loss).
// Short by default (a few seconds each); CELLD_LOAD_MS=120000 runs each scenario for two minutes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { S3Ownership } from "celld-edge";
import { testServer } from "../common/signing.mjs";

const real = testServer(process.env, "CELLD_TEST_REAL");
const rough = process.env.CELLD_TEST_ROUGH_ENDPOINT;
const r2 = process.env.CELLD_TEST_R2_ENDPOINT;
if (!rough || !r2) throw new Error("CELLD_TEST_ROUGH_ENDPOINT / CELLD_TEST_R2_ENDPOINT not set: run through scripts/test");
const runMs = Number(process.env.CELLD_LOAD_MS ?? 5000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Errors that say the store did not decide, or that a write may have landed: honest, never false. */
const UNDECIDED = new Set(["throttled", "ambiguous", "transport"]);

function instance(prefix, node, lapses) {
  return new S3Ownership({
    ...real,
    endpoint: rough,
    // Qualifying through this front is its own test (below): a lost answer makes a probe inconclusive,
    // tried again by the next call, which costs time and proves nothing more here.
    probe: false,
    region: "us-east-1",
    prefix,
    node,
    // A lost answer by silence ends at this timeout.
    requestTimeoutMs: 2000,
    // Room for a machine slowed by other work: a lapse here must come from the store, not the CPU.
    leaseTtlMs: 20000,
    onEvent: (e) => {
      if (e.type === "fenced" || (e.type === "authority-lost" && e.reason === "lease-lost")) lapses.push(`${node}: ${JSON.stringify(e)}`);
    },
  });
}

/** Claimers on `cells` until `runMs` has passed: claim, verify and release what was won. */
async function load({ prefix, nodes, cells }) {
  const lapses = [];
  const outcomes = [];
  // A renewal attempt that failed is tried again while authority remains: a lapse only if it ends.
  const renewals = [];
  const owners = nodes.map((node) => instance(prefix, node, lapses));
  await Promise.all(owners.map((o) => o.acquireLease()));
  for (const [i, o] of owners.entries()) {
    o.startRenewing((e) => (UNDECIDED.has(e.code) ? renewals : lapses).push(`${nodes[i]} renewal: ${e.code} ${e.message}`));
  }
  const until = Date.now() + runMs;
  await Promise.all(
    owners.map(async (own, i) => {
      const node = nodes[i];
      while (Date.now() < until) {
        const cell = cells[Math.floor(Math.random() * cells.length)];
        try {
          const r = await own.claim(cell);
          if (r.outcome !== "applied") {
            outcomes.push({ node, cell, outcome: "rejected" });
            await sleep(20 + Math.random() * 80);
            continue;
          }
          outcomes.push({ node, cell, outcome: "applied", epoch: r.epoch });
          await own.verify(cell, r.epoch).catch(() => {});
          await own.release(cell).catch(() => {});
        } catch (e) {
          outcomes.push({ node, cell, outcome: "error", code: e.code, message: e.message });
          if (!UNDECIDED.has(e.code)) lapses.push(`${node} ${cell}: ${e.code} ${e.message}`);
        }
      }
    }),
  );
  for (const [i, o] of owners.entries()) if (!o.leaseValid()) lapses.push(`${nodes[i]}: no valid lease at the end`);
  // What happened until the end of the run: a renewal in flight at close() then fails as not-leased.
  const seen = [...lapses];
  for (const o of owners) o.stopRenewing();
  await Promise.all(owners.map((o) => o.close({ release: true }).catch(() => {})));
  return { outcomes, lapses: seen, renewals };
}

/** The checks against the store's own record of what it applied. */
async function check(prefix, { outcomes, lapses, renewals }, minApplied) {
  assert.deepEqual(lapses, [], "no lease lapsed, no error other than throttled / ambiguous / transport");
  const log = await (await fetch(`${rough}/__front/log?prefix=${encodeURIComponent(prefix)}`)).json();
  const stored = new Map(); // "cell epoch" -> node, from every owner-record write the store applied
  for (const w of log) {
    const m = /cells\/(.+)\/own\.json$/.exec(w.key);
    if (!m || w.method !== "PUT" || w.status !== 200) continue;
    const body = JSON.parse(w.body);
    if (!body.node) continue; // a release
    const id = `${m[1]} ${body.epoch}`;
    assert.ok(!stored.has(id), `${id} stored twice: ${stored.get(id)} and ${body.node}`);
    stored.set(id, body.node);
  }
  const applied = outcomes.filter((o) => o.outcome === "applied");
  for (const o of applied) {
    assert.equal(stored.get(`${o.cell} ${o.epoch}`), o.node, `${o.node} reported ${o.cell}@${o.epoch} applied: the store has ${stored.get(`${o.cell} ${o.epoch}`)}`);
  }
  // A stored claim the claimer did not report applied must be explained by one of its undecided errors.
  const unexplained = new Map();
  for (const [id, node] of stored) {
    const [cell, epoch] = id.split(" ");
    if (!applied.some((o) => o.node === node && o.cell === cell && o.epoch === Number(epoch))) unexplained.set(node, (unexplained.get(node) ?? 0) + 1);
  }
  for (const [node, n] of unexplained) {
    const errors = outcomes.filter((o) => o.node === node && o.outcome === "error").length;
    assert.ok(n <= errors, `${node}: ${n} claims stored that it reported rejected (only ${errors} errors)`);
  }
  const count = (k) => outcomes.filter((o) => o.outcome === k).length;
  const codes = {};
  for (const o of outcomes.filter((o) => o.outcome === "error")) codes[o.code] = (codes[o.code] ?? 0) + 1;
  const turned = log.length;
  console.log(`${prefix}: ${count("applied")} applied, ${count("rejected")} rejected, errors ${JSON.stringify(codes)}; ${stored.size} claims stored; ${renewals.length} renewal attempts failed and were tried again; ${turned} writes let through, ${log.filter((w) => w.lost).length} answers lost`);
  assert.ok(count("applied") >= minApplied, "the store let claims through");
}

test("the probe qualifies a store that throttles like R2 in one go (issue 36's failure: inconclusive at every retry)", async () => {
  // R2's one write per second per key: every step of the probe that writes a key its previous step wrote
  // is turned away first, and sent again after a pause. (A 503 SlowDown may have landed, so the probe does
  // not send it again: it leaves the probe inconclusive, tried again by the next call; docs/load.md.)
  const own = new S3Ownership({ ...real, endpoint: r2, region: "us-east-1", prefix: `load-probe-${Date.now()}/`, node: "p" });
  const started = Date.now();
  assert.equal((await own.probe()).conditionalDelete, true);
  console.log(`# probe through R2's rate: ${Date.now() - started} ms`);
});

test("32 claimers on one cell through a throttling, answer-losing store: no false answer, no lease lapsed", async () => {
  const prefix = `load-one-${Date.now()}/`;
  const nodes = Array.from({ length: 32 }, (_, i) => `one-${i}`);
  // One write per second to the cell's key: a win is a claim and a release, two writes.
  await check(prefix, await load({ prefix, nodes, cells: ["hot"] }), 1);
});

test("8 nodes on 100 cells through a throttling, answer-losing store: no false answer, no lease lapsed", async () => {
  const prefix = `load-many-${Date.now()}/`;
  const nodes = Array.from({ length: 8 }, (_, i) => `many-${i}`);
  const cells = Array.from({ length: 100 }, (_, i) => `c${i}`);
  await check(prefix, await load({ prefix, nodes, cells }), 3);
});
