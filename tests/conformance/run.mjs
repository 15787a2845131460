// Conformance runner for one S3-compatible server (called by scripts/conformance, one server at a time):
// runs the store probe five times on fresh instances and prefixes, recording what the store answered at
// each step, then — if the probe ever passed — the shared ownership suite with the probe on in every
// instance. Prints one JSON result on stdout. It only ever talks to the endpoint it is given, and it must
// never judge the store itself: verdicts come from the library's probe and the suite's assertions.
//
//   node tests/conformance/run.mjs NAME VERSION ENDPOINT BUCKET ACCESS_KEY_ID SECRET
import * as api from "celld-edge";
import { ownershipChecks } from "../common/ownership.mjs";

const [name, version, endpoint, bucket, accessKeyId, secretAccessKey] = process.argv.slice(2);
if (!secretAccessKey) {
  console.error("usage: run.mjs NAME VERSION ENDPOINT BUCKET ACCESS_KEY_ID SECRET");
  process.exit(2);
}
const RUNS = 5; // probe runs recorded step by step
const TALLY_RUNS = +(process.env.CONFORMANCE_TALLY_RUNS ?? 45); // further runs, only counted: a race shows in rates
const CHECK_TIMEOUT_MS = 60_000;
const { S3Ownership, signRequest } = api;
const base = { endpoint, bucket, region: "us-east-1", accessKeyId, secretAccessKey };
const runId = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** The store's own error code from an S3 XML error body, if any. */
function errorCode(text) {
  return /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? "";
}

/** Creates the bucket; an existing one (ours, or made by the server's own setup) is fine. */
async function ensureBucket() {
  const signed = signRequest({ method: "PUT", url: `${endpoint}/${bucket}`, body: "", ...base });
  const res = await fetch(signed.url, { method: "PUT", headers: signed.headers });
  const text = await res.text();
  if (res.ok || ["BucketAlreadyOwnedByYou", "BucketAlreadyExists"].includes(errorCode(text))) return;
  throw new Error(`creating bucket ${bucket}: ${res.status} ${errorCode(text) || text.slice(0, 200)}`);
}

// The probe tags its bodies ({"probe":"<tag>",...}); this maps each tag to the step that sent it.
const STEP_OF_TAG = [
  [/^create$/, "create"],
  [/^again$/, "create-again"],
  [/^update$/, "update-current"],
  [/^stale$/, "update-stale"],
  [/^create-\d+$/, "concurrent-create"],
  [/^update-\d+$/, "concurrent-update"],
  [/^missing$/, "if-match-missing"],
];
const STEPS = [...STEP_OF_TAG.map(([, s]) => s), "conditional-delete"];

/** A fetch that records, for every request the probe sends, which step sent it and what came back. */
function tracingFetch(log) {
  return async (url, init = {}) => {
    const headers = init.headers ?? {};
    const bodyText = init.body ? new TextDecoder().decode(init.body) : "";
    let step = null;
    const tag = /"probe":"([^"]*)"/.exec(bodyText)?.[1];
    if (init.method === "PUT" && tag) step = STEP_OF_TAG.find(([re]) => re.test(tag))?.[1] ?? `unknown tag ${tag}`;
    if (init.method === "DELETE" && headers["if-match"]) step = "conditional-delete";
    let res;
    try {
      res = await fetch(url, init);
    } catch (e) {
      if (step) log.push({ step, answer: `network error: ${e.message}` });
      throw e;
    }
    if (step) {
      const code = res.ok ? "" : errorCode(await res.clone().text());
      const etag = res.headers.get("etag");
      log.push({ step, answer: `${res.status}${code ? ` ${code}` : ""}${res.ok && !etag && init.method === "PUT" ? " (no ETag)" : ""}` });
    }
    return res;
  };
}

/** "200" or "1×200, 7×412 PreconditionFailed": each step's answers, in the order first seen. */
function summarise(log) {
  const out = {};
  for (const step of STEPS) {
    const counts = new Map();
    for (const e of log) if (e.step === step) counts.set(e.answer, (counts.get(e.answer) ?? 0) + 1);
    if (counts.size === 0) continue;
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    const sorted = [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    out[step] = total === 1 ? sorted[0][0] : sorted.map(([a, n]) => `${n}×${a}`).join(", ");
  }
  return out;
}

async function probeRuns() {
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    const log = [];
    const own = new S3Ownership({ ...base, node: `conf-${i}`, prefix: `conf-${runId}-${i}/`, fetch: tracingFetch(log) });
    const started = performance.now();
    const run = {};
    try {
      run.report = await own.probe();
      run.ok = true;
    } catch (e) {
      run.ok = false;
      run.error = { code: e.code ?? null, message: String(e.message ?? e) };
      run.step = /at step (\S+):/.exec(run.error.message)?.[1] ?? e.code ?? "error";
    }
    run.ms = Math.round(performance.now() - started);
    run.steps = summarise(log);
    runs.push(run);
  }
  return runs;
}

/** Whether the store checks signatures: a read signed with a wrong secret must be refused as `auth`. */
async function checksSignatures() {
  const own = new S3Ownership({ ...base, secretAccessKey: `${secretAccessKey}-wrong`, node: "conf-badsig", prefix: `conf-${runId}-badsig/`, probe: false });
  try {
    await own.readOwner("c");
    return { strict: false, answer: "a read signed with a wrong secret was served" };
  } catch (e) {
    const status = /: (\d{3} [A-Za-z]*)/.exec(String(e.message))?.[1] ?? String(e.message);
    return { strict: e.code === "auth", answer: `${e.code}, ${status}` };
  }
}

/** Further probe runs, counting only how each ended: one run says little about a store that races sometimes. */
async function tallyRuns() {
  const tally = { runs: TALLY_RUNS, passed: 0, refused: {} };
  for (let i = 0; i < TALLY_RUNS; i++) {
    const own = new S3Ownership({ ...base, node: `conf-t${i}`, prefix: `conf-${runId}-t${i}/` });
    try {
      const report = await own.probe();
      tally.report ??= report;
      tally.passed++;
    } catch (e) {
      const step = /at step (\S+):/.exec(String(e.message))?.[1] ?? e.code ?? "error";
      tally.refused[step] = (tally.refused[step] ?? 0) + 1;
    }
  }
  return tally;
}

/** Runs one check with a deadline, so a hung store cannot stall the whole matrix. */
async function runCheck(fn) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([fn(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function suite(variants) {
  const server = { name, atomic: true, variants, ...base };
  const results = [];
  for (const [check, fn] of ownershipChecks({ api, server, runtime: "conf" })) {
    const started = performance.now();
    const r = { name: check.slice(name.length + 2) };
    try {
      await runCheck(fn);
      r.ok = true;
    } catch (e) {
      r.ok = false;
      r.error = `${e.code ? `[${e.code}] ` : ""}${e.message ?? e}`;
    }
    r.ms = Math.round(performance.now() - started);
    results.push(r);
  }
  return results;
}

const result = { name, version, endpoint };
try {
  await ensureBucket();
  result.signatures = await checksSignatures();
  result.probe = await probeRuns();
  result.tally = await tallyRuns();
  // The suite's variants check compares against what this store's own probe reported when it first passed.
  const report = result.probe.find((r) => r.ok)?.report ?? result.tally.report;
  result.suite = report ? await suite(report) : null;
} catch (e) {
  result.error = String(e.message ?? e);
}
process.stdout.write(JSON.stringify(result, null, 1) + "\n");
// The renewal loops are stopped by the checks; exit anyway in case a failed check left a timer behind.
process.exit(0);
