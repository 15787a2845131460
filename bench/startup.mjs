// Benchmark (not a test): time from import to the first signed request, in a fresh Node process (wasm
// compile + instantiate included) and in a fresh workerd isolate (Miniflare, the bundle wrangler makes),
// against aws4fetch in the same setting. Run after scripts/build: node bench/startup.mjs [runs, default 7]
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";

const root = fileURLToPath(new URL("..", import.meta.url));
const runs = Number(process.argv[2] ?? 7);
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sign = {
  "celld-edge": `const { signRequest } = await import("celld-edge");
    signRequest({ method: "PUT", url: "https://b.example.com/cells/c/own.json", body: "{}", region: "auto", accessKeyId: "AK", secretAccessKey: "SK" });`,
  aws4fetch: `const { AwsClient } = await import("aws4fetch");
    await new AwsClient({ accessKeyId: "AK", secretAccessKey: "SK", service: "s3", region: "auto" }).sign("https://b.example.com/cells/c/own.json", { method: "PUT", body: "{}" });`,
};

// Node: a fresh process per run; the child reports wall and CPU time from just before the import.
console.log(`import -> first signed request, median of ${runs} fresh processes / isolates`);
for (const [name, code] of Object.entries(sign)) {
  const script = `const t0 = performance.now(); const c0 = process.cpuUsage(); ${code}
    const c = process.cpuUsage(c0); console.log(JSON.stringify({ wall: performance.now() - t0, cpu: (c.user + c.system) / 1000 }));`;
  const file = join(root, `bench/.startup-${name}.mjs`);
  writeFileSync(file, script);
  const samples = [];
  try {
    for (let i = 0; i < runs; i++) samples.push(JSON.parse(execFileSync(process.execPath, [file], { cwd: root })));
  } finally {
    rmSync(file);
  }
  console.log(`  node     ${name.padEnd(11)} ${median(samples.map((s) => s.wall)).toFixed(1).padStart(6)} ms wall ${median(samples.map((s) => s.cpu)).toFixed(1).padStart(6)} ms CPU`);
}

// workerd: the same code in a Worker bundled by wrangler; each run is a new Miniflare (a new isolate),
// and the Worker times its first request's import + sign with Date.now() around I/O-free code
// (frozen clocks), so the figure is the outside view: dispatch of the first request until its answer.
for (const [name, code] of Object.entries(sign)) {
  // Inside the repo, so the bundler resolves "celld-edge" as a user's project would resolve its dependency.
  const dir = mkdtempSync(join(root, "bench/.startup-"));
  writeFileSync(join(dir, "worker.mjs"), `export default { async fetch() { ${code} return new Response("ok"); } };`);
  writeFileSync(join(dir, "wrangler.toml"), `name = "startup"\nmain = "worker.mjs"\ncompatibility_date = "2026-04-01"\n`);
  const out = join(dir, "out");
  execFileSync(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out, "--config", join(dir, "wrangler.toml")], {
    cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: "false" }, stdio: "ignore",
  });
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const mf = new Miniflare({
      modules: true,
      scriptPath: join(out, readdirSync(out).find((f) => f.endsWith(".js"))),
      modulesRoot: out,
      modulesRules: [{ type: "ESModule", include: ["**/*.js"] }, { type: "CompiledWasm", include: ["**/*.wasm"] }],
      compatibilityDate: "2026-04-01",
    });
    await mf.ready;
    const t0 = performance.now();
    await (await mf.dispatchFetch("http://startup/")).text();
    samples.push(performance.now() - t0);
    await mf.dispose();
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(`  workerd  ${name.padEnd(11)} ${median(samples).toFixed(1).padStart(6)} ms first request (dispatch to answer, incl. Miniflare's own round trip)`);
}
