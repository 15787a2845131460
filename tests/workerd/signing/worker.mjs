// Test Worker: imports celld-edge by name exactly as a user's Worker would (wrangler bundles it through the
// package's "workerd" export condition), runs the shared signing checks inside workerd, and answers
// GET / with [{ name, ok, error }] as JSON. The runner passes vectors and server coordinates as bindings.
import * as api from "celld-edge";
import { runChecks } from "../../common/checks.mjs";
import { signingChecks } from "../../common/signing.mjs";

export default {
  async fetch(request, env) {
    const vectors = JSON.parse(env.VECTORS);
    return Response.json(await runChecks(signingChecks({ api, vectors, env, runtime: "workerd" })));
  },
};
