// Runs a module script in headless Chromium (Debian's /usr/bin/chromium through playwright-core; nothing
// downloaded) on a page served from the repo (files under js/, pkg/ and tests/common/ only, so the page
// imports the package's browser entry exactly as shipped), and returns what the script put in
// `window.results`: [{ name, ok, error }]. Test use only.
import http from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = fileURLToPath(new URL("../..", import.meta.url));
const types = { ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };

export async function resultsFromChromium(moduleSource, { timeoutMs = 120_000 } = {}) {
  const page = `<!doctype html><meta charset="utf-8"><title>celld-edge checks</title>\n<script type="module">${moduleSource}</script>`;
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
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const tab = await browser.newPage();
    const errors = [];
    tab.on("pageerror", (e) => errors.push(String(e)));
    await tab.goto(`http://127.0.0.1:${site.address().port}/`);
    await tab.waitForFunction(() => window.results || null, null, { timeout: timeoutMs, polling: 200 }).catch((e) => {
      throw new Error(`the page did not finish: ${e.message}; page errors: ${errors.join("; ")}`);
    });
    return await tab.evaluate(() => window.results);
  } finally {
    await browser.close();
    site.close();
  }
}
