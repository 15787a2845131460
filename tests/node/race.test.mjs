// Two races against versitygw (a real S3 server: every signature checked, conditions applied atomically).
// 1. 8 nodes in two runtimes (4 in this Node process, 4 in a Deno process) contend for a few cells, 200
//    claims each. Checked against the store itself: each (cell, epoch) has exactly one winner, every epoch
//    from 1 to the record's final epoch was won by someone (no write landed unseen), and every winner
//    verified its claim and released it.
// 2. 4 nodes, each its own process (tests/race/process-racer.mjs), while the test kills one while it holds
//    a cell and restarts it under the same id, pauses another (SIGSTOP) while it holds a cell for longer
//    than its lease, and kills and restarts a third: no split brain — one winner per (cell, epoch), and no
//    node acted on a cell after another node's claim of a later epoch had landed (the paused node's cell is
//    taken over while it sleeps; a node that acted on its old claim after waking would be caught).
import { test } from "node:test";
import { execFile } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import * as api from "celld-edge";
import { testServer } from "../common/signing.mjs";
import { race } from "../race/racer.mjs";
import * as processes from "../race/processes.mjs";
import { splitBrains, unexpectedErrors } from "../race/processes.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const server = testServer(process.env, "CELLD_TEST_REAL");
const racers = (prefix, cells, lease) => processes.racers(server, prefix, cells, lease);
const unreportedEpochs = (events, cells, prefix) => processes.unreportedEpochs(api, server, events, cells, prefix);

