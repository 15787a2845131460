// The Deno example (examples/deno/cell-worker.js) run as users run it, in its own Deno process against
// ministack: it must report its claim and acknowledged writes, and on SIGINT release the cell (epoch kept)
// and exit 0. Checked from the store: the data objects it acknowledged exist under the epoch's keys, the
// owner record is released, and a second run claims the released cell at the next epoch.
import { S3Ownership, signRequest } from "celld-edge";
import { atomicStore } from "../common/ownership.mjs";

const env = Deno.env.toObject();
const store = atomicStore(env);
const script = new URL("../../examples/deno/cell-worker.js", import.meta.url).pathname;
const config = new URL("../../examples/deno/deno.json", import.meta.url).pathname;

function fail(message) {
  throw new Error(message);
}

/** Runs the example until it has acknowledged `acks` writes, then sends SIGINT; returns its JSON lines. */
async function runExample(prefix, cell, acks) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--allow-env", "--config", config, script],
    env: {
      DENO_NO_UPDATE_CHECK: "1",
      S3_ENDPOINT: store.endpoint, S3_BUCKET: store.bucket, S3_REGION: store.region, S3_PREFIX: prefix,
      AWS_ACCESS_KEY_ID: store.accessKeyId, AWS_SECRET_ACCESS_KEY: store.secretAccessKey,
      CELL: cell, LEASE_TTL_MS: "3000", MAX_CLOCK_SKEW_MS: "500", WORK_EVERY_MS: "100",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = [];
  let signalled = false;
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  let buf = "";
  for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
    if (!signalled && lines.filter((l) => l.ev === "ack").length >= acks) {
      child.kill("SIGINT");
      signalled = true;
    }
  }
  const status = await child.status;
  clearTimeout(timer);
  const events = (await stderr).split("\n").filter(Boolean).map((l) => JSON.parse(l));
  if (!signalled) fail(`the example exited before ${acks} acks: ${JSON.stringify(lines)}`);
  if (status.code !== 0) fail(`exit ${status.code} after SIGINT: ${JSON.stringify(lines)}`);
  return { lines, events };
}

async function readObject(prefix, key) {
  const url = `${store.endpoint}/${store.bucket}/${key.split("/").map(encodeURIComponent).join("/")}`;
  const { region, accessKeyId, secretAccessKey } = store;
  const signed = signRequest({ region, accessKeyId, secretAccessKey, url });
  const res = await fetch(signed.url, { headers: signed.headers });
  return res.status === 200 ? res.json() : (await res.body?.cancel(), null);
}

Deno.test("examples/deno: claim, fenced writes acknowledged after verify, release on SIGINT", async () => {
  const prefix = `deno-example-${Date.now()}/`;
  const cell = "orders:eu.1"; // celld's ids (the default), percent-encoded in the path
  const observer = new S3Ownership({ ...store, prefix, node: "observer", probe: false });

  for (const expectedEpoch of [1, 2]) {
    const { lines, events } = await runExample(prefix, cell, 3);
    const claimed = lines.find((l) => l.ev === "claimed") ?? fail(`no claim reported: ${JSON.stringify(lines)}`);
    if (claimed.epoch !== expectedEpoch) fail(`run ${expectedEpoch}: claimed at epoch ${claimed.epoch}`);
    const acked = lines.filter((l) => l.ev === "ack").map((l) => l.key);
    for (const key of acked) {
      if (!key.startsWith(`${prefix}cells/${cell}/data/e${expectedEpoch}/`)) fail(`data key ${key} is not under epoch ${expectedEpoch}`);
      const obj = await readObject(prefix, key);
      if (!obj || obj.epoch !== expectedEpoch || obj.cell !== cell) fail(`acknowledged ${key} is not in the store: ${JSON.stringify(obj)}`);
    }
    const released = lines.at(-1);
    if (released.ev !== "released" || released.outcome !== "applied") fail(`last line should be the release: ${JSON.stringify(released)}`);
    const rec = await observer.readOwner(cell);
    if (rec === null || rec.node !== null || rec.epoch !== expectedEpoch) fail(`after SIGINT the record should be released at epoch ${expectedEpoch}: ${JSON.stringify(rec)}`);
    const kinds = new Set(events.map((e) => e.type));
    for (const kind of ["lease-acquired", "claim-applied"]) if (!kinds.has(kind)) fail(`onEvent never reported ${kind}: ${[...kinds]}`);
    if (JSON.stringify(events).includes(store.secretAccessKey)) fail("an event carries the secret");
  }
});
