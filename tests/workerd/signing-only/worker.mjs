// Test Worker: imports the signing-only entry by name as a user's Worker would (wrangler bundles it through
// the "workerd" condition of celld-edge/sign), runs the shared signing checks inside workerd, and answers
// GET / with [{ name, ok, error }] as JSON.
import * as api from "celld-edge/sign";
import { runChecks } from "../../common/checks.mjs";
import { signingChecks } from "../../common/signing.mjs";

export default {
  async fetch(request, env) {
    const vectors = JSON.parse(env.VECTORS);
    return Response.json(await runChecks(signingChecks({ api, vectors, env, runtime: "workerd" })));
  },
};
