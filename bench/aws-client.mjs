// Benchmark (not a test): CPU per request of celld-edge's AwsClient against aws4fetch's, in Node, same
// process, interleaved rounds: .sign() of a GET and of a conditional PUT (200-byte JSON body), and
// .fetch() of both through a stub fetch (the client's own cost: sign, build the Request, look at the
// answer) and of a GET to a loopback HTTP server in a child process (the whole client side of a request).
// Prints µs of CPU per request (this process: process.cpuUsage, helper threads included) and the ratios.
// Run after scripts/build:  node bench/aws-client.mjs [rounds, default 7]   (about a minute)
import { spawn } from "node:child_process";
import { once } from "node:events";
import { AwsClient } from "celld-edge";
import { AwsClient as Aws4fetchClient } from "aws4fetch";

const rounds = Number(process.argv[2] ?? 7);
const roundMs = 300;
const creds = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1", service: "s3" };
const body = JSON.stringify({ node: "edge-7", epoch: 41, nonce: "x".repeat(150) }).slice(0, 200);
const putInit = { method: "PUT", body, headers: { "content-type": "application/json", "if-match": "\"0123456789abcdef0123456789abcdef\"" } };

// The loopback server: answers every request 200 "ok" once its body has been read.
const server = spawn(process.execPath, ["-e", "require('http').createServer((q, s) => { q.resume(); q.on('end', () => s.end('ok')); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });"], { stdio: ["ignore", "pipe", "inherit"] });
const [portLine] = await once(server.stdout, "data");
const origin = `http://127.0.0.1:${String(portLine).trim()}`;
const url = `${origin}/bucket/cells/cell-1/own.json`;
const awsUrl = "https://bucket.s3.us-east-1.amazonaws.com/cells/cell-1/own.json";

const stub = async () => new Response("ok");
const realFetch = globalThis.fetch;
const ours = { stub: new AwsClient({ ...creds, fetch: stub }), real: new AwsClient(creds) };
const theirs = new Aws4fetchClient(creds); // calls the global fetch: swapped for the stub in stub rounds

// Both must sign a GET alike before anything is timed (aws4fetch does not sign content-type, so a PUT differs).
const datetime = "20260102T030405Z";
const a = (await ours.real.sign(awsUrl, { aws: { datetime } })).headers.get("authorization");
const b = (await theirs.sign(awsUrl, { aws: { datetime } })).headers.get("authorization");
if (a !== b) throw new Error(`signatures differ:\n ${a}\n ${b}`);

const drain = async (res) => {
  await res.text();
};
const cases = {
  "sign GET": { ours: () => ours.real.sign(awsUrl), theirs: () => theirs.sign(awsUrl) },
  "sign PUT": { ours: () => ours.real.sign(awsUrl, putInit), theirs: () => theirs.sign(awsUrl, putInit) },
  "fetch GET (stub)": { stub: true, ours: () => ours.stub.fetch(url).then(drain), theirs: () => theirs.fetch(url).then(drain) },
  "fetch PUT (stub)": { stub: true, ours: () => ours.stub.fetch(url, putInit).then(drain), theirs: () => theirs.fetch(url, putInit).then(drain) },
  "fetch GET (loopback HTTP)": { ours: () => ours.real.fetch(url).then(drain), theirs: () => theirs.fetch(url).then(drain) },
};

const cpuMicros = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
/** µs of CPU per call of fn over one round of about roundMs. */
async function round(fn, useStub) {
  globalThis.fetch = useStub ? stub : realFetch;
  try {
    const c0 = cpuMicros();
    const end = performance.now() + roundMs;
    let n = 0;
    do {
      for (let i = 0; i < 8; i++) await fn();
      n += 8;
    } while (performance.now() < end);
    return (cpuMicros() - c0) / n;
  } finally {
    globalThis.fetch = realFetch;
  }
}
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

const samples = {};
for (const [name, c] of Object.entries(cases)) {
  samples[name] = { ours: [], theirs: [] };
  await round(c.ours, c.stub); // warm-up: JIT, key caches, connections
  await round(c.theirs, c.stub);
}
for (let r = 0; r < rounds; r++) {
  for (const [name, c] of Object.entries(cases)) {
    samples[name].ours.push(await round(c.ours, c.stub));
    samples[name].theirs.push(await round(c.theirs, c.stub));
  }
}
server.kill();

console.log(`AwsClient vs aws4fetch, node ${process.version}, ${rounds} interleaved rounds of ~${roundMs} ms, medians (µs of CPU per request)`);
console.log("case".padEnd(28) + "celld-edge".padStart(12) + "aws4fetch".padStart(12) + "ratio".padStart(9));
for (const [name, s] of Object.entries(samples)) {
  const o = median(s.ours);
  const t = median(s.theirs);
  console.log(name.padEnd(28) + o.toFixed(1).padStart(12) + t.toFixed(1).padStart(12) + `${(t / o).toFixed(2)}x`.padStart(9));
}
