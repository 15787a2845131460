// Benchmark (not a test): gzip size of what a Worker ships from this package, against what a user would
// ship instead (aws4fetch plus the same protocol in plain JS, bench/baseline-protocol.mjs). Prints the
// package's files, a minified bundle of each side, and the `wrangler deploy --dry-run` upload of the root
// example Worker (wrangler.toml), and the WebAssembly component's. Run after scripts/build (and
// scripts/build-component): node bench/size.mjs
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { bundleWorker, disposeAll, root } from "../tests/workerd/miniflare.mjs";

const gz = (bytes) => gzipSync(bytes, { level: 9 }).length;
const file = (p) => readFileSync(join(root, p));
const row = (name, bytes, gzip, note = "") =>
  console.log(`  ${name.padEnd(44)} ${String(bytes).padStart(8)} B ${String(gzip).padStart(7)} B gzip ${note}`);

/** Bundles `code` (an entry importing from the package or aws4fetch) minified for workerd, as wrangler
 *  would; returns the JS text and the wasm files it imports. */
async function bundle(code) {
  const dir = mkdtempSync(join(root, "bench/.size-"));
  try {
    writeFileSync(join(dir, "entry.mjs"), code);
    const out = await build({
      entryPoints: [join(dir, "entry.mjs")], bundle: true, minify: true, format: "esm", write: false,
      conditions: ["workerd", "worker"], platform: "neutral", external: ["*.wasm"], absWorkingDir: root,
    });
    return out.outputFiles[0].contents;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log("gzip -9 sizes");
console.log("package files:");
const wasm = file("pkg/celld_edge_bg.wasm");
const glue = file("pkg/celld_edge.js");
const ours = readdirSync(join(root, "js")).filter((f) => f.endsWith(".js")).map((f) => file(`js/${f}`));
row("pkg/celld_edge_bg.wasm", wasm.length, gz(wasm));
row("pkg/celld_edge.js (wasm-bindgen glue)", glue.length, gz(glue));
row("js/*.js (all entries, unminified)", ours.reduce((s, b) => s + b.length, 0), gz(Buffer.concat(ours)));

console.log("minified bundle of everything a Worker imports:");
const ourBundle = await bundle(`export { S3Ownership, signRequest, presignUrl } from "celld-edge";`);
const ourTotal = gz(ourBundle) + gz(wasm);
row("celld-edge JS (workerd entry, glue, API)", ourBundle.length, gz(ourBundle));
row("celld-edge JS + wasm", ourBundle.length + wasm.length, ourTotal);
const theirBundle = await bundle(`export { AwsClient } from "aws4fetch"; export { BaselineOwnership } from "../baseline-protocol.mjs";`);
row("aws4fetch + plain-JS protocol (baseline)", theirBundle.length, gz(theirBundle), "(skips nonces, readbacks, probe)");
const signOnly = await bundle(`export { AwsClient } from "aws4fetch";`);
row("aws4fetch alone", signOnly.length, gz(signOnly));

console.log("root example Worker, wrangler deploy --dry-run (wrangler's own figures; budget: gzip <= 100 KiB without --minify):");
for (const minify of [false, true]) {
  const { report } = bundleWorker(join(root, "wrangler.toml"), minify ? ["--minify"] : []);
  console.log(`  wrangler deploy --dry-run${minify ? " --minify" : "         "}          ${report.replace(/^Total Upload: /, "") || "(no figure printed)"}`);
}
console.log("signing only (celld-edge/sign, SPEC §4.5; budget: a Worker that only signs <= 40 KiB gzip):");
const signWasm = file("pkg/celld_edge_sign_bg.wasm");
row("pkg/celld_edge_sign_bg.wasm", signWasm.length, gz(signWasm));
const signBundle = await bundle(`export { AwsClient, signRequest, presignUrl } from "celld-edge/sign";`);
row("celld-edge/sign JS + wasm (minified bundle)", signBundle.length + signWasm.length, gz(signBundle) + gz(signWasm));
for (const [what, config] of [["signRequest, presignUrl", "wrangler.toml"], ["AwsClient", "client.toml"]]) {
  const w = bundleWorker(join(root, "bench/sign-worker", config));
  const verdict = w.gzipBytes <= 40 * 1024 ? "within" : "OVER";
  row(`Worker with ${what}: wrangler --dry-run`, w.bytes, w.gzipBytes, `(${(w.gzipBytes / 1024).toFixed(2)} KiB: ${verdict} 40 KiB; wrangler: ${w.report.replace(/^Total Upload: /, "")})`);
}
console.log(`celld-edge / (aws4fetch + baseline protocol) = ${(ourTotal / gz(theirBundle)).toFixed(1)}x`);
console.log("WebAssembly component (scripts/build-component; no JS, any component host):");
for (const [name, path] of [
  ["celld_edge.wasm (the celld:edge world)", "target/component/celld_edge.wasm"],
  ["celld-edge-proxy.wasm (examples/component-proxy)", "target/component/celld-edge-proxy.wasm"],
]) {
  const bytes = existsSync(join(root, path)) ? file(path) : null;
  if (bytes) row(name, bytes.length, gz(bytes));
  else console.log(`  ${name.padEnd(44)} not built (scripts/build-component)`);
}
await disposeAll();
