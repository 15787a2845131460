// One demo node in a long-lived runtime (Node or Deno): holds a lease with startRenewing(), claims every
// cell that is free or whose owner is dead, and reports each claim as a JSON line. Runtime-neutral.

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function member({ api, config, cells, emit, tickMs = 200 }) {
  const own = new api.S3Ownership(config);
  const mine = new Set();
  const acquire = async () => {
    for (;;) {
      try {
        await own.acquireLease();
        mine.clear(); // claims from an earlier lease are void
        emit({ ev: "lease" });
        return;
      } catch (e) {
        emit({ ev: "error", what: "acquireLease", code: e.code, message: e.message });
        await sleep(500);
      }
    }
  };
  await acquire();
  own.startRenewing((e) => emit({ ev: "error", what: "renewLease", code: e.code, message: e.message }));
  for (;;) {
    if (!own.leaseValid()) {
      own.stopRenewing();
      await acquire();
      own.startRenewing((e) => emit({ ev: "error", what: "renewLease", code: e.code, message: e.message }));
    }
    for (const cell of cells) {
      if (mine.has(cell)) continue;
      try {
        const r = await own.claim(cell);
        if (r.outcome === "applied") {
          mine.add(cell);
          emit({ ev: "claim", cell, epoch: r.epoch, tookOver: r.tookOver, prior: r.prior && r.prior.node, t: Date.now() });
        }
      } catch (e) {
        emit({ ev: "error", what: `claim ${cell}`, code: e.code, message: e.message });
      }
    }
    await sleep(tickMs);
  }
}
