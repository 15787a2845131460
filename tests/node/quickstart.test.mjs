// The README's snippets are files under examples/, and this runs them: every ```js/```html/```toml block
// in README.md that follows a `<!-- file: PATH -->` marker must equal that file byte for byte, and the Node
// files run here as users would run them (node FILE) against ministack (ownership) and s3s-fs (signing,
// strict signatures and presigned URLs), each on a fresh bucket, checked against the store. The Deno,
// Workers and browser quick starts run in their runtimes' suites (tests/{deno,workerd,browser}/quickstart*).
import { test } from "node:test";
import { deepEqual, equal, match } from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { S3Ownership, signRequest } from "celld-edge";
import { freshBucket, quickstartEnv } from "../common/buckets.mjs";
import { testServer } from "../common/signing.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const atomic = testServer(process.env, "CELLD_TEST_ATOMIC");
const strict = testServer(process.env, "CELLD_TEST_PRESIGN");
const run = async (file, server) => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(root, file)], { env: { ...process.env, ...quickstartEnv(server) }, timeout: 60_000 });
  return stdout.trim();
};
const observe = (server) => new S3Ownership({ ...server, region: "us-east-1", node: "observer", probe: false });

/** The tested files the README must show verbatim. */
const SHOWN = ["node.mjs", "deno.js", "worker.js", "wrangler.toml", "browser.js", "fencing.mjs", "scope.mjs", "sign.mjs", "inspect.mjs", "errors.mjs"].map((f) => `examples/quickstart/${f}`)
  .concat(["examples/browser/cors.json", "examples/component/host.py"]);

test("README shows every quick start verbatim, and every code block is a tested file", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/(?:<!-- file: (\S+) -->\n)?```(\w*)\n([\s\S]*?)```/g)];
  const shown = new Set();
  for (const [, file, lang, code] of blocks) {
    if (!file && (lang === "sh" || lang === "toml")) continue; // commands and config, not programs (unless marked)
    if (!file) throw new Error(`a \`\`\`${lang} block without a <!-- file: --> marker: ${code.slice(0, 80)}`);
    equal(code, readFileSync(join(root, file), "utf8"), `README's copy of ${file} differs from the file`);
    shown.add(file);
  }
  deepEqual([...shown].sort(), [...SHOWN].sort(), "README shows exactly the tested quick starts");
});

test("Node quick start claims cell-1 at epoch 1 and releases it", async () => {
  const server = await freshBucket(signRequest, atomic, "qs-node");
  equal(await run("examples/quickstart/node.mjs", server), "cell-1 is mine at epoch 1");
  const rec = await observe(server).readOwner("cell-1");
  deepEqual([rec.node, rec.epoch], [null, 1], "released, epoch kept");
});

test("inspect quick start lists the cells and nodes with no node of its own", async () => {
  const server = await freshBucket(signRequest, atomic, "qs-inspect");
  const holder = new S3Ownership({ ...server, region: "us-east-1", node: "holder", probe: false });
  await holder.acquireLease();
  equal((await holder.claim("cell-1")).outcome, "applied");
  equal((await holder.claim("cell-2")).outcome, "applied");
  equal(await holder.release("cell-2"), "applied");
  const lines = (await run("examples/quickstart/inspect.mjs", server)).split("\n");
  deepEqual(lines.slice(0, 2), ["cell-1: live, owner holder, epoch 1", "cell-2: released, owner null, epoch 1"]);
  match(lines[2], /^holder: live, renewed -?\d+ ms ago$/);
  equal(lines.length, 3);
});

test("runs of the Node quick start leave nothing in nodes/ (each closes: no pile-up of leases)", async () => {
  const server = await freshBucket(signRequest, atomic, "qs-node-runs");
  const runs = 8;
  for (let i = 0; i < runs; i++) {
    const out = await run("examples/quickstart/node.mjs", server);
    equal(out, i === 0 ? "cell-1 is mine at epoch 1" : `cell-1 is mine at epoch ${i + 1}`);
  }
  // ListObjectsV2 of nodes/: ministack honours DELETE If-Match (the probe verified it), so each run's
  // retired lease was deleted; on a store without it each would be left retired (expires_ms 0), never live.
  const list = signRequest({ accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, region: "us-east-1", url: `${server.endpoint}/${server.bucket}?list-type=2&prefix=nodes/` });
  const xml = await (await fetch(list.url, { headers: list.headers })).text();
  const keys = [...xml.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]);
  deepEqual(keys, [], `leases left after ${runs} runs`);
  const rec = await observe(server).readOwner("cell-1");
  deepEqual([rec.node, rec.epoch], [null, runs], "released by the last run, at its epoch");
});

test("Node quick start reports a live owner as the route", async () => {
  const server = await freshBucket(signRequest, atomic, "qs-node-busy");
  const holder = new S3Ownership({ ...server, region: "us-east-1", node: "holder" });
  await holder.acquireLease();
  holder.startRenewing();
  try {
    equal((await holder.claim("cell-1")).outcome, "applied");
    equal(await run("examples/quickstart/node.mjs", server), "cell-1 is owned by holder: route there");
  } finally {
    holder.stopRenewing();
  }
});

test("fencing quick start writes under the epoch's key and acknowledges after verify", async () => {
  const server = await freshBucket(signRequest, atomic, "qs-fencing");
  equal(await run("examples/quickstart/fencing.mjs", server), "ack: cells/cell-1/data/e1/order-42.json");
  equal(await run("examples/quickstart/fencing.mjs", server), "ack: cells/cell-1/data/e2/order-42.json", "the next claim is at epoch 2");
  const get = signRequest({ accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, region: "us-east-1", url: `${server.endpoint}/${server.bucket}/cells/cell-1/data/e2/order-42.json` });
  const res = await fetch(get.url, { headers: get.headers });
  deepEqual([res.status, await res.text()], [200, JSON.stringify({ order: 42 })]);
  const rec = await observe(server).readOwner("cell-1");
  deepEqual([rec.node, rec.epoch], [null, 2]);
});

test("scope quick start writes under the epoch's key, acknowledges after verify, and stops on release", async () => {
  const server = await freshBucket(signRequest, atomic, "qs-scope");
  equal(await run("examples/quickstart/scope.mjs", server), "ack: 200\nstop: released");
  const { accessKeyId, secretAccessKey } = server;
  const get = signRequest({ accessKeyId, secretAccessKey, region: "us-east-1", url: `${server.endpoint}/${server.bucket}/cells/cell-1/data/e1/order-42.json` });
  const res = await fetch(get.url, { headers: get.headers });
  deepEqual([res.status, await res.text()], [200, JSON.stringify({ order: 42, epoch: 1 })]);
});

test("signing quick start: signed PUT and presigned GET accepted by a strict server", async () => {
  const server = await freshBucket(signRequest, strict, "qs-sign");
  const out = await run("examples/quickstart/sign.mjs", server);
  equal(out, "PUT 200\nGET hello");
  match(await run("examples/quickstart/sign.mjs", server), /^PUT 412\n/, "the conditional PUT is refused the second time");
});

test("errors quick start prints the refusal's code, key, status and S3 code, and a record when it can read", async () => {
  const server = await freshBucket(signRequest, strict, "qs-errors");
  equal(await run("examples/quickstart/errors.mjs", { ...server, secretAccessKey: "not-the-secret" }), "auth cells/cell-1/own.json 403 SignatureDoesNotMatch");
  equal(await run("examples/quickstart/errors.mjs", server), "null", "nothing there yet");
});
