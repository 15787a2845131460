// How the wasm calls fetch (src/bindings/web.rs, `Fetch`): `globalThis.fetch`, when no `fetch` option is
// given, as `fetch(url, init)` (a runtime's fetch builds its own `Request` from whatever it is handed, a
// given `Request` included, which Node's copies: bench/README.md); an injected `fetch` with one `Request`,
// as js/ownership.d.ts documents. No store: both answer a read with 404.
import { test } from "node:test";
import assert from "node:assert/strict";
import { S3Ownership } from "celld-edge";

const options = { endpoint: "http://store.test", bucket: "cells", region: "us-east-1", accessKeyId: "AK", secretAccessKey: "SK", node: "n1", probe: false };
const notFound = () => new Response("<Error><Code>NoSuchKey</Code></Error>", { status: 404 });

test("without a fetch option, globalThis.fetch is called as fetch(url, init)", async () => {
  const calls = [];
  const real = globalThis.fetch;
  globalThis.fetch = async function (input, init) {
    calls.push({ self: this, input, init, extra: arguments.length });
    return notFound();
  };
  try {
    assert.equal(await new S3Ownership(options).readOwner("c"), null);
  } finally {
    globalThis.fetch = real;
  }
  assert.ok(calls.length >= 1);
  for (const { self, input, init, extra } of calls) {
    assert.equal(self, globalThis);
    assert.equal(extra, 2);
    assert.equal(typeof input, "string");
    assert.match(input, /^http:\/\/store\.test\/cells\//);
    assert.equal(init.method, "GET");
    assert.match(init.headers.authorization, /^AWS4-HMAC-SHA256 /);
    assert.ok(init.signal instanceof AbortSignal, "the request's timeout signal");
    assert.equal(init.cache, "no-store");
    // What the runtime's fetch makes of it: the same request as a Request would carry.
    const request = new Request(input, init);
    assert.equal(request.headers.get("x-amz-content-sha256")?.length, 64);
  }
  assert.ok(calls.some((c) => c.input.endsWith("/cells/c/own.json")));
});

test("an injected fetch gets one Request, and nothing else", async () => {
  const calls = [];
  const fetch = async function (...args) {
    calls.push({ self: this, args });
    return notFound();
  };
  assert.equal(await new S3Ownership({ ...options, fetch }).readOwner("c"), null);
  assert.ok(calls.length >= 1);
  for (const { self, args } of calls) {
    assert.equal(self, globalThis);
    assert.equal(args.length, 1);
    assert.ok(args[0] instanceof Request);
    assert.equal(args[0].cache, "no-store");
    assert.ok(args[0].headers.get("authorization").startsWith("AWS4-HMAC-SHA256 "));
  }
});
