// Benchmark (not a test): requests per ownership operation against the protocol's minimum, and claims per
// second with 1, 8 and 32 concurrent nodes against a local atomic store (ministack), celld-edge vs the
// same protocol in plain JS over aws4fetch (bench/baseline-protocol.mjs), with CPU per claim.
// Run: bench/claims   (starts ministack itself)   or   node bench/claims.mjs with CELLD_TEST_ATOMIC_* set.
import { S3Ownership } from "celld-edge";
import { BaselineOwnership } from "./baseline-protocol.mjs";

const env = process.env;
const store = {
  endpoint: env.CELLD_TEST_ATOMIC_ENDPOINT,
  bucket: env.CELLD_TEST_ATOMIC_BUCKET,
  region: "us-east-1",
  accessKeyId: env.CELLD_TEST_ATOMIC_KEY_ID,
  secretAccessKey: env.CELLD_TEST_ATOMIC_SECRET,
};
if (!store.endpoint) throw new Error("set CELLD_TEST_ATOMIC_* (or run bench/claims)");
const seconds = Number(process.argv[2] ?? 4);

// ---- round trips: count what goes over the wire for each operation ----
let sent = [];
const counting = (url, init) => {
  sent.push(`${init?.method ?? "GET"}`);
  return fetch(url, init);
};
const prefix = `bench-rt-${Date.now()}/`;
const a = new S3Ownership({ ...store, prefix, node: "a", fetch: counting, leaseTtlMs: 3000, maxClockSkewMs: 200 });
const b = new S3Ownership({ ...store, prefix, node: "b", fetch: counting, probe: false, maxClockSkewMs: 200 });
const measure = async (name, minimum, op, expect) => {
  sent = [];
  const result = await op();
  if (expect && !expect(result)) throw new Error(`${name}: unexpected result ${JSON.stringify(result)}`);
  const counts = Object.entries(sent.reduce((c, m) => ({ ...c, [m]: (c[m] ?? 0) + 1 }), {}));
  const wire = sent.length > 8 ? counts.map(([m, n]) => `${n} ${m}`).join(", ") : sent.join(" ");
  return { op: name, requests: sent.length, minimum, wire };
};
const rows = [];
rows.push(await measure("acquire lease (first write: includes the probe)", 2, () => a.acquireLease()));
await b.acquireLease();
const won = (r) => r.outcome === "applied";
rows.push(await measure("claim a fresh cell", 1, () => a.claim("fresh"), won));
rows.push(await measure("renew", 1, () => a.renewLease()));
rows.push(await measure("verify", 1, () => a.verify("fresh", 1)));
rows.push(await measure("owner lookup (owned)", 2, () => b.owner("fresh")));
rows.push(await measure("release (cached token)", 1, () => a.release("fresh")));
rows.push(await measure("claim a released cell", 2, () => b.claim("fresh"), won));
await b.release("fresh");
await a.renewLease();
const held = await a.claim("held");
if (held.outcome !== "applied") throw new Error(`setup: a could not claim "held": ${JSON.stringify(held)}`);
await new Promise((r) => setTimeout(r, 3300)); // a stops renewing; its lease (3000 ms) and the skew margin pass
rows.push(await measure("takeover from a dead node", 3, () => b.claim("held"), (r) => won(r) && r.tookOver));
console.log("requests per operation (celld-edge; the minimum is what the protocol cannot do without):");
for (const r of rows) console.log(`  ${r.op.padEnd(50)} ${String(r.requests).padStart(3)}  (minimum ${r.minimum})${r.requests > r.minimum ? `  [${r.wire}]` : ""}`);

// ---- throughput: N nodes claim and release random cells of a small set for `seconds` ----
async function throughput(make, nodes) {
  const p = `bench-tp-${Date.now()}-${nodes}/`;
  const owners = await Promise.all(Array.from({ length: nodes }, async (_, i) => {
    const o = make({ ...store, prefix: p, node: `n${i}` });
    await o.acquireLease();
    return o;
  }));
  const cells = Array.from({ length: Math.max(4, nodes) }, (_, i) => `c${i}`);
  let applied = 0;
  let attempts = 0;
  const cpu0 = process.cpuUsage();
  const end = Date.now() + seconds * 1000;
  await Promise.all(owners.map(async (o) => {
    while (Date.now() < end) {
      const cell = cells[Math.floor(Math.random() * cells.length)];
      attempts++;
      const r = await o.claim(cell);
      if (r.outcome === "applied") {
        applied++;
        await o.release(cell);
      }
    }
  }));
  const cpu = process.cpuUsage(cpu0);
  return { applied: applied / seconds, attempts: attempts / seconds, cpuUsPerAttempt: (cpu.user + cpu.system) / attempts };
}

console.log(`\nclaims per second against ministack (${seconds} s each; a claim attempt = claim, plus release when it won):`);
for (const nodes of [1, 8, 32]) {
  const ours = await throughput((o) => new S3Ownership({ ...o, probe: false }), nodes);
  const base = await throughput((o) => new BaselineOwnership(o), nodes);
  const f = (x) => x.toFixed(0).padStart(6);
  console.log(
    `  ${String(nodes).padStart(2)} nodes: celld-edge ${f(ours.applied)} won/s ${f(ours.attempts)} attempts/s ${f(ours.cpuUsPerAttempt)} µs CPU/attempt` +
      ` | aws4fetch baseline ${f(base.applied)} won/s ${f(base.attempts)} attempts/s ${f(base.cpuUsPerAttempt)} µs CPU/attempt` +
      ` | ratio ${(ours.attempts / base.attempts).toFixed(2)}x attempts, ${(base.cpuUsPerAttempt / ours.cpuUsPerAttempt).toFixed(2)}x less CPU`,
  );
}
