// Bench helper (not a test): the CPU time of the workerd processes Miniflare starts, read from /proc
// (Linux only). Clocks are frozen inside a Worker between I/O, so benches measure workerd from outside.
import { readFileSync, readdirSync } from "node:fs";

/** The workerd processes Miniflare started (children of this process). */
export function workerdPids() {
  const pids = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const m = readFileSync(`/proc/${d}/stat`, "utf8").match(/^\d+ \((.*)\) \S (\d+)/);
      if (m && m[1] === "workerd" && Number(m[2]) === process.pid) pids.push(d);
    } catch {
      // The process ended while being listed.
    }
  }
  return pids;
}

/** The pids of the one workerd process Miniflare started; throws when there is not exactly one. */
export function onlyWorkerd() {
  const pids = workerdPids();
  if (pids.length !== 1) throw new Error(`expected one workerd process, found ${pids.length}`);
  return pids;
}

/** CPU time those processes have used so far, all threads, in ns (each task's schedstat under /proc). */
export function workerdCpuNs(pids) {
  let ns = 0;
  for (const pid of pids) {
    for (const t of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
  }
  return ns;
}
