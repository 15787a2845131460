// Benchmark (not a test): claims per second and claim latency (p50, p99) with 8 nodes on 100 cells and
// 32 nodes on one cell, straight to versitygw and through the throttling front in front of the same
// versitygw (scripts/lib/store-front.mjs: R2's one write per second per key as 429, S3's 503 SlowDown
// bursts), in one run, taking turns, with the ratios. A claim is timed from call to answer, whatever the
// answer (applied, rejected, or an error such as throttled, counted apart).
// Run: bench/throttle [seconds]   (starts the servers itself)   or   node bench/throttle.mjs with
// CELLD_TEST_REAL_* and CELLD_TEST_THROTTLE_ENDPOINT set.
import { S3Ownership } from "celld-edge";
import { storeFromEnv } from "./store-env.mjs";

const store = storeFromEnv("REAL", "bench/throttle");
const throttled = process.env.CELLD_TEST_THROTTLE_ENDPOINT;
if (!throttled) throw new Error("set CELLD_TEST_THROTTLE_ENDPOINT (or run bench/throttle)");
const seconds = Number(process.argv[2] ?? 5);

async function run(endpoint, nodes, cells) {
  const prefix = `bench-throttle-${Date.now()}-${Math.random().toString(36).slice(2, 6)}/`;
  // Unprobed: this measures claims (the probe under throttling is tests/node/load.test.mjs's).
  const owners = Array.from({ length: nodes }, (_, i) => new S3Ownership({ ...store, endpoint, prefix, node: `n${i}`, probe: false }));
  await owners[0].acquireLease();
  await Promise.all(owners.slice(1).map((o) => o.acquireLease()));
  for (const o of owners) o.startRenewing(() => {});
  const ms = [];
  let applied = 0;
  const errors = {};
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    owners.map(async (own) => {
      while (Date.now() < until) {
        const cell = `c${Math.floor(Math.random() * cells)}`;
        const t0 = performance.now();
        try {
          const r = await own.claim(cell);
          ms.push(performance.now() - t0);
          if (r.outcome === "applied") {
            applied++;
            await own.release(cell).catch(() => {});
          }
        } catch (e) {
          ms.push(performance.now() - t0);
          errors[e.code] = (errors[e.code] ?? 0) + 1;
        }
      }
    }),
  );
  for (const o of owners) o.stopRenewing();
  await Promise.all(owners.map((o) => o.close().catch(() => {})));
  ms.sort((a, b) => a - b);
  const at = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? NaN;
  return { claims: ms.length, perSecond: ms.length / seconds, appliedPerSecond: applied / seconds, p50: at(0.5), p99: at(0.99), errors };
}

const f = (x, d = 1) => x.toFixed(d);
console.log(`bench/throttle: ${seconds} s per run; claims/s counts every answer, applied/s the wins`);
console.log("| load | store | claims/s | applied/s | p50 ms | p99 ms | errors |");
console.log("|---|---|---|---|---|---|---|");
for (const [label, nodes, cells] of [["8 nodes, 100 cells", 8, 100], ["32 nodes, 1 cell", 32, 1]]) {
  const plain = await run(store.endpoint, nodes, cells);
  const slow = await run(throttled, nodes, cells);
  for (const [name, r] of [["versitygw", plain], ["throttling front", slow]]) {
    console.log(`| ${label} | ${name} | ${f(r.perSecond)} | ${f(r.appliedPerSecond)} | ${f(r.p50)} | ${f(r.p99)} | ${JSON.stringify(r.errors)} |`);
  }
  console.log(`| ${label} | ratio (throttled / plain) | ${f(slow.perSecond / plain.perSecond, 2)} | ${f(slow.appliedPerSecond / plain.appliedPerSecond, 2)} | ${f(slow.p50 / plain.p50, 2)} | ${f(slow.p99 / plain.p99, 2)} | |`);
}
