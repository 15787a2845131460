// One S3Ownership serving consecutive requests in workerd (tests/workerd/requests): signal() and scope()
// must work in every request, not only the first, and a signal taken in a later request must still abort
// at the lease's deadline. Run by run.mjs.
import { after, test } from "node:test";
import { deepEqual, equal } from "node:assert/strict";
import { join } from "node:path";
import { signRequest } from "celld-edge";
import { atomicStore } from "../common/ownership.mjs";
import { disposeAll, root, startWorker } from "./miniflare.mjs";

after(disposeAll); // also when run on its own, not from run.mjs

test("signal() and scope() in consecutive requests of one isolate", async () => {
  const store = atomicStore(process.env);
  const prefix = `t-workerd-requests-${Date.now()}/`;
  const cell = "requests-1";
  const mf = await startWorker(join(root, "tests/workerd/requests/requests.toml"), {
    S3_ENDPOINT: store.endpoint, S3_BUCKET: store.bucket, S3_REGION: store.region, S3_PREFIX: prefix,
    S3_ACCESS_KEY_ID: store.accessKeyId, S3_SECRET_ACCESS_KEY: store.secretAccessKey,
    NODE_ID: "workerd-requests", CELL: cell, LEASE_TTL_MS: "3000", MAX_CLOCK_SKEW_MS: "300",
  });
  const ask = async (query) => (await mf.dispatchFetch(`http://worker/?${query}`)).json();
  for (const step of ["1", "2", "3"]) {
    const out = await ask(`step=${step}`);
    deepEqual(out, { step, aborted: false, read: 404, scope: { epoch: 1, status: 200 } }, `request ${step}`);
  }
  const lapsed = await ask("step=4&lapse=1");
  deepEqual(lapsed, { step: "4", aborted: false, read: 404, scope: { epoch: 1, status: 200 }, lapse: "lease-lost" }, "request 4: its signal aborts at the deadline");
  for (const step of ["1", "2", "3", "4"]) {
    const { region, accessKeyId, secretAccessKey } = store;
    const get = signRequest({ url: `${store.endpoint}/${store.bucket}/${prefix}cells/${cell}/data/e1/req-${step}`, region, accessKeyId, secretAccessKey });
    const res = await fetch(get.url, { headers: get.headers });
    equal(await res.text(), `request ${step}`, `the PUT of request ${step} landed with its body`);
  }
});

// Fencing across requests (SPEC 4.4): a scope's fetch kept by one request and called by a later one asks the
// core at send: after a release made by another request, or after the lease lapsed with no request coming,
// it sends nothing and rejects naming the cell and why. And a signal taken in a request aborts within that
// request when another request releases the cell (its own timer: one request cannot abort another's).
test("a kept scope fetch across requests sends nothing after release or lapse; a signal fires in its own request", async () => {
  const store = atomicStore(process.env);
  const prefix = `t-workerd-fencing-${Date.now()}/`;
  const mf = await startWorker(join(root, "tests/workerd/requests/requests.toml"), {
    S3_ENDPOINT: store.endpoint, S3_BUCKET: store.bucket, S3_REGION: store.region, S3_PREFIX: prefix,
    S3_ACCESS_KEY_ID: store.accessKeyId, S3_SECRET_ACCESS_KEY: store.secretAccessKey,
    NODE_ID: "workerd-fencing", CELL: "unused", LEASE_TTL_MS: "3000", MAX_CLOCK_SKEW_MS: "300",
  });
  const ask = async (query) => (await mf.dispatchFetch(`http://worker/?${query}`)).json();
  const stored = async (cell, epoch, name) => {
    const { region, accessKeyId, secretAccessKey } = store;
    const get = signRequest({ url: `${store.endpoint}/${store.bucket}/${prefix}cells/${cell}/data/e${epoch}/${name}`, region, accessKeyId, secretAccessKey });
    return (await fetch(get.url, { headers: get.headers })).status;
  };

  deepEqual(await ask("mode=keep&cell=r"), { epoch: 1 }, "request 1 claims r and keeps its scope's fetch");
  deepEqual(await ask("mode=send&cell=r&name=held"), { status: 200 }, "request 2 sends through it while r is held");
  deepEqual(await ask("mode=release&cell=r"), { released: "applied" }, "request 3 releases r");
  deepEqual(await ask("mode=send&cell=r&name=released"), { refused: ["released", "released", "r", 1] }, "request 4: refused, named");
  equal(await stored("r", 1, "released"), 404, "nothing was sent after the release");

  deepEqual(await ask("mode=keep&cell=l"), { epoch: 1 }, "claims l and keeps its scope's fetch");
  await new Promise((resolve) => setTimeout(resolve, 3_000)); // no request: the lease (authority 2.7 s) lapses
  deepEqual(await ask("mode=send&cell=l&name=lapsed"), { refused: ["fenced", "lease-lost", "l", 1] }, "after the lapse: refused, named");
  equal(await stored("l", 1, "lapsed"), 404, "nothing was sent after the lapse");

  deepEqual(await ask("mode=keep&cell=w"), { epoch: 1 }, "claims w");
  const waiting = ask("mode=wait&cell=w");
  await new Promise((resolve) => setTimeout(resolve, 300));
  deepEqual(await ask("mode=release&cell=w"), { released: "applied" }, "another request releases w");
  deepEqual(await waiting, { lost: "released" }, "the waiting request's signal aborted, within that request");
});
