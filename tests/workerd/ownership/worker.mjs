// Test Worker: imports celld-edge by name as a user's Worker would and runs the shared ownership checks
// inside workerd against both test servers and through an R2 binding (env.CELLS, the local bucket), then the trap recovery checks (through the glue module the
// package's workerd entry initialised, for its test-only `__celldTestTrap`); answers GET / with
// [{ name, ok, error }] as JSON.
import * as api from "celld-edge";
import { __celldTestTrap } from "../../../pkg/celld_edge.js";
import { runChecks } from "../../common/checks.mjs";
import { ownershipChecks, ownershipServers, r2BindingServer } from "../../common/ownership.mjs";
import { trapChecks } from "../../common/trap.mjs";

const uncaught = [];
addEventListener("error", (e) => uncaught.push(e.error ?? e.message));
addEventListener("unhandledrejection", (e) => uncaught.push(e.reason));

export default {
  async fetch(request, env) {
    const servers = ownershipServers(env);
    const checks = [...servers, r2BindingServer(env.CELLS)].flatMap((server) => ownershipChecks({ api, server, runtime: "workerd" }));
    checks.push(...trapChecks({ api, testTrap: __celldTestTrap, server: servers[0], runtime: "workerd", uncaught: () => uncaught }));
    return Response.json(await runChecks(checks));
  },
};
