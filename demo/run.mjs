// The demo: nodes in three runtimes at once — two Node processes, a Deno process and a Worker in workerd
// (Miniflare, bundled by wrangler from demo/wrangler.toml) — hold leases and contend for a set of cells
// all along: each node holds a cell for a random while, releases it and claims others (demo/member.mjs),
// so ownership keeps moving among the runtimes. A third of the way in, the Node process holding the most
// cells is killed (SIGKILL: no release); once its lease is dead (expiry + maxClockSkewMs) the others take
// its cells over at higher epochs. A live table shows cells, owners and epochs; at the end a summary per
// node and runtime (ownership changes won, takeovers, releases), the takeovers of the killed node's cells
// with their timing, and the bucket as `celld-edge inspect` shows it. The verdict is checked from the
// store: one owner per epoch, epochs only going up, no takeover while the previous owner's lease was
// live, every runtime won cells throughout, and the killed node's cells were all taken over.
//
// usage: node demo/run.mjs --endpoint URL --bucket NAME [--region R] [--cells N] [--seconds S]
// credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN) from the environment.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { S3Ownership } from "celld-edge";

const root = fileURLToPath(new URL("..", import.meta.url));
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const endpoint = args.endpoint;
const bucket = args.bucket;
if (!endpoint || !bucket) {
  console.error("usage: node demo/run.mjs --endpoint URL --bucket NAME [--region R] [--cells N] [--seconds S]");
  process.exit(2);
}
const store = {
  endpoint,
  bucket,
  region: args.region || "us-east-1",
  accessKeyId: process.env.AWS_ACCESS_KEY_ID,
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
  sessionToken: process.env.AWS_SESSION_TOKEN || undefined,
  pathStyle: args["path-style"] !== "false",
  prefix: `demo-${Date.now()}/`,
  leaseTtlMs: 3000,
  maxClockSkewMs: 500,
};
const cells = Array.from({ length: Number(args.cells || 8) }, (_, i) => `cell-${i + 1}`);
const seconds = Number(args.seconds || 20);
const tty = process.stdout.isTTY;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const claims = []; // what the nodes reported: { node, cell, epoch, tookOver, prior, t }
const releases = []; // { node, cell, epoch, t }
const problems = [];
const members = new Map(); // node -> { runtime, stop(), alive }

/** One event a node reported. Errors are notes (contention makes a few, e.g. a claim racing a release). */
function heard(node, msg) {
  if (msg.ev === "claim") claims.push({ node, ...msg });
  if (msg.ev === "release") releases.push({ node, ...msg });
  if (msg.ev === "error" && members.get(node)?.alive) problems.push(`${node}: ${msg.what}: ${msg.code} ${msg.message}`);
}

function listen(node, child) {
  let buf = "";
  child.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const msg = JSON.parse(line);
        heard(node, msg);
      } catch {
        problems.push(`${node} printed: ${line}`);
      }
    }
  });
  child.stderr.on("data", (d) => members.get(node)?.alive && problems.push(`${node} stderr: ${String(d).trim()}`));
}

function startProcess(node, runtime, command, argv) {
  const orders = JSON.stringify({ config: { ...store, node, addr: `${node}.demo:7000` }, cells });
  const child = spawn(command, [...argv, orders], { cwd: root, env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" } });
  members.set(node, { runtime, alive: true, stop: () => child.kill("SIGKILL") });
  listen(node, child);
}

async function startWorker(node) {
  const out = mkdtempSync(join(tmpdir(), "celld-demo-"));
  execFileSync(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out, "--config", join(root, "demo/wrangler.toml")], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(out, readdirSync(out).find((f) => f.endsWith(".js"))),
    modulesRoot: out,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-01",
    bindings: { CONFIG: JSON.stringify({ ...store, node, addr: `${node}.demo:7000` }), CELLS: JSON.stringify(cells) },
  });
  await mf.ready;
  const member = { runtime: "workerd", alive: true, stop: async () => { member.alive = false; await mf.dispose(); rmSync(out, { recursive: true, force: true }); } };
  members.set(node, member);
  // Workers run only on requests: drive it with a step request a few times a second.
  (async () => {
    while (member.alive) {
      try {
        const res = await mf.dispatchFetch("http://demo.worker/step");
        const events = await res.json();
        for (const e of events) heard(node, e);
      } catch (e) {
        if (member.alive) problems.push(`${node}: ${e.message}`);
      }
      await sleep(125 + Math.random() * 250);
    }
  })();
}

