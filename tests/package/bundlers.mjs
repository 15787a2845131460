// One browser bundler as a new user runs it, in the fresh project that installed the packed tarball:
// bundles browser-app.js with no configuration beyond what the bundler needs to find its entry, serves
// only the bundler's output, loads it in headless Chromium, and checks what the page reports (the AWS
// example's signature, and a refused option). Usage: node bundlers.mjs APP_DIR REPO_ROOT BUNDLER, with
// BUNDLER one of esbuild-iife, esbuild-esm, vite, webpack. Exits non-zero with the reason on failure.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import { extname, join } from "node:path";
import { pathToFileURL } from "node:url";

const [app, root, bundler] = process.argv.slice(2);
const bin = (name) => join(root, "node_modules/.bin", name);
const out = join(app, `dist-${bundler}`);
mkdirSync(out, { recursive: true });
const run = (cmd, args) => execFileSync(cmd, args, { cwd: app, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
const page = (script) => `<!doctype html><meta charset="utf-8"><title>app</title><body>${script}</body>`;

if (bundler === "esbuild-iife" || bundler === "esbuild-esm") {
  const format = bundler.slice("esbuild-".length);
  run(bin("esbuild"), ["browser-app.js", "--bundle", `--format=${format}`, "--platform=browser", "--log-level=error", `--outfile=${join(out, "app.js")}`]);
  writeFileSync(join(out, "index.html"), page(format === "esm" ? '<script type="module" src="app.js"></script>' : '<script src="app.js"></script>'));
} else if (bundler === "vite") {
  const src = join(app, "vite-src");
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, "index.html"), page('<script type="module" src="../browser-app.js"></script>'));
  run(bin("vite"), ["build", src, "--outDir", out, "--emptyOutDir", "--logLevel", "error"]);
} else if (bundler === "webpack") {
  run(bin("webpack"), ["--mode", "production", "--target", "web", "--entry", "./browser-app.js", "--output-path", out, "--output-filename", "app.js"]);
  writeFileSync(join(out, "index.html"), page('<script src="app.js"></script>'));
} else {
  throw new Error(`unknown bundler ${bundler}`);
}

const emitted = readdirSync(out, { recursive: true }).map(String);
if (emitted.some((f) => f.endsWith(".wasm"))) throw new Error(`${bundler} emitted a wasm file nobody loads: ${emitted.join(", ")}`);

const types = { ".js": "text/javascript", ".html": "text/html", ".css": "text/css" };
const site = http.createServer((req, res) => {
  let path = new URL(req.url, "http://x").pathname;
  if (path.endsWith("/")) path += "index.html";
  let body;
  try {
    body = readFileSync(join(out, path));
  } catch {
    return res.writeHead(404).end();
  }
  res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" }).end(body);
});
await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
const { launchChromium } = await import(pathToFileURL(join(root, "tests/browser/harness.mjs")).href);
const browser = await launchChromium();
try {
  const tab = await browser.newPage();
  const errors = [];
  tab.on("pageerror", (e) => errors.push(String(e)));
  tab.on("requestfailed", (r) => errors.push(`request failed: ${r.url()}`));
  tab.on("response", (r) => r.status() >= 400 && !r.url().endsWith("/favicon.ico") && errors.push(`${r.status()} ${r.url()}`));
  await tab.goto(`http://127.0.0.1:${site.address().port}/`);
  const result = await tab
    .waitForFunction(() => globalThis.celldResult || null, null, { timeout: 30_000, polling: 100 })
    .then((h) => h.jsonValue())
    .catch((e) => ({ error: `the page reported nothing (${e.message})` }));
  if (result.error) throw new Error(`${result.error}; page errors: ${errors.join("; ")}`);
  if (!result.authorization.endsWith("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")) {
    throw new Error(`wrong signature: ${result.authorization}`);
  }
  if (result.refused !== "invalid-input") throw new Error(`an unknown option was not refused: ${result.refused}`);
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  console.log(`${bundler}: signed in Chromium (${emitted.length} files emitted)`);
} finally {
  await browser.close();
  site.close();
}
