import { S3Ownership } from "celld-edge";

const own = new S3Ownership({
  endpoint: process.env.S3_ENDPOINT, bucket: process.env.S3_BUCKET, region: process.env.S3_REGION,
  accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
  node: `node-${crypto.randomUUID()}`, // unique per running process
});
await own.acquireLease(); // probes the store once, then writes this node's lease
own.startRenewing(); // renews every ttl/3 while the process runs
const claim = await own.claim("cell-1");
if (claim.outcome === "applied") console.log(`cell-1 is mine at epoch ${claim.epoch}`);
else console.log(`cell-1 is owned by ${claim.owner.node}: route there`);
await own.close({ release: true }); // stops renewing, releases cell-1, retires this node's lease
