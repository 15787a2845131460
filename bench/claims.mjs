// Benchmark (not a test): requests and round trips in sequence per ownership operation against the
// protocol's minimum, and claims per second with 1, 8 and 32 concurrent nodes against a local atomic store
// (ministack), celld-edge vs the same protocol in plain JS over aws4fetch (bench/baseline-protocol.mjs),
// with CPU per claim.
// Run: bench/claims [seconds] [rounds]   (starts ministack itself)   or   node bench/claims.mjs with
// CELLD_TEST_ATOMIC_* set. Each node count runs `rounds` times, celld-edge and the baseline taking turns, so
// a busy machine slows both alike; the summary is the median round.
import { S3Ownership } from "celld-edge";
import { storeFromEnv } from "./store-env.mjs";
import { BaselineOwnership } from "./baseline-protocol.mjs";
import { RoundTrips } from "../tests/common/round-trips.mjs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { claimCpu, claimCpuLine } from "./claims-cpu.mjs";
import { bundleWorker, disposeAll, startBundle } from "../tests/workerd/miniflare.mjs";
import { onlyWorkerd, workerdCpuNs } from "./workerd-cpu.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

const store = storeFromEnv("ATOMIC", "bench/claims");
const seconds = Number(process.argv[2] ?? 4);
const rounds = Number(process.argv[3] ?? 3);

