// Benchmark (not a test): signatures per CPU-second for a conditional PUT (200-byte JSON body, If-Match,
// content-type) and a GET, celld-edge (and its signing-only entry, celld-edge/sign) vs aws4fetch (one AwsClient, .sign()) in Node, Deno and workerd
// (Miniflare) and Bun, and vs aws4 (sync, the runtime's node:crypto) in Node and Bun; same inputs (bench/sign-cases.mjs), each
// runtime's contenders in the same process, in interleaved rounds. Prints the rates, the ratios against
// the goals of issue 7, and the gzip size of what the package ships. Linux only (workerd's CPU time is
// read from /proc). Run after scripts/build:  node bench/sign.mjs [rounds, default 9]   (about a minute)
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { signRequest } from "celld-edge";
import { signRequest as signOnly } from "celld-edge/sign";
import { AwsClient } from "aws4fetch";
import aws4 from "aws4";
import { checkAgreement, interleaved, median, signers } from "./sign-cases.mjs";
import { bundleWorker, disposeAll, root, startBundle } from "../tests/workerd/miniflare.mjs";
import { onlyWorkerd, workerdCpuNs } from "./workerd-cpu.mjs";

const rounds = Number(process.argv[2] ?? 9);
const roundMs = 400;
const results = [];

// Node: this process.
const cpuMicros = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
await checkAgreement({ signRequest, AwsClient });
results.push({ runtime: `node ${process.version}`, rates: await interleaved(signers({ signRequest, signOnly, AwsClient, aws4 }), rounds, roundMs, cpuMicros) });

// Deno: a child process running the same cases and timer (bench/deno/sign.mjs prints its rates as JSON).
const deno = JSON.parse(
  execFileSync(join(root, "node_modules/.bin/deno"), ["run", "-A", "--config", "bench/deno/deno.json", "bench/deno/sign.mjs", String(rounds), String(roundMs)], {
    cwd: root, env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" }, encoding: "utf8",
  }),
);
results.push({ runtime: `deno ${deno.version}`, rates: deno.rates });

// Bun: a child process likewise (bench/bun/sign.mjs), aws4 included (Bun's node:crypto).
const bun = JSON.parse(
  execFileSync(join(root, "node_modules/.bin/bun"), ["bench/bun/sign.mjs", String(rounds), String(roundMs)], { cwd: root, encoding: "utf8" }),
);
results.push({ runtime: `bun ${bun.version}`, rates: bun.rates });

// workerd: a Worker bundled by wrangler (bench/worker), in Miniflare. Clocks are frozen inside a Worker
// between I/O, so each round is measured from here, as the CPU time the workerd process spent (all its
// threads, from /proc/PID/task/*/schedstat, in ns) on one request that signs n times, minus the median
// CPU time of a request that signs 0 times (dispatch and the answer). n is set so a round lasts about
// roundMs; rounds interleave the contenders as in Node and Deno.
const mf = await startBundle(bundleWorker(join(root, "bench/worker/wrangler.toml")));
try {
  const pids = onlyWorkerd();
  const call = async (query) => {
    const res = await mf.dispatchFetch(`http://bench/${query}`);
    const text = await res.text();
    if (!res.ok) throw new Error(`workerd bench ${query}: ${res.status} ${text}`);
    return text;
  };
  /** CPU seconds workerd spent on one request. */
  const cpuOf = async (query) => {
    const c0 = workerdCpuNs(pids);
    await call(query);
    return (workerdCpuNs(pids) - c0) / 1e9;
  };
  await call("check");
  const idle = [];
  for (let i = 0; i < 15; i++) idle.push(await cpuOf("?signer=celld-edge&case=get&n=0"));
  const idleCpu = median(idle);
  const runs = [];
  for (const c of ["put", "get"]) {
    for (const signer of ["celld-edge", "celld-edge/sign", "aws4fetch"]) {
      const q = (n) => `?signer=${encodeURIComponent(signer)}&case=${c}&n=${n}`;
      await call(q(2000)); // JIT, key caches
      const t0 = performance.now();
      await call(q(2000));
      const n = Math.max(100, Math.round((2000 * roundMs) / (performance.now() - t0)));
      runs.push({ c, signer, q: q(n), n, samples: [] });
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (const run of runs) run.samples.push(run.n / ((await cpuOf(run.q)) - idleCpu));
  }
  const rates = {};
  for (const run of runs) (rates[run.c] ??= {})[run.signer] = median(run.samples);
  results.push({ runtime: `workerd (Miniflare; ${(idleCpu * 1e3).toFixed(2)} ms CPU of an empty request subtracted)`, rates });
} finally {
  await disposeAll();
}

const fmt = (r) => (r === undefined ? "" : Math.round(r).toLocaleString("en"));
console.log(`signatures per CPU-second, median of ${rounds} interleaved rounds of ~${roundMs} ms; PUT = conditional PUT with a 200-byte JSON body`);
console.log(`${"runtime / case".padEnd(16)}${"celld-edge".padStart(11)}${"aws4fetch".padStart(11)}${"aws4".padStart(10)}  vs aws4fetch (goal 10x)  vs aws4 (goal 2x)  celld-edge/sign (vs aws4fetch)`);
for (const { runtime, rates } of results) {
  console.log(runtime);
  for (const [c, r] of Object.entries(rates)) {
    const vsFetch = `${(r["celld-edge"] / r.aws4fetch).toFixed(1)}x`;
    const vsAws4 = r.aws4 === undefined ? "" : `${(r["celld-edge"] / r.aws4).toFixed(2)}x`;
    const only = r["celld-edge/sign"] === undefined ? "" : `${fmt(r["celld-edge/sign"])} (${(r["celld-edge/sign"] / r.aws4fetch).toFixed(1)}x)`;
    console.log(`  ${c.toUpperCase().padEnd(14)}${fmt(r["celld-edge"]).padStart(11)}${fmt(r.aws4fetch).padStart(11)}${fmt(r.aws4).padStart(10)}  ${vsFetch.padStart(22)}  ${vsAws4.padStart(16)}  ${only.padStart(30)}`);
  }
}

const pkg = new URL("../pkg/", import.meta.url);
const js = new URL("../js/", import.meta.url);
const gz = (u) => gzipSync(readFileSync(u), { level: 9 }).length;
const wasm = gz(new URL("celld_edge_bg.wasm", pkg));
const glue = gz(new URL("celld_edge.js", pkg));
const ours = readdirSync(js).filter((f) => f.endsWith(".js")).reduce((s, f) => s + gz(new URL(f, js)), 0);
console.log(`shipped, gzip -9 per file: wasm ${wasm} + wasm-bindgen glue ${glue} + js/*.js ${ours} = ${wasm + glue + ours} bytes`);
