// AwsClient in headless Chromium through the package's browser entry: the shared checks, with the vectors
// and botocore cases embedded in the page, the servers reached through their CORS pass-throughs and the
// fault front as an injected fetch. Chromium sends a ReadableStream body only over HTTP/2, so against
// these HTTP/1.1 servers a stream upload must fail as `transport`, once.
import { test } from "node:test";
import { readFileSync } from "node:fs";
import { asSubtests } from "../common/checks.mjs";
import { resultsFromChromium } from "./harness.mjs";
import { presignServer, realServer, strictServer } from "../common/signing.mjs";
import { AWS_CLIENT_VECTOR_CASES } from "../common/aws-client.mjs";
import { loadVectorCases } from "../common/vectors-fs.mjs";
import { loadBotocoreCases } from "../botocore/cases.mjs";

const env = { CELLD_EDGE_REQUIRE_BOTOCORE: process.env.CELLD_EDGE_REQUIRE_BOTOCORE };
for (const [prefix, server] of [["CELLD_TEST_REAL", realServer(process.env)], ["CELLD_TEST_STRICT", strictServer(process.env)], ["CELLD_TEST_PRESIGN", presignServer(process.env)]]) {
  const browserEndpoint = process.env[`${prefix}_BROWSER_ENDPOINT`];
  if (!browserEndpoint) throw new Error(`${prefix}_BROWSER_ENDPOINT not set: run scripts/test`);
  Object.assign(env, {
    [`${prefix}_ENDPOINT`]: browserEndpoint,
    [`${prefix}_BUCKET`]: server.bucket,
    [`${prefix}_KEY_ID`]: server.accessKeyId,
    [`${prefix}_SECRET`]: server.secretAccessKey,
  });
}
const vectors = loadVectorCases((p) => readFileSync(p, "utf8"), process.env, AWS_CLIENT_VECTOR_CASES);
const { cases, skip } = loadBotocoreCases();

test("AwsClient checks inside Chromium (browser entry)", async (t) => {
  const results = await resultsFromChromium(`
    import * as api from "/js/inline.js";
    import { runChecks } from "/tests/common/checks.mjs";
    import { awsClientChecks, injectedFront } from "/tests/common/aws-client.mjs";
    window.results = await runChecks(awsClientChecks({
      api, vectors: ${JSON.stringify(vectors)}, botocore: ${JSON.stringify(cases)}, botocoreSkip: ${JSON.stringify(skip)},
      env: ${JSON.stringify(env)}, runtime: "chromium", front: async (endpoint) => injectedFront(endpoint), streamUploads: false,
    }));
  `, { timeoutMs: 300_000 });
  await asSubtests(t, results, "the page");
});
