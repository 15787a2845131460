// The command line (bin/celld-edge.mjs) run as a user runs it, in a child process: help text, bad
// arguments (exit 2, a message naming what is wrong, never a stack trace), and, against ministack,
// `inspect` and `probe` (text and --json) over a fleet this test builds with S3Ownership. The store tests
// need the package built (scripts/build) and the servers (scripts/test).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../bin/celld-edge.mjs", import.meta.url));
const CREDS = { AWS_ACCESS_KEY_ID: "AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY: "secret" };

/** Runs the CLI with exactly this environment (plus PATH); resolves to { code, stdout, stderr }. */
function run(args, env = {}) {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
  });
}

test("--help and help print the usage, exit 0", async () => {
  for (const args of [["--help"], ["-h"], ["help"], ["inspect", "--help"]]) {
    const r = await run(args);
    assert.equal(r.code, 0, `${args}: ${r.stderr}`);
    assert.match(r.stdout, /^Usage: celld-edge <command> \[options\]/);
    for (const word of ["inspect", "probe", "--endpoint", "--bucket", "--prefix", "--json", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN"]) {
      assert.ok(r.stdout.includes(word), `${args}: help mentions ${word}`);
    }
    assert.equal(r.stderr, "");
  }
  const v = await run(["--version"]);
  assert.equal(v.code, 0);
  assert.match(v.stdout, /^\d+\.\d+\.\d+\n$/);
});

test("bad arguments exit 2 with a message naming the problem", async () => {
  const base = ["--endpoint", "http://127.0.0.1:9", "--bucket", "b"];
  const cases = [
    [[], CREDS, "no command given"],
    [["list"], CREDS, 'unknown command "list" (inspect, probe, help)'],
    [["inpsect", ...base], CREDS, 'unknown command "inpsect": did you mean inspect?'],
    [["prbe", ...base], CREDS, 'unknown command "prbe": did you mean probe?'],
    [["inspect", ...base, "--bogus"], CREDS, "unknown option --bogus (--help lists them)"],
    [["inspect", ...base, "--bukcet", "b"], CREDS, "unknown option --bukcet: did you mean --bucket?"],
    [["inspect", ...base, "--endpiont=x"], CREDS, "unknown option --endpiont: did you mean --endpoint?"],
    [["probe", ...base, "--jsno"], CREDS, "did you mean --json?"],
    [["inspect", ...base, "extra"], CREDS, 'unexpected argument "extra"'],
    [["inspect", "--endpoint", "http://127.0.0.1:9"], CREDS, "--bucket is required"],
    [["inspect", "--bucket", "b"], CREDS, "--endpoint is required"],
    [["inspect", ...base, "--prefix"], CREDS, "--prefix"],
    [["inspect", ...base], {}, "AWS_ACCESS_KEY_ID"],
    [["inspect", ...base], { AWS_ACCESS_KEY_ID: "a" }, "AWS_SECRET_ACCESS_KEY"],
    [["probe", ...base, "--path-style", "--virtual-hosted"], CREDS, "exclude each other"],
    [["inspect", ...base, "--json=yes"], CREDS, "--json"],
    [["inspect", ...base, "--max-clock-skew-ms", "1s"], CREDS, "--max-clock-skew-ms must be a whole number"],
  ];
  for (const [args, env, want] of cases) {
    const r = await run(args, env);
    assert.equal(r.code, 2, `${args.join(" ")}: exit ${r.code}, ${r.stderr}`);
    assert.ok(r.stderr.startsWith("celld-edge: "), r.stderr);
    assert.ok(r.stderr.includes(want), `${args.join(" ")}: ${r.stderr}`);
    assert.ok(!/\n\s+at /.test(r.stderr), `no stack trace: ${r.stderr}`);
    assert.ok(!r.stderr.includes("positional"), `Node's parseArgs text about positional arguments: ${r.stderr}`);
    assert.equal(r.stdout, "");
  }
});

test("with --json, bad arguments are a JSON error object on stdout, exit 2", async () => {
  for (const [args, env, message] of [
    [["inspect", "--json", "--endpoint", "http://127.0.0.1:9", "--bukcet", "b"], CREDS, "unknown option --bukcet: did you mean --bucket?"],
    [["inspect", "--json", "--endpoint", "http://127.0.0.1:9", "--bucket", "b"], {}, "AWS_ACCESS_KEY_ID"],
  ]) {
    const r = await run(args, env);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(r.stderr, "");
    const { error } = JSON.parse(r.stdout);
    assert.equal(error.code, "usage");
    assert.ok(error.message.includes(message), error.message);
  }
});

// ---- against a forged store ----

/** An S3 API that answers ListObjectsV2 (keys URL-encoded when asked) and GETs from `objects` (key ->
 * body), checking nothing: whoever can write records can make a bucket say anything. */
async function forgedStore(objects) {
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const [, bucket, ...rest] = url.pathname.split("/");
    if (rest.length === 0 || (rest.length === 1 && rest[0] === "")) {
      const prefix = url.searchParams.get("prefix") ?? "";
      const encoded = url.searchParams.get("encoding-type") === "url";
      const show = (k) => (encoded ? encodeURIComponent(k).replace(/%2F/g, "/") : k.replace(/&/g, "&amp;").replace(/</g, "&lt;"));
      const contents = Object.keys(objects).filter((k) => k.startsWith(prefix)).sort()
        .map((k) => `<Contents><Key>${show(k)}</Key><LastModified>2026-12-01T10:00:00.000Z</LastModified><ETag>"e"</ETag><Size>1</Size></Contents>`).join("");
      res.writeHead(200, { "content-type": "application/xml" });
      res.end(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${bucket}</Name><IsTruncated>false</IsTruncated>${encoded ? "<EncodingType>url</EncodingType>" : ""}${contents}</ListBucketResult>`);
      return;
    }
    const key = rest.map(decodeURIComponent).join("/");
    if (!(key in objects)) {
      res.writeHead(404, { "content-type": "application/xml" }).end("<Error><Code>NoSuchKey</Code><Message>none</Message></Error>");
      return;
    }
    res.writeHead(200, { "content-type": "application/json", etag: '"e"' }).end(objects[key]);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { endpoint: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

/** What a terminal acts on: C0 controls but the newline, DEL, C1 controls. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

test("inspect escapes control characters from the store in every field and error, text and --json", async (t) => {
  const osc52 = "\u001b]52;c;ZWNobyBwd25lZA==\u0007";
  const store = await forgedStore({
    "cells/ok/own.json": JSON.stringify({ node: "n1", epoch: 1 }),
    "cells/\u001b[2J\u009b1;1H/own.json": JSON.stringify({ node: "n1", epoch: 2 }),
    "cells/forged/own.json": JSON.stringify({ node: `n1${osc52}`, epoch: 3 }),
    "nodes/n1.json": JSON.stringify({ node: "n1", expires_ms: Date.now() + 600_000, addr: `\u001b]0;title\u0007a.internal:7000\u202e` }),
  });
  t.after(() => store.close());
  const args = ["inspect", "--endpoint", store.endpoint, "--bucket", "fleet"];
  const text = await run(args, CREDS);
  assert.equal(text.code, 0, text.stderr);
  for (const [what, out] of [["stdout", text.stdout], ["stderr", text.stderr]]) {
    assert.ok(!RAW_CONTROL.test(out) && !out.includes("\u202e"), `${what} holds a raw control character: ${JSON.stringify(out)}`);
  }
  assert.match(text.stdout, /^\\x1b\[2J\\x9b1;1H\s+n1\s+2\s+live/m, "a cell id from a key, escaped");
  assert.match(text.stdout, /^n1\s+live\s.*\\x1b\]0;title\\x07a\.internal:7000\\u\{202e\}/m, "a lease's addr, escaped");
  // A record whose node is not a node id does not decode (the id rules), and its error is escaped too.
  assert.match(text.stdout, /^forged\s+-\s+-\s+corrupt/m);
  assert.match(text.stdout, /cells\/forged\/own\.json: corrupt-record: .*not a node id/);
  const json = await run([...args, "--json"], CREDS);
  assert.equal(json.code, 0, json.stderr);
  assert.ok(!RAW_CONTROL.test(json.stdout.replace(/\n/g, "")) && !json.stdout.includes("\u202e"), `--json holds a raw control character: ${JSON.stringify(json.stdout)}`);
  const { cells, nodes } = JSON.parse(json.stdout);
  assert.deepEqual(cells.map((c) => c.cell).sort(), ["\u001b[2J\u009b1;1H", "forged", "ok"].sort(), "--json keeps the exact values");
  assert.equal(nodes[0].addr, "\u001b]0;title\u0007a.internal:7000\u202e");
  // An error naming what the store sent is escaped as well.
  const refusing = createServer((_, res) => res.writeHead(403, { "content-type": "application/xml" }).end(`<Error><Code>AccessDenied</Code><Message>no${osc52}</Message></Error>`));
  await new Promise((resolve) => refusing.listen(0, "127.0.0.1", resolve));
  t.after(() => refusing.close());
  const refused = await run(["inspect", "--endpoint", `http://127.0.0.1:${refusing.address().port}`, "--bucket", "fleet"], CREDS);
  assert.equal(refused.code, 1, refused.stderr);
  assert.ok(!RAW_CONTROL.test(refused.stderr.replace(/\n/g, "")), `stderr holds a raw control character: ${JSON.stringify(refused.stderr)}`);
  assert.match(refused.stderr, /AccessDenied/);
});

test("inspect says who is recovering a dead celld node's log, and how long ago it beat", async (t) => {
  const log = (state, claimant, ago) => ({ state, epoch: 6, ensemble: ["celld-c"], tiered: 1, active: false, claimant, claimed_ms: ago === null ? null : Date.now() - ago });
  const lease = (node, l) => JSON.stringify({ node, expires_ms: 1000, addr: "10.0.0.8:9000", peer_protocol: 5, log: l });
  const planted = Date.now();
  const store = await forgedStore({
    "cells/c1/own.json": JSON.stringify({ node: "celld-b", epoch: 41 }),
    "nodes/celld-b.json": lease("celld-b", log("recovering", "celld-c", 4_000)),
    "nodes/celld-d.json": lease("celld-d", log("recovering", "celld-e", 45_000)),
    "nodes/celld-f.json": lease("celld-f", log("open", null, null)),
  });
  t.after(() => store.close());
  const args = ["inspect", "--endpoint", store.endpoint, "--bucket", "fleet"];
  const text = await run(args, CREDS);
  assert.equal(text.code, 0, text.stderr);
  const row = (name) => text.stdout.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
  // Ages on the store's clock, estimated as the middle of the 2 s span its Dates leave (a second either
  // way), from heartbeats 4 s and 45 s before the store was planted, however long the CLI took since.
  const aged = (text, ago) => {
    const s = Number(/heartbeat (\d+\.\d)s ago/.exec(text)?.[1]) * 1000;
    assert.ok(s >= ago - 1_100 && s <= ago + (Date.now() - planted) + 1_000, `${text}: not ${ago} ms ago`);
  };
  assert.match(row("c1"), /awaiting-recovery.*awaiting recovery: celld-c recovering, heartbeat \d+\.\ds ago$/);
  aged(row("c1"), 4_000);
  assert.match(row("celld-b"), /awaiting recovery: celld-c recovering, heartbeat \d+\.\ds ago$/);
  aged(row("celld-b"), 4_000);
  assert.match(row("celld-d"), /awaiting recovery: celld-e recovering, heartbeat \d+\.\ds ago \(stale\)$/);
  aged(row("celld-d"), 45_000);
  assert.match(row("celld-f"), /awaiting recovery: no celld node recovering$/);
  const json = await run([...args, "--json"], CREDS);
  const { cells, nodes } = JSON.parse(json.stdout);
  assert.equal(cells[0].recovery.claimant, "celld-c");
  const age = cells[0].recovery.heartbeatAgeMs;
  assert.ok(age >= 3_000 && age <= 4_000 + (Date.now() - planted) + 1_000 && !cells[0].recovery.stale, JSON.stringify(cells[0]));
  assert.deepEqual(nodes.map((n) => [n.node, n.recovery?.claimant ?? null, n.recovery?.stale]), [["celld-b", "celld-c", false], ["celld-d", "celld-e", true], ["celld-f", null, true]]);
});

// ---- against a real store ----

const ATOMIC = process.env.CELLD_TEST_ATOMIC_ENDPOINT;

/** The package's API (the store tests need the servers scripts/test starts). */
async function api() {
  assert.ok(ATOMIC, "CELLD_TEST_ATOMIC_ENDPOINT is not set: run through scripts/test (servers from scripts/lib/servers.sh)");
  return { mod: await import("celld-edge") };
}

function storeEnv() {
  return {
    AWS_ACCESS_KEY_ID: process.env.CELLD_TEST_ATOMIC_KEY_ID,
    AWS_SECRET_ACCESS_KEY: process.env.CELLD_TEST_ATOMIC_SECRET,
    AWS_REGION: "us-east-1",
  };
}

test("inspect shows owners, epochs, released cells, dead nodes; --json gives the same data", async (t) => {
  const { mod } = await api();
  const prefix = `t-cli-${Math.random().toString(36).slice(2, 10)}/`;
  const store = { endpoint: ATOMIC, bucket: process.env.CELLD_TEST_ATOMIC_BUCKET, region: "us-east-1", accessKeyId: process.env.CELLD_TEST_ATOMIC_KEY_ID, secretAccessKey: process.env.CELLD_TEST_ATOMIC_SECRET };
  const a = new mod.S3Ownership({ ...store, prefix, node: "cli-a", addr: "a.internal:7000", probe: false });
  await a.acquireLease();
  // a stays live however slow the machine is; b (below) stops renewing and dies.
  a.startRenewing();
  t.after(() => a.stopRenewing());
  for (const cell of ["alpha", "beta", "gamma"]) assert.equal((await a.claim(cell)).outcome, "applied");
  assert.equal((await a.claim("beta")).outcome, "applied"); // epoch 2
  await a.release("gamma");
  // A node that stops renewing: dead once the store's clock is surely past its expiry (the Date has whole
  // seconds, and the expiry was written at the upper bound of the store's clock).
  const b = new mod.S3Ownership({ ...store, prefix, node: "cli-b", leaseTtlMs: 600, maxClockSkewMs: 100, probe: false });
  await b.acquireLease();
  assert.equal((await b.claim("delta")).outcome, "applied");
  await new Promise((resolve) => setTimeout(resolve, 3000));

  const args = ["inspect", "--endpoint", ATOMIC, "--bucket", store.bucket, "--prefix", prefix, "--max-clock-skew-ms", "100"];
  const json = await run([...args, "--json"], storeEnv());
  assert.equal(json.code, 0, json.stderr);
  const { cells, nodes } = JSON.parse(json.stdout);
  const view = cells.map((c) => [c.cell, c.node, c.epoch, c.status]);
  assert.deepEqual(view, [["alpha", "cli-a", 1, "live"], ["beta", "cli-a", 2, "live"], ["delta", "cli-b", 1, "dead"], ["gamma", null, 1, "released"]]);
  assert.equal(cells[0].addr, "a.internal:7000");
  assert.ok(cells[0].leaseExpiresInMs > 0 && cells[2].leaseExpiresInMs < 0, JSON.stringify(cells));
  assert.deepEqual(nodes.map((n) => [n.node, n.lease, n.live]), [["cli-a", "live", true], ["cli-b", "dead", false]]);
  assert.ok(cells.every((c) => c.error === null));

  const text = await run(args, storeEnv());
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^Cells: 4 \(/);
  const row = (name) => text.stdout.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
  assert.match(row("beta"), /^beta\s+cli-a\s+2\s+live\s+in /);
  assert.match(row("gamma"), /^gamma\s+-\s+1\s+released/);
  assert.match(row("delta"), /^delta\s+cli-b\s+1\s+dead\s+\S+ ago/);
  assert.match(text.stdout, /Nodes: 2 \(1 live\)/);
  assert.match(row("cli-b"), /^cli-b\s+dead/);
  // A reader that stops reading early (`| head -1`) ends the tool quietly.
  const piped = await new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...storeEnv() } }, (error, _, stderr) => resolve({ code: error ? error.code : 0, stderr }));
    child.stdout.destroy();
  });
  assert.equal(piped.code, 0, piped.stderr);
  assert.ok(!piped.stderr.includes("EPIPE"), piped.stderr);
  // Listing changed nothing: a still holds its cells.
  assert.equal(await a.verify("beta", 2), true);
});

