import { S3Inspector } from "celld-edge";

const view = new S3Inspector({ // no node id, no lease: a dashboard, a script, a browser page
  endpoint: process.env.S3_ENDPOINT, bucket: process.env.S3_BUCKET, region: process.env.S3_REGION,
  accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
});
for (const c of await view.listCells()) console.log(`${c.cell}: ${c.status}, owner ${c.node}, epoch ${c.epoch}`);
for (const n of await view.listNodes()) console.log(`${n.node}: ${n.live ? "live" : "dead"}, renewed ${n.ageMs} ms ago`);
