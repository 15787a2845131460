// Ownership in headless Chromium: a page imports the package's browser entry (js/browser.js, which fetches
// the .wasm next to it) and runs the shared ownership checks against both test servers, through their
// CORS pass-throughs. Results come back from the page and become node:test subtests.
import { test } from "node:test";
import { ownershipServers } from "../common/ownership.mjs";
import { resultsFromChromium } from "./harness.mjs";

const servers = ownershipServers(process.env).map((s) => {
  const browserEndpoint = process.env[s.atomic ? "CELLD_TEST_ATOMIC_BROWSER_ENDPOINT" : "CELLD_TEST_STRICT_BROWSER_ENDPOINT"];
  if (!browserEndpoint) throw new Error(`no CORS pass-through for ${s.name}: run through scripts/test`);
  return { ...s, endpoint: browserEndpoint };
});

test("ownership checks inside Chromium", async (t) => {
  const results = await resultsFromChromium(`
    import * as api from "/js/browser.js";
    import { ownershipChecks } from "/tests/common/ownership.mjs";
    const results = [];
    for (const server of ${JSON.stringify(servers)}) {
      for (const [name, fn] of ownershipChecks({ api, server, runtime: "chromium" })) {
        try { await fn(); results.push({ name, ok: true }); }
        catch (e) { results.push({ name, ok: false, error: String(e && e.stack ? e.stack : e) }); }
      }
    }
    window.results = results;
  `);
  if (results.length === 0) throw new Error("the page ran no checks");
  for (const r of results) {
    await t.test(r.name, () => {
      if (!r.ok) throw new Error(r.error);
    });
  }
});
