// Losing authority as a signal (SPEC 4.2): one AbortController per claim this instance holds, aborted
// the moment the core says the claim ended (src/bindings/authority.rs calls `#ended` from inside the
// operation that learnt it: a fence, a takeover seen by a read, a release begun, a re-claim sent), or
// when a timer armed at the lease's deadline asks the core and the core finds the lease lapsed; and
// `scope`, which runs work under such a signal. It decides nothing itself: every answer is the core's.

import { CelldEdgeError } from "./error.js";
import { sync, untilTrap } from "./instance.js";

/** Longest wait between two questions to the core while claims are held: a machine that slept or a wall
 * clock stepped forward ends authority before a timer armed on the monotonic clock would fire. */
const RECHECK_MS = 1000;

function coded(code, message, cause) {
  return new CelldEdgeError(message, { code, cause });
}

/** An already aborted signal (`AbortSignal.abort` where the runtime has it). */
function aborted(reason) {
  if (typeof AbortSignal.abort === "function") return AbortSignal.abort(reason);
  const c = new AbortController();
  c.abort(reason);
  return c.signal;
}

/** A signal that aborts when any of `signals` does. */
function anySignal(signals) {
  if (typeof AbortSignal.any === "function") return AbortSignal.any(signals);
  const c = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      c.abort(s.reason);
      break;
    }
    s.addEventListener("abort", () => c.abort(s.reason), { once: true });
  }
  return c.signal;
}

/** Node and Deno keep a process alive for a pending timer: this one only serves signals, never work. */
function unref(timer) {
  if (typeof timer?.unref === "function") timer.unref();
  else if (typeof globalThis.Deno?.unrefTimer === "function") globalThis.Deno.unrefTimer(timer);
}

/** The signals of one wasm core's claims. */
export class Authority {
  #core;
  /** cell -> { epoch, controller } for every signal handed out and not yet aborted. */
  #live = new Map();
  #timer;
  #unwatchTrap;

  constructor(core) {
    this.#core = core;
    sync(() => core.watch(this.#ended));
  }

  /** The core's word that `cell`'s claim at `epoch` ended (called from inside wasm, nothing borrowed). */
  #ended = (cell, epoch, reason) => {
    const held = this.#live.get(cell);
    if (held === undefined || held.epoch !== epoch) return;
    this.#live.delete(cell);
    if (this.#live.size === 0) this.#idle();
    held.controller.abort(reason);
  };

  /** `{ epoch, controller }` of the claim this instance holds on `cell`; throws the core's reason when
   * it holds none (`fenced`, `not-leased`, `invalid-input`). */
  hold(cell) {
    const [epoch, left] = sync(() => this.#core.authority(cell));
    let held = this.#live.get(cell);
    if (held !== undefined && held.epoch !== epoch) {
      // The core ends an older epoch before it records a newer one; this only keeps the map honest.
      this.#ended(cell, held.epoch, coded("fenced", `authority over cell ${JSON.stringify(cell)} at epoch ${held.epoch} ended (reclaimed)`));
      held = undefined;
    }
    if (held === undefined) {
      held = { epoch, controller: new AbortController() };
      this.#live.set(cell, held);
      this.#unwatchTrap ??= untilTrap((err) => this.#abortAll(err));
      if (this.#timer === undefined) this.#arm(left);
    }
    return held;
  }

  /** The signal of `cell`'s claim, or an already aborted one (reason: why none is held). */
  signal(cell) {
    if (typeof cell !== "string") return this.hold(cell); // throws invalid-input
    try {
      return this.hold(cell).controller.signal;
    } catch (e) {
      if (e?.code === "fenced" || e?.code === "not-leased") return aborted(e);
      throw e;
    }
  }

  /** Asks the core about `held` (a claim of `cell`) now: a lapsed lease fences there, which aborts the
   * signal through `#ended`; any other answer that is not this epoch aborts it here. Returns how long the
   * authority lasts, if it does. */
  check(cell, held) {
    let epoch, left;
    try {
      [epoch, left] = sync(() => this.#core.authority(cell));
    } catch (e) {
      this.#ended(cell, held.epoch, e);
      return undefined;
    }
    if (epoch === held.epoch) return left;
    this.hold(cell);
    return undefined;
  }

  #arm(ms) {
    this.#timer = setTimeout(() => this.#recheck(), Math.max(1, Math.ceil(Math.min(ms, RECHECK_MS))));
    unref(this.#timer);
  }

  #recheck() {
    this.#timer = undefined;
    let next = RECHECK_MS;
    for (const [cell, held] of [...this.#live]) {
      const left = this.check(cell, held);
      if (left !== undefined) next = Math.min(next, left);
    }
    if (this.#live.size > 0 && this.#timer === undefined) this.#arm(next);
  }

  #idle() {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#unwatchTrap?.();
    this.#unwatchTrap = undefined;
  }

  /** A trap ended this core: nothing it held can be acted on. */
  #abortAll(err) {
    this.#unwatchTrap = undefined;
    const live = [...this.#live.values()];
    this.#live.clear();
    this.#idle();
    for (const held of live) held.controller.abort(err);
  }
}

/** An already aborted signal for an instance whose wasm core is being replaced after a trap. */
export function trappedSignal() {
  return aborted(coded("internal", "internal error: celld-edge trapped; the wasm instance is being replaced"));
}

/**
 * Runs `fn({ epoch, signal, fetch, key })` under the claim this instance holds on `cell` (SPEC 4.2):
 * `fetch` is the injected fetch with `signal` threaded into every request (with the caller's own signal,
 * if any) and the core asked before each one; `key(name)` is `<prefix>cells/<cell>/data/e<epoch>/<name>`,
 * the epoch-fenced data layout of SPEC 5. Resolves to what `fn` returned only if `verify(cell, epoch)`
 * still holds afterwards; otherwise rejects with why authority ended (`fenced`, `released`).
 */
export async function scope(authority, cell, fn, { fetch, prefix, verify }) {
  if (typeof fn !== "function") throw coded("invalid-input", `invalid input: scope(cell, fn) needs a function, got ${typeof fn}`);
  const held = authority.hold(cell);
  const { epoch } = held;
  const signal = held.controller.signal;
  const scoped = (input, init) => {
    authority.check(cell, held);
    if (signal.aborted) return Promise.reject(signal.reason);
    const theirs = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    const send = theirs ? anySignal([signal, theirs]) : signal;
    try {
      return Promise.resolve(fetch.call(globalThis, input, { ...init, signal: send }));
    } catch (e) {
      return Promise.reject(e);
    }
  };
  const key = (name = "") => {
    if (typeof name !== "string") throw coded("invalid-input", `invalid input: key(name) needs a string, got ${typeof name}`);
    return `${prefix}cells/${cell}/data/e${epoch}/${name}`;
  };
  const result = await fn({ epoch, signal, fetch: scoped, key });
  if (signal.aborted) throw signal.reason;
  if (!(await verify(cell, epoch))) {
    // verify read the record: a takeover it saw has aborted the signal with its reason.
    if (signal.aborted) throw signal.reason;
    throw coded("fenced", `verify(${JSON.stringify(cell)}, ${epoch}) failed after the scope's work: it may not be acknowledged`);
  }
  return result;
}
