// The cell-routing example Worker, built from the ROOT wrangler.toml exactly as `wrangler deploy` would
// build it, run as two Workers (two workerd instances, NODE_IDs edge-a and edge-b) against ministack
// (atomic conditional writes): both race for the same cells, exactly one owns each and the other answers
// with it as the routing hint; then edge-a stops getting requests, its lease lapses, and edge-b takes its
// cells over at higher epochs. Every answer is checked against the records in the store. Run by run.mjs.
import { after, test } from "node:test";
import { deepEqual, equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { S3Ownership } from "celld-edge";
import { bundleWorker, root, startBundle, stopWorker } from "./miniflare.mjs";
import { atomicStore } from "../common/ownership.mjs";

const env = process.env;
const store = { ...atomicStore(env), prefix: `worker-example-${Date.now()}/` };
// Short leases so the takeover comes quickly, yet long enough that a loaded 2-core machine does not let
// edge-a's lease lapse before the "still live" checks.
const TTL = 2400;
const SKEW = 300;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads the store directly, as a node that never claims anything. */
const observer = new S3Ownership({ ...store, node: "observer", leaseTtlMs: TTL, maxClockSkewMs: SKEW, probe: false });

function bindings(node) {
  return {
    S3_ENDPOINT: store.endpoint, S3_BUCKET: store.bucket, S3_REGION: store.region, S3_PREFIX: store.prefix,
    S3_ACCESS_KEY_ID: store.accessKeyId, S3_SECRET_ACCESS_KEY: store.secretAccessKey,
    NODE_ID: node, NODE_ADDR: `https://${node}.example`,
    LEASE_TTL_MS: String(TTL), MAX_CLOCK_SKEW_MS: String(SKEW),
  };
}

async function ask(mf, cell) {
  const res = await mf.dispatchFetch(`http://router.example/cells/${encodeURIComponent(cell)}/items/1`);
  const body = await res.json();
  if (res.status !== 200) throw new Error(`/cells/${cell}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

let built = null;
/** The root config bundled once for both tests. */
const rootBundle = () => (built ??= bundleWorker(join(root, "wrangler.toml")));

let keepWarm = false;
after(() => {
  keepWarm = false;
});

test("cell-router Worker (root wrangler.toml): contention, routing hints, takeover after a lease lapses", async (t) => {
  const bundle = rootBundle();
  t.diagnostic(`wrangler deploy --dry-run (root wrangler.toml): ${bundle.bytes} bytes, ${bundle.gzipBytes} bytes gzip -9; wrangler: ${bundle.report}`);
  console.log(`bundle size of the root Worker: ${bundle.bytes} bytes, gzip ${bundle.gzipBytes} bytes (${bundle.report})`);
  ok(bundle.gzipBytes > 0);

  const a = await startBundle(bundle, bindings("edge-a"));
  const b = await startBundle(bundle, bindings("edge-b"));
  const workers = { "edge-a": a, "edge-b": b };
  const cells = Array.from({ length: 8 }, (_, i) => `cell:${i + 1}$x`); // celld's ids, percent-encoded in the path

  // Both Workers race for every cell at once (two rounds, so both isolates are warm and leased).
  const owners = new Map();
  for (let round = 0; round < 2; round++) {
    await Promise.all(
      cells.map(async (cell) => {
        const [fromA, fromB] = await Promise.all([ask(a, cell), ask(b, cell)]);
        equal(fromA.owner, fromB.owner, `${cell}: both Workers must name the same owner`);
        equal(fromA.epoch, fromB.epoch, `${cell}: and the same epoch`);
        equal(fromA.epoch, 1, `${cell}: first claim is epoch 1, and nobody claimed it twice`);
        equal(fromA.self, fromA.owner === "edge-a");
        equal(fromB.self, fromB.owner === "edge-b");
        const hint = fromA.self ? fromB : fromA; // the loser's answer: the owner as a routing hint
        equal(hint.addr, `https://${hint.owner}.example`, `${cell}: the hint carries the owner's addr`);
        if (round === 1) equal(owners.get(cell), fromA.owner, `${cell}: ownership must not move while both are live`);
        owners.set(cell, fromA.owner);
      }),
    );
  }
  for (const cell of cells) {
    const rec = await observer.readOwner(cell);
    deepEqual({ node: rec.node, epoch: rec.epoch }, { node: owners.get(cell), epoch: 1 }, `${cell} in the store`);
  }

  // Make sure edge-a owns something to lose: if edge-b won every race, edge-a claims a fresh cell.
  if (![...owners.values()].includes("edge-a")) {
    const extra = "cell-a-only";
    equal((await ask(a, extra)).owner, "edge-a");
    cells.push(extra);
    owners.set(extra, "edge-a");
  }
  const lostByA = cells.filter((c) => owners.get(c) === "edge-a");
  t.diagnostic(`edge-a owns ${lostByA.length} of ${cells.length} cells after the race`);

  // One last request to edge-a (renewing its lease if a third of the ttl has passed); after it edge-a gets
  // no more requests, so nothing renews its lease. edge-b is kept warm on a cell of its own.
  equal((await ask(a, lostByA[0])).owner, "edge-a");
  keepWarm = true;
  const warm = (async () => {
    while (keepWarm) {
      equal((await ask(b, "cell-b-warm")).owner, "edge-b");
      await sleep(100);
    }
  })();
  // Right after, edge-a's lease is live: edge-b must route to it, not take over.
  for (const cell of lostByA) {
    const hint = await ask(b, cell);
    deepEqual([hint.owner, hint.epoch, hint.self], ["edge-a", 1, false], `${cell}: edge-a is still live`);
  }
  const lease = await observer.readNodeLease("edge-a");
  const deadAt = lease.expiresMs + SKEW; // the peer rule: dead once expires_ms + maxClockSkewMs <= now
  await sleep(Math.max(0, deadAt - Date.now()) + 50);

  for (const cell of cells) {
    const answer = await ask(b, cell);
    equal(answer.owner, "edge-b", `${cell}: edge-b owns every cell once edge-a is dead`);
    if (owners.get(cell) === "edge-a") {
      equal(answer.epoch, 2, `${cell}: a takeover advances the epoch`);
      equal(answer.tookOver, true, `${cell}: reported as a takeover`);
    } else {
      equal(answer.epoch, 1, `${cell}: edge-b's own cell keeps its epoch`);
    }
  }

  // edge-a comes back: a fresh lease, but the cells stay with the live edge-b, and edge-a says so.
  for (const cell of lostByA) {
    const answer = await ask(a, cell);
    deepEqual([answer.owner, answer.epoch, answer.self], ["edge-b", 2, false], `${cell}: edge-a routes to edge-b`);
  }
  keepWarm = false;
  await warm;
  for (const cell of cells) {
    const rec = await observer.readOwner(cell);
    deepEqual({ node: rec.node, epoch: rec.epoch }, { node: "edge-b", epoch: owners.get(cell) === "edge-a" ? 2 : 1 }, `${cell} in the store`);
  }

  // Bad requests get typed answers, not crashes.
  const bad = await a.dispatchFetch("http://router.example/cells/a%01b"); // a control character
  equal(bad.status, 400);
  equal((await bad.json()).code, "invalid-input");
  equal((await a.dispatchFetch("http://router.example/cells/%zz")).status, 404);
  await stopWorker(a);
  await stopWorker(b);
});

