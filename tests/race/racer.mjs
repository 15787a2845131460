// One runtime's share of the race: several nodes, each with its own S3Ownership, claim random cells of a
// small set as fast as they can, verify, and release. Returns every claim's outcome for the checker in
// tests/node/race.test.mjs. Runtime-neutral; tests/race/deno-racer.mjs runs it as a Deno process.

export async function race({ api, server, prefix, nodes, cells, claimsPerNode }) {
  const log = [];
  const errors = [];
  await Promise.all(
    nodes.map(async (node) => {
      const own = new api.S3Ownership({ ...server, prefix, node, addr: `${node}:1` });
      await own.acquireLease();
      own.startRenewing((e) => errors.push(`${node} renewal: ${e.code} ${e.message}`));
      try {
        for (let i = 0; i < claimsPerNode; i++) {
          const cell = cells[Math.floor(Math.random() * cells.length)];
          try {
            const r = await own.claim(cell);
            if (r.outcome !== "applied") {
              log.push({ node, cell, outcome: "rejected", owner: r.owner.node, ownerEpoch: r.owner.epoch });
              continue;
            }
            const verified = await own.verify(cell, r.epoch);
            const released = await own.release(cell);
            log.push({ node, cell, outcome: "applied", epoch: r.epoch, verified, released });
          } catch (e) {
            // Lost every round to claimers that released the cell each time: nobody to name, nothing written.
            if (e.code === "transport" && e.message.includes("rounds of contention")) {
              log.push({ node, cell, outcome: "lost" });
              continue;
            }
            errors.push(`${node} ${cell}: ${e.code} ${e.message}`);
          }
        }
      } finally {
        own.stopRenewing();
      }
    }),
  );
  return { log, errors };
}
