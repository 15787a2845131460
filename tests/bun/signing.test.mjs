// Bun suite for signing (run by `bun test ./tests/bun/`): imports the package by its name (Bun resolves the
// self-reference through package.json "exports" with its own conditions) and runs the shared checks under
// bun:test, for the main entry and the signing-only one.
import { test } from "bun:test";
import { readFileSync } from "node:fs";
import * as api from "celld-edge";
import * as signOnly from "celld-edge/sign";
import { signingChecks } from "../common/signing.mjs";
import { loadVectors } from "../common/vectors-fs.mjs";

const vectors = loadVectors((p) => readFileSync(p, "utf8"), process.env);

for (const [name, fn] of signingChecks({ api, vectors, env: process.env, runtime: "bun" })) {
  test(name, fn, 30_000);
}
for (const [name, fn] of signingChecks({ api: signOnly, vectors, env: process.env, runtime: "bun" })) {
  test(`celld-edge/sign: ${name}`, fn, 30_000);
}
