// The mixed race: nodes in the component (tests/component/racer.py, wasmtime-py) and JS nodes
// (tests/race/process-racer.mjs, the npm package in Node) contend for the same cells of one bucket on
// versitygw, each in its own process, while the test kills a component node and a JS node as each holds a
// cell and restarts the component node under the same id. No split brain: one winner per (cell, epoch),
// and no node acted on a cell after another node's claim of a later epoch had landed; the killed holders'
// cells are taken over, and both kinds of node win cells.
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import * as api from "celld-edge";
import { testServer } from "../common/signing.mjs";
import { racers, splitBrains, unexpectedErrors, unreportedEpochs } from "../race/processes.mjs";

const server = testServer(process.env, "CELLD_TEST_REAL");
const python = [process.env.CELLD_PYTHON ?? "python3", fileURLToPath(new URL("racer.py", import.meta.url))];

test("component and JS node processes on one bucket, holders killed and restarted: no split brain", async () => {
  const prefix = `mixed-${Date.now()}/`;
  const cells = ["alpha", "beta", "gamma"];
  const lease = { leaseTtlMs: 1500, maxClockSkewMs: 200 };
  const r = racers(server, prefix, cells, lease);
  const components = ["comp-0", "comp-1"];
  const js = ["js-0", "js-1"];
  const kills = [];
  try {
    components.forEach((n) => r.start(n, {}, python));
    js.forEach((n) => r.start(n));
    await sleep(2500); // a component racer compiles the component first (about 1.5 s here)
    for (const victim of ["comp-0", "js-0"]) {
      const held = await r.holding(victim);
      await r.kill(victim);
      kills.push({ held, at: Date.now() });
      await sleep(lease.leaseTtlMs + lease.maxClockSkewMs + 1500); // its lease dies; a peer takes its cell
    }
    r.start("comp-0", {}, python); // the same id: it waits out its predecessor's lease
    await sleep(2500);
    await r.stop();

    const events = r.events([...components, ...js]);
    unexpectedErrors(events);
    const brains = splitBrains(events, cells);
    if (brains.length) throw new Error(`split brain:\n${brains.join("\n")}`);
    const wins = events.filter((e) => e.ev === "won");
    const ambiguous = events.filter((e) => e.ev === "error" && e.op === "claim" && e.code === "ambiguous").length;
    const unreported = await unreportedEpochs(api, server, events, cells, prefix);
    if (unreported > kills.length + ambiguous) throw new Error(`${unreported} epochs in the store were won by no node that said so`);
    for (const { held, at } of kills) {
      const takeover = wins.find((w) => w.cell === held.cell && w.epoch > held.epoch && w.t > at && w.tookOver);
      if (!takeover) throw new Error(`nobody took ${held.cell} over from the killed ${held.node} (held at epoch ${held.epoch})`);
    }
    for (const kind of [components, js]) {
      if (!wins.some((w) => kind.includes(w.node))) throw new Error(`no ${kind.join("/")} node won a cell`);
    }
    console.log(`mixed race: ${wins.length} wins (${wins.filter((w) => components.includes(w.node)).length} by component nodes, ${wins.filter((w) => w.tookOver).length} took over), ${events.filter((e) => e.ev === "act").length} acts, ${unreported} unreported epochs`);
  } finally {
    r.cleanup();
  }
});
