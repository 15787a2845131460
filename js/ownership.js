// S3Ownership, the public class: a thin shell over the wasm core (src/bindings/ownership.rs), which
// checks the options and arguments, calls the injected fetch, runs the renewal loop and decides
// everything. This file only forwards calls, and re-creates the core after a trap (instance.js) — closed
// again when the instance was closed. A trapped core's claims are not carried across: the cells it may
// still be named in are released by the fresh core as soon as it holds a lease (`#recover`), since the
// fresh core renews the very lease those records point peers to.

import { WasmOwnership } from "../pkg/celld_edge.js";
import { currentInstance, hooks, perRequestIo, settled, sync, track, untilTrap } from "./instance.js";
import { Authority, scope, trappedSignal } from "./authority.js";

export class S3Ownership {
  #options;
  #core;
  #instance;
  /** The abort signals of this core's claims (authority.js). */
  #authority;
  /** Cancels the renewal loop's trap report. */
  #unwatch = () => {};
  /** The core accepted close(): a core re-created after a trap is closed too. */
  #closed = false;
  /** Cells whose owner record a core of this instance may have written naming this node (claimed, or
   * written with casOwner) and not released since; never a name whose write was refused or never sent. */
  #mine = new Set();
  /** cell -> how many claims and casOwner writes of it are in flight (they may land at any moment). */
  #writing = new Map();
  /** Those of them a trapped core left: released by the fresh core once it holds a lease (`#recover`). */
  #orphans = new Set();
  /** While `#recover` runs: settles when it is done (other operations wait for it). */
  #recovering;
  /** What startRenewing() last asked for while a re-instantiation was pending (started once it is done). */
  #renewWanted;

  constructor(options) {
    this.#options = options;
    this.#core = sync(() => new WasmOwnership(options, hooks));
    // A node id the instance made up stays its id when the core is made again after a trap (which then
    // reads its lease first, as for any id given).
    if (options.node === undefined) this.#options = { ...options, node: this.#core.node };
    this.#instance = currentInstance();
    this.#authority = new Authority(this.#core, perRequestIo());
  }

  /** This node's id: the `node` option, or the one this instance made up (`edge-<16 hex>`) without it. */
  get node() {
    return this.#options.node;
  }

  /** The core, re-created (no lease, no claims) when a trap replaced the instance it lived in. */
  #fresh() {
    if (this.#instance !== currentInstance()) {
      this.#core = sync(() => new WasmOwnership(this.#options, hooks));
      this.#instance = currentInstance();
      this.#authority = new Authority(this.#core, perRequestIo());
      for (const cell of [...this.#mine, ...this.#writing.keys()]) this.#orphans.add(cell);
      // It holds no lease: closing it sends nothing, and it refuses writes as the closed one did.
      if (this.#closed) sync(() => this.#core.close()).catch(() => {});
    }
    return this.#core;
  }

  /** Waits out a pending re-instantiation and a recovery running (`#recover`), whichever comes. */
  async #ready() {
    while (settled() !== undefined || this.#recovering !== undefined) {
      await settled();
      await this.#recovering;
    }
  }

  /** Runs `op` on the core, at once when nothing is pending (no extra turn of the microtask queue per
   * operation: bench/README.md, branch i37u), else once a re-instantiation or recovery is done. */
  #run(op) {
    if (settled() === undefined && this.#recovering === undefined) return track(() => op(this.#fresh()));
    return this.#ready().then(() => track(() => op(this.#fresh())));
  }

  /** Runs `write` (a claim or casOwner of `cell`), which may name this node in the cell's record. While it
   * is in flight, and afterwards unless it was refused or never sent (a rejected claim or write, bad input,
   * no lease), the cell is one a trapped core may have left named. */
  #naming(cell, write) {
    if (typeof cell !== "string") return write();
    this.#writing.set(cell, (this.#writing.get(cell) ?? 0) + 1);
    // `write` returns a promise (#run); `then`, not an async function: one promise less per claim.
    return write().then(
      (out) => {
        // A rejected claim read the record naming another live holder (or another process of this node id).
        this.#written(cell, out === "applied" || out?.outcome === "applied", out?.outcome === "rejected");
        return out;
      },
      (e) => {
        this.#written(cell, e?.code !== "invalid-input" && e?.code !== "not-leased", false);
        throw e;
      },
    );
  }

