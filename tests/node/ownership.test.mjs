// Node suite for ownership: the shared checks against versitygw (probed) and moto in auth mode (unprobed),
// importing the package by its name as users do.
import { test } from "node:test";
import * as api from "celld-edge";
import { ownershipChecks, ownershipServers } from "../common/ownership.mjs";

for (const server of ownershipServers(process.env)) {
  for (const [name, fn] of ownershipChecks({ api, server, runtime: "node" })) {
    test(name, fn);
  }
}
