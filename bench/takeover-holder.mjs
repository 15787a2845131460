// The holder of bench/takeover.mjs, as its own process so that the bench can kill it: acquires a lease,
// renews it, claims the cells it is given, says "held" on stdout and then only keeps its lease renewed
// until it is killed. Usage: node takeover-holder.mjs '{"root":…,"store":…,"prefix":…,"node":…,"cells":[…],…}'
import { pathToFileURL } from "node:url";
import { withoutDate } from "./without-date.mjs";

const o = JSON.parse(process.argv[2]);
const { S3Ownership } = await import(pathToFileURL(`${o.root}/pkg/node.js`).href);
const fetch = o.hideDate ? withoutDate : globalThis.fetch;
const own = new S3Ownership({ ...o.store, prefix: o.prefix, node: o.node, addr: `${o.node}:1`, leaseTtlMs: o.leaseTtlMs, maxClockSkewMs: o.maxClockSkewMs, probe: false, fetch });
await own.acquireLease();
own.startRenewing((e) => process.stderr.write(`holder renewal: ${e.code} ${e.message}\n`));
for (const cell of o.cells) {
  const r = await own.claim(cell);
  if (r.outcome !== "applied") throw new Error(`holder could not claim ${cell}: ${JSON.stringify(r)}`);
}
process.stdout.write("held\n");