// ---- round trips: what goes over the wire for each operation, and how much of it in sequence ----
// tests/common/round-trips.mjs gives each request a depth (one more than the deepest request answered
// before it was sent): "in sequence" is the depth of the operation, what a user waits for one round trip
// after another; the minimum is what the protocol cannot do without (SPEC §8).
const prefix = `bench-rt-${Date.now()}/`;
const trips = new RoundTrips(prefix);
const counting = trips.fetch();
const a = new S3Ownership({ ...store, prefix, node: "a", fetch: counting, leaseTtlMs: 3000, maxClockSkewMs: 200 });
const b = new S3Ownership({ ...store, prefix, node: "b", fetch: counting, probe: false, maxClockSkewMs: 200 });
const measure = async (name, minimum, op, expect, minRequests) => {
  const { result, requests, sequence, waves } = await trips.measure(op);
  if (expect && !expect(result)) throw new Error(`${name}: unexpected result ${JSON.stringify(result)}`);
  const counts = Object.entries(waves.flat().reduce((c, m) => ({ ...c, [m]: (c[m] ?? 0) + 1 }), {}));
  const wire = requests > 8 ? counts.map(([m, n]) => `${n} ${m}`).join(", ") : RoundTrips.show(waves);
  return { op: name, requests, sequence, minimum, minRequests, wire };
};
const won = (r) => r.outcome === "applied";
const lost = (r) => r.outcome === "rejected";
const rows = [];
rows.push(await measure("acquire lease (first write: includes the probe)", 2, () => a.acquireLease()));
// ---- the cold path (docs/protocol.md, "The cold path"): a new instance's acquireLease() + first claim on
// the bucket `a` just qualified, for each kind of node id, against the minimum of requests and round trips ----
// Each request goes through a fetch that waits 100 ms before sending it (a store 100 ms away; ministack's
// own answer time comes on top), so the time each path takes is printed beside its round trips.
const FAR_MS = 100;
const far = trips.fetch((req) => new Promise((r) => setTimeout(r, FAR_MS)).then(() => fetch(req)));
const cold = [];
const coldRow = async (name, { node, expectNew = false, beside = false }, minRequests, minimum) => {
  const own = new S3Ownership({ ...store, prefix, ...(node ? { node } : {}), fetch: far, maxClockSkewMs: 200 });
  const cell = `cold-${cold.length}-${Date.now().toString(36)}`;
  const t0 = performance.now();
  const row = await measure(name, minimum, async () => {
    if (beside) {
      // owner() (a read, no lease needed) beside acquireLease(), then claim: 3 round trips. The quick start does
      // not do this: within an isolate it widens the window in which a request's owner() read predates another
      // request's claim of the same cell, whose claim then claims it again at the next epoch.
      await Promise.all([own.owner(cell), own.acquireLease()]);
      return own.claim(cell);
    }
    await own.acquireLease();
    return own.claim(cell, { expectNew });
  }, won, minRequests);
  row.ms = performance.now() - t0;
  cold.push(row);
  return own;
};
const stamp = Date.now().toString(36);
// One cold path unmeasured first: the process's first requests through `far` (connections, JIT) are not a path's.
await (await coldRow("warm-up", { expectNew: true }, 5, 3)).close();
cold.pop();
await (await coldRow("made-up id, claim(c) of a cell never seen", {}, 6, 4)).close();
await (await coldRow("made-up id, claim(c, { expectNew: true })", { expectNew: true }, 5, 3)).close();
await (await coldRow("made-up id, owner(c) beside acquireLease(), claim(c)", { beside: true }, 6, 3)).close();
await (await coldRow("given id, first use, claim(c)", { node: `given-${stamp}` }, 6, 4)).close();
await (await coldRow("given id, first use, claim(c, { expectNew: true })", { node: `given2-${stamp}`, expectNew: true }, 5, 3)).close();
// A given id's later instance: its predecessor closed holding a cell (close() keeps the retired lease then).
{
  const node = `reused-${stamp}`;
  const first = new S3Ownership({ ...store, prefix, node, fetch: counting, maxClockSkewMs: 200 });
  await first.acquireLease();
  await first.claim(`kept-${stamp}`);
  await first.close();
  await (await coldRow("given id, a later instance of it (retired lease there), claim(c)", { node }, 7, 4)).close();
}
// The cold rows outlast `a`'s 3-s lease (nothing renews it here): a fresh one for the rows below.
await a.acquireLease();
await b.acquireLease();
rows.push(await measure("claim a cell never seen", 1, () => a.claim("fresh"), won));
rows.push(await measure("claim a new cell with { expectNew: true }", 1, () => a.claim("new", { expectNew: true }), won));
rows.push(await measure("renew", 1, () => a.renewLease()));
rows.push(await measure("verify", 1, () => a.verify("fresh", 1)));
rows.push(await measure("owner lookup (owned)", 2, () => b.owner("fresh")));
rows.push(await measure("release (the claim's token)", 1, () => a.release("fresh")));
rows.push(await measure("re-claim after its own release", 1, () => a.claim("fresh"), won));
await a.release("fresh");
rows.push(await measure("claim a cell another node released", 2, () => b.claim("fresh"), won));
rows.push(await measure("owner lookup (absent)", 1, () => b.owner("absent")));
rows.push(await measure("claim after a lookup found it absent", 1, () => b.claim("absent"), won));
rows.push(await measure("expectNew on a held cell (wrong hint: +1)", 2, () => a.claim("fresh", { expectNew: true }), lost));
await b.release("fresh");
await a.owner("fresh"); // a sees it released ...
await b.claim("fresh"); // ... but b claims and releases it before a comes back
await b.release("fresh");
rows.push(await measure("claim over a stale remembered version (+1)", 2, () => a.claim("fresh"), won));
await a.renewLease();
const held = await a.claim("held");
if (held.outcome !== "applied") throw new Error(`setup: a could not claim "held": ${JSON.stringify(held)}`);
// a stops renewing; its lease (3000 ms) passes on the store's clock: a wrote its expiry by its upper bound of
// that clock and b judges by its lower bound, each known to the whole second of Date (up to 2 s between them).
await new Promise((r) => setTimeout(r, 5300));
rows.push(await measure("takeover from a dead node", 3, () => b.claim("held"), (r) => won(r) && r.tookOver));
console.log("a new instance's acquireLease() + first claim on a qualified bucket, over the S3 API: requests sent and round trips in");
console.log(`sequence, each against its minimum (docs/protocol.md, "The cold path": 3 round trips is the least with every rule kept),`);
console.log(`and the time it took with every request sent ${FAR_MS} ms late (a store ${FAR_MS} ms away):`);
for (const r of cold) {
  const over = r.sequence > r.minimum || r.requests > r.minRequests ? "  OVER" : "";
  console.log(`  ${r.op.padEnd(68)} ${String(r.requests).padStart(2)} sent (minimum ${r.minRequests}) ${r.sequence} in sequence (minimum ${r.minimum}) ${r.ms.toFixed(0).padStart(4)} ms${over}  [${r.wire}]`);
}
console.log("\nround trips per operation over the S3 API (celld-edge): requests sent, how many one after another, and the minimum");
console.log("in sequence (what the protocol cannot do without); the requests in sequence order, → between round trips:");
for (const r of rows) {
  const over = r.sequence > r.minimum ? "  OVER" : "";
  console.log(`  ${r.op.padEnd(52)} ${String(r.requests).padStart(3)} sent ${String(r.sequence).padStart(3)} in sequence (minimum ${r.minimum})${over}  [${r.wire}]`);
}

