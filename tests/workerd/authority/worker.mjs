// Test Worker: imports celld-edge by name as a user's Worker would and runs the shared checks of
// operating it inside workerd — authority (signals, scope) against the atomic test server, short-lived
// credentials against the signature-checking one; answers GET / with [{ name, ok, error }] as JSON.
import * as api from "celld-edge";
import { runChecks } from "../../common/checks.mjs";
import { authorityChecks } from "../../common/authority.mjs";
import { credentialsChecks } from "../../common/credentials.mjs";

export default {
  async fetch(request, env) {
    const checks = [...authorityChecks({ api, env, runtime: "workerd" }), ...credentialsChecks({ api, env, runtime: "workerd" })];
    return Response.json(await runChecks(checks));
  },
};
