// The signing-gateway example Worker (examples/signing-gateway/wrangler.toml), bundled by wrangler and
// driven in workerd against s3s-fs (strict signatures, and it checks presigned URLs, which moto cannot):
// conditional PUTs pass through it, GETs come back, and the presigned URL it hands out works. Run by run.mjs.
import { test } from "node:test";
import { join } from "node:path";
import { presignServer, strictServer } from "../common/signing.mjs";
import { root, startWorker } from "./miniflare.mjs";

// Both fail with the reason when scripts/test did not start the servers.
strictServer(process.env);
const server = presignServer(process.env);

test("the signing-gateway example Worker signs for s3s-fs", async () => {
  const mf = await startWorker(join(root, "examples/signing-gateway/wrangler.toml"), {
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