// The observer: polls the store and keeps every version of every record it sees.
const observer = new S3Ownership({ ...store, node: "demo-observer" });
const versions = new Map(cells.map((c) => [c, []])); // cell -> [{ node, epoch, etag, seenAt }]
const leases = new Map(); // node -> [{ expiresMs, seenAt }]
let current = new Map();

async function observe() {
  const now = Date.now();
  await Promise.all(
    cells.map(async (cell) => {
      const rec = await observer.readOwner(cell);
      if (!rec) return;
      const seen = versions.get(cell);
      if (seen.at(-1)?.etag !== rec.etag) seen.push({ ...rec, seenAt: now });
    }),
  );
  await Promise.all(
    [...members.keys()].map(async (node) => {
      const l = await observer.readNodeLease(node);
      if (!l) return;
      const seen = leases.get(node) ?? [];
      if (seen.at(-1)?.expiresMs !== l.expiresMs) seen.push({ expiresMs: l.expiresMs, seenAt: now });
      leases.set(node, seen);
    }),
  );
  current = new Map(cells.map((c) => [c, versions.get(c).at(-1)]));
}

function render(status) {
  const now = Date.now();
  const rows = cells.map((cell) => {
    const v = current.get(cell);
    const node = v?.node ?? "-";
    const lease = v?.node ? leases.get(v.node)?.at(-1) : undefined;
    const left = lease ? lease.expiresMs + store.maxClockSkewMs - now : 0;
    const state = !v ? "absent" : !v.node ? "released" : left > 0 ? `live ${(left / 1000).toFixed(1)}s` : "DEAD";
    return `  ${cell.padEnd(10)} ${node.padEnd(10)} ${String(v?.epoch ?? "-").padStart(5)}   ${state}`;
  });
  const who = [...members].map(([n, m]) => `${n} (${m.runtime}${m.killed ? ", killed" : m.alive ? "" : ", stopped"})`).join(", ");
  const text = [`celld-edge demo — ${status}`, `nodes: ${who}`, "", `  ${"cell".padEnd(10)} ${"owner".padEnd(10)} epoch   owner lease`, ...rows, ""].join("\n");
  if (tty) process.stdout.write(`\x1b[H\x1b[2J${text}\n`);
  return text;
}

function verdict() {
  const failures = [];
  for (const [cell, seen] of versions) {
    const byEpoch = new Map();
    for (let i = 0; i < seen.length; i++) {
      const v = seen[i];
      if (i > 0 && v.epoch < seen[i - 1].epoch) failures.push(`${cell}: epoch went down ${seen[i - 1].epoch} -> ${v.epoch}`);
      if (v.node && byEpoch.has(v.epoch) && byEpoch.get(v.epoch) !== v.node) failures.push(`${cell}@${v.epoch}: owned by ${byEpoch.get(v.epoch)} and ${v.node}`);
      if (v.node) byEpoch.set(v.epoch, v.node);
    }
  }
  const reported = new Map();
  for (const c of claims) {
    const k = `${c.cell}@${c.epoch}`;
    if (reported.has(k)) failures.push(`${k}: claimed by ${reported.get(k)} and ${c.node}`);
    reported.set(k, c.node);
    const stored = versions.get(c.cell).find((v) => v.epoch === c.epoch && v.node);
    if (stored && stored.node !== c.node) failures.push(`${k}: ${c.node} reported it, the store says ${stored.node}`);
    if (c.tookOver) {
      // The previous owner is the node at epoch - 1; its lease must have been dead when this claim landed.
      const prev = versions.get(c.cell).find((v) => v.epoch === c.epoch - 1 && v.node);
      const lease = prev && (leases.get(prev.node) ?? []).filter((l) => l.seenAt <= c.t).at(-1);
      if (lease && lease.expiresMs + store.maxClockSkewMs > c.t) {
        failures.push(`${k}: taken over from ${prev.node} whose lease was live until ${lease.expiresMs + store.maxClockSkewMs} (claim at ${c.t})`);
      }
    }
  }
  return failures;
}

