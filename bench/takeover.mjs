// Benchmark (not a test): takeover latency (SPEC §8), from a holder's death (SIGKILL of its process, so it
// neither releases nor retires its lease) to a peer's applied takeover, for a peer that was watching (a
// `claim(cell, { wait: true })` begun while the holder lived) and for one that arrives fresh (a new instance
// made at the kill: lease, then a waiting claim). Each package root given is measured the same way, side
// by side in one run: this checkout's rule and a baseline's (a copy of another build's `pkg/`), and this
// checkout's once more with the store's `Date` hidden from everyone (browsers whose CORS rule hides it: the
// peers can only observe).
// Run: bench/takeover [rounds] [baseline root ...]   (starts versitygw itself)   or   node bench/takeover.mjs
// with CELLD_TEST_REAL_* set. A baseline root is a directory holding that build's `pkg/` (scripts/build).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { storeFromEnv } from "./store-env.mjs";
import { withoutDate } from "./without-date.mjs";

const here = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
const store = storeFromEnv("REAL", "bench/takeover");
const rounds = Number(process.argv[2] ?? 5);
const roots = [here, ...process.argv.slice(3)];
const lease = { leaseTtlMs: 3000, maxClockSkewMs: 500 };

async function holder(root, prefix, node, cells, hideDate) {
  const orders = { root, store, prefix, node, cells, hideDate, ...lease };
  const child = spawn(process.execPath, [`${here}/bench/takeover-holder.mjs`, JSON.stringify(orders)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  for (let i = 0; !out.includes("held"); i++) {
    if (child.exitCode !== null || i > 1000) throw new Error(`the holder did not hold its cells (exit ${child.exitCode})`);
    await sleep(10);
  }
  return child;
}

async function round(S3Ownership, root, hideDate, n) {
  const prefix = `bench-takeover-${Date.now()}-${n}/`;
  const fetch = hideDate ? withoutDate : globalThis.fetch;
  const peer = (node) => new S3Ownership({ ...store, prefix, node, addr: `${node}:1`, ...lease, probe: false, fetch });
  const child = await holder(root, prefix, "holder", ["watched", "fresh"], hideDate);
  const watcher = peer("watcher");
  await watcher.acquireLease();
  watcher.startRenewing();
  let watchedAt = null;
  const watching = watcher.claim("watched", { wait: true }).then((r) => {
    watchedAt = performance.now();
    return r;
  });
  // Kill at a random moment of the holder's renewal cycle.
  await sleep(500 + Math.random() * lease.leaseTtlMs);
  child.kill("SIGKILL");
  await once(child, "exit");
  const killedAt = performance.now();
  const fresh = peer("newcomer");
  await fresh.acquireLease();
  fresh.startRenewing();
  const f = await fresh.claim("fresh", { wait: true });
  const freshAt = performance.now();
  const w = await watching;
  if (w.outcome !== "applied" || !w.tookOver || f.outcome !== "applied" || !f.tookOver) {
    throw new Error(`no takeover: watcher ${JSON.stringify(w)}, newcomer ${JSON.stringify(f)}`);
  }
  await Promise.all([watcher.close(), fresh.close()]);
  return { watching: watchedAt - killedAt, fresh: freshAt - killedAt };
}

const stats = (xs) => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return `${mean.toFixed(0)} ms (${Math.min(...xs).toFixed(0)}..${Math.max(...xs).toFixed(0)})`;
};
const rows = [];
for (const [root, hideDate] of [...roots.map((r) => [r, false]), [here, true]]) {
  const { S3Ownership } = await import(pathToFileURL(`${root}/pkg/node.js`).href);
  const results = [];
  for (let n = 0; n < rounds; n++) results.push(await round(S3Ownership, root, hideDate, n));
  rows.push({
    build: `${root === here ? "this checkout" : root}${hideDate ? ", Date hidden" : ""}`,
    watching: stats(results.map((r) => r.watching)),
    fresh: stats(results.map((r) => r.fresh)),
  });
}
console.log(`takeover latency, holder killed -> peer's applied takeover; leaseTtlMs ${lease.leaseTtlMs}, maxClockSkewMs ${lease.maxClockSkewMs}, ${rounds} rounds; mean (min..max)`);
console.table(rows);
