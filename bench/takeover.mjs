// Benchmark (not a test): how long a dead holder blocks its cells (SPEC 4.4, §8), from the holder's death
// (SIGKILL of its process, so it neither releases nor retires its lease) to a peer's applied takeover, for
// a peer that keeps asking (a claim every `ASK_MS`, as a Worker receiving requests does), one that waits
// (a `claim(cell, { wait: true })` begun while the holder lived: it sleeps until the holder's lease can be
// judged dead) and one that arrives fresh (a new instance made at the kill: lease, then a waiting claim);
// and from a graceful `release()` (the holder lives on) to the claim of a peer that keeps asking and of one
// that waits. Prints p50 and p99 (ms) per case, and the bound README.md states beside them.
// Run: bench/takeover [samples] (starts the servers itself: versitygw, whose `Date` is cached up to a
// second, the worst store here)   or   node bench/takeover.mjs [samples] with CELLD_TEST_REAL_* set.
// TAKEOVER_TTL_MS / TAKEOVER_SKEW_MS: the lease options (default: the library's, 10000 / 1000).
// TAKEOVER_PARALLEL: samples measured at once (default 5; each on its own prefix). Writes what it printed to
// bench/takeover-latest.json (not with TAKEOVER_NO_RECORD set), the record README.md's figures are checked against.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { storeFromEnv } from "./store-env.mjs";

const here = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
const store = storeFromEnv("REAL", "bench/takeover");
const samples = Number(process.argv[2] ?? 20);
const parallel = Number(process.env.TAKEOVER_PARALLEL ?? 5);
const lease = { leaseTtlMs: Number(process.env.TAKEOVER_TTL_MS ?? 10_000), maxClockSkewMs: Number(process.env.TAKEOVER_SKEW_MS ?? 1_000) };
/** How often the asking peer claims. */
const ASK_MS = 250;
const { S3Ownership } = await import(pathToFileURL(`${here}/pkg/node.js`).href);

const peer = (prefix, node) => new S3Ownership({ ...store, prefix, node, addr: `${node}:1`, ...lease, probe: false });

/** A holder in a process of its own (bench/takeover-holder.mjs), holding `cells` once it says so. */
async function holder(prefix, cells) {
  const orders = { root: here, store, prefix, node: "holder", cells, ...lease };
  const child = spawn(process.execPath, [`${here}/bench/takeover-holder.mjs`, JSON.stringify(orders)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  for (let i = 0; !out.includes("held"); i++) {
    if (child.exitCode !== null || i > 3000) throw new Error(`the holder did not hold its cells (exit ${child.exitCode})`);
    await sleep(10);
  }
  return child;
}

/** Claims `cell` every ASK_MS until applied; resolves the instant it was. */
async function asking(own, cell) {
  for (;;) {
    const r = await own.claim(cell);
    if (r.outcome === "applied") return performance.now();
    await sleep(ASK_MS);
  }
}

/** One crash: the holder holds three cells; an asking and a waiting peer watch two, a fresh one comes for the third. */
async function crash(n) {
  const prefix = `bench-takeover-${Date.now()}-crash-${n}/`;
  const child = await holder(prefix, ["asked", "waited", "fresh"]);
  const watcher = peer(prefix, "watcher");
  await watcher.acquireLease();
  watcher.startRenewing();
  const asked = asking(watcher, "asked");
  const waited = watcher.claim("waited", { wait: true }).then(() => performance.now());
  // Killed at a random moment of the holder's renewal cycle.
  await sleep(500 + Math.random() * lease.leaseTtlMs);
  child.kill("SIGKILL");
  await once(child, "exit");
  const killedAt = performance.now();
  const fresh = peer(prefix, "newcomer");
  await fresh.acquireLease();
  fresh.startRenewing();
  await fresh.claim("fresh", { wait: true });
  const freshAt = performance.now();
  const out = { asking: (await asked) - killedAt, waiting: (await waited) - killedAt, fresh: freshAt - killedAt };
  await Promise.all([watcher.close(), fresh.close()]);
  return out;
}

/** One graceful release: the holder (alive, renewing) releases its cell at a random moment. */
async function release(n) {
  const prefix = `bench-takeover-${Date.now()}-release-${n}/`;
  const [h, p] = [peer(prefix, "holder"), peer(prefix, "watcher")];
  for (const o of [h, p]) {
    await o.acquireLease();
    o.startRenewing();
  }
  for (const c of ["asked", "waited"]) if ((await h.claim(c)).outcome !== "applied") throw new Error(`holder: ${c}`);
  const asked = asking(p, "asked");
  const waited = p.claim("waited", { wait: true }).then(() => performance.now());
  await sleep(500 + Math.random() * lease.leaseTtlMs);
  await Promise.all([h.release("asked"), h.release("waited")]);
  const releasedAt = performance.now();
  const out = { asking: (await asked) - releasedAt, waiting: (await waited) - releasedAt };
  await Promise.all([h.close(), p.close()]);
  return out;
}

/** `samples` runs of `one`, `parallel` at a time. */
async function measure(one) {
  const results = [];
  for (let n = 0; n < samples; n += parallel) {
    const batch = Array.from({ length: Math.min(parallel, samples - n) }, (_, i) => one(n + i));
    results.push(...(await Promise.all(batch)));
  }
  return results;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const row = (what, xs) => ({ case: what, p50: Math.round(pct(xs, 50)), p99: Math.round(pct(xs, 99)), max: Math.round(Math.max(...xs)), n: xs.length });

const crashes = await measure(crash);
const releases = await measure(release);
const { leaseTtlMs: ttl, maxClockSkewMs: skew } = lease;
console.log(`takeover (ms), leaseTtlMs ${ttl}, maxClockSkewMs ${skew}, ${samples} samples each, ${parallel} at a time; asking peer claims every ${ASK_MS} ms`);
const rows = [
  row("crash -> peer that keeps asking", crashes.map((r) => r.asking)),
  row("crash -> waiting peer", crashes.map((r) => r.waiting)),
  row("crash -> fresh peer", crashes.map((r) => r.fresh)),
  row("release() -> peer that keeps asking", releases.map((r) => r.asking)),
  row("release() -> waiting peer", releases.map((r) => r.waiting)),
];
console.table(rows);
// The figures README.md states (tests/node/readme-figures.test.mjs checks them against this file).
const record = { date: new Date().toISOString().slice(0, 10), store: "versitygw", ...lease, askMs: ASK_MS, samples, parallel, rows };
if (!process.env.TAKEOVER_NO_RECORD) writeFileSync(`${here}/bench/takeover-latest.json`, `${JSON.stringify(record, null, 1)}\n`);
// README.md, "How long a dead holder blocks its cells": the bound these figures sit under. `span`: the
// store's `Date` span (clock::DATE_SPAN_MS), once for the holder's estimate and once for the peer's.
const span = 2_000;
console.log(`bound after a crash: leaseTtlMs × 1.0025 + 2 × Date span + a round trip = ${Math.round(ttl * 1.0025 + 2 * span)} ms + RTT (+ ${ASK_MS} ms for the asking peer)`);