const nodeBin = process.execPath;
const denoBin = join(root, "node_modules/.bin/deno");
startProcess("node-1", "node", nodeBin, ["demo/node-member.mjs"]);
startProcess("node-2", "node", nodeBin, ["demo/node-member.mjs"]);
startProcess("deno-1", "deno", denoBin, ["run", "-A", "--config", "demo/deno.json", "demo/deno-member.mjs"]);
await startWorker("worker-1");

const started = Date.now();
const at = (t) => `${((t - started) / 1000).toFixed(1)}s`;
let victim; // { node, runtime, at, cells: [...], leaseDeadMs }
let status = "contending for cells";
let lastPrint = 0;
while (Date.now() - started < seconds * 1000) {
  try {
    await observe();
  } catch (e) {
    problems.push(`observer: ${e.code} ${e.message}`);
  }
  render(status);
  const now = Date.now();
  if (!tty && now - lastPrint >= 1000) {
    lastPrint = now;
    console.log(`[${at(now)}] ${status}: ${cells.map((c) => `${c}=${current.get(c)?.node ?? "-"}@${current.get(c)?.epoch ?? 0}`).join(" ")}`);
  }
  if (!victim && now - started > seconds * 330) {
    // Kill the process node that holds the most cells now (SIGKILL: no release, no goodbye), among the
    // runtimes with another node, so that all three runtimes go on contending.
    const counts = new Map();
    const runtimeOf = (n) => members.get(n)?.runtime;
    for (const c of cells) {
      const n = current.get(c)?.node;
      const peers = [...members.values()].filter((m) => m.runtime === runtimeOf(n)).length;
      if (n && runtimeOf(n) !== "workerd" && peers > 1) counts.set(n, (counts.get(n) ?? 0) + 1);
    }
    const [node] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? [];
    if (node) {
      const m = members.get(node);
      m.alive = false;
      m.killed = true;
      m.stop();
      const lease = leases.get(node)?.at(-1);
      victim = { node, runtime: m.runtime, at: now, cells: cells.filter((c) => current.get(c)?.node === node), leaseDeadMs: lease ? lease.expiresMs + store.maxClockSkewMs : now };
      status = `killed ${node} (${m.runtime}, held ${victim.cells.join(", ")}); its cells wait out its lease (dead at ${at(victim.leaseDeadMs)})`;
    }
  }
  if (victim && !victim.done && victim.cells.every((c) => current.get(c)?.node !== victim.node)) {
    victim.done = now;
    status = `all of ${victim.node}'s cells taken over ${((now - victim.at) / 1000).toFixed(1)}s after the kill; contending on`;
  }
  await sleep(100);
}
for (const [, m] of members) {
  m.alive = false;
  await m.stop();
}
await observe();
const final = render("finished");
if (!tty) console.log(final);

