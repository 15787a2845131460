// One demo node, runtime-neutral (Node, Deno, and the demo Worker in workerd): it keeps a lease, claims
// cells that are free or whose owner is dead, holds each for a random while and then releases it, so that
// ownership keeps moving among the nodes for the whole run (contention all along, not one winner). It
// reports each claim and release as an event. It never acts for a cell without a valid lease.

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A node's state and its one step: release the cells held long enough, then try to claim the others
 * (at most `maxHeld` at a time). `renew`: renew the lease in the step (Workers, which have no timers
 * between requests); long-lived runtimes use startRenewing() instead (see `member`).
 */
export function createMember({ api, config, cells, emit, holdMs = [600, 2000], maxHeld = Math.ceil(cells.length / 2), renew = false }) {
  const own = new api.S3Ownership(config);
  const ttl = config.leaseTtlMs ?? 10_000;
  const held = new Map(); // cell -> { epoch, until }
  const resting = new Map(); // cell -> time before which this node leaves it to the others
  let renewedAt = 0;
  const report = (what, e) => emit({ ev: "error", what, code: e.code, message: e.message });

  async function lease(now) {
    if (!own.leaseValid()) {
      await own.acquireLease();
      held.clear(); // claims made under an earlier lease are void
      renewedAt = now;
      emit({ ev: "lease" });
    } else if (renew && now - renewedAt > ttl / 3) {
      await own.renewLease();
      renewedAt = now;
    }
  }

  async function step() {
    const now = Date.now();
    try {
      await lease(now);
    } catch (e) {
      held.clear();
      return report("lease", e);
    }
    for (const [cell, h] of held) {
      if (now < h.until) continue;
      held.delete(cell);
      resting.set(cell, now + 400 + Math.random() * 400);
      try {
        await own.release(cell);
        emit({ ev: "release", cell, epoch: h.epoch, t: Date.now() });
      } catch (e) {
        report(`release ${cell}`, e);
      }
    }
    // A different order each step, so no cell is always tried first by everyone.
    const order = cells.filter((c) => !held.has(c) && !(resting.get(c) > now)).sort(() => Math.random() - 0.5);
    for (const cell of order) {
      if (held.size >= maxHeld) break;
      try {
        const r = await own.claim(cell);
        if (r.outcome === "applied") {
          held.set(cell, { epoch: r.epoch, until: Date.now() + holdMs[0] + Math.random() * (holdMs[1] - holdMs[0]) });
          emit({ ev: "claim", cell, epoch: r.epoch, tookOver: r.tookOver, prior: r.prior && r.prior.node, t: Date.now() });
        }
      } catch (e) {
        report(`claim ${cell}`, e);
      }
    }
  }

  return { own, step, held };
}

/** A node in a long-lived runtime: startRenewing() keeps the lease, a step every ~`tickMs`. */
export async function member({ api, config, cells, emit, tickMs = 250 }) {
  const m = createMember({ api, config, cells, emit });
  let renewing = false;
  for (;;) {
    await m.step();
    if (m.own.leaseValid() && !renewing) {
      m.own.startRenewing((e) => {
        // fenced / not-leased end the loop (the next step acquires a fresh lease); other failures do not.
        if (e.code === "fenced" || e.code === "not-leased" || e.code === "internal") renewing = false;
        emit({ ev: "error", what: "renewLease", code: e.code, message: e.message });
      });
      renewing = true;
    }
    await sleep(tickMs * (0.5 + Math.random()));
  }
}
