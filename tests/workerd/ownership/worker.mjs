// Test Worker: imports celld-edge by name as a user's Worker would and runs the shared ownership checks
// inside workerd against both test servers; answers GET / with [{ name, ok, error }] as JSON.
import * as api from "celld-edge";
import { ownershipChecks, ownershipServers } from "../../common/ownership.mjs";

export default {
  async fetch(request, env) {
    const results = [];
    for (const server of ownershipServers(env)) {
      for (const [name, fn] of ownershipChecks({ api, server, runtime: "workerd" })) {
        try {
          await fn();
          results.push({ name, ok: true });
        } catch (e) {
          results.push({ name, ok: false, error: String(e && e.stack ? e.stack : e) });
        }
      }
    }
    return Response.json(results);
  },
};
