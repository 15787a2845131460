import { S3Ownership } from "celld-edge";

let own; // one node per isolate; examples/worker/ also renews the lease and re-claims after a lapse
export default {
  async fetch(request, env) {
    own ??= new S3Ownership({
      endpoint: env.S3_ENDPOINT, bucket: env.S3_BUCKET, region: env.S3_REGION,
      accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY, // wrangler secret put
      node: `worker-${crypto.randomUUID()}`,
    });
    if (!own.leaseValid()) await own.acquireLease(); // no timers between requests in Workers
    const cell = decodeURIComponent(new URL(request.url).pathname.slice(1));
    const owner = await own.owner(cell);
    if (owner?.node && owner.live) return Response.json(owner); // route to owner.node / owner.addr
    return Response.json(await own.claim(cell)); // free, or its owner is dead: take it
  },
};
