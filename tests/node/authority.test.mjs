// Node suite for authority signals and scope: the shared checks (tests/common/authority.mjs) against the
// atomic test server, importing the package by its name as users do.
import { test } from "node:test";
import * as api from "celld-edge";
import { authorityChecks } from "../common/authority.mjs";

for (const [name, fn] of authorityChecks({ api, env: process.env, runtime: "node" })) {
  test(name, fn);
}
