// Deno suite for short-lived credentials: the shared checks against the signature-checking test server.
import * as api from "celld-edge";
import { credentialsChecks } from "../common/credentials.mjs";

for (const [name, fn] of credentialsChecks({ api, env: Deno.env.toObject(), runtime: "deno" })) {
  Deno.test(name, fn);
}
