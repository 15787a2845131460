// Node suite for signing: imports the package by its name (self-reference through package.json
// "exports", so the "node" condition is the one tested) and runs the shared checks under node:test, for
// the main entry and for the signing-only one (`celld-edge/sign`, its checks' names prefixed with it).
import { test } from "node:test";
import { readFileSync } from "node:fs";
import * as api from "celld-edge";
import * as signOnly from "celld-edge/sign";
import { signingChecks } from "../common/signing.mjs";
import { loadVectors } from "../common/vectors-fs.mjs";

const vectors = loadVectors((p) => readFileSync(p, "utf8"), process.env);

for (const [name, fn] of signingChecks({ api, vectors, env: process.env, runtime: "node" })) {
  test(name, fn);
}
for (const [name, fn] of signingChecks({ api: signOnly, vectors, env: process.env, runtime: "node" })) {
  test(`celld-edge/sign: ${name}`, fn);
}

test("errors thrown by wasm are Errors with a stable code", () => {
  try {
    api.signRequest({ url: "http://example.com/x", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "bad" });
  } catch (e) {
    if (!(e instanceof Error) || e.code !== "invalid-input") throw new Error(`got ${e}`);
    return;
  }
  throw new Error("a bad datetime was signed");
});

test("a body of 2 GiB or more never traps, and a large body is hashed in pieces without growing wasm memory", async () => {
  const { createHash } = await import("node:crypto");
  // The unbundled entry and the glue it initialised, to watch that instance's memory.
  const direct = await import("../../js/node.js");
  const { ioMemory } = await import("../../pkg/celld_edge.js");
  const opts = { url: "https://h.test/b/k", region: "us-east-1", service: "s3", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z" };
  // Zero-filled and never written: the pages stay unbacked. With its hash given, the body is not read
  // (a 2 GiB body made wasm panic with "capacity overflow" while being copied in).
  const huge = new Uint8Array(2 ** 31 + 3);
  const zeros = "0".repeat(64);
  const withHash = direct.signRequest({ ...opts, method: "PUT", headers: { "X-Amz-Content-Sha256": zeros }, body: huge });
  const hashOnly = direct.signRequest({ ...opts, method: "PUT", headers: { "X-Amz-Content-Sha256": zeros } });
  if (withHash.headers.authorization !== hashOnly.headers.authorization) throw new Error("a 2 GiB body with its hash given signs differently from the hash alone");
  // A body hashed by the signer goes in 64 KiB pieces: wasm memory (which never shrinks) does not grow
  // by its size, and the hash is right.
  const body = new Uint8Array(48 * 1024 * 1024).map((_, i) => i % 251);
  const memory = ioMemory();
  const before = memory.buffer.byteLength;
  const signed = direct.signRequest({ ...opts, method: "PUT", body: body.subarray(1) });
  const grown = memory.buffer.byteLength - before;
  if (grown > 8 * 1024 * 1024) throw new Error(`wasm memory grew by ${grown} bytes for a 48 MiB body`);
  const want = createHash("sha256").update(body.subarray(1)).digest("hex");
  if (signed.headers["x-amz-content-sha256"] !== want) throw new Error(`payload hash ${signed.headers["x-amz-content-sha256"]}, expected ${want}`);
  const text = "é".repeat(20 * 1024 * 1024);
  const textSigned = direct.signRequest({ ...opts, method: "PUT", body: text });
  if (textSigned.headers["x-amz-content-sha256"] !== createHash("sha256").update(text).digest("hex")) throw new Error("a 40 MiB text body's hash");
  if (memory.buffer.byteLength - before > 8 * 1024 * 1024) throw new Error("wasm memory grew for a 40 MiB text body");
});

test("a URL and headers too large for the signer's buffer are invalid-input, never a trap, and signing goes on", () => {
  const opts = { url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z" };
  const want = api.signRequest(opts).headers.authorization;
  let err;
  try {
    api.signRequest({ ...opts, headers: { "x-amz-meta-big": "x".repeat(23 * 1024 * 1024) } });
  } catch (e) {
    err = e;
  }
  if (!(err instanceof api.CelldEdgeError) || err.code !== "invalid-input" || !err.message.includes("too large")) throw new Error(`got ${err?.code} ${err?.message}`);
  if (api.signRequest(opts).headers.authorization !== want) throw new Error("signing after a refused large request");
});
