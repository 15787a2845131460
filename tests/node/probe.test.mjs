// The probe against stores that lie. s3s-fs honours If-None-Match / If-Match one
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

// versitygw's versioned buckets keep counting a deleted object: If-Match its old ETag applies and
// If-None-Match: * is refused. Its unversioned buckets do not (the ownership checks qualify one).
test("versitygw's versioned bucket is refused by the probe at the write after a delete; its plain bucket qualifies", async () => {
  if (!env.CELLD_TEST_VERSIONED_BUCKET) throw new Error("CELLD_TEST_VERSIONED_BUCKET is not set: run through scripts/test");
  const store = (bucket) => ({
    endpoint: env.CELLD_TEST_REAL_ENDPOINT, bucket, region: "us-east-1",
    accessKeyId: env.CELLD_TEST_REAL_KEY_ID, secretAccessKey: env.CELLD_TEST_REAL_SECRET,
  });
  const prefix = `probe-versioned-${Date.now()}/`;
  const own = new S3Ownership({ ...store(env.CELLD_TEST_VERSIONED_BUCKET), node: "versioned", prefix });
  let refusal;
  try {
    await own.acquireLease();
  } catch (e) {
    refusal = e;
  }
  if (refusal?.code !== "store-violation") throw new Error(`expected store-violation, got ${refusal?.code ?? "a lease"}: ${refusal?.message}`);
  if (!/-after-delete/.test(refusal.message)) throw new Error(`the refusal should name the write after the delete: ${refusal.message}`);
  if ((await own.readNodeLease("versioned")) !== null) throw new Error("a lease was written on a refused store");
  const plain = new S3Ownership({ ...store(env.CELLD_TEST_REAL_BUCKET), node: "plain", prefix });
  const report = await plain.probe();
  if (report.conditionalDelete !== true) throw new Error(`versitygw's plain bucket: ${JSON.stringify(report)}`);
});
