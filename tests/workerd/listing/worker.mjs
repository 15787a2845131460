// Test Worker: imports celld-edge by name as a user's Worker would and runs the shared listing checks
// (tests/common/listing.mjs) inside workerd against both test servers; answers GET / with
// [{ name, ok, error }] as JSON.
import * as api from "celld-edge";
import { runChecks } from "../../common/checks.mjs";
import { listingChecks } from "../../common/listing.mjs";
import { ownershipServers } from "../../common/ownership.mjs";

export default {
  async fetch(request, env) {
    const checks = ownershipServers(env).flatMap((server) => listingChecks({ api, server, runtime: "workerd" }));
    return Response.json(await runChecks(checks));
  },
};
