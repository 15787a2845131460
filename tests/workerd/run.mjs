// Runs the workerd suites under node:test: bundles each Worker with wrangler (as a user's deploy would,
// resolving "celld-edge" through its "workerd" export condition), loads the bundle into workerd with
// Miniflare, and checks what it answers.
// - Every tests/workerd/<suite>/wrangler.toml is a check Worker: GET / runs its checks inside workerd and
//   answers [{ name, ok, error }]; it gets VECTORS and every CELLD_TEST_* variable as bindings.
// - The root wrangler.toml (the example Worker) is driven against s3s-fs (strict, and it checks presigned
//   URLs, which moto cannot).
import { after, before, test } from "node:test";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { loadVectors } from "../common/vectors-fs.mjs";
import { presignServer, strictServer } from "../common/signing.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
// Both fail with the reason when scripts/test did not start the servers.
strictServer(process.env);
const server = presignServer(process.env);
const serverBindings = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("CELLD_TEST_")));
const started = [];

/** Bundles a Worker with `wrangler deploy --dry-run` and starts the bundle in workerd. */
async function startWorker(config, bindings) {
  const out = mkdtempSync(join(tmpdir(), "celld-workerd-"));
  execFileSync(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out, "--config", config], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const main = readdirSync(out).find((f) => f.endsWith(".js"));
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(out, main),
    modulesRoot: out,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-01",
    bindings,
  });
  await mf.ready;
  started.push({ mf, out });
  return mf;
}

after(async () => {
  for (const { mf, out } of started) {
    await mf.dispose();
    rmSync(out, { recursive: true, force: true });
  }
});

const suites = readdirSync(join(root, "tests/workerd"), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, "tests/workerd", d.name, "wrangler.toml")))
  .map((d) => d.name);

for (const suite of suites) {
  test(`${suite} checks inside workerd`, async (t) => {
    const mf = await startWorker(join(root, "tests/workerd", suite, "wrangler.toml"), {
      ...serverBindings,
      VECTORS: JSON.stringify(loadVectors((p) => readFileSync(p, "utf8"), process.env)),
    });
    const res = await mf.dispatchFetch("http://worker/");
    const results = await res.json();
    if (results.length === 0) throw new Error("the Worker ran no checks");
    for (const r of results) {
      await t.test(r.name, () => {
        if (!r.ok) throw new Error(r.error);
      });
    }
  });
}

test("the example Worker (root wrangler.toml) signs for s3s-fs", async () => {
  const mf = await startWorker(join(root, "wrangler.toml"), {
    S3_ENDPOINT: server.endpoint,
    S3_BUCKET: server.bucket,
    S3_REGION: "us-east-1",
    S3_ACCESS_KEY_ID: server.accessKeyId,
    S3_SECRET_ACCESS_KEY: server.secretAccessKey,
  });
  const key = `example/${Date.now()} a+b ☃.txt`.split("/").map(encodeURIComponent).join("/");
  const body = "stored through the example Worker";

  const put = await mf.dispatchFetch(`http://worker/objects/${key}`, { method: "PUT", body, headers: { "if-none-match": "*" } });
  if (put.status !== 200) throw new Error(`PUT via the Worker: ${put.status} ${await put.text()}`);
  if (!(await put.headers.get("etag"))) throw new Error("PUT via the Worker returned no ETag");
  await put.arrayBuffer();

  const again = await mf.dispatchFetch(`http://worker/objects/${key}`, { method: "PUT", body, headers: { "if-none-match": "*" } });
  if (again.status !== 412) throw new Error(`a second If-None-Match PUT should be refused with 412, got ${again.status}`);
  await again.arrayBuffer();

  const get = await mf.dispatchFetch(`http://worker/objects/${key}`);
  const got = await get.text();
  if (get.status !== 200 || got !== body) throw new Error(`GET via the Worker: ${get.status} ${got}`);

  const { url } = await (await mf.dispatchFetch(`http://worker/presign/${key}`)).json();
  const direct = await fetch(url);
  const text = await direct.text();
  if (direct.status !== 200 || text !== body) throw new Error(`presigned URL from the Worker: ${direct.status} ${text}`);
});
