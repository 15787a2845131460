// The signing-only entry `celld-edge/sign` (SPEC §4.5) beside the main one in one program: each has its own
// wasm (the signing-only one holds no ownership code), both sign alike, and their errors are one class.
// The shared signing checks run through it in tests/node/signing.test.mjs and every other runtime's suite.
import { test } from "node:test";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import * as main from "celld-edge";
import * as sign from "celld-edge/sign";

const require = createRequire(import.meta.url);
const opts = { method: "PUT", url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z", body: "x" };

test("celld-edge/sign exports the signing API only, through ES modules and require()", () => {
  const cjs = require("celld-edge/sign");
  for (const entry of [sign, cjs]) {
    const names = Object.keys(entry).filter((k) => k !== "default" && k !== "__esModule").sort();
    if (names.join() !== "AwsClient,CelldEdgeError,presignUrl,signRequest") throw new Error(`exports ${names}`);
  }
  const want = main.signRequest(opts).headers.authorization;
  if (cjs.signRequest(opts).headers.authorization !== want) throw new Error("require('celld-edge/sign') signs differently");
});

test("both entries in one program sign alike, presign alike, and their errors are one class", () => {
  if (sign.signRequest(opts).headers.authorization !== main.signRequest(opts).headers.authorization) throw new Error("signRequest differs");
  const p = { url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z", expiresIn: 60 };
  if (sign.presignUrl(p) !== main.presignUrl(p)) throw new Error("presignUrl differs");
  for (const [from, other] of [[sign, main], [main, sign]]) {
    let err;
    try {
      from.signRequest({ ...opts, endpoint: "https://h.test" });
    } catch (e) {
      err = e;
    }
    if (!(err instanceof other.CelldEdgeError) || err.code !== "invalid-input") throw new Error(`got ${err}`);
    // The same message from both wasms, store option named as such.
    if (!/S3Ownership option/.test(err.message)) throw new Error(`message ${err.message}`);
  }
});

test("the signing-only wasm holds no ownership code and is a fraction of the full one", async () => {
  const glue = await import("../../pkg/celld_edge_sign.js");
  for (const name of ["WasmOwnership", "WasmInspector"]) if (name in glue) throw new Error(`${name} in the signing-only wasm`);
  const full = readFileSync(new URL("../../pkg/celld_edge_bg.wasm", import.meta.url)).length;
  const alone = readFileSync(new URL("../../pkg/celld_edge_sign_bg.wasm", import.meta.url)).length;
  if (alone * 3 > full) throw new Error(`signing-only wasm ${alone} B, full ${full} B`);
});