// ---- the same cold path through an R2 binding: Miniflare's local bucket, driven from Node through its proxy ----
{
  const { Miniflare } = await import("miniflare");
  const mf = new Miniflare({ modules: true, script: "export default { fetch() { return new Response(null) } }", r2Buckets: ["CELLS"] });
  const bucket = await mf.getR2Bucket("CELLS");
  const r2Prefix = `bench-r2-${Date.now()}/`;
  const r2Trips = new RoundTrips(r2Prefix);
  await new S3Ownership({ r2: bucket, prefix: r2Prefix, node: "qualifier" }).probe();
  const fresh = new S3Ownership({ r2: r2Trips.binding(bucket), prefix: r2Prefix });
  const cold = await r2Trips.measure(async () => {
    await fresh.acquireLease();
    return fresh.claim("cold", { expectNew: true });
  });
  if (cold.result.outcome !== "applied") throw new Error(`r2 cold path: ${JSON.stringify(cold.result)}`);
  console.log(`\nthrough an R2 binding (Miniflare's local bucket): new instance: acquireLease + first claim (qualified, expectNew) ${cold.requests} sent ${cold.sequence} in sequence (minimum 3)  [${RoundTrips.show(cold.waves)}]`);
  await fresh.close();
  await mf.dispose();
}

