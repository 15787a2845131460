// Deno suite for signing: imports "celld-edge" through tests/deno/deno.json, which maps it to the deno
// entry (Deno has no package self-reference; tests/package checks the "deno" condition of the installed
// tarball), and runs the shared checks under Deno.test, for the main entry and the signing-only one.
import * as api from "celld-edge";
import * as signOnly from "celld-edge/sign";
import { signingChecks } from "../common/signing.mjs";
import { loadVectors } from "../common/vectors-fs.mjs";

const env = Deno.env.toObject();
const vectors = loadVectors((p) => Deno.readTextFileSync(p), env);

for (const [name, fn] of signingChecks({ api, vectors, env, runtime: "deno" })) {
  Deno.test(name, fn);
}
// The signing-only entry (pkg/sign.js, the "deno" condition of celld-edge/sign).
for (const [name, fn] of signingChecks({ api: signOnly, vectors, env, runtime: "deno" })) {
  Deno.test(`celld-edge/sign: ${name}`, fn);
}
