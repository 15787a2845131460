// Node suite for trap recovery (tests/common/trap.mjs). Imports the unbundled entry and the glue it
// initialised, for the test-only `__celldTestTrap` export of that same instance.
import { test } from "node:test";
import * as api from "../../js/node.js";
import { __celldTestTrap } from "../../pkg/celld_edge.js";
import { ownershipServers } from "../common/ownership.mjs";
import { trapChecks } from "../common/trap.mjs";

const uncaught = [];
process.on("uncaughtException", (e) => uncaught.push(e));
process.on("unhandledRejection", (e) => uncaught.push(e));

const [server] = ownershipServers(process.env);
for (const [name, fn] of trapChecks({ api, testTrap: __celldTestTrap, server, runtime: "node", uncaught: () => uncaught })) {
  test(name, fn);
}
