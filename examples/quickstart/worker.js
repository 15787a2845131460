import { S3Ownership } from "celld-edge";

let own; // one node per isolate, shared by its requests
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname.match(/^\/cells\/([^/]+)$/); // /cells/<cell>; nothing else
    if (!path) return new Response("not found: ask for /cells/<cell>", { status: 404 });
    own ??= new S3Ownership({
      endpoint: env.S3_ENDPOINT, bucket: env.S3_BUCKET, region: env.S3_REGION,
      accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY, // wrangler secret put
      node: `worker-${crypto.randomUUID()}`,
    });
    try {
      if (!own.leaseValid()) await own.acquireLease(); // no timers between requests in Workers
      const cell = decodeURIComponent(path[1]);
      const owner = await own.owner(cell);
      if (owner?.node && owner.live) return Response.json(owner); // route to owner.node / owner.addr
      return Response.json(await own.claim(cell)); // free, or its owner is dead: take it
    } catch (e) {
      const status = e.code === "invalid-input" || e instanceof URIError ? 400 : 503; // a bad cell id, or the store
      return Response.json({ error: e.code ?? "invalid-input", message: e.message }, { status });
    }
  },
};
