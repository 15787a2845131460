// Deno example: one node that owns one cell and does fenced work for it until Ctrl-C.
// It acquires a lease, keeps it renewed (startRenewing), claims the cell, and writes a data object every
// WORK_EVERY_MS under cells/<cell>/data/e<epoch>/, acknowledging each write only after verify(cell, epoch)
// says this node still owns the cell at that epoch. On SIGINT it finishes the write in flight, releases
// the cell (the epoch is kept) and exits. One JSON line per step on stdout; onEvent's events on stderr.
//
//   deno run --allow-net --allow-env --config examples/deno/deno.json examples/deno/cell-worker.js
// Settings (environment): S3_ENDPOINT, S3_BUCKET, S3_REGION (default auto), AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, CELL, and optionally NODE_ID (default random: ids must be unique per running
// process), S3_PREFIX, LEASE_TTL_MS, MAX_CLOCK_SKEW_MS, WORK_EVERY_MS.
// (In your own project, map "celld-edge" to "npm:celld-edge" instead of this repo's js/inline.js.)
import { S3Ownership, signRequest } from "celld-edge";

const env = (name, fallback) => Deno.env.get(name) || fallback;
const say = (line) => console.log(JSON.stringify(line));
const store = {
  endpoint: env("S3_ENDPOINT"),
  bucket: env("S3_BUCKET"),
  region: env("S3_REGION", "auto"),
  accessKeyId: env("AWS_ACCESS_KEY_ID"),
  secretAccessKey: env("AWS_SECRET_ACCESS_KEY"),
  prefix: env("S3_PREFIX", ""),
};
const cell = env("CELL", "cell-1");
const own = new S3Ownership({
  ...store,
  node: env("NODE_ID", `deno-${crypto.randomUUID()}`),
  leaseTtlMs: Number(env("LEASE_TTL_MS", 10000)),
  maxClockSkewMs: Number(env("MAX_CLOCK_SKEW_MS", 1000)),
  onEvent: (event) => console.error(JSON.stringify(event)),
});

await own.acquireLease();
let stopping = false;
own.startRenewing((e) => {
  say({ ev: "renewal-failed", code: e.code, message: e.message });
  if (e.code === "fenced" || e.code === "not-leased") stopping = true; // the claim is void: stop working
});

const claim = await own.claim(cell);
if (claim.outcome !== "applied") {
  say({ ev: "owned-elsewhere", cell, owner: claim.owner });
  own.stopRenewing();
  Deno.exit(1);
}
const epoch = claim.epoch;
say({ ev: "claimed", cell, epoch, tookOver: claim.tookOver });

/** Writes one data object under this epoch's keys; true once it is written AND the claim still holds. */
async function work(seq) {
  const key = `${store.prefix}cells/${cell}/data/e${epoch}/${String(seq).padStart(6, "0")}.json`;
  const url = `${store.endpoint}/${store.bucket}/${key.split("/").map(encodeURIComponent).join("/")}`;
  const body = JSON.stringify({ cell, epoch, seq, at: new Date().toISOString() });
  const { region, accessKeyId, secretAccessKey } = store;
  const signed = signRequest({ method: "PUT", url, body, headers: { "content-type": "application/json" }, region, accessKeyId, secretAccessKey });
  const res = await fetch(signed.url, { method: "PUT", headers: signed.headers, body });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`PUT ${key}: ${res.status}`);
  // The fence: acknowledge only if this node still owns the cell at this epoch.
  if (!(await own.verify(cell, epoch))) return false;
  say({ ev: "ack", key });
  return true;
}

const done = Promise.withResolvers();
Deno.addSignalListener("SIGINT", () => done.resolve("SIGINT"));
const every = Number(env("WORK_EVERY_MS", 500));
let seq = 0;
while (!stopping) {
  try {
    if (!(await work(++seq))) stopping = true;
  } catch (e) {
    say({ ev: "work-failed", code: e.code, message: e.message }); // not acknowledged; try again
  }
  if ((await Promise.race([done.promise, new Promise((r) => setTimeout(r, every, "tick"))])) === "SIGINT") break;
}

own.stopRenewing();
if (stopping) {
  say({ ev: "fenced", cell, epoch }); // someone else may own the cell now: release nothing
  Deno.exit(1);
}
say({ ev: "released", cell, epoch, outcome: await own.release(cell) });
Deno.exit(0);
