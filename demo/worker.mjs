// The demo's Worker (demo/wrangler.toml, run in workerd by Miniflare): the same node as demo/member.mjs,
// one per isolate. Workers run only on requests, so the demo drives it with GET /step a few times a
// second; each step renews the lease itself and answers the events it produced as JSON.
import * as api from "celld-edge";
import { createMember } from "./member.mjs";

let node = null;
let events = [];

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname !== "/step") return new Response("usage: GET /step\n", { status: 404 });
    node ??= createMember({
      api,
      config: JSON.parse(env.CONFIG),
      cells: JSON.parse(env.CELLS),
      emit: (e) => events.push(e),
      renew: true,
    });
    await node.step();
    const out = events;
    events = [];
    return Response.json(out);
  },
};
