// `node workers.mjs APP ROOT`: Workers of the fresh project APP (where run.sh installed the packed tarball),
// bundled by wrangler as `wrangler deploy` would (resolving "celld-edge" from APP/node_modules, the
// tarball), then run in workerd by Miniflare as two isolates sharing one local R2 bucket, with no keys:
// - APP/quickstart: the README's Workers quick start (worker.js and wrangler.toml, which
//   tests/node/quickstart.test.mjs holds equal to the README's blocks): the isolates race for the same cells
//   and name one owner for each, the one the bucket names, and one asked every 200 ms keeps its epoch;
// - APP/lifecycle: worker-lifecycle.js with the same wrangler.toml: two isolates race their claims (one
//   applies per cell), renew on requests, release (the other isolate then claims at the next epoch) and
//   close (the lease retired in the bucket).
// Exits non-zero with the first failure.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deepEqual, equal, match, ok } from "node:assert/strict";
import { Miniflare } from "miniflare";

const [app, root] = process.argv.slice(2);
const disposals = [];

/** `wrangler deploy --dry-run` of APP/<name>/wrangler.toml, run in that folder; the bundle's folder. */
function bundle(name) {
  const dir = mkdtempSync(join(tmpdir(), "celld-package-worker-"));
  disposals.push(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", dir], {
    cwd: join(app, name),
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return dir;
}

/** Two Workers (isolates) of a bundle in one workerd sharing the bucket bound as CELLS. */
async function twoIsolates(dir) {
  const main = readdirSync(dir).find((f) => f.endsWith(".js"));
  const r2Buckets = { CELLS: { id: `cells-${Date.now()}` } }; // one bucket, bound in both
  const worker = (name) => ({
    name,
    modules: true,
    scriptPath: join(dir, main),
    modulesRoot: dir,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-01",
    r2Buckets,
  });
  const mf = new Miniflare({ workers: [worker("a"), worker("b")] });
  disposals.push(() => mf.dispose());
  await mf.ready;
  const ask = async (name, path) => {
    const res = await (await mf.getWorker(name)).fetch(`http://app.example${path}`);
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${name} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const bucket = await mf.getR2Bucket("CELLS");
  const read = async (key) => JSON.parse(await (await bucket.get(key)).text());
  return { a: (path) => ask("a", path), b: (path) => ask("b", path), read };
}

async function quickstart() {
  const { a, b, read } = await twoIsolates(bundle("quickstart"));
  /** Both isolates asked for `cell` at once: one claims it, the other is rejected or names it; then both
   * name one owner, which exactly one of them holds, and which the bucket names. */
  const race = async (cell) => {
    const path = `/cells/${encodeURIComponent(cell)}`;
    await Promise.all([a(path), b(path)]);
    const [fromA, fromB] = [await a(path), await b(path)];
    match(fromA.node, /^edge-[0-9a-f]{16}$/, `${cell}: a node id the isolate made up`);
    deepEqual([fromB.node, fromB.epoch, fromB.live], [fromA.node, 1, true], `${cell}: both isolates name one owner`);
    equal(fromA.held !== fromB.held, true, `${cell}: exactly one isolate holds it`);
    const record = await read(`cells/${cell}/own.json`);
    deepEqual([record.node, record.epoch], [fromA.node, 1], `${cell}: the bucket names that owner`);
  };
  await race("room:0"); // each isolate's first request: its lease, then the race
  await Promise.all(["room:1", "room:2", "room:3", "room:4"].map(race)); // several requests per isolate at once
  // A busy holder keeps its epoch (SPEC 4.4): the requests' own operations renew its lease when due, so
  // asked every 200 ms for longer than the lease's authority (9 s) it stays at epoch 1, the other isolate
  // seeing it live.
  const first = await a("/cells/busy");
  const holder = first.outcome === "applied" ? a : b;
  const seen = new Set();
  for (const start = Date.now(); Date.now() - start < 12_000;) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const held = await holder("/cells/busy");
    seen.add(`${held.epoch} ${held.held}`);
  }
  const other = await (holder === a ? b : a)("/cells/busy");
  deepEqual([[...seen], other.epoch, other.live], [["1 true"], 1, true], "busy: one epoch while requests keep coming");
}

async function lifecycle() {
  const { a, b, read } = await twoIsolates(bundle("lifecycle"));
  const [la, lb] = await Promise.all([a("/acquire"), b("/acquire")]);
  ok(la.valid && lb.valid && la.node !== lb.node, "each isolate leased under a node id of its own");
  const byNode = { [la.node]: a, [lb.node]: b };
  const cells = ["c:1", "c:2", "c:3", "c:4"];
  const winners = new Map();
  await Promise.all(cells.map(async (cell) => {
    const answers = await Promise.all([a(`/claim/${cell}`), b(`/claim/${cell}`)]);
    const applied = answers.filter((r) => r.outcome === "applied");
    equal(applied.length, 1, `${cell}: exactly one claim applied: ${JSON.stringify(answers)}`);
    const record = await read(`cells/${cell}/own.json`);
    const winner = answers[0].outcome === "applied" ? la.node : lb.node;
    deepEqual([record.node, record.epoch], [winner, 1], `${cell}: the bucket names the winner`);
    const loser = answers.find((r) => r.outcome !== "applied");
    deepEqual([loser.owner?.node, loser.owner?.epoch], [winner, 1], `${cell}: the rejection names the winner`);
    winners.set(cell, winner);
  }));
  // Renewed on requests: each renewal moves the lease's expiry in the bucket forward.
  const before = await read(`nodes/${la.node}.json`);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  equal((await a("/renew")).valid, true, "renewed");
  const after = await read(`nodes/${la.node}.json`);
  ok(after.expires_ms > before.expires_ms, `the renewal wrote a later expiry (${before.expires_ms} → ${after.expires_ms})`);
  // Released by its owner: the other isolate claims it at the next epoch.
  const [cell, winner] = [...winners][0];
  const other = winner === la.node ? lb.node : la.node;
  equal((await byNode[winner](`/release/${cell}`)).outcome, "applied", "released");
  const taken = await byNode[other](`/claim/${cell}`);
  deepEqual([taken.outcome, taken.epoch], ["applied", 2], `${cell}: claimed by the other isolate after the release`);
  deepEqual(await read(`cells/${cell}/own.json`).then((r) => [r.node, r.epoch]), [other, 2], `${cell} in the bucket`);
  // Closed: each lease retired in the bucket (an R2 binding has no conditional DELETE: it stays, expired).
  for (const [node, ask] of Object.entries(byNode)) {
    const closed = await ask("/close");
    deepEqual([closed.retired, closed.deleted], [true, false], `${node} closed`);
    equal((await read(`nodes/${node}.json`)).expires_ms, 0, `${node}'s lease retired`);
  }
}

try {
  await quickstart();
  await lifecycle();
} finally {
  for (const dispose of disposals.reverse()) await dispose();
}
