// Test Worker: imports celld-edge by name as a user's Worker would and runs the shared authority checks
// (signals, scope) inside workerd against the atomic test server; answers GET / with
// [{ name, ok, error }] as JSON.
import * as api from "celld-edge";
import { runChecks } from "../../common/checks.mjs";
import { authorityChecks } from "../../common/authority.mjs";

export default {
  async fetch(request, env) {
    return Response.json(await runChecks(authorityChecks({ api, env, runtime: "workerd" })));
  },
};
