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

test("signRequest while a trapped instance is being replaced is a typed internal error, then signs with a fresh signer", async () => {
  const opts = { url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z" };
  const want = api.signRequest(opts).headers.authorization;
  const own = new api.S3Ownership({ endpoint: "http://127.0.0.1:9", bucket: "fleet", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", node: "sign-after-trap", probe: false });
  __celldTestTrap("panic");
  const trapped = await own.owner("y").then(() => undefined, (e) => e);
  if (trapped?.code !== "internal") throw new Error(`the trapping operation: ${trapped?.code} ${trapped?.message}`);
  // Still the macrotask of the trap: the trapped instance is not asked (its state is undefined).
  for (const sign of [() => api.signRequest(opts), () => api.presignUrl(opts)]) {
    let err;
    try {
      sign();
    } catch (e) {
      err = e;
    }
    if (!(err instanceof api.CelldEdgeError) || err.code !== "internal") throw new Error(`signing during the replacement: ${err?.constructor?.name} ${err?.code} ${err?.message}`);
  }
  await new Promise((resolve) => setTimeout(resolve, 0));
  if (api.signRequest(opts).headers.authorization !== want) throw new Error("the fresh signer signs differently");
});
