// The package under Bun: both entries load through ES modules and require(), and the README's Node quick
// start (examples/quickstart/node.mjs) runs verbatim under `bun` against ministack (the test command's
// atomic store) on a fresh bucket, claiming cell-1 and releasing it.
import { expect, test } from "bun:test";
import { createRequire } from "node:module";
import { S3Ownership, signRequest } from "celld-edge";
import { freshBucket, quickstartEnv } from "../common/buckets.mjs";
import { testServer } from "../common/signing.mjs";

const require = createRequire(import.meta.url);
const opts = { method: "PUT", url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z", body: "x" };

test("both entries load through import and require(), and sign alike", async () => {
  const want = signRequest(opts).headers.authorization;
  const cjs = require("celld-edge");
  const cjsSign = require("celld-edge/sign");
  const esmSign = await import("celld-edge/sign");
  for (const entry of [cjs, cjsSign, esmSign]) expect(entry.signRequest(opts).headers.authorization).toBe(want);
  expect(typeof cjs.S3Ownership).toBe("function");
  expect(esmSign.S3Ownership).toBeUndefined();
});

test("the Node quick start runs verbatim under bun: claims cell-1 at epoch 1 and releases it", async () => {
  const server = await freshBucket(signRequest, testServer(process.env, "CELLD_TEST_ATOMIC"), "qs-bun");
  const script = new URL("../../examples/quickstart/node.mjs", import.meta.url).pathname;
  const child = Bun.spawn([process.execPath, script], { env: { ...process.env, ...quickstartEnv(server) }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  expect({ out, err, code }).toEqual({ out: "cell-1 is mine at epoch 1\n", err: "", code: 0 });
  const rec = await new S3Ownership({ ...server, region: "us-east-1", node: "observer", probe: false }).readOwner("cell-1");
  expect([rec.node, rec.epoch]).toEqual([null, 1]);
}, 60_000);
