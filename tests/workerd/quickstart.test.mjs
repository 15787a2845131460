// The README's Workers quick start (examples/quickstart/worker.js with its wrangler.toml), bundled by
// wrangler and run as two Workers against ministack on a fresh bucket: the first request claims the cell,
// later ones (from either Worker) name that owner as live; after an idle gap the isolate claims again.
// Run by run.mjs.
import { test } from "node:test";
import { deepEqual, equal, match } from "node:assert/strict";
import { join } from "node:path";
import { S3Ownership, signRequest } from "celld-edge";
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
  deepEqual([fromA.epoch, fromA.live, fromA.held], [1, true, true]);
  const fromB = await ask(b);
  deepEqual(fromB, { ...fromA, held: false }, "the other Worker routes to the same owner, which it does not hold");
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

// The idle gap: Worker A claims a cell, then gets no request for longer than its lease (the quick start's
// default 10 s ttl: valid for ttl - skew = 9 s). Its next request acquires a fresh lease, under which the
// old claim is void although the record still names A's node, live again. A must claim the cell again (a
// new epoch it holds) instead of answering itself as the owner, and B routes to A at that epoch.
test("Workers quick start after an idle gap longer than the lease: the isolate claims its cell again", async () => {
  const server = await freshBucket(signRequest, atomic, "qs-worker-idle");
  const bundle = bundleWorker(join(root, "examples/quickstart/wrangler.toml"));
  const bindings = {
    S3_ENDPOINT: server.endpoint, S3_BUCKET: server.bucket, S3_REGION: "us-east-1",
    S3_ACCESS_KEY_ID: server.accessKeyId, S3_SECRET_ACCESS_KEY: server.secretAccessKey,
  };
  const [a, b] = [await startBundle(bundle, bindings), await startBundle(bundle, bindings)];
  const ask = async (mf) => (await mf.dispatchFetch("http://quickstart.example/cells/idle-1")).json();
  const observer = new S3Ownership({ ...server, region: "us-east-1", node: "observer", probe: false });

  deepEqual([(await ask(a)).outcome, (await ask(a)).held], ["applied", true], "A claims the cell and holds it");
  const nodeA = (await observer.readOwner("idle-1")).node;
  const fromB = await ask(b);
  deepEqual([fromB.node, fromB.epoch, fromB.live, fromB.held], [nodeA, 1, true, false], "B routes to A");

  await new Promise((resolve) => setTimeout(resolve, 9_300)); // A's lease lapses (no request reaches A)
  const again = await ask(a);
  deepEqual([again.outcome, again.epoch, again.tookOver, again.prior?.node, again.prior?.epoch], ["applied", 2, false, nodeA, 1],
    "A claims its void cell again at a new epoch, not answering itself as owner at the old one");
  const rec = await observer.readOwner("idle-1");
  deepEqual([rec.node, rec.epoch], [nodeA, 2], "the store names A at epoch 2");
  const held = await ask(a);
  deepEqual([held.node, held.epoch, held.live, held.held], [nodeA, 2, true, true], "then A answers itself, holding it");
  const routed = await ask(b);
  deepEqual([routed.node, routed.epoch, routed.live, routed.held], [nodeA, 2, true, false], "B routes to A at the new epoch");
  await stopWorker(a);
  await stopWorker(b);
});
