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
    [["list"], CREDS, 'unknown command "list"'],
    [["inspect", ...base, "--bogus"], CREDS, "--bogus"],
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
    assert.equal(r.stdout, "");
  }
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
  // A node that stops renewing: dead once expires + skew has passed.
  const b = new mod.S3Ownership({ ...store, prefix, node: "cli-b", leaseTtlMs: 600, maxClockSkewMs: 100, probe: false });
  await b.acquireLease();
  assert.equal((await b.claim("delta")).outcome, "applied");
  await new Promise((resolve) => setTimeout(resolve, 800));

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
    assert.match(r.stderr, /^celld-edge: request: .*not an S3 API/);
  } finally {
    html.close();
  }
  // Nothing listening: a transport error carrying the cause.
  const r = await run(["inspect", "--endpoint", "http://127.0.0.1:9", "--bucket", bucket], storeEnv());
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /^celld-edge: transport: /);
  // A missing bucket.
  const nb = await run(["inspect", "--endpoint", ATOMIC, "--bucket", "no-such-bucket-here", "--json"], storeEnv());
  assert.equal(nb.code, 1, nb.stderr);
  assert.match(nb.stderr, /NoSuchBucket/);
  // A malformed endpoint is a bad argument.
  const bad = await run(["inspect", "--endpoint", "ftp://x", "--bucket", bucket], storeEnv());
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /^celld-edge: invalid-input: /);
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
  assert.deepEqual(Object.keys(out.report), ["ifMatchMissingStatus", "conditionalDelete", "etagQuoted"]);
  const text = await run(args, storeEnv());
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^Qualified: .* honours conditional writes\.\nRecorded at t-cli-probe-.*\/probe\/qualified\.json/);
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