test("inspect reports store refusals with their code, exit 1", async (t) => {
  await api();
  const bucket = process.env.CELLD_TEST_ATOMIC_BUCKET;
  // Not an S3 API: a web server answering every request with a page.
  const html = createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!DOCTYPE html><html><body>hello</body></html>"));
  await new Promise((resolve) => html.listen(0, "127.0.0.1", resolve));
  try {
    const r = await run(["inspect", "--endpoint", `http://127.0.0.1:${html.address().port}`, "--bucket", bucket], storeEnv());
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^celld-edge: request: store refused request for list \S+: 200: not an S3 API: /);
    // https:// to that plain-HTTP port: said in words, not in OpenSSL's; nothing retried.
    const tls = await run(["inspect", "--endpoint", `https://127.0.0.1:${html.address().port}`, "--bucket", bucket], storeEnv());
    assert.equal(tls.code, 1, tls.stderr);
    assert.match(tls.stderr, /^celld-edge: transport: transport failure on \S+: the endpoint does not speak TLS; use http:\/\/\n/);
    assert.ok(!/SSL routines|\\n/.test(tls.stderr.split("\n")[0]), tls.stderr);
  } finally {
    html.close();
  }
  // Nothing listening: a transport error carrying the cause.
  const r = await run(["inspect", "--endpoint", "http://127.0.0.1:9", "--bucket", bucket], storeEnv());
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /^celld-edge: transport: /);
  // A missing bucket, with --json: the error as a JSON object on stdout.
  const nb = await run(["inspect", "--endpoint", ATOMIC, "--bucket", "no-such-bucket-here", "--json"], storeEnv());
  assert.equal(nb.code, 1, nb.stdout + nb.stderr);
  assert.equal(nb.stderr, "");
  const { error } = JSON.parse(nb.stdout);
  assert.deepEqual([error.code, error.status, error.s3Code], ["request", 404, "NoSuchBucket"]);
  assert.match(error.message, /NoSuchBucket/);
  // No answer at all, with --json: transport, its cause named.
  const down = await run(["inspect", "--endpoint", "http://127.0.0.1:9", "--bucket", bucket, "--json"], storeEnv());
  assert.equal(down.code, 1, down.stdout + down.stderr);
  assert.equal(JSON.parse(down.stdout).error.code, "transport");
  // A malformed endpoint is a bad argument.
  const bad = await run(["inspect", "--endpoint", "ftp://x", "--bucket", bucket], storeEnv());
  assert.equal(bad.code, 2, bad.stderr);
  // Its code said once: not "invalid-input: invalid input: ...".
  assert.match(bad.stderr, /^celld-edge: invalid-input: (?!invalid input)\S.*"ftp:\/\/x"/);
});

