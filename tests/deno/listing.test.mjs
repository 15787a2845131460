// Deno suite for seeing the bucket: the shared listing checks against versitygw and moto in auth mode,
// importing "celld-edge" through tests/deno/deno.json (the deno entry).
import * as api from "celld-edge";
import { listingChecks } from "../common/listing.mjs";
import { ownershipServers } from "../common/ownership.mjs";

for (const server of ownershipServers(Deno.env.toObject())) {
  for (const [name, fn] of listingChecks({ api, server, runtime: "deno" })) {
    Deno.test(name, fn);
  }
}
