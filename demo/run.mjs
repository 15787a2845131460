// The demo: nodes in three runtimes at once — two Node processes, a Deno process and a Worker in workerd
// (Miniflare, bundled by wrangler from the root wrangler.toml, examples/worker) — hold leases and race to claim a set of cells.
// Midway the node holding the most cells is killed; once its lease is dead the others take its cells over
// at higher epochs. A live table shows cells, owners and epochs; the verdict is checked from the store:
// one owner per epoch, epochs only going up, no takeover while the previous owner's lease was live. At the
// end, `celld-edge inspect` shows the bucket as an operator would see it.
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
const problems = [];
const members = new Map(); // node -> { runtime, stop(), alive }

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
        if (msg.ev === "claim") claims.push({ node, ...msg });
        if (msg.ev === "error" && members.get(node)?.alive) problems.push(`${node}: ${msg.what}: ${msg.code} ${msg.message}`);
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
  execFileSync(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out, "--config", join(root, "wrangler.toml")], {
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
    bindings: {
      S3_ENDPOINT: store.endpoint, S3_BUCKET: store.bucket, S3_REGION: store.region, S3_PREFIX: store.prefix,
      S3_ACCESS_KEY_ID: store.accessKeyId, S3_SECRET_ACCESS_KEY: store.secretAccessKey,
      NODE_ID: node, NODE_ADDR: `${node}.demo:7000`,
      LEASE_TTL_MS: String(store.leaseTtlMs), MAX_CLOCK_SKEW_MS: String(store.maxClockSkewMs),
    },
  });
  await mf.ready;
  const member = { runtime: "workerd", alive: true, stop: async () => { member.alive = false; await mf.dispose(); rmSync(out, { recursive: true, force: true }); } };
  members.set(node, member);
  // Workers run only on requests: drive it with one request per cell, a few times a second.
  (async () => {
    while (member.alive) {
      for (const cell of cells) {
        if (!member.alive) break;
        try {
          const res = await mf.dispatchFetch(`http://cells.demo/cells/${encodeURIComponent(cell)}`);
          const body = await res.json();
          if (res.status !== 200) problems.push(`${node}: ${cell}: ${body.code} ${body.message}`);
          else if (body.owner === node && body.tookOver !== undefined) claims.push({ node, cell, epoch: body.epoch, tookOver: body.tookOver, t: Date.now() });
        } catch (e) {
          if (member.alive) problems.push(`${node}: ${e.message}`);
        }
      }
      await sleep(200);
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
  const who = [...members].map(([n, m]) => `${n} (${m.runtime}${m.alive ? "" : ", killed"})`).join(", ");
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
let victim;
let status = "racing for cells";
let lastLine = "";
while (Date.now() - started < seconds * 1000) {
  try {
    await observe();
  } catch (e) {
    problems.push(`observer: ${e.code} ${e.message}`);
  }
  const text = render(status);
  if (!tty) {
    const line = cells.map((c) => `${c}=${current.get(c)?.node ?? "-"}@${current.get(c)?.epoch ?? 0}`).join(" ");
    if (line !== lastLine) console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${status}: ${line}`);
    lastLine = line;
  }
  const elapsed = Date.now() - started;
  if (!victim && elapsed > seconds * 250 && cells.every((c) => current.get(c)?.node)) {
    // Kill the process-based node that holds the most cells (SIGKILL: no release, no goodbye).
    const counts = new Map();
    for (const c of cells) counts.set(current.get(c).node, (counts.get(current.get(c).node) ?? 0) + 1);
    victim = [...counts].filter(([n]) => members.get(n)?.runtime !== "workerd").sort((a, b) => b[1] - a[1])[0]?.[0];
    if (victim) {
      members.get(victim).alive = false;
      members.get(victim).stop();
      status = `killed ${victim} (held ${counts.get(victim)} cells); waiting for its lease to die and the takeovers`;
    }
  }
  if (victim && !status.startsWith("all") && cells.every((c) => current.get(c)?.node && current.get(c).node !== victim)) {
    status = `all of ${victim}'s cells taken over at higher epochs`;
  }
  void text;
  await sleep(100);
}
for (const [, m] of members) {
  m.alive = false;
  await m.stop();
}
await observe();
const final = render("finished");
if (!tty) console.log(final);

// The bucket as an operator sees it afterwards: the package's own CLI (`npx celld-edge inspect`).
console.log(`\n$ npx celld-edge inspect --endpoint ${store.endpoint} --bucket ${store.bucket} --prefix ${store.prefix} --max-clock-skew-ms ${store.maxClockSkewMs}`);
const inspectArgs = ["inspect", "--endpoint", store.endpoint, "--bucket", store.bucket, "--prefix", store.prefix, "--region", store.region,
  "--max-clock-skew-ms", String(store.maxClockSkewMs), store.pathStyle ? "--path-style" : "--virtual-hosted"];
try {
  process.stdout.write(execFileSync(process.execPath, [join(root, "bin/celld-edge.mjs"), ...inspectArgs], { encoding: "utf8" }));
} catch (e) {
  problems.push(`inspect: exit ${e.status}: ${e.stderr}`);
}
console.log("");

const failures = verdict();
const takeovers = claims.filter((c) => c.tookOver).length;
const victimCells = victim ? versions.size && claims.filter((c) => c.tookOver && c.prior === victim).length : 0;
console.log(`claims: ${claims.length} (${takeovers} takeovers${victim ? `, ${victimCells} from ${victim}` : ""}); versions observed: ${[...versions.values()].reduce((n, v) => n + v.length, 0)}`);
if (problems.length) console.log(`notes from the nodes:\n  ${problems.slice(0, 10).join("\n  ")}`);
if (victim && !status.startsWith("all")) failures.push(`${victim}'s cells were not all taken over within ${seconds}s`);
if (failures.length) {
  console.log(`VERDICT: FAIL\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log("VERDICT: PASS — one owner per epoch, epochs only went up, no takeover while the owner's lease was live");
process.exit(0);
