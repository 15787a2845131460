// Listing checks shared by every JS runtime's suite (Node, Deno, workerd, Chromium): `S3Inspector` and
// `S3Ownership.listCells/listNodes` against a real S3-compatible server, over a fleet each check builds
// under a fresh prefix with S3Ownership. Runtime-neutral (no fs, no node: imports): each harness supplies
// the package's API and the server coordinates (tests/common/ownership.mjs, `ownershipServers`) and wraps
// each [name, fn] pair in its own test runner.
import { eq, fail, sleep, unique } from "./checks.mjs";

function ok(cond, what) {
  if (!cond) fail(what);
}

// The package's one error class (set by listingChecks): every error the inspector gives must be one.
let CelldEdgeError;

function throwsCode(f, code, mention, what) {
  try {
    f();
  } catch (e) {
    if (!(e instanceof CelldEdgeError)) fail(`${what}: not a CelldEdgeError: ${e?.name} ${e?.message}`);
    if (e.code !== code) fail(`${what}: expected code ${code}, got ${e.code} (${e.message})`);
    if (mention && !e.message.includes(mention)) fail(`${what}: message should mention ${mention}: ${e.message}`);
    return;
  }
  fail(`${what}: expected a ${code} error`);
}

async function rejectsCode(p, code, mention, what) {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof CelldEdgeError)) fail(`${what}: not a CelldEdgeError: ${e?.name} ${e?.message}`);
    if (e.code !== code) fail(`${what}: expected code ${code}, got ${e.code} (${e.message})`);
    if (mention && !e.message.includes(mention)) fail(`${what}: message should mention ${mention}: ${e.message}`);
    return e;
  }
  fail(`${what}: expected a ${code} error`);
}

/** The keys of every entry, in the order js/ownership.d.ts declares them. */
const CELL_KEYS = ["cell", "key", "status", "node", "epoch", "etag", "released", "modifiedMs", "lease", "leaseExpiresMs",
  "leaseExpiresInMs", "leaseAgeMs", "addr", "awaitingRecovery", "recovery", "error"];
const NODE_KEYS = ["node", "key", "lease", "live", "expiresMs", "expiresInMs", "ageMs", "modifiedMs", "addr", "etag",
  "awaitingRecovery", "recovery", "error"];

/** PUTs `body` at `key` unconditionally, signed (a record written by something other than this library). */
async function putRaw(api, server, key, body) {
  const url = `${server.endpoint}/${server.bucket}/${key.split("/").map(encodeURIComponent).join("/")}`;
  const signed = api.signRequest({
    method: "PUT", url, body, region: "us-east-1", headers: { "content-type": "application/json" },
    accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey,
  });
  const res = await fetch(signed.url, { method: "PUT", headers: signed.headers, body });
  await res.arrayBuffer();
  if (!res.ok) fail(`PUT ${key}: ${res.status}`);
}

/**
 * [name, fn] pairs for one server ({ name, atomic, endpoint, bucket, accessKeyId, secretAccessKey }).
 */