test("probe qualifies ministack once, text and --json; a store that ignores conditions exits 1", async () => {
  const { mod } = await api();
  const prefix = `t-cli-probe-${Math.random().toString(36).slice(2, 10)}/`;
  const args = ["probe", "--endpoint", ATOMIC, "--bucket", process.env.CELLD_TEST_ATOMIC_BUCKET, "--prefix", prefix];
  const json = await run([...args, "--json"], storeEnv());
  assert.equal(json.code, 0, json.stderr);
  const out = JSON.parse(json.stdout);
  assert.equal(out.qualified, true);
  assert.equal(out.prefix, prefix);
  assert.equal(out.record, `${prefix}probe/qualified.json`);
  assert.equal(out.previous, null, "a fresh prefix had no verdict");
  assert.deepEqual(Object.keys(out.report), ["ifMatchMissingStatus", "conditionalDelete", "etagQuoted"]);
  // Probing an already qualified bucket says when it was qualified, and that it qualified it again.
  const text = await run(args, storeEnv());
  assert.equal(text.code, 0, text.stderr);
  const [, at] = /^Qualified: .* honours conditional writes\.\nIt was already qualified at (\S+) \(\S+ ago\): this probe qualified it again and replaced that record\.\nRecorded at t-cli-probe-.*\/probe\/qualified\.json/.exec(text.stdout) ?? [];
  assert.ok(at, text.stdout);
  assert.ok(Math.abs(Date.parse(at) - Date.now()) < 120_000, `qualified at ${at}, by the first run`);
  const again = JSON.parse((await run([...args, "--json"], storeEnv())).stdout);
  assert.equal(again.previous.verdict, "qualified");
  assert.ok(Date.parse(again.previous.at) >= Date.parse(at), `${again.previous.at}: the second run's record`);
  // The verdict is in the bucket: a new instance reads it and runs no probe of its own.
  const sent = [];
  const store = { endpoint: ATOMIC, bucket: process.env.CELLD_TEST_ATOMIC_BUCKET, region: "us-east-1", accessKeyId: process.env.CELLD_TEST_ATOMIC_KEY_ID, secretAccessKey: process.env.CELLD_TEST_ATOMIC_SECRET };
  const own = new mod.S3Ownership({ ...store, prefix, node: "after-probe", fetch: (r) => (sent.push(`${r.method} ${new URL(r.url).pathname}`), fetch(r)) });
  await own.acquireLease();
  assert.ok(!sent.some((s) => s.startsWith("PUT") && /\/probe\/(?!qualified)/.test(s)), sent.join("\n"));

  // A store that ignores conditions (what s3rver does): ministack behind a proxy that drops them. It needs
  // a store that checks no signature (ministack): dropping signed headers breaks any signature.
  const lax = createServer(async (req, res) => {
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["if-match", "if-none-match", "host", "connection"].includes(k)));
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = ["GET", "HEAD"].includes(req.method) ? undefined : Buffer.concat(chunks);
    const up = await fetch(`${ATOMIC}${req.url}`, { method: req.method, headers, body });
    const out = Buffer.from(await up.arrayBuffer());
    res.writeHead(up.status, Object.fromEntries([...up.headers].filter(([k]) => k !== "content-encoding" && k !== "transfer-encoding"))).end(out);
  });
  await new Promise((resolve) => lax.listen(0, "127.0.0.1", resolve));
  try {
    const laxPrefix = `t-cli-lax-${Math.random().toString(36).slice(2, 10)}/`;
    const r = await run(["probe", "--endpoint", `http://127.0.0.1:${lax.address().port}`, "--bucket", store.bucket, "--prefix", laxPrefix], storeEnv());
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /^celld-edge: store-violation: /);
    assert.equal(r.stdout, "");
  } finally {
    lax.close();
  }
});
