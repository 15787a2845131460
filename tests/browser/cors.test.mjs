// Browsers and the bucket's CORS rule, in headless Chromium against ministack behind fronts that apply a
// rule as S3 does (scripts/lib/cors-proxy.mjs): the README's rule (examples/browser/cors.json) works; a
// rule that does not expose ETag is reported at once as an ExposeHeaders problem (never retried); a rule
// that does not allow if-none-match / if-match makes the browser refuse the conditional write before
// sending it, which is reported at the first attempt as `cors`, naming the header, with nothing written.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { signRequest } from "celld-edge";
import { corsFront } from "../../scripts/lib/cors-proxy.mjs";
import { atomicStore } from "../common/ownership.mjs";
import { resultsFromChromium } from "./harness.mjs";

const store = atomicStore(process.env);
const upstreamPort = Number(new URL(store.endpoint).port);
const { CORSRules: [readmeRule] } = JSON.parse(readFileSync(new URL("../../examples/browser/cors.json", import.meta.url), "utf8"));
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
async function inChromium(endpoint, prefix, steps, extra = { probe: false }) {
  const options = { ...store, endpoint, prefix, node: "tab-1", ...extra };
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

/** The keys under `prefix` in the store (a signed ListObjectsV2 from Node, not through any front). */
async function keysUnder(prefix) {
  const { accessKeyId, secretAccessKey, region } = store;
  const list = signRequest({ accessKeyId, secretAccessKey, region, url: `${store.endpoint}/${store.bucket}?list-type=2&prefix=${encodeURIComponent(prefix)}` });
  const xml = await (await fetch(list.url, { headers: list.headers })).text();
  return [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]);
}

/** Runs `steps` in Chromium and says how long they took there: { value } or { error }, and `ms`. */
const timed = (endpoint, prefix, steps, extra) =>
  inChromium(endpoint, prefix, `const t0 = performance.now(); let out; try { out = { value: await (async () => { ${steps} })() }; } catch (e) { out = { error: { code: e.code, message: e.message, key: e.key } }; } return { ...out, ms: performance.now() - t0 };`, extra)
    .then((r) => r.value);

// `puts`: the writes the browser may still send. The probe's first batch goes out at once, and with
// if-match allowed its If-Match write of a key never created is sent (answered 404, writing nothing).
for (const [lacking, allowed, puts] of [
  ["if-none-match", ["authorization", "content-type", "if-match", "x-amz-*"], 1],
  ["if-match and if-none-match", ["authorization", "content-type", "x-amz-*"], 0],
]) {
  test(`a CORS rule without ${lacking}: cors at the first conditional write, in under 2 s, naming the header, nothing written`, async () => {
    const f = await front(rule({ AllowedHeaders: allowed }));
    const prefix = unique("no-inm");
    // As a new user runs it: the probe on (its first step is a conditional create).
    const out = await timed(f.url, prefix, "await own.acquireLease(); return own.leaseValid();", {});
    assert.equal(out.error?.code, "cors", JSON.stringify(out));
    assert.match(out.error.message, /^the browser would not send the request for \S+ \(the bucket's CORS rule refused it\): it does not allow the header if-none-match from http:\/\/127\.0\.0\.1:\d+ .*add if-match and if-none-match to the rule's AllowedHeaders/, out.error.message);
    assert.ok(out.ms < 2000, `failed after ${out.ms} ms`);
    assert.ok(sent(f, "PUT").length <= puts, `the browser sent no write it was refused: ${f.seen.join("\n")}`);
    assert.equal(sent(f, "DELETE").length, 0, f.seen.join("\n"));
    assert.deepEqual(await keysUnder(prefix), [], "nothing written under the prefix");
    // No readback, no retry: the key's only GETs are the plain checking GETs, one per write of it (the
    // probe races two writers on it); the checking GET with the header is refused before it is sent.
    const reads = sent(f, "GET").filter((s) => s.endsWith(`/${out.error.key}`));
    assert.ok(reads.length <= 2, `not read back: ${f.seen.join("\n")}`);
  });
}

test("a CORS rule without if-match: the first renewal is refused as cors at once, and the lease record is left as it was", async () => {
  const f = await front(rule({ AllowedHeaders: ["authorization", "content-type", "if-none-match", "x-amz-*"] }));
  const prefix = unique("no-im");
  const out = await timed(f.url, prefix, "await own.acquireLease(); await own.renewLease();");
  assert.equal(out.error?.code, "cors", JSON.stringify(out));
  assert.equal(out.error.key, `${prefix}nodes/tab-1.json`);
  assert.match(out.error.message, /does not allow the header if-match from .*the PUT was never sent/, out.error.message);
  assert.ok(out.ms < 2000, `failed after ${out.ms} ms`);
  assert.equal(sent(f, "PUT").length, 1, `the create only: ${f.seen.join("\n")}`);
  assert.deepEqual(await keysUnder(prefix), [`${prefix}nodes/tab-1.json`]);
});
