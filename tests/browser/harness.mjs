// Headless Chromium for the browser suites: Debian's /usr/bin/chromium through playwright-core (nothing
// downloaded), and a static server for files of the repo (so pages import the package's browser entry
// exactly as shipped). `resultsFromChromium` runs a module script on such a page and returns what it put
// in `window.results`: [{ name, ok, error }]. Test use only.
import http from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = fileURLToPath(new URL("../..", import.meta.url));
const types = { ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };

/** Chromium with the flags this machine's closed network needs. */
export function launchChromium() {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/**
 * Serves repo files whose path matches `allowed` (a directory's `index.html` for a trailing `/`), and
 * `page` at `/` when given, on a free loopback port. Resolves to the listening server.
 */
export async function serveRepo(allowed, page) {
  const site = http.createServer(async (req, res) => {
    let path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    if (path === "/" && page) return res.writeHead(200, { "content-type": "text/html" }).end(page);
    if (path.endsWith("/")) path += "index.html";
    if (!allowed.test(path)) return res.writeHead(404).end();
    try {
      const body = await readFile(join(root, path));
      res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
  return site;
}

export async function resultsFromChromium(moduleSource, { timeoutMs = 120_000 } = {}) {
  const page = `<!doctype html><meta charset="utf-8"><title>celld-edge checks</title>\n<script type="module">${moduleSource}</script>`;
  const site = await serveRepo(/^\/(js|pkg|tests\/common)\//, page);
  const browser = await launchChromium();
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
