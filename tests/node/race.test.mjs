// The race: 8 nodes in two runtimes (4 in this Node process, 4 in a Deno process) contend for a few cells
// of the atomic server, 200 claims each. Checked against the store itself: each (cell, epoch) has exactly
// one winner, every epoch from 1 to the record's final epoch was won by someone (no write landed unseen),
// and every winner verified its claim and released it.
import { test } from "node:test";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as api from "celld-edge";
import { ownershipServers } from "../common/ownership.mjs";
import { race } from "../race/racer.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const [atomic] = ownershipServers(process.env);
const server = { endpoint: atomic.endpoint, bucket: atomic.bucket, accessKeyId: atomic.accessKeyId, secretAccessKey: atomic.secretAccessKey };

function runDeno(orders) {
  return new Promise((resolve, reject) => {
    execFile(
      `${root}/node_modules/.bin/deno`,
      ["run", "-A", "--config", `${root}/tests/deno/deno.json`, `${root}/tests/race/deno-racer.mjs`, JSON.stringify(orders)],
      { env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" }, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => (err ? reject(new Error(`deno racer: ${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout))),
    );
  });
}

test("8 nodes in Node and Deno, 200 contended claims each: one winner per (cell, epoch), matching the store", async () => {
  const prefix = `race-${Date.now()}/`;
  const cells = ["alpha", "beta", "gamma", "delta"];
  const claimsPerNode = 200;
  const orders = (rt) => ({ server, prefix, cells, claimsPerNode, nodes: [0, 1, 2, 3].map((i) => `${rt}-${i}`) });
  const [here, there] = await Promise.all([race({ api, ...orders("node") }), runDeno(orders("deno"))]);
  const log = [...here.log, ...there.log];
  const errors = [...here.errors, ...there.errors];
  if (errors.length) throw new Error(`errors during the race:\n${errors.join("\n")}`);
  if (log.length !== 8 * claimsPerNode) throw new Error(`expected ${8 * claimsPerNode} outcomes, got ${log.length}`);

  const reader = new api.S3Ownership({ ...server, prefix, node: "checker" });
  let wins = 0;
  for (const cell of cells) {
    const winners = new Map();
    for (const r of log.filter((r) => r.cell === cell && r.outcome === "applied")) {
      if (winners.has(r.epoch)) throw new Error(`${cell} epoch ${r.epoch} won by both ${winners.get(r.epoch).node} and ${r.node}`);
      if (!r.verified) throw new Error(`${r.node} won ${cell}@${r.epoch} but did not verify it`);
      if (r.released !== "applied") throw new Error(`${r.node} could not release ${cell}@${r.epoch}: ${r.released}`);
      winners.set(r.epoch, r);
    }
    const record = await reader.readOwner(cell);
    const final = record ? record.epoch : 0;
    for (let e = 1; e <= final; e++) {
      if (!winners.has(e)) throw new Error(`${cell}: epoch ${e} is in the store's history but no node reported winning it`);
    }
    if (winners.size !== final) throw new Error(`${cell}: ${winners.size} winners but the record is at epoch ${final}`);
    if (record && record.node !== null) throw new Error(`${cell}: every winner released, yet the record names ${record.node}`);
    wins += winners.size;
  }
  const rejected = log.length - wins;
  if (wins < 50 || rejected < 50) throw new Error(`not contended enough: ${wins} wins, ${rejected} rejections`);
  console.log(`race: ${wins} wins, ${rejected} rejections across ${cells.length} cells`);
});
