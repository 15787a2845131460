// Deno suite for signing: imports "celld-edge" through tests/deno/deno.json, which maps it to the deno
// entry (Deno has no package self-reference; tests/package checks the "deno" condition of the installed
// tarball), and runs the shared checks under Deno.test.
import * as api from "celld-edge";
import { signingChecks } from "../common/signing.mjs";
import { loadVectors } from "../common/vectors-fs.mjs";

const env = Deno.env.toObject();
const vectors = loadVectors((p) => Deno.readTextFileSync(p), env);

for (const [name, fn] of signingChecks({ api, vectors, env, runtime: "deno" })) {
  Deno.test(name, fn);
}
