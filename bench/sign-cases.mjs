// Benchmark inputs shared by every runtime of `node bench/sign.mjs` (Node, Deno and the workerd Worker):
// the two requests (a conditional PUT with a 200-byte JSON body, and a GET), the signers under test
// built over the same inputs, and the check that celld-edge and aws4fetch agree on a signature.
// It imports no package itself: each runtime passes its own celld-edge, aws4fetch and (Node) aws4, so the
// Worker bundle and Deno resolve them their own way. Must never time anything (runtimes differ in clocks).

export const creds = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" };
const host = "cells.0123456789abcdef.r2.cloudflarestorage.com";
const path = "/cells/cell-42/own.json";
const url = `https://${host}${path}`;
const body = JSON.stringify({ node: "edge-7", epoch: 1234567, nonce: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", pad: "x".repeat(83) });
if (body.length !== 200) throw new Error(`body is ${body.length} bytes, want 200`);

/** The requests: method, URL, headers and body, as a caller of any of the three would hold them. */
export const cases = {
  put: { method: "PUT", host, path, url, body, headers: { "content-type": "application/json", "if-match": '"5d41402abc4b2a76b9719d911017c592"' } },
  get: { method: "GET", host, path, url, body: undefined, headers: {} },
};

/**
 * { put: { name: () => authorization }, get: {...} }: one closure per signer and case, each built the
 * way that library is used (celld-edge: one options object per call; aws4fetch: one AwsClient; aws4: a
 * request object per call, since it writes into it). Every closure is a distinct function, so the timing
 * loop that calls it sees one target only. celld-edge's options are an object literal: in Node 20 (V8
 * 11.3), `{ ...creds, more }` alone costs the caller ~5 us per call (a spread followed by more properties
 * falls off V8's fast path; ~40 ns in Deno's newer V8), a third of a signature, and none of the signer's.
 */
export function signers({ signRequest, signOnly, AwsClient, aws4 }) {
  const { accessKeyId, secretAccessKey } = creds;
  const client = new AwsClient({ ...creds, service: "s3", region: "auto" });
  const out = {};
  for (const [name, c] of Object.entries(cases)) {
    const { method, headers } = c;
    const init = c.body === undefined ? { method, headers } : { method, headers, body: c.body };
    out[name] = {
      "celld-edge": c.body === undefined
        ? () => signRequest({ accessKeyId, secretAccessKey, region: "auto", method, url: c.url, headers }).headers.authorization
        : () => signRequest({ accessKeyId, secretAccessKey, region: "auto", method, url: c.url, headers, body: c.body }).headers.authorization,
      aws4fetch: async () => (await client.sign(c.url, init)).headers.get("authorization"),
    };
    // The signing-only entry's signRequest (celld-edge/sign), when the runtime passes it.
    if (signOnly) {
      out[name]["celld-edge/sign"] = c.body === undefined
        ? () => signOnly({ accessKeyId, secretAccessKey, region: "auto", method, url: c.url, headers }).headers.authorization
        : () => signOnly({ accessKeyId, secretAccessKey, region: "auto", method, url: c.url, headers, body: c.body }).headers.authorization;
    }
    if (aws4) {
      out[name].aws4 = c.body === undefined
        ? () => aws4.sign({ host, path, method, service: "s3", region: "auto", headers: { ...headers } }, creds).headers.Authorization
        : () => aws4.sign({ host, path, method, service: "s3", region: "auto", headers: { ...headers }, body: c.body }, creds).headers.Authorization;
    }
  }
  return out;
}

/**
 * Throws unless celld-edge and aws4fetch give the same Authorization for each case on a fixed date, for
 * what both sign: aws4fetch never signs content-type and, for S3, sends UNSIGNED-PAYLOAD (it never hashes
 * the body; celld-edge does in the timed runs). aws4 always adds and signs content-length, which
 * celld-edge leaves unsigned, so its signatures differ by design and are not compared.
 */
export async function checkAgreement({ signRequest, AwsClient }) {
  const client = new AwsClient({ ...creds, service: "s3", region: "auto" });
  const datetime = "20260115T101500Z";
  for (const [name, c] of Object.entries(cases)) {
    const headers = Object.fromEntries(Object.entries(c.headers).filter(([h]) => h !== "content-type"));
    const ours = signRequest({ ...creds, region: "auto", method: c.method, url: c.url, headers, body: c.body, datetime, unsignedPayload: true }).headers.authorization;
    const theirs = (await client.sign(c.url, { method: c.method, headers, body: c.body, aws: { datetime } })).headers.get("authorization");
    if (ours !== theirs) throw new Error(`${name}: signatures differ:\n celld-edge ${ours}\n aws4fetch  ${theirs}`);
  }
}

/**
 * Node and Deno: signatures per CPU-second of `fn` over one round of about `roundMs` wall time. CPU time
 * (`cpuMicros`: the whole process's user + system time, so work on helper threads such as WebCrypto's
 * counts too) rather than wall time, because a machine shared with other jobs stretches wall time by
 * whatever else ran; CPU time is also what a signature costs a server or a Worker's CPU limit. Each call
 * gets its own compiled loop (new Function), so no call site sees several signers and goes megamorphic (a
 * shared loop measurably slowed all of them). Synchronous signers are not awaited: an await per call would
 * add a microtask turn to each and compress the ratios. Not usable in workerd, which forbids new Function.
 */
export function roundTimer(fn, roundMs, cpuMicros) {
  const sync = !(fn() instanceof Promise);
  const loop = sync ? "for (let i = 0; i < 100; i++) fn();" : "for (let i = 0; i < 100; i++) await fn();";
  const AsyncFunction = (async () => {}).constructor;
  return new AsyncFunction(
    "fn",
    "roundMs",
    "cpuMicros",
    `let n = 0;
     const start = performance.now();
     const cpu0 = cpuMicros();
     while (performance.now() < start + roundMs) { ${loop} n += 100; }
     return n / ((cpuMicros() - cpu0) / 1e6);`,
  ).bind(null, fn, roundMs, cpuMicros);
}

/**
 * Interleaved rounds: every signer of every case runs one round in turn, `rounds` times, after one
 * warm-up round each (JIT, key caches). Returns { case: { name: median signatures per CPU-second } }.
 */
export async function interleaved(table, rounds, roundMs, cpuMicros) {
  const timers = [];
  for (const [c, byName] of Object.entries(table)) {
    for (const [name, fn] of Object.entries(byName)) timers.push({ c, name, timer: roundTimer(fn, roundMs, cpuMicros), samples: [] });
  }
  for (const t of timers) await t.timer();
  for (let r = 0; r < rounds; r++) for (const t of timers) t.samples.push(await t.timer());
  const out = {};
  for (const t of timers) (out[t.c] ??= {})[t.name] = median(t.samples);
  return out;
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
