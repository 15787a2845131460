// Test Worker: imports celld-edge by name as a user's Worker would and runs the shared ownership checks
// inside workerd against both test servers; answers GET / with [{ name, ok, error }] as JSON.
import * as api from "celld-edge";
import { runChecks } from "../../common/checks.mjs";
import { ownershipChecks, ownershipServers } from "../../common/ownership.mjs";

export default {
  async fetch(request, env) {
    const checks = ownershipServers(env).flatMap((server) => ownershipChecks({ api, server, runtime: "workerd" }));
    return Response.json(await runChecks(checks));
  },
};