function runDeno(orders) {
  return new Promise((resolve, reject) => {
    execFile(
      `${root}/node_modules/.bin/deno`,
      ["run", "-A", "--config", `${root}/tests/deno/deno.json`, `${root}/tests/race/deno-racer.mjs`, JSON.stringify(orders)],
      { env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" }, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => (err ? reject(new Error(`deno racer: ${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout))),
    );
  });
}

test("8 nodes in Node and Deno, 200 contended claims each: one winner per (cell, epoch), matching the store", async () => {
  const prefix = `race-${Date.now()}/`;
  const cells = ["alpha", "beta", "gamma", "delta"];
  const claimsPerNode = 200;
  const orders = (rt) => ({ server, prefix, cells, claimsPerNode, nodes: [0, 1, 2, 3].map((i) => `${rt}-${i}`) });
  const [here, there] = await Promise.all([race({ api, ...orders("node") }), runDeno(orders("deno"))]);
  const log = [...here.log, ...there.log];
  const errors = [...here.errors, ...there.errors];
  if (errors.length) throw new Error(`errors during the race:\n${errors.join("\n")}`);
  if (log.length !== 8 * claimsPerNode) throw new Error(`expected ${8 * claimsPerNode} outcomes, got ${log.length}`);

  const reader = new api.S3Ownership({ ...server, prefix, node: "checker" });
  let wins = 0;
  for (const cell of cells) {
    const winners = new Map();
    for (const r of log.filter((r) => r.cell === cell && r.outcome === "applied")) {
      if (winners.has(r.epoch)) throw new Error(`${cell} epoch ${r.epoch} won by both ${winners.get(r.epoch).node} and ${r.node}`);
      if (!r.verified) throw new Error(`${r.node} won ${cell}@${r.epoch} but did not verify it`);
      if (r.released !== "applied") throw new Error(`${r.node} could not release ${cell}@${r.epoch}: ${r.released}`);
      winners.set(r.epoch, r);
    }
    const record = await reader.readOwner(cell);
    const final = record ? record.epoch : 0;
    for (let e = 1; e <= final; e++) {
      if (!winners.has(e)) throw new Error(`${cell}: epoch ${e} is in the store's history but no node reported winning it`);
    }
    if (winners.size !== final) throw new Error(`${cell}: ${winners.size} winners but the record is at epoch ${final}`);
    if (record && record.node !== null) throw new Error(`${cell}: every winner released, yet the record names ${record.node}`);
    wins += winners.size;
  }
  const rejected = log.length - wins;
  if (wins < 50 || rejected < 50) throw new Error(`not contended enough: ${wins} wins, ${rejected} rejections`);
  console.log(`race: ${wins} wins, ${rejected} rejections across ${cells.length} cells`);
});

test("4 node processes, killed, paused past their lease and restarted: one winner per (cell, epoch), no act after a later epoch landed", async () => {
  const prefix = `procs-${Date.now()}/`;
  const cells = ["alpha", "beta", "gamma"];
  const lease = { leaseTtlMs: 1500, maxClockSkewMs: 200 };
  const r = racers(prefix, cells, lease);
  const nodes = [0, 1, 2, 3].map((i) => `proc-${i}`);
  try {
    nodes.forEach((n) => r.start(n));
    await sleep(2500);
    await r.holding("proc-1");
    await r.kill("proc-1");
    r.start("proc-1"); // the same id: it waits out its predecessor's lease
    await sleep(1000);
    const held = await r.holding("proc-2");
    r.procs.get("proc-2").child.kill("SIGSTOP");
    const pausedAt = Date.now();
    await sleep(lease.leaseTtlMs + lease.maxClockSkewMs + 3000); // its lease dies meanwhile; others take its cell
    r.procs.get("proc-2").child.kill("SIGCONT");
    const resumedAt = Date.now();
    await sleep(1500);
    await r.kill("proc-3");
    r.start("proc-3");
    await sleep(3000);
    const ends = await r.stop();
    const killed = ends.filter((e) => e.signal === "SIGKILL").length;
    if (killed !== 2) throw new Error(`expected 2 killed processes, got ${JSON.stringify(ends.map((e) => [e.node, e.code, e.signal]))}`);

    const events = r.events(nodes);
    unexpectedErrors(events);
    const brains = splitBrains(events, cells);
    if (brains.length) throw new Error(`split brain:\n${brains.join("\n")}`);
    const ambiguousClaims = events.filter((e) => e.ev === "error" && e.op === "claim" && e.code === "ambiguous").length;
    const wins = events.filter((e) => e.ev === "won");
    // A killed process can have won an epoch it never got to log, and an ambiguous claim may have landed;
    // nothing else can leave an epoch unreported.
    const unreported = await unreportedEpochs(events, cells, prefix);
    if (unreported > killed + ambiguousClaims) throw new Error(`${unreported} epochs in the store were won by no node that said so (${killed} processes killed, ${ambiguousClaims} ambiguous claims)`);
    const resumed = events.filter((e) => e.node === "proc-2" && e.t > resumedAt);
    if (!resumed.length) throw new Error("proc-2 did nothing after it was resumed");
    // The situation the pause is for: the paused node's cell changed hands while it slept.
    const takeover = wins.find((w) => w.cell === held.cell && w.epoch > held.epoch && w.t > pausedAt && w.t < resumedAt);
    if (!takeover) throw new Error(`nobody took ${held.cell} over from the paused proc-2 (held at epoch ${held.epoch})`);
    if (wins.length < 30) throw new Error(`not contended enough: ${wins.length} wins`);
    if (!events.some((e) => e.node === "proc-1" && e.ev === "leased" && e.pid !== events.find((f) => f.node === "proc-1").pid)) throw new Error("the restarted proc-1 never got a lease");
    console.log(`process race: ${wins.length} wins (${wins.filter((w) => w.tookOver).length} took over), ${events.filter((e) => e.ev === "act").length} acts, ${unreported} unreported epochs, proc-2's ${held.cell}@${held.epoch} taken over by ${takeover.node} at ${takeover.epoch}; proc-2 after its pause: ${[...new Set(resumed.map((e) => e.code ?? e.ev))].join(", ")}; errors: ${events.filter((e) => e.ev === "error").map((e) => e.code).join(", ") || "none"}`);
  } finally {
    r.cleanup();
  }
});

// Issue 25: no wall clock decides safety. Two of six processes run with wall clocks 30 s ahead and 30 s
// behind the others' (maxClockSkewMs 200); holders are killed, among them the two skewed ones, while the
// rest keep claiming. With peers judging leases by their own wall clocks this gave dozens of split brains
// per run; by the store's clock and by observation, none, and dead owners are still taken over.
test("6 node processes, two with wall clocks 30 s ahead and behind: no split brain, and killed holders are taken over", async () => {
  const prefix = `clocks-${Date.now()}/`;
  const cells = ["alpha", "beta", "gamma"];
  const lease = { leaseTtlMs: 1500, maxClockSkewMs: 200 };
  const offsets = { "proc-4": 30_000, "proc-5": -30_000 };
  const r = racers(prefix, cells, lease);
  const nodes = [0, 1, 2, 3, 4, 5].map((i) => `proc-${i}`);
  const start = (n) => r.start(n, { wallOffsetMs: offsets[n] ?? 0 });
  const kills = [];
  try {
    nodes.forEach(start);
    await sleep(3000);
    for (const victim of ["proc-4", "proc-5", "proc-0"]) {
      const held = await r.holding(victim);
      await r.kill(victim);
      kills.push({ held, at: Date.now() });
      await sleep(4000);
      start(victim); // the same id, the same wall clock: it waits out its predecessor's lease
      await sleep(2000);
    }
    await sleep(3000);
    await r.stop();

    const events = r.events(nodes);
    unexpectedErrors(events);
    const brains = splitBrains(events, cells);
    const wins = events.filter((e) => e.ev === "won");
    console.log(`clock race: ${brains.length} split brains, ${wins.length} wins (${wins.filter((w) => w.tookOver).length} took over), ${events.filter((e) => e.ev === "act").length} acts`);
    if (brains.length) throw new Error(`${brains.length} split brains with wall clocks 30 s apart:\n${brains.slice(0, 10).join("\n")}`);
    for (const { held, at } of kills) {
      const takeover = wins.find((w) => w.cell === held.cell && w.epoch > held.epoch && w.t > at && w.tookOver);
      if (!takeover) throw new Error(`nobody took ${held.cell} over from the killed ${held.node} (held at epoch ${held.epoch})`);
    }
    for (const n of Object.keys(offsets)) {
      if (!wins.some((w) => w.node === n)) throw new Error(`${n} (wall clock ${offsets[n]} ms off) never won a cell`);
    }
  } finally {
    r.cleanup();
  }
});
