// README.md's sizes come from the build (issue 33, item 4): the quick start's Worker as `wrangler deploy
// --dry-run` reports its upload, and the package's wasm, each checked against the figure the README states
// (marked `<!-- figure: NAME -->`), so that a figure cannot drift from what users get. A 2 % tolerance lets
// small changes through; anything larger must update the README. Run by run.mjs.
import { test } from "node:test";
import { ok } from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { bundleWorker, root } from "./miniflare.mjs";

/** The KiB figure the README states after `<!-- figure: name -->`. */
function stated(name) {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const m = readme.match(new RegExp(`<!-- figure: ${name} -->\\s*\\**([\\d.]+) KiB`));
  ok(m, `README.md states no figure ${name}`);
  return Number(m[1]);
}

const close = (measured, name) => {
  const s = stated(name);
  ok(Math.abs(s - measured) <= measured * 0.02, `README.md says ${s} KiB for ${name}; the build gives ${measured.toFixed(2)} KiB`);
};

test("README's Worker and wasm sizes are the build's (within 2 %)", () => {
  const { report } = bundleWorker(join(root, "examples/quickstart/wrangler.toml"));
  const gzip = report.match(/gzip: ([\d.]+) KiB/);
  ok(gzip, `wrangler's report: ${report}`);
  close(Number(gzip[1]), "worker-gzip");
  close(gzipSync(readFileSync(join(root, "pkg/celld_edge_bg.wasm")), { level: 9 }).length / 1024, "wasm-gzip");
});
