// The signer's fast path has one buffer format, defined in src/bindings/sign.rs; js/sign-format.js holds
// the constants js/sign.js uses. This checks the two sides agree on every constant, as the wasm reports
// them (`signBufferFormat`), and that the decoder's literal codes follow the name table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import "../../js/node.js";
import { signBufferFormat } from "../../pkg/celld_edge.js";
import { FORMAT } from "../../js/sign-format.js";

test("js/sign-format.js agrees with the wasm on every constant of the buffer format", () => {
  assert.deepEqual({ ...FORMAT, nameCodes: [...FORMAT.nameCodes] }, signBufferFormat());
});

test("js/sign.js decodes each name code to the name the format gives it", () => {
  const api = readFileSync(new URL("../../js/sign.js", import.meta.url), "utf8");
  const literal = { authorization: "headers.authorization", "x-amz-date": 'headers["x-amz-date"]', "x-amz-content-sha256": 'headers["x-amz-content-sha256"]', "x-amz-security-token": 'headers["x-amz-security-token"]' };
  FORMAT.nameCodes.forEach((name, i) => {
    assert.ok(api.includes(`if (code === ${i + 1}) ${literal[name]} = value;`), `code ${i + 1} -> ${name}`);
  });
  assert.equal(FORMAT.nameCodes[FORMAT.authorizationCode - 1], "authorization");
});
