// Benchmark (not a test): where one signature's CPU time goes, in whichever runtime runs this file
// (after scripts/build: `node bench/sign-split.mjs`, `node_modules/.bin/bun bench/sign-split.mjs`,
// `node_modules/.bin/deno run -A --config bench/deno/deno.json bench/sign-split.mjs`; ~15 s each). It
// answers why Bun's celld-edge/aws4fetch ratio in bench/sign.mjs is lower than Node's (bench/README.md):
// - celld-edge's whole signRequest (the package as this runtime resolves it), GET and the 200-byte PUT
//   of bench/sign-cases.mjs;
// - the wasm part alone: the fields js/sign.js packs, written with encodeInto and signed by signIo (a
//   second instance of the same wasm, called through its wasm-bindgen glue); the rest is sign.js's JS;
// - one SHA-256 block (64 bytes) in that wasm, from hashing 64 KiB (hashBody): a GET signature hashes
//   9 blocks and the PUT 15 (see bench/README.md), the floor of any wasm signer on this engine;
// - one wasm call that does nothing much (ioBuffer of the size it already has): the boundary's cost;
// - aws4fetch's AwsClient.sign (awaited, as bench/sign.mjs runs it).
// Figures are microseconds of process CPU time per operation, the median of 7 rounds.
import { readFileSync } from "node:fs";
import { signRequest } from "celld-edge";
import { AwsClient } from "aws4fetch";
import * as glue from "../pkg/celld_edge.js";
import { cases, creds, median } from "./sign-cases.mjs";

glue.initSync({ module: readFileSync(new URL("../pkg/celld_edge_bg.wasm", import.meta.url)) });
glue.signerStart({ error: (code, message) => new Error(`${code}: ${message}`) });
const cpuMicros = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};

const IO = 64 * 1024;
const ptr = glue.ioBuffer(IO);
const io = new Uint8Array(glue.ioMemory().buffer, ptr, IO);
const encoder = new TextEncoder();
const SEP = "\0";
const { accessKeyId, secretAccessKey } = creds;
/** The packed fields of js/sign.js's `pack` for case `c` (method, url, region, service, key id, secret, token, datetime, headers). */
const packed = (c) =>
  [c.method, c.url, "auto", "s3", accessKeyId, secretAccessKey, "", "", ...Object.entries(c.headers).flat()].join(SEP);

/** Median CPU microseconds per call of `fn` (sync or async) over rounds of `n` calls. */
async function perCall(fn, n) {
  const isAsync = fn() instanceof Promise;
  for (let i = 0; i < n; i++) isAsync ? await fn() : fn();
  const samples = [];
  for (let r = 0; r < 7; r++) {
    const c0 = cpuMicros();
    if (isAsync) for (let i = 0; i < n; i++) await fn();
    else for (let i = 0; i < n; i++) fn();
    samples.push((cpuMicros() - c0) / n);
  }
  return median(samples);
}

const client = new AwsClient({ ...creds, service: "s3", region: "auto" });
const rows = [];
for (const [name, c] of Object.entries(cases)) {
  const fields = packed(c);
  const bodyLen = c.body === undefined ? 0 : c.body.length;
  const headerCount = Object.keys(c.headers).length;
  const now = Date.now();
  const wasm = () => {
    const len = encoder.encodeInto(fields, io).written;
    if (bodyLen) encoder.encodeInto(c.body, io.subarray(len));
    return glue.signIo(len, bodyLen, headerCount, 0, now);
  };
  const opts = c.body === undefined
    ? () => signRequest({ accessKeyId, secretAccessKey, region: "auto", method: c.method, url: c.url, headers: c.headers }).headers.authorization
    : () => signRequest({ accessKeyId, secretAccessKey, region: "auto", method: c.method, url: c.url, headers: c.headers, body: c.body }).headers.authorization;
  const init = c.body === undefined ? { method: c.method, headers: c.headers } : { method: c.method, headers: c.headers, body: c.body };
  const full = await perCall(opts, 20000);
  const inWasm = await perCall(wasm, 20000);
  const theirs = await perCall(() => client.sign(c.url, init), 5000);
  rows.push({ name, full, inWasm, theirs });
}
glue.ioBuffer(IO);
const block = (await perCall(() => glue.hashBody(IO, true), 100)) / (IO / 64);
const call = await perCall(() => glue.ioBuffer(16), 100000);

const runtime = typeof Bun !== "undefined" ? `bun ${Bun.version}` : typeof Deno !== "undefined" ? `deno ${Deno.version.deno}` : `node ${process.version}`;
const f = (x) => x.toFixed(2).padStart(8);
console.log(`${runtime}: us of CPU per operation (median of 7 rounds); SHA-256 block in wasm ${block.toFixed(3)} us, an empty wasm call ${call.toFixed(3)} us`);
console.log(`case   signRequest  of it: wasm    JS   aws4fetch  ratio`);
for (const r of rows) {
  console.log(`${r.name.toUpperCase().padEnd(6)}${f(r.full)}     ${f(r.inWasm)}${f(r.full - r.inWasm)}  ${f(r.theirs)}  ${(r.theirs / r.full).toFixed(1).padStart(5)}x`);
}