// ---- CPU per claim + release against its floor (SPEC §8): an in-process store, in Node, Deno, workerd ----
// bench/claims-cpu.mjs says what the floor is. Node's fetch (undici, sockets) costs ~500 µs of CPU per
// request here and is the same for every contender, so the store answers in-process.
{
  const cpuMicros = () => {
    const c = process.cpuUsage();
    return c.user + c.system;
  };
  const node = await claimCpu({ S3Ownership, BaselineOwnership, cpuMicros });
  console.log(`\nCPU per claim + release over an in-process store, against the floor (the runtime building and answering the same requests: ${node.requests.join(", ")}); best of three 1-s rounds:`);
  console.log(claimCpuLine(`node ${process.version}`, node));
  const deno = JSON.parse(execFileSync(join(root, "node_modules/.bin/deno"), ["run", "-A", "--config", "bench/deno/deno.json", "bench/deno/claims-cpu.mjs"], {
    cwd: root, env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" }, encoding: "utf8",
  }));
  console.log(claimCpuLine(`deno ${deno.version}`, deno));
  const bun = JSON.parse(execFileSync(join(root, "node_modules/.bin/bun"), ["bench/bun/claims-cpu.mjs"], { cwd: root, encoding: "utf8" }));
  console.log(claimCpuLine(`bun ${bun.version}`, bun));
  // workerd: bench/claims-worker in Miniflare, its CPU read from /proc around each request (clocks are
  // frozen inside a Worker); a request running N pairs minus the median of one running none (the setup).
  const mf = await startBundle(bundleWorker(join(root, "bench/claims-worker/wrangler.toml")));
  try {
    const pids = onlyWorkerd();
    const cpuOf = async (what, n) => {
      const c0 = workerdCpuNs(pids);
      const res = await mf.dispatchFetch(`http://bench/?what=${what}&n=${n}`);
      if (!res.ok) throw new Error(`claims-worker ${what}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      return (workerdCpuNs(pids) - c0) / 1e3;
    };
    const counted = await mf.dispatchFetch("http://bench/?what=count");
    if (!counted.ok) throw new Error(`claims-worker count: ${counted.status} ${await counted.text()}`);
    const { perPair } = await counted.json();
    // Pairs per request, so that each runner's CPU stands well above the setup's noise.
    const n = { floor: 2000, timedFloor: 1000, ours: 300, injected: 300, baseline: 300 };
    const names = Object.keys(n);
    const setup = {};
    for (const what of names) {
      const idle = [];
      for (let i = 0; i < 5; i++) idle.push(await cpuOf(what, 0));
      setup[what] = idle.sort((x, y) => x - y)[2];
    }
    const best = {};
    for (let r = 0; r < 3; r++) {
      for (const what of names) best[what] = Math.min(best[what] ?? Infinity, ((await cpuOf(what, n[what])) - setup[what]) / n[what]);
    }
    console.log(claimCpuLine("workerd (Miniflare)", { ...best, perPair }));
  } finally {
    await disposeAll();
  }
}

// ---- throughput: N nodes claim and release random cells of a small set for `seconds` ----
// Every request of either contender goes through this wrapper (both call the global fetch: celld-edge,
// given no fetch, as fetch(url, init); aws4fetch with its Request), so both pay the same for being counted.
let requests = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = (url, init) => {
  requests++;
  return realFetch(url, init);
};
// A claim that lost every round of contention to claimers that released the cell each time throws
// `transport` (nobody holds it to route to; docs/protocol.md, "Claims and routing"): an attempt that did not
// apply, counted as `lost`. Only celld-edge retries a refused write; the baseline rejects at once.
const lostToContention = (e) => {
  if (e?.code === "transport" && e.message.includes("rounds of contention")) return { outcome: "lost" };
  throw e;
};
async function throughput(make, nodes) {
  const p = `bench-tp-${Date.now()}-${nodes}/`;
  const owners = await Promise.all(Array.from({ length: nodes }, async (_, i) => {
    // A lease that outlives the run: nobody renews it, and neither contender pays for renewals.
    const o = make({ ...store, prefix: p, node: `n${i}`, leaseTtlMs: (seconds + 10) * 1000 });
    await o.acquireLease();
    return o;
  }));
  const cells = Array.from({ length: Math.max(4, nodes) }, (_, i) => `c${i}`);
  let applied = 0;
  let attempts = 0;
  let lost = 0;
  requests = 0;
  const cpu0 = process.cpuUsage();
  const end = Date.now() + seconds * 1000;
  await Promise.all(owners.map(async (o) => {
    while (Date.now() < end) {
      const cell = cells[Math.floor(Math.random() * cells.length)];
      attempts++;
      const r = await o.claim(cell).catch(lostToContention);
      if (r.outcome === "lost") lost++;
      if (r.outcome === "applied") {
        applied++;
        await o.release(cell);
      }
    }
  }));
  const cpu = process.cpuUsage(cpu0);
  const us = cpu.user + cpu.system;
  return { claims: applied / seconds, attempts: attempts / seconds, lost, perAttempt: requests / attempts, cpuPerClaim: us / applied, cpuPerRequest: us / requests };
}

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const f = (x, w = 5) => x.toFixed(0).padStart(w);
const line = (r) => `${f(r.claims)} claims/s ${f(r.attempts)} attempts/s ${f(r.lost, 3)} lost ${r.perAttempt.toFixed(2)} req/attempt ${f(r.cpuPerClaim)} µs CPU/claim ${f(r.cpuPerRequest, 4)} µs CPU/req`;
console.log(`\nclaims per second against ministack (${seconds} s each, ${rounds} rounds taking turns; a claim = a claim that applied, then its release;`);
console.log("an attempt = a claim call, won or not; lost = attempts that lost every round of contention, in the round):");
const summary = [];
for (const nodes of [1, 8, 32]) {
  const ours = [];
  const base = [];
  for (let i = 0; i < rounds; i++) {
    ours.push(await throughput((o) => new S3Ownership({ ...o, probe: false }), nodes));
    base.push(await throughput((o) => new BaselineOwnership(o), nodes));
    console.log(`  ${String(nodes).padStart(2)} nodes, round ${i + 1}: celld-edge ${line(ours[i])} | baseline ${line(base[i])}`);
  }
  summary.push({ nodes, ours, base });
}
console.log("\nmedian round (min..max of claims/s):");
for (const { nodes, ours, base } of summary) {
  const m = (rs, k) => median(rs.map((r) => r[k]));
  const span = (rs) => `${f(Math.min(...rs.map((r) => r.claims)), 0)}..${f(Math.max(...rs.map((r) => r.claims)), 0)}`;
  const pick = (rs) => ({ claims: m(rs, "claims"), attempts: m(rs, "attempts"), lost: m(rs, "lost"), perAttempt: m(rs, "perAttempt"), cpuPerClaim: m(rs, "cpuPerClaim"), cpuPerRequest: m(rs, "cpuPerRequest") });
  const [o, b] = [pick(ours), pick(base)];
  console.log(
    `  ${String(nodes).padStart(2)} nodes: celld-edge ${line(o)} (${span(ours)}) | baseline ${line(b)} (${span(base)})` +
      ` | ${(o.claims / b.claims).toFixed(2)}x claims/s, ${(b.cpuPerClaim / o.cpuPerClaim).toFixed(2)}x less CPU per claim`,
  );
}