// The summary: who won cells how often, per node and per runtime, before and after the kill.
const runtimes = ["node", "deno", "workerd"];
const rows = [...members].map(([node, m]) => {
  const won = claims.filter((c) => c.node === node);
  return {
    node, runtime: m.runtime, won: won.length, beforeKill: won.filter((c) => !victim || c.t < victim.at).length,
    afterKill: won.filter((c) => victim && c.t >= victim.at).length, takeovers: won.filter((c) => c.tookOver).length,
    released: releases.filter((r) => r.node === node).length, killed: victim?.node === node,
  };
});
const table = (head, lines) => [head.map((h, i) => (i ? h.padStart(12) : h.padEnd(22))).join(""), ...lines.map((l) => l.map((v, i) => (i ? String(v).padStart(12) : String(v).padEnd(22))).join(""))].join("\n  ");
console.log(`\nownership changes (claims won), ${seconds}s, ${cells.length} cells:\n  ${table(
  ["node", "won", "before kill", "after kill", "takeovers", "released"],
  rows.map((r) => [`${r.node} (${r.runtime}${r.killed ? ", killed" : ""})`, r.won, r.beforeKill, r.afterKill, r.takeovers, r.released]),
)}`);
const perRuntime = runtimes.map((rt) => {
  const rs = rows.filter((r) => r.runtime === rt);
  return [rt, rs.reduce((n, r) => n + r.won, 0), rs.reduce((n, r) => n + r.beforeKill, 0), rs.reduce((n, r) => n + r.afterKill, 0), rs.reduce((n, r) => n + r.takeovers, 0), rs.reduce((n, r) => n + r.released, 0)];
});
console.log(`per runtime:\n  ${table(["runtime", "won", "before kill", "after kill", "takeovers", "released"], perRuntime)}`);
// A hand-off: a cell claimed by another node than the one that claimed it last.
const byTime = [...claims].sort((a, b) => a.t - b.t);
const last = new Map();
let handoffs = 0;
for (const c of byTime) {
  if (last.has(c.cell) && last.get(c.cell) !== c.node) handoffs++;
  last.set(c.cell, c.node);
}
const holders = (cell) => new Set(claims.filter((c) => c.cell === cell).map((c) => members.get(c.node).runtime)).size;
console.log(`cells changed hands ${handoffs} times; runtimes that held each cell: ${cells.map((c) => `${c}:${holders(c)}`).join(" ")}`);
const fromVictim = victim ? claims.filter((c) => c.tookOver && c.prior === victim.node) : [];
if (victim) {
  console.log(`\nkilled ${victim.node} (${victim.runtime}) at ${at(victim.at)} holding ${victim.cells.join(", ") || "nothing"}; its lease was dead from ${at(victim.leaseDeadMs)} (expiry + ${store.maxClockSkewMs} ms skew)`);
  for (const c of fromVictim) console.log(`  ${c.cell} taken over by ${c.node} (${members.get(c.node).runtime}) at epoch ${c.epoch}, ${at(c.t)}: ${((c.t - victim.leaseDeadMs) / 1000).toFixed(2)}s after the lease was dead`);
}

// The bucket at the end, as an operator sees it: the package's own CLI (`npx celld-edge inspect`).
const inspectArgs = ["inspect", "--endpoint", store.endpoint, "--bucket", store.bucket, "--prefix", store.prefix, "--region", store.region,
  "--max-clock-skew-ms", String(store.maxClockSkewMs), store.pathStyle ? "--path-style" : "--virtual-hosted"];
console.log(`\n$ npx celld-edge ${inspectArgs.join(" ")}`);
try {
  process.stdout.write(execFileSync(process.execPath, [join(root, "bin/celld-edge.mjs"), ...inspectArgs], { encoding: "utf8" }));
} catch (e) {
  problems.push(`inspect: exit ${e.status}: ${e.stderr}`);
}

const failures = verdict();
console.log(`\nclaims: ${claims.length} (${claims.filter((c) => c.tookOver).length} takeovers), releases: ${releases.length}; versions observed: ${[...versions.values()].reduce((n, v) => n + v.length, 0)}`);
if (problems.length) console.log(`notes from the nodes (${problems.length}):\n  ${problems.slice(0, 10).join("\n  ")}`);
// Contention all along: every runtime won cells both before and after the kill.
for (const [rt, , before, after] of perRuntime) {
  if (before === 0 || after === 0) failures.push(`${rt} won ${before} cells before the kill and ${after} after: no contention all along`);
}
if (!victim) failures.push("no node was killed (none held a cell)");
else if (!victim.done) failures.push(`${victim.node}'s cells were not all taken over within ${seconds}s`);
else if (victim.cells.length && fromVictim.length === 0) failures.push(`${victim.node}'s cells moved on without a takeover`);
if (failures.length) {
  console.log(`VERDICT: FAIL\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log("VERDICT: PASS — ownership moved among all three runtimes throughout; one owner per epoch, epochs only went up, no takeover while the owner's lease was live; the killed node's cells were taken over once its lease was dead");
process.exit(0);
