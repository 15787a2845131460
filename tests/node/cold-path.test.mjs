// A new instance's first requests over the S3 API in Node, in round trips in sequence (SPEC §8), against
// versitygw: the shared checks of tests/common/cold-path.mjs (workerd runs them through an R2 binding too).
import { test } from "node:test";
import * as api from "celld-edge";
import { coldPathChecks } from "../common/cold-path.mjs";
import { ownershipServers } from "../common/ownership.mjs";
import { s3Transport } from "../common/round-trips.mjs";

const [real] = ownershipServers(process.env);
for (const [name, fn] of coldPathChecks({ api, name: real.name, ...s3Transport(api, real) })) test(name, fn);
