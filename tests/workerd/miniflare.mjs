// Shared by the workerd tests: bundles a Worker with `wrangler deploy --dry-run` (as a user's deploy would,
// resolving "celld-edge" through its "workerd" export condition) and starts bundles in workerd with
// Miniflare. Everything started is disposed of, and every bundle deleted, by disposeAll().
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

export const root = fileURLToPath(new URL("../..", import.meta.url));
const started = [];
const bundles = [];

/**
 * `wrangler deploy --dry-run` of a config (plus `args`, e.g. `--minify`). Returns { dir, main, bytes, gzipBytes, report } where the sizes
 * are of every file wrangler would upload and `report` is wrangler's own "Total Upload" line.
 */
export function bundleWorker(config, args = []) {
  const dir = mkdtempSync(join(tmpdir(), "celld-workerd-"));
  bundles.push(dir);
  const out = execFileSync(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", dir, "--config", config, ...args], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
  });
  const files = readdirSync(dir).filter((f) => /\.(js|mjs|wasm)$/.test(f));
  let bytes = 0;
  let gzipBytes = 0;
  for (const f of files) {
    const data = readFileSync(join(dir, f));
    bytes += data.length;
    gzipBytes += gzipSync(data, { level: 9 }).length;
  }
  const report = out.split("\n").find((l) => l.includes("Total Upload")) ?? "";
  return { dir, main: files.find((f) => f.endsWith(".js")), bytes, gzipBytes, report: report.trim() };
}

/** Miniflare's options for one Worker of a bundle. */
const workerOptions = (bundle, bindings, r2Buckets) => ({
  modules: true,
  scriptPath: join(bundle.dir, bundle.main),
  modulesRoot: bundle.dir,
  modulesRules: [
    { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
    { type: "CompiledWasm", include: ["**/*.wasm"] },
  ],
  compatibilityDate: "2026-04-01",
  bindings,
  r2Buckets,
});

/** Starts a bundle (from bundleWorker) in workerd with these bindings (vars and secrets alike) and
 * `r2Buckets` (binding name → { id }; Miniflare keeps each bucket in memory, per Miniflare instance). */
export async function startBundle(bundle, bindings, r2Buckets = {}) {
  const mf = new Miniflare(workerOptions(bundle, bindings, r2Buckets));
  await mf.ready;
  started.push(mf);
  return mf;
}

/**
 * Starts one bundle as several Workers (one isolate each, `bindings[i]` for the i-th) in one workerd, sharing
 * `r2Buckets`: Workers that race through one R2 binding. Returns { workers: an object per Worker with
 * `dispatchFetch(url, init)` like a Miniflare's, buckets: each bound bucket by binding name }.
 */
export async function startWorkers(bundle, bindings, r2Buckets) {
  const workers = bindings.map((b, i) => ({ name: `worker-${i}`, ...workerOptions(bundle, b, r2Buckets) }));
  const mf = new Miniflare({ workers });
  await mf.ready;
  started.push(mf);
  const fetchers = await Promise.all(workers.map(async ({ name }) => {
    const worker = await mf.getWorker(name);
    return { dispatchFetch: (url, init) => worker.fetch(url, init) };
  }));
  // The buckets as Node sees them (Miniflare's proxies), for reading what the Workers wrote.
  const buckets = Object.fromEntries(await Promise.all(Object.keys(r2Buckets).map(async (b) => [b, await mf.getR2Bucket(b)])));
  return { workers: fetchers, buckets };
}

/** The R2 buckets a config binds (`[[r2_buckets]]`), as Miniflare takes them. */
export const r2BucketsOf = (config) => unstable_getMiniflareWorkerOptions(config).workerOptions.r2Buckets ?? {};

/** Bundles a config and starts it, with the R2 buckets it binds. */
export const startWorker = (config, bindings) => startBundle(bundleWorker(config), bindings, r2BucketsOf(config));

/** Stops one Worker started here (the others keep running). */
export async function stopWorker(mf) {
  const i = started.indexOf(mf);
  if (i >= 0) started.splice(i, 1);
  await mf.dispose();
}

export async function disposeAll() {
  for (const mf of started.splice(0)) await mf.dispose();
  for (const dir of bundles.splice(0)) rmSync(dir, { recursive: true, force: true });
}
