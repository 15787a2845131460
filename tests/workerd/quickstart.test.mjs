// The README's Workers quick start (examples/quickstart/worker.js with its wrangler.toml), bundled by
// wrangler and run as two Workers against ministack on a fresh bucket: the first request claims the cell,
// later ones (from either Worker) name that owner as live. Run by run.mjs.
import { test } from "node:test";
import { deepEqual, equal, match } from "node:assert/strict";
import { join } from "node:path";
import { signRequest } from "celld-edge";
import { freshBucket } from "../common/buckets.mjs";
import { testServer } from "../common/signing.mjs";
import { bundleWorker, root, startBundle, stopWorker } from "./miniflare.mjs";

const atomic = testServer(process.env, "CELLD_TEST_ATOMIC");

test("Workers quick start: claim on first request, the owner as the answer afterwards", async () => {
  const server = await freshBucket(signRequest, atomic, "qs-worker");
  const bundle = bundleWorker(join(root, "examples/quickstart/wrangler.toml"));
  const bindings = {
    S3_ENDPOINT: server.endpoint, S3_BUCKET: server.bucket, S3_REGION: "us-east-1",
    S3_ACCESS_KEY_ID: server.accessKeyId, S3_SECRET_ACCESS_KEY: server.secretAccessKey,
  };
  const [a, b] = [await startBundle(bundle, bindings), await startBundle(bundle, bindings)];
  const ask = async (mf) => (await mf.dispatchFetch("http://quickstart.example/cells/room%3A1")).json();

  const claimed = await ask(a);
  deepEqual([claimed.outcome, claimed.epoch, claimed.tookOver, claimed.prior], ["applied", 1, false, null]);
  const fromA = await ask(a);
  match(fromA.node, /^worker-/);
  deepEqual([fromA.epoch, fromA.live], [1, true]);
  const fromB = await ask(b);
  deepEqual(fromB, fromA, "the other Worker routes to the same owner");
  equal((await ask(a)).epoch, 1, "asking again does not move the cell");
  for (const [path, status] of [["/", 404], ["/favicon.ico", 404], ["/cells/a%2Fb", 400], ["/cells/%E0%A4%A", 400]]) {
    const res = await a.dispatchFetch(`http://quickstart.example${path}`);
    equal(res.status, status, `${path} answers ${status}`);
    if (status === 400) equal((await res.json()).error, "invalid-input", `${path}: a typed error`);
    else await res.text();
  }
  await stopWorker(a);
  await stopWorker(b);
});
