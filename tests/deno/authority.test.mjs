// Deno suite for authority signals and scope: the shared checks against the atomic test server,
// importing "celld-edge" through tests/deno/deno.json.
import * as api from "celld-edge";
import { authorityChecks } from "../common/authority.mjs";

for (const [name, fn] of authorityChecks({ api, env: Deno.env.toObject(), runtime: "deno" })) {
  Deno.test(name, fn);
}
