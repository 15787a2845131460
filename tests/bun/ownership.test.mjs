// Bun suite for ownership: the shared checks against the test command's stores (versitygw probed, moto in
// auth mode unprobed), as tests/deno does, with the package imported by its name.
import { test } from "bun:test";
import * as api from "celld-edge";
import { ownershipChecks, ownershipServers } from "../common/ownership.mjs";

for (const server of ownershipServers(process.env)) {
  for (const [name, fn] of ownershipChecks({ api, server, runtime: "bun" })) {
    test(name, fn, 60_000);
  }
}
