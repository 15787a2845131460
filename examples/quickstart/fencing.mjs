import { S3Ownership, signRequest } from "celld-edge";

const { S3_ENDPOINT: endpoint, S3_BUCKET: bucket } = process.env;
const creds = { region: process.env.S3_REGION, accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY };
const own = new S3Ownership({ ...creds, endpoint, bucket, node: `node-${crypto.randomUUID()}` });
await own.acquireLease();
const claim = await own.claim("cell-1");
if (claim.outcome !== "applied") throw new Error(`owned by ${claim.owner.node}`);

// Data written for the cell carries the epoch in its key, so writes of an older owner can never
// overwrite or be mistaken for this owner's.
const key = `cells/cell-1/data/e${claim.epoch}/order-42.json`;
const body = JSON.stringify({ order: 42 });
// The signer takes the full URL and the credentials only (store options are refused).
const put = signRequest({ ...creds, method: "PUT", url: `${endpoint}/${bucket}/${key}`, body });
const res = await fetch(put.url, { method: "PUT", headers: put.headers, body });

// Acknowledge only if the write landed AND this node still owns the cell at that epoch.
if (res.ok && (await own.verify("cell-1", claim.epoch))) console.log(`ack: ${key}`);
else console.log("not acknowledged: retry under the current owner");
await own.release("cell-1");
