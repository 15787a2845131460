import { S3Ownership, signRequest } from "celld-edge";

const keys = { region: process.env.S3_REGION, accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY };
const [endpoint, bucket] = [process.env.S3_ENDPOINT, process.env.S3_BUCKET];
const own = new S3Ownership({ ...keys, endpoint, bucket, node: `node-${crypto.randomUUID()}` });
await own.acquireLease();
own.startRenewing();
await own.claim("cell-1");
// Aborts the moment this node may no longer act for cell-1: lease lapsed, fenced, taken over, released.
own.signal("cell-1").addEventListener("abort", (e) => console.log(`stop: ${e.target.reason.lost}`));

const status = await own.scope("cell-1", async ({ epoch, fetch, key }) => {
  // fetch carries the signal into every request; key() is cells/cell-1/data/e<epoch>/...
  const body = JSON.stringify({ order: 42, epoch });
  const put = signRequest({ ...keys, method: "PUT", url: `${endpoint}/${bucket}/${key("order-42.json")}`, body });
  return (await fetch(put.url, { method: "PUT", headers: put.headers, body })).status;
}); // resolves only if verify("cell-1", epoch) still holds afterwards; else rejects (fenced, released)
console.log(`ack: ${status}`);
await own.release("cell-1"); // prints "stop: released"
own.stopRenewing();