export function listingChecks({ api, server, runtime }) {
  const { S3Ownership, S3Inspector } = api;
  CelldEdgeError = api.CelldEdgeError;
  const store = {
    endpoint: server.endpoint, bucket: server.bucket, region: "us-east-1",
    accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey,
  };
  const checks = [];
  const check = (name, fn) => checks.push([`listing (${runtime}, ${server.name}): ${name}`, fn]);

  check("S3Inspector, with no node and no lease, sees owners, epochs, released cells and a dead node", async () => {
    const prefix = `t-list-${unique()}/`;
    const [aId, bId] = [`a-${unique()}`, `b-${unique()}`];
    const a = new S3Ownership({ ...store, prefix, node: aId, addr: "a.internal:7000", probe: false });
    await a.acquireLease();
    for (const cell of ["alpha", "beta", "gamma"]) eq((await a.claim(cell)).outcome, "applied", `claim ${cell}`);
    eq((await a.claim("beta")).epoch, 2, "re-claim beta");
    eq(await a.release("gamma"), "applied", "release gamma");
    // b stops renewing: dead to one look once the store's clock (its answers' Date, which may lag it by up
    // to 2 s) is surely past b's expiry, which b wrote on the store's clock at its upper bound (up to 2 s
    // late): ttl, margin and two spans.
    const b = new S3Ownership({ ...store, prefix, node: bId, leaseTtlMs: 600, maxClockSkewMs: 100, probe: false });
    await b.acquireLease();
    eq((await b.claim("delta")).outcome, "applied", "claim delta");
    await sleep(5000);

    // Liveness is the peer rule by the store's clock, as the inspector's own answers bound it.
    const inspector = new S3Inspector({ ...store, prefix, maxClockSkewMs: 100 });
    const cells = await inspector.listCells();
    eq(cells.map((c) => Object.keys(c)), cells.map(() => CELL_KEYS), "cell entry keys");
    eq(cells.map((c) => [c.cell, c.status, c.node, c.epoch, c.released, c.lease]), [
      ["alpha", "live", aId, 1, false, "live"],
      ["beta", "live", aId, 2, false, "live"],
      ["delta", "dead", bId, 1, false, "dead"],
      ["gamma", "released", null, 1, true, null],
    ], "cells");
    eq(cells[0].key, `${prefix}cells/alpha/own.json`, "key");
    eq(cells[0].addr, "a.internal:7000", "the owner's addr, from its lease");
    ok(typeof cells[0].etag === "string" && cells[0].etag.length > 0, "etag");
    ok(cells[0].leaseExpiresInMs > 0 && cells[2].leaseExpiresInMs <= -200, `lease expiries: ${JSON.stringify(cells)}`);
    ok(cells.every((c) => c.modifiedMs > Date.now() - 600_000), "LastModified of every record");
    ok(typeof cells[0].leaseAgeMs === "number" && cells[0].leaseAgeMs > -60_000, "the owner's lease age");
    ok(cells.every((c) => c.error === null && c.awaitingRecovery === false && c.recovery === null), "no errors");
    ok(cells[3].leaseExpiresMs === null && cells[3].leaseAgeMs === null && cells[3].addr === null, "a released cell has no lease");

    const nodes = await inspector.listNodes();
    eq(nodes.map((n) => Object.keys(n)), nodes.map(() => NODE_KEYS), "node entry keys");
    eq(nodes.map((n) => [n.node, n.lease, n.live, n.addr]), [[aId, "live", true, "a.internal:7000"], [bId, "dead", false, ""]], "nodes");
    ok(nodes[0].expiresInMs > 0 && nodes[1].expiresInMs < 0 && nodes[1].expiresMs + 100 <= Date.now(), `expiries: ${JSON.stringify(nodes)}`);

    // The same from an S3Ownership that never acquired a lease, and from the holder: nothing changes.
    const viewer = new S3Ownership({ ...store, prefix, node: `viewer-${unique()}`, maxClockSkewMs: 100, probe: false });
    eq((await viewer.listCells()).map((c) => c.status), ["live", "live", "dead", "released"], "S3Ownership.listCells without a lease");
    eq((await viewer.listNodes()).length, 2, "S3Ownership.listNodes without a lease");
    ok(!viewer.leaseValid(), "listing acquired nothing");
    eq((await a.listCells()).length, 4, "the holder lists too");
    eq(await a.verify("beta", 2), true, "the holder's claim is untouched");
  });

  check("options are checked in Rust: no node, unknown or mistyped options are invalid-input naming them", async () => {
    throwsCode(() => new S3Inspector({ ...store, node: "x" }), "invalid-input", '"node"', "node");
    throwsCode(() => new S3Inspector({ ...store, leaseTtlMs: 5 }), "invalid-input", "an inspector has no node or lease", "leaseTtlMs");
    throwsCode(() => new S3Inspector({ ...store, bogus: 1 }), "invalid-input", '"bogus"', "unknown");
    throwsCode(() => new S3Inspector({ ...store, maxClockSkewMs: "1" }), "invalid-input", "maxClockSkewMs must be a whole number of milliseconds", "mistyped");
    throwsCode(() => new S3Inspector({ ...store, endPoint: store.endpoint }), "invalid-input", '"endPoint": did you mean endpoint?', "a name in the wrong case");
    const { secretAccessKey, ...noSecret } = store;
    throwsCode(() => new S3Inspector({ ...noSecret, secretKey: secretAccessKey }), "invalid-input", '"secretKey": did you mean secretAccessKey?', "another client's name");
    throwsCode(() => new S3Inspector(noSecret), "invalid-input", "give credentials", "missing keys point at the credentials option");
    throwsCode(() => new S3Inspector({ ...store, bucket: undefined }), "invalid-input", "bucket is required", "no bucket");
    throwsCode(() => new S3Inspector({ ...store, prefix: "no-slash" }), "invalid-input", "prefix", "prefix");
    throwsCode(() => new S3Inspector(), "invalid-input", "S3Inspector", "no options");
    throwsCode(() => new S3Inspector({ ...store, fetch: 5 }), "invalid-input", "fetch", "fetch");
  });

  check("a corrupt record is reported on its own entry; the rest is listed", async () => {
    const prefix = `t-list-${unique()}/`;
    const a = new S3Ownership({ ...store, prefix, node: `a-${unique()}`, probe: false });
    await a.acquireLease();
    await a.claim("fine");
    await putRaw(api, server, `${prefix}cells/bad/own.json`, "{\"node\":");
    await putRaw(api, server, `${prefix}cells/fine/data/e1/blob`, "not a record");
    const cells = await new S3Inspector({ ...store, prefix }).listCells();
    eq(cells.map((c) => [c.cell, c.status]), [["bad", "corrupt"], ["fine", "live"]], "cells");
    eq(cells[0].error.code, "corrupt-record", "error code");
    ok(cells[0].error.message.includes(`${prefix}cells/bad/own.json`), `names the key: ${cells[0].error.message}`);
    ok(cells[0].node === null && cells[0].epoch === null && cells[0].lease === null, "nothing guessed");
  });

  check("the application's data under a cell, a key with control characters included, neither breaks nor lengthens the listing", async () => {
    const prefix = `t-list-${unique()}/`;
    const a = new S3Ownership({ ...store, prefix, node: `a-${unique()}`, probe: false });
    await a.acquireLease();
    await a.claim("fine");
    // Sent raw (no encoding-type=url), this key is not XML: the whole page would be unreadable.
    await putRaw(api, server, `${prefix}cells/fine/data/e1/\u0001\u001b]52;c;eA==\u0007`, "data");
    for (let i = 0; i < 4; i++) await putRaw(api, server, `${prefix}cells/fine/data/e1/k${i}`, "data");
    const seen = [];
    const counting = async (request) => {
      seen.push(new URL(request.url).search);
      return fetch(request);
    };
    const cells = await new S3Inspector({ ...store, prefix, fetch: counting }).listCells();
    eq(cells.map((c) => [c.cell, c.status]), [["fine", "live"]], "cells");
    const lists = seen.filter((q) => q.includes("list-type=2"));
    ok(lists.every((q) => q.includes("encoding-type=url")), `every listing asks for URL-encoded keys: ${lists.join(" ")}`);
    ok(lists.some((q) => q.includes("delimiter=%2Fdata%2F")), `the cells listing rolls the data up: ${lists.join(" ")}`);
  });

  check("a non-S3 endpoint is request 'not an S3 API'; a refusal keeps the store's code", async () => {
    const page = async () => new Response("<!DOCTYPE html><html><body>Welcome</body></html>", { status: 200, headers: { "content-type": "text/html" } });
    const web = new S3Inspector({ ...store, fetch: page });
    await rejectsCode(web.listCells(), "request", "not an S3 API", "listCells of a web page");
    await rejectsCode(web.listNodes(), "request", "not an S3 API", "listNodes of a web page");
    const json = new S3Inspector({ ...store, fetch: async () => Response.json({ items: [] }) });
    await rejectsCode(json.listCells(), "request", "not an S3 API", "a JSON API");
    await rejectsCode(new S3Inspector({ ...store, bucket: `no-such-${unique()}` }).listCells(), "request", "NoSuchBucket", "a missing bucket");
    if (server.checksSignatures) {
      await rejectsCode(new S3Inspector({ ...store, secretAccessKey: "wrong" }).listCells(), "auth", "SignatureDoesNotMatch", "a wrong secret");
    }
  });

  if (server.atomic) {
    check("S3Inspector.probe qualifies the bucket once; a later S3Ownership trusts the record", async () => {
      const prefix = `t-list-${unique()}/`;
      const report = await new S3Inspector({ ...store, prefix }).probe();
      eq(Object.keys(report), ["ifMatchMissingStatus", "conditionalDelete", "etagQuoted"], "report");
      const sent = [];
      const counting = (request) => {
        sent.push(`${request.method} ${new URL(request.url).pathname}`);
        return fetch(request);
      };
      const own = new S3Ownership({ ...store, prefix, node: `n-${unique()}`, fetch: counting });
      await own.acquireLease();
      ok(sent.some((s) => s.endsWith(`${prefix}probe/qualified.json`)), `the record was read: ${sent}`);
      ok(!sent.some((s) => s.startsWith("PUT") && s.includes("/probe/") && !s.endsWith("qualified.json")), `no probe ran: ${sent}`);
      ok(sent.length <= 6, `at most 6 requests: ${sent}`);
    });
  }
  return checks;
}
