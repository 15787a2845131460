// The README's Workers quick start (examples/quickstart/worker.js with its wrangler.toml), bundled by
// wrangler and run as two Workers (two isolates of one workerd) sharing the R2 bucket bound as CELLS,
// with no keys: the first request claims the cell, later ones (from either Worker) name that owner as
// live; after an idle gap the isolate claims again. Run by run.mjs.
import { test } from "node:test";
import { deepEqual, equal, match } from "node:assert/strict";
import { join } from "node:path";
import { bundleWorker, r2BucketsOf, root, startWorkers } from "./miniflare.mjs";

const config = join(root, "examples/quickstart/wrangler.toml");
/** Two Workers of the quick start on one fresh local bucket, and that bucket as Node sees it. */
async function twoWorkers(name) {
  const buckets = Object.fromEntries(Object.keys(r2BucketsOf(config)).map((b) => [b, { id: `${name}-${Date.now()}` }]));
  const { workers, buckets: seen } = await startWorkers(bundleWorker(config), [{}, {}], buckets);
  return { workers, bucket: seen.CELLS };
}
const ownerOf = async (bucket, cell) => JSON.parse(await (await bucket.get(`cells/${cell}/own.json`)).text());

test("Workers quick start: claim on first request, the owner as the answer afterwards", async () => {
  const { workers: [a, b], bucket } = await twoWorkers("qs-worker");
  const ask = async (mf) => (await mf.dispatchFetch("http://quickstart.example/cells/room%3A1")).json();

  const claimed = await ask(a);
  deepEqual([claimed.outcome, claimed.epoch, claimed.tookOver, claimed.prior], ["applied", 1, false, null]);
  const fromA = await ask(a);
  match(fromA.node, /^edge-[0-9a-f]{16}$/, "the node id the isolate made up");
  deepEqual([fromA.epoch, fromA.live, fromA.held], [1, true, true]);
  const fromB = await ask(b);
  deepEqual(fromB, { ...fromA, held: false }, "the other Worker routes to the same owner, which it does not hold");
  equal((await ask(a)).epoch, 1, "asking again does not move the cell");
  for (const [path, status] of [["/", 404], ["/favicon.ico", 404], ["/cells/a%2Fb", 400], ["/cells/%E0%A4%A", 400]]) {
    const res = await a.dispatchFetch(`http://quickstart.example${path}`);
    equal(res.status, status, `${path} answers ${status}`);
    if (status === 400) equal((await res.json()).error, "invalid-input", `${path}: a typed error`);
    else await res.text();
  }
  deepEqual(await ownerOf(bucket, "room:1").then((r) => [r.node, r.epoch]), [fromA.node, 1], "the record in the bucket");
});

// The idle gap: Worker A claims a cell, then gets no request for longer than its lease (the quick start's
// default 10 s ttl: valid for ttl - skew = 9 s). Its next request acquires a fresh lease, under which the
// old claim is void although the record still names A's node, live again. A must claim the cell again (a
// new epoch it holds) instead of answering itself as the owner, and B routes to A at that epoch.
test("Workers quick start after an idle gap longer than the lease: the isolate claims its cell again", async () => {
  const { workers: [a, b], bucket } = await twoWorkers("qs-worker-idle");
  const ask = async (mf) => (await mf.dispatchFetch("http://quickstart.example/cells/idle-1")).json();

  deepEqual([(await ask(a)).outcome, (await ask(a)).held], ["applied", true], "A claims the cell and holds it");
  const nodeA = (await ownerOf(bucket, "idle-1")).node;
  const fromB = await ask(b);
  deepEqual([fromB.node, fromB.epoch, fromB.live, fromB.held], [nodeA, 1, true, false], "B routes to A");

  await new Promise((resolve) => setTimeout(resolve, 9_300)); // A's lease lapses (no request reaches A)
  const again = await ask(a);
  deepEqual([again.outcome, again.epoch, again.tookOver, again.prior?.node, again.prior?.epoch], ["applied", 2, false, nodeA, 1],
    "A claims its void cell again at a new epoch, not answering itself as owner at the old one");
  const rec = await ownerOf(bucket, "idle-1");
  deepEqual([rec.node, rec.epoch], [nodeA, 2], "the store names A at epoch 2");
  const held = await ask(a);
  deepEqual([held.node, held.epoch, held.live, held.held], [nodeA, 2, true, true], "then A answers itself, holding it");
  const routed = await ask(b);
  deepEqual([routed.node, routed.epoch, routed.live, routed.held], [nodeA, 2, true, false], "B routes to A at the new epoch");
});

