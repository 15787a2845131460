// The README's browser quick start (examples/quickstart/browser.js) in headless Chromium: a page loads it
// as a module with an import map for "celld-edge", a /credentials endpoint hands it the store (ministack
// through its CORS pass-through, on a fresh bucket), and the page must show its claim at epoch 1, which the
// store must confirm.
import { after, test } from "node:test";
import { deepEqual, equal, match } from "node:assert/strict";
import http from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { S3Ownership, signRequest } from "celld-edge";
import { freshBucket } from "../common/buckets.mjs";
import { testServer } from "../common/signing.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const atomic = testServer(process.env, "CELLD_TEST_ATOMIC");
const browserEndpoint = process.env.CELLD_TEST_ATOMIC_BROWSER_ENDPOINT;
if (!browserEndpoint) throw new Error("CELLD_TEST_ATOMIC_BROWSER_ENDPOINT is not set: run through scripts/test");
const server = await freshBucket(signRequest, atomic, "qs-browser");
const types = { ".js": "text/javascript", ".wasm": "application/wasm" };
const page = `<!doctype html><meta charset="utf-8"><title>quick start</title>
<script type="importmap">{ "imports": { "celld-edge": "/js/inline.js" } }</script>
<body>loading<script type="module" src="/examples/quickstart/browser.js"></script></body>`;

const site = http.createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
  if (path === "/") return res.writeHead(200, { "content-type": "text/html" }).end(page);
  if (path === "/credentials") {
    const { bucket, accessKeyId, secretAccessKey } = server;
    return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ endpoint: browserEndpoint, bucket, region: "us-east-1", accessKeyId, secretAccessKey }));
  }
  if (!/^\/(js|pkg|examples\/quickstart)\//.test(path)) return res.writeHead(404).end();
  try {
    res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" }).end(await readFile(join(root, path)));
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
after(async () => {
  await browser.close();
  site.close();
});

test("browser quick start: the page claims cell-1 at epoch 1", async () => {
  const tab = await browser.newPage();
  const errors = [];
  tab.on("pageerror", (e) => errors.push(String(e)));
  await tab.goto(`http://127.0.0.1:${site.address().port}/`);
  await tab.waitForFunction(() => document.body.textContent !== "loading", null, { timeout: 30_000, polling: 100 }).catch(() => {
    throw new Error(`the page never finished; errors: ${errors}`);
  });
  equal(await tab.textContent("body"), "mine at epoch 1");
  const rec = await new S3Ownership({ ...server, region: "us-east-1", node: "observer", probe: false }).readOwner("cell-1");
  match(rec.node, /^tab-/);
  deepEqual([rec.epoch, errors], [1, []]);
  await tab.close();
});
