// S3Ownership, the public class: a thin shell over the wasm core (src/bindings/ownership.rs), which
// checks the options and arguments, calls the injected fetch, runs the renewal loop and decides
// everything. This file only forwards calls, and re-creates the core after a trap (instance.js) — closed
// again when the instance was closed.

import { WasmOwnership } from "../pkg/celld_edge.js";
import { currentInstance, hooks, settled, sync, track, untilTrap } from "./instance.js";
import { Authority, scope, trappedSignal } from "./authority.js";

export class S3Ownership {
  #options;
  #core;
  #instance;
  /** The abort signals of this core's claims (authority.js). */
  #authority;
  /** Cancels the renewal loop's trap report. */
  #unwatch = () => {};
  /** close() was called: a core re-created after a trap is closed too. */
  #closed = false;

  constructor(options) {
    this.#options = options;
    this.#core = sync(() => new WasmOwnership(options, hooks));
    this.#instance = currentInstance();
    this.#authority = new Authority(this.#core);
  }

  /** The core, re-created (no lease, no claims) when a trap replaced the instance it lived in. */
  #fresh() {
    if (this.#instance !== currentInstance()) {
      this.#core = sync(() => new WasmOwnership(this.#options, hooks));
      this.#instance = currentInstance();
      this.#authority = new Authority(this.#core);
      // It holds no lease: closing it sends nothing, and it refuses writes as the closed one did.
      if (this.#closed) sync(() => this.#core.close()).catch(() => {});
    }
    return this.#core;
  }

  async #run(op) {
    await settled();
    const core = this.#fresh();
    return track(() => op(core));
  }

  readOwner(cell) { return this.#run((c) => c.readOwner(cell)); }
  casOwner(cell, guard, epoch) { return this.#run((c) => c.casOwner(cell, guard, epoch)); }
  releaseOwner(cell, epoch) { return this.#run((c) => c.releaseOwner(cell, epoch)); }
  readNodeLease(node) { return this.#run((c) => c.readNodeLease(node)); }
  casNodeLease(guard, expiresMs) { return this.#run((c) => c.casNodeLease(guard, expiresMs)); }
  acquireLease() { return this.#run((c) => c.acquireLease()); }
  renewLease() { return this.#run((c) => c.renewLease()); }
  claim(cell, options) { return this.#run((c) => c.claim(cell, options)); }
  release(cell) { return this.#run((c) => c.release(cell)); }
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
    await settled();
    this.#fresh();
    const fetch = this.#options.fetch ?? globalThis.fetch;
    const prefix = this.#options.prefix ?? "";
    return scope(this.#authority, cell, fn, { fetch, prefix, verify: (c, e) => this.verify(c, e) });
  }

  removeDeadLease(node, options) { return this.#run((c) => c.removeDeadLease(node, options)); }

  /** The cells this instance holds under its current lease, `[{ cell, epoch }]`. */
  claimed() {
    if (this.#instance !== currentInstance() || settled() !== undefined) return [];
    return sync(() => this.#core.claimed());
  }

  /** Ends authority now (synchronously), stops renewing, then retires the lease (one conditional write). */
  close(options) {
    this.#closed = true;
    this.#unwatch();
    this.#unwatch = () => {};
    if (settled() === undefined && this.#instance === currentInstance()) {
      // Synchronously, so that nothing called after close() (awaited or not) runs with authority.
      const closing = sync(() => this.#core.close(options));
      return track(() => closing);
    }
    return this.#run((c) => c.close(options));
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
    if (settled() !== undefined) return;
    sync(() => this.#fresh().startRenewing(onError));
    this.#unwatch();
    this.#unwatch = untilTrap(onError);
  }

  stopRenewing() {
    this.#unwatch();
    this.#unwatch = () => {};
    if (this.#instance === currentInstance()) sync(() => this.#core.stopRenewing());
  }
}
