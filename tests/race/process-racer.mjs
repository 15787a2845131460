// One node of the cross-process race (tests/node/race.test.mjs), as its own Node process so that the test
// can kill, pause and restart it. It claims random cells until its stop file appears; for each claim won
// it holds the cell and acts on it a few times (each act stamped *before* checking leaseValid(), so a
// pause between the two can only hide an act, never invent one), verifies and releases. Every event is
// appended to its log file synchronously: what a killed process logged is on disk.
// `wallOffsetMs` sets this process's wall clock (`Date.now()`, what the library reads) that far from the
// machine's; the log keeps the machine's clock, which every racer shares, so the test can order events.
// Usage: node process-racer.mjs '{"server":…,"prefix":…,"node":…,"cells":[…],"logFile":…,"stopFile":…,"leaseTtlMs":…,"maxClockSkewMs":…,"wallOffsetMs":…}'
import { appendFileSync, existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import * as api from "celld-edge";

const o = JSON.parse(process.argv[2]);
const machineNow = Date.now.bind(Date);
if (o.wallOffsetMs) Date.now = () => machineNow() + o.wallOffsetMs;
const log = (entry) => appendFileSync(o.logFile, `${JSON.stringify({ node: o.node, pid: process.pid, t: machineNow(), ...entry })}\n`);
const own = new api.S3Ownership({
  ...o.server, prefix: o.prefix, node: o.node, addr: `${o.node}:1`, leaseTtlMs: o.leaseTtlMs, maxClockSkewMs: o.maxClockSkewMs,
});

/** Until this instance holds a lease: a restarted process waits out its predecessor's. */
async function leased() {
  for (;;) {
    try {
      await own.acquireLease();
      log({ ev: "leased" });
      return;
    } catch (e) {
      if (e.code !== "not-leased") log({ ev: "error", op: "acquireLease", code: e.code, message: e.message });
      await sleep(100);
    }
  }
}

log({ ev: "started" });
await leased();
own.startRenewing((e) => log({ ev: "error", op: "renew", code: e.code, message: e.message }));
while (!existsSync(o.stopFile)) {
  const cell = o.cells[Math.floor(Math.random() * o.cells.length)];
  try {
    if (!own.leaseValid()) await leased();
    const r = await own.claim(cell);
    if (r.outcome !== "applied") continue;
    log({ ev: "won", cell, epoch: r.epoch, tookOver: r.tookOver });
    // Holding the cell: a while, then an act, three times (a pause lands in a wait, before an act).
    for (let i = 0; i < 3; i++) {
      await sleep(100 + Math.random() * 100);
      const t = machineNow();
      if (!own.leaseValid()) {
        log({ ev: "lost", cell, epoch: r.epoch });
        break;
      }
      log({ ev: "act", cell, epoch: r.epoch, t });
    }
    log({ ev: "verified", cell, epoch: r.epoch, ok: await own.verify(cell, r.epoch) });
    const released = await own.release(cell);
    log({ ev: "released", cell, epoch: r.epoch, outcome: released });
  } catch (e) {
    log({ ev: "error", op: "claim", cell, code: e.code, message: e.message });
  }
}
own.stopRenewing();
await own.close().catch((e) => log({ ev: "error", op: "close", code: e.code, message: e.message }));
log({ ev: "stopped" });
