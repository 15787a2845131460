// The cell-routing example Worker (root wrangler.toml, bundled as `wrangler deploy` would) through its R2
// binding, with no keys: two Workers (two isolates of one workerd, NODE_IDs edge-r2-a and edge-r2-b) share
// the local bucket CELLS and race for the same cells; exactly one owns each, the other names it, and the
// records in the bucket agree. Then edge-r2-a gets no requests, its lease lapses, and edge-r2-b takes its
// cells over at a higher epoch; edge-r2-a, back, routes to it. Run by run.mjs.
import { test } from "node:test";
import { deepEqual, equal } from "node:assert/strict";
import { join } from "node:path";
import { bundleWorker, root, startWorkers } from "./miniflare.mjs";

const TTL = 2400;
const SKEW = 300;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const prefix = `worker-r2-${Date.now()}/`;
const vars = (node) => ({ NODE_ID: node, NODE_ADDR: `https://${node}.example`, S3_PREFIX: prefix, LEASE_TTL_MS: String(TTL), MAX_CLOCK_SKEW_MS: String(SKEW) });

async function ask(worker, cell) {
  const res = await worker.dispatchFetch(`http://router.example/cells/${encodeURIComponent(cell)}/items/1`);
  const body = await res.json();
  if (res.status !== 200) throw new Error(`/cells/${cell}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

test("cell-router Worker through its R2 binding, no keys: two isolates race without split brain, then a takeover", async () => {
  const bundle = bundleWorker(join(root, "wrangler.toml"));
  const { workers: [a, b], buckets: { CELLS: bucket } } = await startWorkers(bundle, [vars("edge-r2-a"), vars("edge-r2-b")], { CELLS: { id: "cell-router-r2" } });
  const record = async (key) => JSON.parse(await (await bucket.get(`${prefix}${key}`)).text());
  const cells = Array.from({ length: 8 }, (_, i) => `cell:${i + 1}$x`);
  const owners = new Map();
  for (let round = 0; round < 2; round++) {
    await Promise.all(cells.map(async (cell) => {
      const [fromA, fromB] = await Promise.all([ask(a, cell), ask(b, cell)]);
      deepEqual([fromA.owner, fromA.epoch], [fromB.owner, fromB.epoch], `${cell}: both Workers name the same owner and epoch`);
      equal(fromA.epoch, 1, `${cell}: claimed once`);
      equal(fromA.self, fromA.owner === "edge-r2-a");
      equal(fromB.self, fromB.owner === "edge-r2-b");
      if (round === 1) equal(owners.get(cell), fromA.owner, `${cell}: ownership does not move while both are live`);
      owners.set(cell, fromA.owner);
    }));
  }
  for (const cell of cells) {
    const rec = await record(`cells/${cell}/own.json`);
    deepEqual([rec.node, rec.epoch], [owners.get(cell), 1], `${cell} in the bucket`);
  }
  if (![...owners.values()].includes("edge-r2-a")) {
    equal((await ask(a, "cell-a-only")).owner, "edge-r2-a");
    cells.push("cell-a-only");
    owners.set("cell-a-only", "edge-r2-a");
  }
  const lostByA = cells.filter((c) => owners.get(c) === "edge-r2-a");
  equal((await ask(a, lostByA[0])).owner, "edge-r2-a"); // edge-r2-a's last request
  for (const cell of lostByA) deepEqual((await ask(b, cell)).owner, "edge-r2-a", `${cell}: edge-r2-a is still live`);
  const lease = await record("nodes/edge-r2-a.json");
  // edge-r2-b renews on its requests; edge-r2-a gets none until its lease is dead by the peer rule.
  while (Date.now() < lease.expires_ms + SKEW + 50) {
    equal((await ask(b, "cell-b-warm")).owner, "edge-r2-b");
    await sleep(100);
  }
  // (A loaded machine may let edge-r2-b's own lease lapse between requests: it then claims its cells again,
  // one epoch up. Epochs only ever go up; what must hold is one owner, named alike by both and the bucket.)
  const epochs = new Map();
  for (const cell of cells) {
    const answer = await ask(b, cell);
    equal(answer.owner, "edge-r2-b", `${cell}: edge-r2-b owns every cell once edge-r2-a is dead`);
    if (owners.get(cell) === "edge-r2-a" && answer.epoch < 2) throw new Error(`${cell}: taken over at epoch ${answer.epoch}`);
    epochs.set(cell, answer.epoch);
  }
  for (const cell of lostByA) {
    const answer = await ask(a, cell);
    const rec = await record(`cells/${cell}/own.json`);
    deepEqual([answer.owner, answer.epoch, answer.self], ["edge-r2-b", rec.epoch, false], `${cell}: edge-r2-a routes to edge-r2-b`);
  }
  for (const cell of cells) {
    const rec = await record(`cells/${cell}/own.json`);
    equal(rec.node, "edge-r2-b", `${cell} in the bucket`);
    if (rec.epoch < epochs.get(cell)) throw new Error(`${cell}: the bucket's epoch ${rec.epoch} went below ${epochs.get(cell)}`);
  }
});
