// Benchmark (not a test): time from import to the first signed request, in a fresh Node process (wasm
// compile + instantiate included) and in a fresh workerd isolate (Miniflare, the bundle wrangler makes),
// for the main entry and the signing-only one (celld-edge/sign), against aws4fetch in the same setting. Run after scripts/build: node bench/startup.mjs [runs, default 7]
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundleWorker, disposeAll, root, startBundle, stopWorker } from "../tests/workerd/miniflare.mjs";
import { onlyWorkerd, workerdCpuNs } from "./workerd-cpu.mjs";

const runs = Number(process.argv[2] ?? 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const sign = {
  "celld-edge": `const { signRequest } = await import("celld-edge");
    signRequest({ method: "PUT", url: "https://b.example.com/cells/c/own.json", body: "{}", region: "auto", accessKeyId: "AK", secretAccessKey: "SK" });`,
  "celld-edge/sign": `const { signRequest } = await import("celld-edge/sign");
    signRequest({ method: "PUT", url: "https://b.example.com/cells/c/own.json", body: "{}", region: "auto", accessKeyId: "AK", secretAccessKey: "SK" });`,
  aws4fetch: `const { AwsClient } = await import("aws4fetch");
    await new AwsClient({ accessKeyId: "AK", secretAccessKey: "SK", service: "s3", region: "auto" }).sign("https://b.example.com/cells/c/own.json", { method: "PUT", body: "{}" });`,
};

// Node: a fresh process per run; the child reports wall and CPU time from just before the import.
console.log(`import -> first signed request, median of ${runs} fresh processes / isolates`);
for (const [name, code] of Object.entries(sign)) {
  const script = `const t0 = performance.now(); const c0 = process.cpuUsage(); ${code}
    const c = process.cpuUsage(c0); console.log(JSON.stringify({ wall: performance.now() - t0, cpu: (c.user + c.system) / 1000 }));`;
  const file = join(root, `bench/.startup-${name.replace("/", "-")}.mjs`);
  writeFileSync(file, script);
  const samples = [];
  try {
    for (let i = 0; i < runs; i++) samples.push(JSON.parse(execFileSync(process.execPath, [file], { cwd: root })));
  } finally {
    rmSync(file);
  }
  console.log(`  node     ${name.padEnd(15)} ${median(samples.map((s) => s.wall)).toFixed(1).padStart(6)} ms wall ${median(samples.map((s) => s.cpu)).toFixed(1).padStart(6)} ms CPU`);
}

// workerd: the same code in a Worker bundled by wrangler; each run is a new Miniflare (a new workerd
// process). Clocks are frozen inside a Worker, so it is measured from outside, as the CPU the workerd
// process used (all threads, from /proc) on the first request (the package's import, the wasm
// instantiated, the first signature) beyond a Worker that only answers "ok"; and the wall time from
// dispatch to the first answer. The wasm is compiled earlier, when workerd loads the Worker; that cost
// is lost in the noise of workerd's own start-up (+-20 ms of CPU between runs here), so it is not
// printed (Node's line includes compiling the same module).
const workers = { empty: "", ...sign };
const base = {};
for (const [name, code] of Object.entries(workers)) {
  // Inside the repo, so the bundler resolves "celld-edge" as a user's project would resolve its dependency.
  const dir = mkdtempSync(join(root, "bench/.startup-"));
  writeFileSync(join(dir, "worker.mjs"), `export default { async fetch() { ${code} return new Response("ok"); } };`);
  writeFileSync(join(dir, "wrangler.toml"), `name = "startup"\nmain = "worker.mjs"\ncompatibility_date = "2026-04-01"\n`);
  const bundle = bundleWorker(join(dir, "wrangler.toml"));
  const walls = [];
  const firsts = [];
  for (let i = 0; i < runs; i++) {
    const mf = await startBundle(bundle);
    try {
      const pids = onlyWorkerd();
      const loaded = workerdCpuNs(pids);
      const t0 = performance.now();
      await (await mf.dispatchFetch("http://startup/")).text();
      walls.push(performance.now() - t0);
      firsts.push((workerdCpuNs(pids) - loaded) / 1e6);
    } finally {
      await stopWorker(mf);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  const first = median(firsts);
  if (name === "empty") {
    base.first = first;
    console.log(`  workerd  empty Worker ${first.toFixed(1).padStart(6)} ms CPU on the first request (subtracted below) ${median(walls).toFixed(1).padStart(6)} ms wall`);
  } else {
    console.log(`  workerd  ${name.padEnd(15)} ${(first - base.first).toFixed(1).padStart(6)} ms CPU on the first request     ${median(walls).toFixed(1).padStart(6)} ms wall (dispatch to answer)`);
  }
}
await disposeAll();
