// Stores that half-honour conditions (SPEC §6, 2026-12-06; issue 36), each reproduced by the dialect
// front of the test command (scripts/lib/store-front.mjs in front of ministack, chosen by the prefix):
// the probe refuses the ones that cannot keep ownership safe, naming why, and adapts to the one it can.
import { test } from "node:test";
import assert from "node:assert/strict";
import { S3Ownership } from "celld-edge";
import { testServer } from "../common/signing.mjs";

const atomic = testServer(process.env, "CELLD_TEST_ATOMIC");
const front = process.env.CELLD_TEST_DIALECT_ENDPOINT;
if (!front) throw new Error("CELLD_TEST_DIALECT_ENDPOINT is not set: run through scripts/test");
const unique = () => `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
const store = (dialect, node = "n") => new S3Ownership({ ...atomic, endpoint: front, region: "us-east-1", prefix: `${dialect}-${unique()}/`, node });

async function refusal(own) {
  const err = await own.probe().then(() => null, (e) => e);
  assert.ok(err, "the probe passed");
  assert.equal(err.code, "store-violation", err.message);
  return err;
}

test("concurrent If-None-Match: * creates that all win (Tigris before April 2026) are refused with the count", async () => {
  const err = await refusal(store("multi-winner"));
  const [, count] = /concurrent-create: (\d) of 8 concurrent conditional writes to one key applied; at most 1 may/.exec(err.message) ?? [];
  assert.ok(Number(count) >= 2, err.message);
});

test("If-Match honoured only unquoted, or only quoted, is refused naming the quoting", async () => {
  const unquoted = await refusal(store("if-match-unquoted"));
  assert.match(unquoted.message, /at step if-match-quoting: If-Match is honoured only unquoted: the ETag sent back exactly as the store gave it \("[0-9a-f]+"\) did not match/);
  const quoted = await refusal(store("if-match-quoted"));
  assert.match(quoted.message, /at step if-match-quoting: If-Match is honoured only quoted: the ETag sent back exactly as the store gave it \([0-9a-f]+\) did not match/);
});

test("a PUT that ignores If-None-Match (GCS's XML API) is refused naming it", async () => {
  const err = await refusal(store("put-ignores-if-none-match"));
  assert.match(err.message, /If-None-Match: \* on a key that exists was applied .*the store ignores If-None-Match on PUT/);
});

test("a DELETE that ignores If-Match turns conditional deletes off, and ownership works without them", async () => {
  const own = store("delete-ignores-if-match", "d");
  const report = await own.probe();
  assert.equal(report.conditionalDelete, false);
  await own.acquireLease();
  assert.equal((await own.claim("c")).outcome, "applied");
  const closed = await own.close({ release: true });
  assert.deepEqual([closed.retired, closed.deleted], [true, false]);
  assert.equal(await own.readNodeLease("d").then((l) => l?.expiresMs ?? null), 0, "retired, and not deleted without a condition the store would honour");
});
