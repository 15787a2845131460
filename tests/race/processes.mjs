// The cross-process races' machinery (tests/node/race.test.mjs, tests/component/race.test.mjs): racer
// processes that log to files, and the judgements of those logs (split brains, unreported epochs,
// unexpected errors). A racer is tests/race/process-racer.mjs in Node unless `start` is given another
// command that keeps the same orders and log format (tests/component/racer.py: a node in the component).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Racer processes (tests/race/process-racer.mjs), each logging to its own file in one directory. */
export function racers(server, prefix, cells, lease) {
  const dir = mkdtempSync(join(tmpdir(), "celld-race-"));
  const stopFile = join(dir, "stop");
  const procs = new Map();
  const exited = [];
  const logOf = (node) => (existsSync(join(dir, `${node}.log`)) ? readFileSync(join(dir, `${node}.log`), "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []);
  return {
    procs,
    start(node, extra = {}, command = [process.execPath, `${root}/tests/race/process-racer.mjs`]) {
      const orders = { server, prefix, node, cells, logFile: join(dir, `${node}.log`), stopFile, ...lease, ...extra };
      const [program, ...args] = command;
      const child = spawn(program, [...args, JSON.stringify(orders)], { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      const done = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ node, code, signal, stderr })));
      exited.push(done);
      procs.set(node, { child, done });
      return child;
    },
    /** Until `node` holds a cell (its last event is a win or an act); then that event. */
    async holding(node) {
      for (let i = 0; i < 1000; i++) {
        const last = logOf(node).at(-1);
        if (last && ["won", "act"].includes(last.ev)) return last;
        await sleep(5);
      }
      throw new Error(`${node} never held a cell`);
    },
    async kill(node) {
      procs.get(node).child.kill("SIGKILL");
      await procs.get(node).done;
    },
    /** Stops every racer; their exits. */
    async stop() {
      writeFileSync(stopFile, "");
      const ends = await Promise.race([Promise.all(exited), sleep(20_000).then(() => null)]);
      if (!ends) throw new Error("the racers did not stop within 20 s of the stop file");
      for (const e of ends) if (!e.signal && e.code !== 0) throw new Error(`${e.node} exited ${e.code}: ${e.stderr}`);
      return ends;
    },
    events: (nodes) => nodes.flatMap(logOf),
    cleanup() {
      writeFileSync(stopFile, "");
      for (const { child } of procs.values()) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Split brains in the racers' logs: an epoch of a cell won twice, or an act on epoch e after a later epoch's
 * claim had been answered (times on the machine's clock, which every racer logs whatever its wall clock). */
export function splitBrains(events, cells) {
  const found = [];
  const wins = events.filter((e) => e.ev === "won");
  for (const cell of cells) {
    const won = new Map();
    for (const w of wins.filter((w) => w.cell === cell)) {
      if (won.has(w.epoch)) found.push(`${cell}@${w.epoch} won by both ${won.get(w.epoch).node} and ${w.node}`);
      won.set(w.epoch, w);
    }
    for (const act of events.filter((a) => a.ev === "act" && a.cell === cell)) {
      const later = wins.find((w) => w.cell === cell && w.epoch > act.epoch && w.t < act.t);
      if (later) found.push(`${act.node} acted on ${cell}@${act.epoch} at ${act.t}, after ${later.node} won ${cell}@${later.epoch} at ${later.t}`);
    }
  }
  return found;
}

/** Epochs in the store's records that no racer reported winning. */
export async function unreportedEpochs(api, server, events, cells, prefix) {
  const reader = new api.S3Ownership({ ...server, prefix, node: "checker" });
  let unreported = 0;
  for (const cell of cells) {
    const won = new Set(events.filter((w) => w.ev === "won" && w.cell === cell).map((w) => w.epoch));
    const record = await reader.readOwner(cell);
    const final = record?.epoch ?? 0;
    for (const e of won) if (e > final) throw new Error(`${cell}@${e} reported won, but the store's record is at epoch ${final}`);
    for (let e = 1; e <= final; e++) if (!won.has(e)) unreported++;
  }
  return unreported;
}

/** A paused node finds its lease gone (not-leased, fenced); a loaded machine may time a request out
 * (transport, ambiguous). Anything else is a bug. */
export function unexpectedErrors(events) {
  const expected = ["not-leased", "fenced", "transport", "ambiguous"];
  const errors = events.filter((e) => e.ev === "error" && !expected.includes(e.code));
  if (errors.length) throw new Error(`errors during the race:\n${errors.map((e) => `${e.node} ${e.op}: ${e.code} ${e.message}`).join("\n")}`);
}