  /** A write `#naming` ran has settled: `named`, whether the record may name this node now; `elsewhere`,
   * whether it was read naming another holder. */
  #written(cell, named, elsewhere) {
    const n = this.#writing.get(cell) - 1;
    if (n === 0) this.#writing.delete(cell);
    else this.#writing.set(cell, n);
    if (named) this.#mine.add(cell);
    else if (elsewhere && n === 0) this.#mine.delete(cell);
  }

  /** `cell`'s record no longer names this node (a release applied). */
  #released(cell, outcome) {
    if (outcome === "applied") {
      this.#mine.delete(cell);
      this.#orphans.delete(cell);
    }
    return outcome;
  }

  /** `acquired` (the fresh core `c`'s acquireLease()), then the release of every cell a trapped core
   * left named with this node (one read and, where the record still names this node, one conditional
   * write each): the fresh core renews the lease those records point peers to. Every other operation
   * waits until this is done, so that none of them claims an orphan before it is released. A cell whose
   * release fails stays an orphan: the next acquireLease() tries it again. */
  #recover(c, acquired) {
    if (this.#recovering !== undefined) return this.#recovering.then(() => acquired);
    let finish;
    const recovering = new Promise((resolve) => (finish = resolve));
    this.#recovering = recovering;
    // A trap meanwhile leaves the releases unsettled for good: the operations waiting go on (to the next
    // core, which recovers the orphans left again).
    const unwatch = untilTrap(() => done());
    const done = () => {
      unwatch();
      if (this.#recovering === recovering) this.#recovering = undefined;
      finish();
    };
    const run = (async () => {
      await acquired;
      await Promise.all([...this.#orphans].map(async (cell) => {
        try {
          // Applied, or the record names this node no more: either way nothing is left to release.
          await c.release(cell);
          this.#orphans.delete(cell);
          this.#mine.delete(cell);
        } catch {
          // Kept for the next acquireLease(): the lease is held either way.
        }
      }));
    })();
    run.then(done, done);
    return run;
  }

  readOwner(cell) { return this.#run((c) => c.readOwner(cell)); }
  casOwner(cell, guard, epoch) {
    return this.#naming(cell, () => this.#run((c) => c.casOwner(cell, guard, epoch)));
  }
  releaseOwner(cell, epoch) { return this.#run((c) => c.releaseOwner(cell, epoch)).then((o) => this.#released(cell, o)); }
  readNodeLease(node) { return this.#run((c) => c.readNodeLease(node)); }
  casNodeLease(guard, expiresMs) { return this.#run((c) => c.casNodeLease(guard, expiresMs)); }
  acquireLease() {
    return this.#run((c) => (this.#orphans.size === 0 ? c.acquireLease() : this.#recover(c, c.acquireLease())));
  }
  renewLease() { return this.#run((c) => c.renewLease()); }
  claim(cell, options) {
    return this.#naming(cell, () => this.#run((c) => c.claim(cell, options)));
  }
  release(cell) { return this.#run((c) => c.release(cell)).then((o) => this.#released(cell, o)); }
  owner(cell) { return this.#run((c) => c.owner(cell)); }
  verify(cell, epoch) { return this.#run((c) => c.verify(cell, epoch)); }
  probe() { return this.#run((c) => c.probe()); }
  listCells() { return this.#run((c) => c.listCells()); }
  listNodes() { return this.#run((c) => c.listNodes()); }

  /** This instance's counters (requests by kind and outcome, claims, takeovers, fences, authority lost,
   * lease write latencies, ...) as a plain object; a fresh core after a trap starts from zero. */
  metrics() {
    if (settled() !== undefined) return undefined;
    return sync(() => this.#fresh().metrics());
  }

  /** An AbortSignal that aborts the moment this instance may no longer act for `cell` (authority.js);
   * already aborted when it holds no claim of the cell. */
  signal(cell) {
    if (settled() !== undefined) return trappedSignal();
    this.#fresh();
    return this.#authority.signal(cell);
  }

  /** Runs `fn({ epoch, signal, fetch, key })` under this instance's claim of `cell`, and resolves to what
   * it returned only if `verify(cell, epoch)` holds afterwards (authority.js). */
  async scope(cell, fn) {
    await this.#ready();
    this.#fresh();
    const fetch = this.#options.fetch ?? globalThis.fetch;
    const prefix = this.#options.prefix ?? "";
    const renewIfDue = () => this.#run((c) => c.renewIfDue());
    return scope(this.#authority, cell, fn, { fetch, prefix, verify: (c, e) => this.verify(c, e), renewIfDue });
  }

  removeDeadLease(node, options) { return this.#run((c) => c.removeDeadLease(node, options)); }

  /** The cells this instance holds under its current lease, `[{ cell, epoch }]`. */
  claimed() {
    if (this.#instance !== currentInstance() || settled() !== undefined) return [];
    return sync(() => this.#core.claimed());
  }

  /** Ends authority now (synchronously), stops renewing, then retires the lease (one conditional write).
   * Bad options are refused (`invalid-input`) with nothing changed: the instance is closed only once the
   * core accepted the close. */
  close(options) {
    const accepted = (c) => {
      const closing = c.close(options); // throws invalid-input for bad options
      this.#markClosed();
      return closing;
    };
    if (settled() === undefined && this.#instance === currentInstance()) {
      // Synchronously, so that nothing called after close() (awaited or not) runs with authority.
      let closing;
      try {
        closing = sync(() => accepted(this.#core));
      } catch (e) {
        // A trap is no refusal: the fresh core is closed too.
        if (e?.code === "internal") this.#markClosed();
        return Promise.reject(e);
      }
      return track(() => closing);
    }
    return this.#run(accepted);
  }

  #markClosed() {
    this.#closed = true;
    this.#renewWanted = undefined;
    this.#unwatch();
    this.#unwatch = () => {};
  }

  /** `await using own = new S3Ownership(...)`: closes at the end of the scope. */
  async [Symbol.asyncDispose]() {
    await this.close();
  }

  /** False after a trap until a fresh core holds a lease again. */
  leaseValid() {
    return this.#instance === currentInstance() && settled() === undefined && sync(() => this.#core.leaseValid());
  }

  /** Renews every ttl/3 (in wasm) until stopRenewing(); failures, and a trap that ends the loop, go to
   * `onError` (`fenced`/`not-leased`/`internal` end it: acquireLease() and re-claim). */
  startRenewing(onError = () => {}) {
    const pending = settled();
    if (pending !== undefined) {
      // A trapped core is being replaced (an onError that restarts renewing on `internal` lands here):
      // the loop starts in the fresh core, never in the dying one.
      const wanted = (this.#renewWanted = { onError });
      pending.then(() => {
        if (this.#renewWanted === wanted) {
          this.#renewWanted = undefined;
          this.startRenewing(onError);
        }
      });
      return;
    }
    sync(() => this.#fresh().startRenewing(onError));
    this.#unwatch();
    this.#unwatch = untilTrap(onError);
  }

  stopRenewing() {
    this.#renewWanted = undefined;
    this.#unwatch();
    this.#unwatch = () => {};
    if (this.#instance === currentInstance() && settled() === undefined) sync(() => this.#core.stopRenewing());
  }
}
