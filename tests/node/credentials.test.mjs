// Node suite for short-lived credentials: the shared checks (tests/common/credentials.mjs) against the
// signature-checking test server, importing the package by its name as users do.
import { test } from "node:test";
import * as api from "celld-edge";
import { credentialsChecks } from "../common/credentials.mjs";

for (const [name, fn] of credentialsChecks({ api, env: process.env, runtime: "node" })) {
  test(name, fn);
}
