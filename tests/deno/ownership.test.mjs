// Deno suite for ownership: the shared checks against ministack (atomic) and moto in auth mode (strict),
// importing "celld-edge" through tests/deno/deno.json (the deno entry).
import * as api from "celld-edge";
import { ownershipChecks, ownershipServers } from "../common/ownership.mjs";

for (const server of ownershipServers(Deno.env.toObject())) {
  for (const [name, fn] of ownershipChecks({ api, server, runtime: "deno" })) {
    Deno.test(name, fn);
  }
}
