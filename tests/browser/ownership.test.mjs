// Ownership in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core, no browser
// download): a page served from the repo imports the package's browser entry (js/browser.js, which
// fetches the .wasm next to it) and runs the shared ownership checks against both test servers, through
// their CORS pass-throughs. Results come back from the page and become node:test subtests.
import { after, test } from "node:test";
import http from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { ownershipServers } from "../common/ownership.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const types = { ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };
const servers = ownershipServers(process.env).map((s) => {
  const browserEndpoint = process.env[s.atomic ? "CELLD_TEST_ATOMIC_BROWSER_ENDPOINT" : "CELLD_TEST_STRICT_BROWSER_ENDPOINT"];
  if (!browserEndpoint) throw new Error(`no CORS pass-through for ${s.name}: run through scripts/test`);
  return { ...s, endpoint: browserEndpoint };
});

const page = `<!doctype html><meta charset="utf-8"><title>celld-edge ownership checks</title>
<script type="module">
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
</script>`;

// Serves the page, and files under js/, pkg/ and tests/common/ only.
const site = http.createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
  if (path === "/") return res.writeHead(200, { "content-type": "text/html" }).end(page);
  if (!/^\/(js|pkg|tests\/common)\//.test(path)) return res.writeHead(404).end();
  try {
    const body = await readFile(join(root, path));
    res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" }).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
after(async () => {
  await browser.close();
  site.close();
});

test("ownership checks inside Chromium", async (t) => {
  const tab = await browser.newPage();
  const errors = [];
  tab.on("pageerror", (e) => errors.push(String(e)));
  await tab.goto(`http://127.0.0.1:${site.address().port}/`);
  await tab.waitForFunction(() => window.results || null, null, { timeout: 120_000, polling: 200 }).catch((e) => {
    throw new Error(`the page did not finish: ${e.message}; page errors: ${errors.join("; ")}`);
  });
  const results = await tab.evaluate(() => window.results);
  if (results.length === 0) throw new Error("the page ran no checks");
  for (const r of results) {
    await t.test(r.name, () => {
      if (!r.ok) throw new Error(r.error);
    });
  }
});
