// Signing in headless Chromium through the package's browser entry (js/inline.js: no top-level await, the
// wasm inlined in the JS) and the signing-only one (pkg/sign.js): the shared signing checks, with the vectors embedded in the page and
// the strict servers reached through their CORS pass-throughs.
import { test } from "node:test";
import { readFileSync } from "node:fs";
import { asSubtests } from "../common/checks.mjs";
import { resultsFromChromium } from "./harness.mjs";
import { presignServer, realServer, strictServer } from "../common/signing.mjs";
import { loadVectors } from "../common/vectors-fs.mjs";

// The page talks to the servers through their CORS pass-throughs, which forward the Host header, so what
// the page signs for the pass-through's address is what the server checks.
const env = {};
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
const vectors = loadVectors((p) => readFileSync(p, "utf8"), process.env);

for (const [what, entry] of [["browser entry", "/js/inline.js"], ["signing-only entry, celld-edge/sign", "/pkg/sign.js"]]) {
  test(`signing checks inside Chromium (${what})`, async (t) => {
    const results = await resultsFromChromium(`
      import * as api from "${entry}";
      import { runChecks } from "/tests/common/checks.mjs";
      import { signingChecks } from "/tests/common/signing.mjs";
      const vectors = ${JSON.stringify(vectors)};
      window.results = await runChecks(signingChecks({ api, vectors, env: ${JSON.stringify(env)}, runtime: "chromium" }));
    `);
    await asSubtests(t, results, "the page");
  });
}
