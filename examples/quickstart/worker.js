import { S3Ownership } from "celld-edge";

let own; // one instance per isolate, shared by its requests
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname.match(/^\/cells\/([^/]+)$/); // /cells/<cell>; nothing else
    if (!path) return new Response("not found: ask for /cells/<cell>", { status: 404 });
    // The R2 bucket bound in wrangler.toml: no keys, no endpoint. No node id: the isolate makes one up.
    own ??= new S3Ownership({ r2: env.CELLS });
    try {
      // Nothing runs between requests in Workers: owner() and claim() renew the lease when it is due, so
      // while requests keep coming the lease and each cell's epoch stay. Only after an idle gap longer than
      // the lease is it lapsed: a fresh one voids the old claims, and the cell is claimed at a new epoch.
      // owner() only reads, and needs no lease: a new isolate sends it beside acquireLease()'s requests.
      const cell = decodeURIComponent(path[1]);
      const [owner] = await Promise.all([own.owner(cell), own.leaseValid() || own.acquireLease()]);
      // Held by this isolate, or by another live node: route to owner.node / owner.addr.
      if (owner?.held || (owner?.live && owner.node !== own.node)) return Response.json(owner);
      return Response.json(await own.claim(cell)); // free, its owner dead, or our void claim: (re)claim it
    } catch (e) {
      const status = e.code === "invalid-input" || e instanceof URIError ? 400 : 503; // a bad cell id, or the store
      return Response.json({ error: e.code ?? "invalid-input", message: e.message }, { status });
    }
  },
};