test("cell-router Worker without secrets answers 500 and names the missing setting", async () => {
  const bundle = rootBundle();
  const { S3_ACCESS_KEY_ID: _k, S3_SECRET_ACCESS_KEY: _s, ...vars } = bindings("edge-c");
  const mf = await startBundle(bundle, vars);
  const res = await mf.dispatchFetch("http://router.example/cells/c1");
  equal(res.status, 500);
  const body = await res.json();
  equal(body.code, "invalid-input");
  ok(/accessKeyId/.test(body.message), body.message);
  await stopWorker(mf);
});

test("cell-router Worker after an idle gap longer than its lease, with nobody taking over: claims its cells again", async () => {
  const bundle = rootBundle();
  const a = await startBundle(bundle, bindings("edge-idle-a"));
  const b = await startBundle(bundle, bindings("edge-idle-b"));
  const cell = "idle:1";
  deepEqual([(await ask(a, cell)).owner, (await ask(a, cell)).self], ["edge-idle-a", true]);
  deepEqual([(await ask(b, cell)).owner, (await ask(b, cell)).epoch], ["edge-idle-a", 1], "edge-idle-b routes to the holder");
  // No request reaches edge-idle-a for longer than its lease is valid (ttl - skew), less than its peers'
  // bound (ttl + skew): its next request acquires a fresh lease, under which the claim at epoch 1 is void.
  await sleep(TTL - SKEW + 200);
  const again = await ask(a, cell);
  deepEqual([again.owner, again.epoch, again.self, again.tookOver], ["edge-idle-a", 2, true, false], "claimed again, not answered from the void claim");
  const rec = await observer.readOwner(cell);
  deepEqual([rec.node, rec.epoch], ["edge-idle-a", 2], "in the store");
  deepEqual([(await ask(a, cell)).epoch, (await ask(a, cell)).self], [2, true], "then held");
  const hint = await ask(b, cell);
  deepEqual([hint.owner, hint.epoch, hint.self], ["edge-idle-a", 2, false], "edge-idle-b routes to the new epoch");
  await stopWorker(a);
  await stopWorker(b);
});
