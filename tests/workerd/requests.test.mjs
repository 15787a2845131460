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
