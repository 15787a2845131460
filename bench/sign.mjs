// Benchmark (not a test): signatures per second for a typical S3 conditional PUT (200-byte JSON body,
// If-Match), celld-edge vs aws4fetch (one AwsClient, as people use it) vs aws4 (Node's crypto), same
// process, same inputs; prints the ratios and the gzip size of what the package ships.
// Contenders take turns in short rounds and each reports its median round, which keeps the ratios
// meaningful on a shared, noisy machine.
// Run after scripts/build:  node bench/sign.mjs [rounds, default 9]
import { readFileSync, readdirSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { signRequest } from "celld-edge";
import { AwsClient } from "aws4fetch";
import aws4 from "aws4";

const rounds = Number(process.argv[2] ?? 9);
const roundMs = 400;
const creds = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" };
const host = "cells.0123456789abcdef.r2.cloudflarestorage.com";
const path = "/cells/cell-42/own.json";
const url = `https://${host}${path}`;
const body = JSON.stringify({ node: "edge-7", epoch: 1234567, nonce: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", pad: "x".repeat(83) });
const headers = { "content-type": "application/json", "if-match": '"5d41402abc4b2a76b9719d911017c592"' };
if (body.length !== 200) throw new Error(`body is ${body.length} bytes, want 200`);

const client = new AwsClient({ ...creds, service: "s3", region: "auto" });
const contenders = {
  "celld-edge": () => signRequest({ ...creds, region: "auto", method: "PUT", url, headers, body }).headers.authorization,
  aws4fetch: async () => (await client.sign(url, { method: "PUT", headers, body })).headers.get("authorization"),
  aws4: () => aws4.sign({ host, path, method: "PUT", service: "s3", region: "auto", headers: { ...headers }, body }, creds).headers.Authorization,
};

// Same signature as aws4fetch on a fixed date, for what both sign: aws4fetch never signs content-type and,
// for S3, sends UNSIGNED-PAYLOAD (it never hashes the body; celld-edge does, in the timed runs). aws4
// always adds and signs content-length, which celld-edge leaves unsigned, so its signatures differ.
const datetime = "20260115T101500Z";
const ifMatch = { "if-match": headers["if-match"] };
const ours = signRequest({ ...creds, region: "auto", method: "PUT", url, headers: ifMatch, body, datetime, unsignedPayload: true }).headers.authorization;
const theirs = (await client.sign(url, { method: "PUT", headers: ifMatch, body, aws: { datetime } })).headers.get("authorization");
if (ours !== theirs) throw new Error(`signatures differ:\n celld-edge ${ours}\n aws4fetch  ${theirs}`);

/**
 * A round timer for one contender: signatures per second over `roundMs`. Each contender gets its own
 * compiled copy (new Function), so no call site sees several signers and goes megamorphic; a shared loop
 * measurably slowed all three. Synchronous signers are not awaited (an await per call would add a
 * microtask turn to each and compress the ratios).
 */
function roundTimer(fn) {
  const sync = !(fn() instanceof Promise);
  const loop = sync ? "for (let i = 0; i < 100; i++) fn();" : "for (let i = 0; i < 100; i++) await fn();";
  const AsyncFunction = (async () => {}).constructor;
  return new AsyncFunction(
    "fn",
    "roundMs",
    `let n = 0;
     const start = performance.now();
     while (performance.now() < start + roundMs) { ${loop} n += 100; }
     return n / ((performance.now() - start) / 1000);`,
  ).bind(null, fn, roundMs);
}

const samples = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
const timers = Object.fromEntries(Object.entries(contenders).map(([name, fn]) => [name, roundTimer(fn)]));
for (const timer of Object.values(timers)) await timer(); // JITs, key caches
for (let r = 0; r < rounds; r++) {
  for (const [name, timer] of Object.entries(timers)) samples[name].push(await timer());
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const rates = Object.fromEntries(Object.entries(samples).map(([name, xs]) => [name, median(xs)]));

console.log(`conditional PUT, ${body.length}-byte body, median of ${rounds} interleaved ${roundMs} ms rounds, node ${process.version}`);
for (const [name, r] of Object.entries(rates)) console.log(`  ${name.padEnd(11)} ${Math.round(r).toLocaleString("en").padStart(9)} signatures/s`);
console.log(`  celld-edge / aws4fetch = ${(rates["celld-edge"] / rates.aws4fetch).toFixed(1)}x  (goal >= 10x)`);
console.log(`  celld-edge / aws4      = ${(rates["celld-edge"] / rates.aws4).toFixed(2)}x  (goal >= 2x)`);

const pkg = new URL("../pkg/", import.meta.url);
const js = new URL("../js/", import.meta.url);
const gz = (u) => gzipSync(readFileSync(u), { level: 9 }).length;
const wasm = gz(new URL("celld_edge_bg.wasm", pkg));
const glue = gz(new URL("celld_edge.js", pkg));
const ours_js = readdirSync(js).filter((f) => f.endsWith(".js")).reduce((s, f) => s + gz(new URL(f, js)), 0);
console.log(`shipped, gzip -9 per file: wasm ${wasm} + wasm-bindgen glue ${glue} + js/*.js ${ours_js} = ${wasm + glue + ours_js} bytes`);
