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

// SPEC 4.4: the instance keeps only cells it holds or must recover, never names it was merely asked about
// (attacker-chosen names in a public Worker). After 1,000 refused or rejected names and a trap, the fresh
// core's recovery reads the one cell this instance held, and nothing else.
test("1,000 refused or rejected names leave nothing behind: trap recovery reads only the cell this instance held", async () => {
  const base = { endpoint: server.endpoint, bucket: server.bucket, region: "us-east-1", accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, prefix: `t-trap-names-${Date.now()}/`, probe: false, leaseTtlMs: 2400, maxClockSkewMs: 200 };
  const read = [];
  const spy = (request) => {
    if (request.method === "GET" && request.url.includes("/cells/")) read.push(decodeURIComponent(new URL(request.url).pathname));
    return fetch(request);
  };
  const a = new api.S3Ownership({ ...base, node: "node-names-a", fetch: spy });
  const peer = new api.S3Ownership({ ...base, node: "node-names-b" });
  await peer.acquireLease();
  peer.startRenewing();
  try {
    const taken = Array.from({ length: 200 }, (_, i) => `taken-${i}`);
    for (let i = 0; i < taken.length; i += 25) await Promise.all(taken.slice(i, i + 25).map((c) => peer.claim(c, { expectNew: true })));
    // No renewal loop: a's own operations keep its lease (SPEC 4.4).
    await a.acquireLease();
    if ((await a.claim("mine")).outcome !== "applied") throw new Error("a's own claim");
    for (const c of taken) {
      const out = await a.claim(c);
      if (out.outcome !== "rejected") throw new Error(`${c}: ${JSON.stringify(out)}`);
    }
    for (let i = 0; i < 800; i++) {
      const refused = await a.claim(`bad/${i}`).then(() => undefined, (e) => e.code);
      if (refused !== "invalid-input") throw new Error(`bad/${i}: ${refused}`);
    }
    __celldTestTrap("panic");
    const trapped = await a.owner("y").then(() => undefined, (e) => e.code);
    if (trapped !== "internal") throw new Error(`the trapping operation: ${trapped}`);
    read.length = 0;
    // The trapped core's lease is dead by the peer rule only a ttl after the fresh core first saw it.
    for (const until = Date.now() + 10_000; ;) {
      try {
        await a.acquireLease(); // recovers: releases what the trapped core may have left named
        break;
      } catch (e) {
        if (e?.code !== "not-leased" || Date.now() > until) throw e;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    const cells = [...new Set(read.map((p) => p.split("/cells/")[1]))];
    if (JSON.stringify(cells) !== JSON.stringify(["mine/own.json"])) throw new Error(`the recovery read ${cells.length} cells: ${cells.slice(0, 5).join(", ")}`);
    if ((await peer.readOwner("mine")).node !== null) throw new Error("the held cell was not released by the recovery");
  } finally {
    peer.stopRenewing();
  }
});
