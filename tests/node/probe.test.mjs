// The probe against a store that lies under concurrency: s3s-fs honours If-None-Match / If-Match one
// request at a time but lets concurrent conditional writes both win. The probe must refuse it, every time,
// with a store-violation naming the concurrent step, and write nothing of the protocol.
import { test } from "node:test";
import { S3Ownership } from "celld-edge";

const env = process.env;
if (!env.CELLD_TEST_PRESIGN_ENDPOINT) throw new Error("CELLD_TEST_PRESIGN_ENDPOINT is not set: run through scripts/test");
const liar = {
  endpoint: env.CELLD_TEST_PRESIGN_ENDPOINT,
  bucket: env.CELLD_TEST_PRESIGN_BUCKET,
  region: "us-east-1",
  accessKeyId: env.CELLD_TEST_PRESIGN_KEY_ID,
  secretAccessKey: env.CELLD_TEST_PRESIGN_SECRET,
};

test("s3s-fs is refused by the probe, five times out of five, before anything is written", async () => {
  for (let i = 0; i < 5; i++) {
    const own = new S3Ownership({ ...liar, node: `probe-${i}`, prefix: `probe-run-${Date.now()}-${i}/` });
    let refusal;
    try {
      await own.acquireLease();
    } catch (e) {
      refusal = e;
    }
    if (refusal?.code !== "store-violation") throw new Error(`run ${i}: expected store-violation, got ${refusal?.code ?? "a lease"}: ${refusal?.message}`);
    if (!/concurrent-(create|update)/.test(refusal.message)) throw new Error(`run ${i}: the refusal should name the concurrent step: ${refusal.message}`);
    if ((await own.readNodeLease(`probe-${i}`)) !== null) throw new Error(`run ${i}: a lease was written on a refused store`);
  }
});