// A busy holder (SPEC 4.4): nothing runs between requests in Workers, so the operations the quick start's
// requests make renew the lease when it is due. Requests to A every 200 ms for longer than the lease's
// authority (9 s at the default ttl) and three renewal periods, and to B once a second: every answer is
// 200, A holds the cell at epoch 1 throughout and B sees A live at epoch 1. Without renewal on requests the
// lease lapses 9 s in and A claims again at epoch 2.
test("Workers quick start under steady requests: one epoch for as long as they come", async () => {
  const { workers: [a, b], bucket } = await twoWorkers("qs-worker-steady");
  const ask = async (mf) => {
    const res = await mf.dispatchFetch("http://quickstart.example/cells/steady");
    return [res.status, await res.json()];
  };
  const [status, first] = await ask(a);
  deepEqual([status, first.outcome, first.epoch], [200, "applied", 1], "A claims the cell");
  const seenByA = [];
  const seenByB = [];
  const start = Date.now();
  for (let i = 1; Date.now() - start < 12_000; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const [s, body] = await ask(a);
    seenByA.push(`${s} ${body.epoch} ${body.held}`);
    if (i % 5 === 0) {
      const [sb, fromB] = await ask(b);
      seenByB.push(`${sb} ${fromB.epoch} ${fromB.live} ${fromB.node === body.node}`);
    }
  }
  deepEqual([...new Set(seenByA)], ["200 1 true"], "A's answers: status, epoch, held");
  deepEqual([...new Set(seenByB)], ["200 1 true true"], "B's answers: status, epoch, live, A's node");
  equal((await ownerOf(bucket, "steady")).epoch, 1, "the record in the bucket, still at epoch 1");
});

// Concurrent first requests: each cold isolate gets several requests at once, which join one
// acquireLease() (and one claim per cell) inside the wasm. workerd cancels a request that waits with no
// I/O of its own as hung, so the loader holds a timer in each caller's request while its operation runs
// (js/instance.js, holdEachRequest). Every request is answered, and each cell has one owner.
test("Workers quick start, concurrent first requests to two cold isolates: none hangs, one owner per cell", async () => {
  for (let round = 0; round < 2; round++) {
    const { workers: [a, b], bucket } = await twoWorkers(`qs-worker-cold-${round}`);
    const ask = async (mf, cell) => {
      const res = await mf.dispatchFetch(`http://quickstart.example/cells/${cell}`);
      return [res.status, await res.json()];
    };
    const answers = await Promise.all([ask(a, "x"), ask(a, "y"), ask(b, "x"), ask(b, "y"), ask(a, "x"), ask(b, "y")]);
    deepEqual(answers.map(([status]) => status), [200, 200, 200, 200, 200, 200], JSON.stringify(answers));
    for (const cell of ["x", "y"]) {
      const rec = await ownerOf(bucket, cell);
      equal(rec.epoch, 1, `${cell}: claimed once`);
      const named = answers.filter((_, i) => ["x", "y", "x", "y", "x", "y"][i] === cell).map(([, body]) => body.node ?? body.owner?.node ?? (body.outcome === "applied" ? rec.node : undefined));
      deepEqual([...new Set(named)], [rec.node], `${cell}: every answer names its one owner`);
    }
  }
});
