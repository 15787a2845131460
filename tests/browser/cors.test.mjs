// Browsers and the bucket's CORS rule, in headless Chromium against ministack behind fronts that apply a
// rule as S3 does (scripts/lib/cors-proxy.mjs): the README's rule (examples/browser/cors.json) works; a rule that does not expose ETag is reported at once as an
// ExposeHeaders problem (never retried); a rule that does not allow if-none-match makes the conditional
// write fail before any answer, and the error names the CORS rule.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { signRequest } from "celld-edge";
import { corsFront } from "../../scripts/lib/cors-proxy.mjs";
import { atomicStore } from "../common/ownership.mjs";
import { resultsFromChromium } from "./harness.mjs";

const store = atomicStore(process.env);
const upstreamPort = Number(new URL(store.endpoint).port);
const [readmeRule] = JSON.parse(readFileSync(new URL("../../examples/browser/cors.json", import.meta.url), "utf8"));
/** The README's rule for the test page's origin (a loopback port), with `change` applied. */
const rule = (change = {}) => ({ ...readmeRule, AllowedOrigins: ["http://127.0.0.1:*"], ...change });
const fronts = [];
after(() => fronts.forEach((f) => f.server.close()));

async function front(r) {
  const f = await corsFront(upstreamPort, r);
  fronts.push(f);
  return f;
}

const unique = (what) => `t-cors-${what}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}/`;

/** celld's fleet marker under `prefix`, written directly (not through a browser). */
async function plantMarker(prefix) {
  const body = JSON.stringify({ format: 1, backend: "bucket" });
  const { accessKeyId, secretAccessKey, region } = store;
  const put = signRequest({ accessKeyId, secretAccessKey, region, method: "PUT", url: `${store.endpoint}/${store.bucket}/${prefix}fleet/control.json`, body });
  assert.equal((await fetch(put.url, { method: "PUT", headers: put.headers, body })).status, 200);
}

/** Runs `steps` (the body of an async function of `own`, returning a value) in Chromium with an
 * S3Ownership on `endpoint`; resolves to { value } or { error: { code, message } }. */
async function inChromium(endpoint, prefix, steps) {
  const options = { ...store, endpoint, prefix, node: "tab-1", probe: false };
  const [result] = await resultsFromChromium(`
    import { S3Ownership } from "/js/inline.js";
    const own = new S3Ownership(${JSON.stringify(options)});
    let result;
    try {
      result = { value: await (async () => { ${steps} })() };
    } catch (e) {
      result = { error: { code: e.code, message: e.message } };
    }
    window.results = [{ name: "cors", ok: true, error: JSON.stringify(result) }];
  `);
  return JSON.parse(result.error);
}

const sent = (f, method) => f.seen.filter((s) => s.startsWith(`${method} `));

test("the README's CORS rule: a new instance's cold path, a claim and renewals work through it", async () => {
  const f = await front(rule());
  const prefix = unique("readme");
  const out = await inChromium(f.url, prefix, `
    await own.acquireLease();
    const claim = await own.claim("cell-1");
    for (let i = 0; i < 3; i++) await own.renewLease();
    return [claim.outcome, claim.epoch, (await own.owner("cell-1")).held];
  `);
  assert.deepEqual(out, { value: ["applied", 1, true] }, JSON.stringify(f.seen));
  const lease = `/${store.bucket}/${prefix}nodes/tab-1.json`;
  assert.ok(sent(f, "PUT").filter((s) => s.endsWith(lease)).length >= 4, `the lease written and renewed: ${f.seen.join("\n")}`);
  assert.ok(sent(f, "OPTIONS").length > 0, "the browser preflighted the signed requests");
});

test("a CORS rule that does not expose ETag: a 2xx without a readable ETag is refused at once, naming ExposeHeaders", async () => {
  const f = await front(rule({ ExposeHeaders: [] }));
  // The fleet marker exists: the first reads (it and wake/format.json, together) include a GET answered
  // 200 whose ETag the browser hides.
  const planted = unique("hidden-read");
  await plantMarker(planted);
  const read = await inChromium(f.url, planted, "await own.acquireLease();");
  assert.equal(read.error?.code, "request", `${JSON.stringify(read)} ${f.seen.join("; ")}`);
  assert.match(read.error.message, /200 without a readable ETag.*CORS rule.*ExposeHeaders/);
  const reads = sent(f, "GET").map((s) => s.slice(s.lastIndexOf("/", s.lastIndexOf("/") - 1) + 1)).sort();
  assert.deepEqual(reads, ["fleet/control.json", "wake/format.json"], `one read of each, no retries: ${f.seen.join("\n")}`);

  // No marker (it is read, never created): the lease's create (a conditional PUT) lands, its ETag hidden;
  // the readback says why at once.
  const before = sent(f, "GET").length;
  const fresh = unique("hidden-write");
  const write = await inChromium(f.url, fresh, "await own.acquireLease();");
  assert.ok(["ambiguous", "request"].includes(write.error?.code), JSON.stringify(write));
  assert.match(write.error.message, /without a readable ETag.*ExposeHeaders/);
  const marker = sent(f, "GET").slice(before).filter((s) => s.includes(`${fresh}fleet/control.json`));
  assert.equal(marker.length, 1, `the marker read once: ${f.seen.join("\n")}`);
});

test("a CORS rule that does not allow if-none-match: the conditional write fails before any answer, and the error names the CORS rule", async () => {
  const f = await front(rule({ AllowedHeaders: ["authorization", "content-type", "if-match", "x-amz-*"] }));
  const prefix = unique("no-inm");
  const out = await inChromium(f.url, prefix, "await own.acquireLease();");
  assert.ok(out.error, JSON.stringify(out));
  assert.match(out.error.message, /Failed to fetch.*conditional write.*CORS rule.*if-none-match/, JSON.stringify(out));
  assert.equal(sent(f, "PUT").length, 0, `the browser never sent the write: ${f.seen.join("\n")}`);
  assert.ok(sent(f, "OPTIONS").length >= 1);
});
