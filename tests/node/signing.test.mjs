// Node suite for signing: imports the package by its name (self-reference through package.json
// "exports", so the "node" condition is the one tested) and runs the shared checks under node:test.
import { test } from "node:test";
import { readFileSync } from "node:fs";
import * as api from "celld-edge";
import { signingChecks } from "../common/signing.mjs";
import { loadVectors } from "../common/vectors-fs.mjs";

const vectors = loadVectors((p) => readFileSync(p, "utf8"), process.env);

for (const [name, fn] of signingChecks({ api, vectors, env: process.env, runtime: "node" })) {
  test(name, fn);
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

test("a body of 2 GiB or more is hashed in pieces: the right hash, no trap, and signing goes on", async () => {
  const { createHash } = await import("node:crypto");
  // Zero-filled and never written: the pages stay unbacked; reading them costs CPU, not memory.
  const body = new Uint8Array(2 ** 31 + 3);
  // S3 signs the payload hash as a header either way, so the body and its given hash sign alike.
  const opts = { url: "https://h.test/b/k", region: "us-east-1", service: "s3", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z" };
  const signed = api.signRequest({ ...opts, method: "POST", body: body.subarray(1) });
  const want = createHash("sha256").update(body.subarray(1)).digest("hex");
  const given = api.signRequest({ ...opts, method: "POST", headers: { "x-amz-content-sha256": want } });
  if (signed.headers.authorization !== given.headers.authorization) throw new Error("a 2 GiB body signs differently from its hash given");
  const small = api.signRequest({ ...opts, body: "x" });
  if (!small.headers.authorization.startsWith("AWS4-HMAC-SHA256 ")) throw new Error("signing after a 2 GiB body");
});
