// A Worker of the fresh project (tests/package/run.sh copies it beside the README's wrangler.toml, whose
// R2 binding CELLS it uses, with no keys): each request runs one operation of the isolate's one instance,
// so that workers.mjs can drive two isolates through a node's whole life: /acquire, /claim/<cell>, /renew,
// /release/<cell>, /close. Every answer is JSON; an error is { error: code, message } with status 500.
import { S3Ownership } from "celld-edge";

let own; // one instance per isolate; no node id: the isolate makes one up
export default {
  async fetch(request, env) {
    own ??= new S3Ownership({ r2: env.CELLS });
    const [, op, cell] = new URL(request.url).pathname.split("/").map(decodeURIComponent);
    try {
      switch (op) {
        case "acquire":
          await own.acquireLease();
          return Response.json({ node: own.node, valid: own.leaseValid() });
        case "claim":
          return Response.json(await own.claim(cell));
        case "renew":
          await own.renewLease();
          return Response.json({ node: own.node, valid: own.leaseValid() });
        case "release":
          return Response.json({ outcome: await own.release(cell) });
        case "close":
          return Response.json(await own.close());
        default:
          return new Response("not found", { status: 404 });
      }
    } catch (e) {
      return Response.json({ error: e.code ?? "internal", message: e.message }, { status: 500 });
    }
  },
};
