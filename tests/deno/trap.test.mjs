// Deno suite for trap recovery (tests/common/trap.mjs), through the same glue module the deno entry
// initialised (for the test-only `__celldTestTrap` export of that instance).
import * as api from "celld-edge";
import { __celldTestTrap } from "../../pkg/celld_edge.js";
import { ownershipServers } from "../common/ownership.mjs";
import { trapChecks } from "../common/trap.mjs";

const uncaught = [];
globalThis.addEventListener("error", (e) => uncaught.push(e.error ?? e.message));
globalThis.addEventListener("unhandledrejection", (e) => uncaught.push(e.reason));

const [server] = ownershipServers(Deno.env.toObject());
for (const [name, fn] of trapChecks({ api, testTrap: __celldTestTrap, server, runtime: "deno", uncaught: () => uncaught })) {
  Deno.test({ name, fn, sanitizeOps: false, sanitizeResources: false });
}
