// Operating it in headless Chromium: a page imports the package's browser entry and runs the shared
// authority checks (signals, scope) and short-lived credentials checks against the test servers through
// their CORS pass-throughs.
import { test } from "node:test";
import { asSubtests } from "../common/checks.mjs";
import { resultsFromChromium } from "./harness.mjs";

const endpoint = process.env.CELLD_TEST_ATOMIC_BROWSER_ENDPOINT;
if (!endpoint) throw new Error("no CORS pass-through for the atomic server: run through scripts/test");
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("CELLD_TEST_")));
env.CELLD_TEST_ATOMIC_ENDPOINT = endpoint;
env.CELLD_TEST_STRICT_ENDPOINT = process.env.CELLD_TEST_STRICT_BROWSER_ENDPOINT;
env.CELLD_TEST_REAL_ENDPOINT = process.env.CELLD_TEST_REAL_BROWSER_ENDPOINT;

test("authority and credentials checks inside Chromium", async (t) => {
  const results = await resultsFromChromium(`
    import * as api from "/js/inline.js";
    import { runChecks } from "/tests/common/checks.mjs";
    import { authorityChecks } from "/tests/common/authority.mjs";
    import { credentialsChecks } from "/tests/common/credentials.mjs";
    const env = ${JSON.stringify(env)};
    window.results = await runChecks([...authorityChecks({ api, env, runtime: "chromium" }), ...credentialsChecks({ api, env, runtime: "chromium" })]);
  `);
  await asSubtests(t, results, "the page");
});
