// The stores people deploy on, imitated locally (SPEC §6, "Real stores and their dialects"): R2's 429 to
// more than one write per second per key (a fault proxy in front of versitygw), Backblaze B2's 501 to
// conditional headers and Tigris's consistency header (injected fetches), versitygw's own 404 for an
// unknown access key (the real thing).
import { test } from "node:test";
import assert from "node:assert/strict";
import { S3Ownership } from "celld-edge";
import { testServer } from "../common/signing.mjs";
import { proxyFront } from "./fault-proxy.mjs";

const real = testServer(process.env, "CELLD_TEST_REAL");
const atomic = testServer(process.env, "CELLD_TEST_ATOMIC");
const unique = () => `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
const options = (server, extra = {}) => ({ ...server, region: "us-east-1", prefix: `dialect-${unique()}/`, node: `n-${unique()}`, ...extra });

test("R2: a write answered 429 is turned away, not lost to another owner: backed off, read back, sent again, until its deadline", async () => {
  const front = await proxyFront(real.endpoint);
  try {
    const own = new S3Ownership(options({ ...real, endpoint: front.endpoint }));
    await own.acquireLease();
    const cell = `c-${unique()}`;
    front.log.length = 0;
    const r2 = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>TooManyRequests</Code><Message>Reduce your rate of requests to this object.</Message></Error>";
    front.script.push("pass", { status: 429, body: r2, headers: { "content-type": "application/xml" } });
    const won = await own.claim(cell);
    assert.deepEqual([won.outcome, won.epoch], ["applied", 1]);
    const seen = front.log.map((e) => `${e.method} ${e.path.split("/").slice(-3).join("/")}`);
    const own429 = `PUT cells/${cell}/own.json`;
    assert.deepEqual(seen, [`GET cells/${cell}/own.json`, own429, `GET cells/${cell}/own.json`, own429], "read, the write turned away, the readback, the write again");
    assert.equal(await own.verify(cell, 1), true);
    await own.close();
    // Turned away every time: backed off until the write's deadline (requestTimeoutMs from its first send),
    // then `throttled` naming the store's answer; not applied, and never reported as someone else's win.
    const hurried = new S3Ownership(options({ ...real, endpoint: front.endpoint }, { requestTimeoutMs: 2000 }));
    await hurried.acquireLease();
    front.log.length = 0;
    const other = `c-${unique()}`;
    front.script.push("pass", ...Array.from({ length: 60 }, () => [{ status: 429, body: r2 }, "pass"]).flat());
    const started = Date.now();
    await assert.rejects(hurried.claim(other), (e) => e.code === "throttled" && e.status === 429 && e.s3Code === "TooManyRequests" && /turned away \d+ times/.test(e.message));
    assert.ok(Date.now() - started < 4000, `gave up at the deadline: ${Date.now() - started} ms`);
    const writes = front.log.filter((e) => e.method === "PUT").length;
    assert.ok(writes >= 2 && writes < 30, `sent again after pauses, never at once: ${writes} writes`);
    front.script.length = 0;
    assert.equal(await hurried.owner(other), null);
    await hurried.close();
  } finally {
    await front.close();
  }
});

test("B2: a 501 NotImplemented to conditional headers refuses the store, saying it has no conditional writes", async () => {
  const b2 = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>";
  const sent = [];
  const fetch = async (request) => {
    sent.push(`${request.method} ${request.headers.has("if-match") || request.headers.has("if-none-match") ? "conditional" : "plain"}`);
    if (request.headers.has("if-match") || request.headers.has("if-none-match")) {
      await request.arrayBuffer();
      return new Response(b2, { status: 501, headers: { "content-type": "application/xml" } });
    }
    return globalThis.fetch(request);
  };
  for (const probe of [true, false]) {
    const own = new S3Ownership(options(atomic, { fetch, probe }));
    const err = await (async () => {
      await own.acquireLease();
      await own.claim("c");
    })().catch((e) => e);
    assert.equal(err?.code, "request", `probe: ${probe}: ${err?.message}`);
    assert.match(err.message, /does not implement conditional writes/);
    assert.equal(err.s3Code, "NotImplemented");
    assert.equal(err.status, 501);
  }
  assert.ok(sent.includes("PUT conditional"), sent.join(", "));
});

test("Tigris: every request to a Tigris endpoint asks for global consistency, signed; other stores get no such header", async () => {
  const headers = [];
  // Tigris's endpoint, served by ministack (which checks no signature: the host signed is Tigris's).
  const tigris = async (request) => {
    headers.push([request.headers.get("x-tigris-consistent"), request.headers.get("authorization")]);
    const url = new URL(request.url);
    const body = ["GET", "HEAD"].includes(request.method) ? undefined : await request.arrayBuffer();
    return globalThis.fetch(`${atomic.endpoint}${url.pathname}${url.search}`, { method: request.method, headers: request.headers, body });
  };
  const own = new S3Ownership(options({ ...atomic, endpoint: "https://t3.storage.dev" }, { fetch: tigris }));
  await own.acquireLease();
  assert.equal((await own.claim("c")).outcome, "applied");
  assert.ok(headers.length > 3);
  for (const [consistent, authorization] of headers) {
    assert.equal(consistent, "true");
    assert.match(authorization, /SignedHeaders=[^,]*x-tigris-consistent/);
  }
  const elsewhere = [];
  const plain = new S3Ownership(options(atomic, { fetch: (r) => (elsewhere.push(r.headers.get("x-tigris-consistent")), globalThis.fetch(r)) }));
  await plain.acquireLease();
  assert.ok(elsewhere.length > 0 && elsewhere.every((h) => h === null), String(elsewhere));
});
