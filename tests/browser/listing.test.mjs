// Seeing the bucket in headless Chromium: a page imports the package's browser entry (js/inline.js) and
// runs the shared listing checks (tests/common/listing.mjs) against both test servers through their CORS
// pass-throughs. Results come back from the page and become node:test subtests.
import { test } from "node:test";
import { ownershipServers } from "../common/ownership.mjs";
import { asSubtests } from "../common/checks.mjs";
import { resultsFromChromium } from "./harness.mjs";

const servers = ownershipServers(process.env).map((s) => {
  const browserEndpoint = process.env[`CELLD_TEST_${s.kind}_BROWSER_ENDPOINT`];
  if (!browserEndpoint) throw new Error(`no CORS pass-through for ${s.name}: run through scripts/test`);
  return { ...s, endpoint: browserEndpoint };
});

test("listing checks inside Chromium", async (t) => {
  const results = await resultsFromChromium(`
    import * as api from "/js/inline.js";
    import { runChecks } from "/tests/common/checks.mjs";
    import { listingChecks } from "/tests/common/listing.mjs";
    const servers = ${JSON.stringify(servers)};
    window.results = await runChecks(servers.flatMap((server) => listingChecks({ api, server, runtime: "chromium" })));
  `);
  await asSubtests(t, results, "the page");
});
