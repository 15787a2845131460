// Node suite for memory use. The JS heap: per-call objects (signals) must not pile up on a claim. Wasm
// memory: it never shrinks, so a leak (of buffers, futures, closures or JS handles across the boundary)
// shows as growth: a workload repeated over and over must reach a steady size and stay there. Runs the
// same seeded mix of signatures (small to 300 KB bodies, up to 40 headers) and of lease/claim/release
// rounds against ministack several times, and checks that wasm memory stopped growing after the first
// rounds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
// The unbundled Node entry (the package's is one bundled file), so that the glue module below is the very
// instance it initialised, and `ioMemory()` is its memory.
import * as api from "../../js/node.js";
import { ioMemory } from "../../pkg/celld_edge.js";
import { atomicStore } from "../common/ownership.mjs";

const bytes = () => ioMemory().buffer.byteLength;
const creds = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1" };

/** One round of signatures, the same every time (seeded). */
function signRound() {
  let seed = 7;
  const rnd = (n) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  for (let i = 0; i < 1500; i++) {
    const body = new Uint8Array(rnd(10) === 0 ? rnd(300_000) : rnd(3000));
    const headers = {};
    for (let j = rnd(40); j > 0; j--) headers[`x-amz-meta-${j}`] = "v".repeat(rnd(300));
    const url = `https://b.s3.amazonaws.com/k${i}/${"p".repeat(rnd(500))}?q=${"q".repeat(rnd(1000))}`;
    if (rnd(4) === 0) api.presignUrl({ ...creds, url, signedHeaders: headers, expiresIn: 1 + rnd(604_800) });
    else api.signRequest({ ...creds, method: "PUT", url, headers, body: rnd(2) ? body : "é".repeat(body.length / 2) });
  }
}

test("signing the same mix again and again does not grow wasm memory", () => {
  signRound();
  signRound();
  const settled = bytes();
  for (let r = 0; r < 4; r++) signRound();
  assert.equal(bytes(), settled);
});

test("lease, claim and release rounds do not grow wasm memory", async () => {
  const prefix = `t-memory-${Math.random().toString(36).slice(2, 10)}/`;
  const own = new api.S3Ownership({ ...atomicStore(process.env), prefix, node: "m" });
  await own.acquireLease();
  const round = async () => {
    for (let i = 0; i < 40; i++) {
      const cell = `cell-${i}`;
      assert.equal((await own.claim(cell)).outcome, "applied");
      await own.owner(cell);
      await own.release(cell);
    }
    await own.renewLease();
  };
  await round();
  await round();
  const settled = bytes();
  for (let r = 0; r < 3; r++) await round();
  assert.equal(bytes(), settled);
});

// SPEC 4.4: a Worker isolate or a server lives for days; per-call objects must not pile up on a claim.
test("200,000 signal(cell) calls on one claim grow the JS heap by less than 5 MiB", async () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc");
  const prefix = `t-memory-signals-${Math.random().toString(36).slice(2, 10)}/`;
  const own = new api.S3Ownership({ ...atomicStore(process.env), prefix, node: "m-signals", probe: false });
  await own.acquireLease();
  own.startRenewing();
  try {
    assert.equal((await own.claim("c")).outcome, "applied");
    const calls = (n) => {
      for (let i = 0; i < n; i++) if (own.signal("c").aborted) throw new Error("the claim ended");
    };
    calls(1000);
    gc();
    const before = process.memoryUsage().heapUsed;
    calls(200_000);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.ok(grown < 5 * 1024 * 1024, `the heap grew by ${(grown / 1024 / 1024).toFixed(1)} MiB`);
  } finally {
    await own.close({ release: true });
  }
});
