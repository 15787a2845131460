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
