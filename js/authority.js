// Losing authority as a signal (SPEC 4.2): one AbortController per claim this instance holds, aborted
// the moment the core says the claim ended (the core calls `#ended`, while any signal is live, from inside
// the operation that learnt it: a fence, a takeover seen by a read, a release begun, a re-claim sent), or
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

/** Aborts `controller` with `reason`. In Workers a controller made by a request that has ended may refuse
 * to be touched from another: that one no longer has anyone to tell, and must not keep the others from
 * hearing. */
function abort(controller, reason) {
  try {
    controller.abort(reason);
  } catch {
    // Its request is gone (Workers): nothing is left listening to it.
  }
}

/** The signals of one wasm core's claims. The state per claim is plain data (its epoch); the
 * AbortControllers and the timer are made per call, never shared between calls: in Workers an
 * AbortController (and a timer) belongs to the request that made it, and one handed to a later request
 * breaks it ("Cannot perform I/O on behalf of a different request"). */
export class Authority {
  #core;
  /** cell -> { epoch, controllers } for every claim signals were handed out for and not yet aborted:
   * `controllers` holds the ones `signal(cell)` made (kept until the claim ends) and those of the scopes
   * running (until each scope ends). */
  #live = new Map();
  #timer;
  #unwatchTrap;

  constructor(core) {
    this.#core = core;
  }

  /** The core's word that `cell`'s claim at `epoch` ended (called from inside wasm, nothing borrowed). */
  #ended = (cell, epoch, reason) => {
    const held = this.#live.get(cell);
    if (held === undefined || held.epoch !== epoch) return;
    this.#live.delete(cell);
    if (this.#live.size === 0) this.#idle();
    for (const controller of held.controllers) abort(controller, reason);
    held.controllers.clear();
  };

  /** The claim this instance holds on `cell` (`{ epoch, controllers }`) with a new AbortController for it;
   * throws the core's reason when it holds none (`fenced`, `not-leased`, `invalid-input`). */
  open(cell) {
    const [epoch, left] = sync(() => this.#core.authority(cell));
    let held = this.#live.get(cell);
    if (held !== undefined && held.epoch !== epoch) {
      // The core ends an older epoch before it records a newer one; this only keeps the map honest.
      this.#ended(cell, held.epoch, coded("fenced", `authority over cell ${JSON.stringify(cell)} at epoch ${held.epoch} ended (reclaimed)`));
      held = undefined;
    }
    if (held === undefined) {
      held = { epoch, controllers: new Set() };
      // The core tells of ended claims only while a signal listens: building each reason costs an Error.
      if (this.#live.size === 0) sync(() => this.#core.watch(this.#ended));
      this.#live.set(cell, held);
      this.#unwatchTrap ??= untilTrap((err) => this.#abortAll(err));
    }
    const controller = new AbortController();
    held.controllers.add(controller);
    // Armed again by every call, so that a timer of the current request (Workers) serves the signals.
    this.#arm(left);
    return { held, controller };
  }

  /** A scope ended: its controller is not aborted any more by the claim's end. */
  close(cell, held, controller) {
    held.controllers.delete(controller);
    if (held.controllers.size === 0 && this.#live.get(cell) === held) {
      // Nothing left to abort: no timer and no trap report for it.
      this.#live.delete(cell);
      if (this.#live.size === 0) this.#idle();
    }
  }

  /** A new signal of `cell`'s claim, or an already aborted one (reason: why none is held). */
  signal(cell) {
    if (typeof cell !== "string") return this.open(cell); // throws invalid-input
    try {
      return this.open(cell).controller.signal;
    } catch (e) {
      if (e?.code === "fenced" || e?.code === "not-leased") return aborted(e);
      throw e;
    }
  }

  /** Asks the core about `held` (a claim of `cell`) now: a lapsed lease fences there, which aborts the
   * signals through `#ended`; any other answer that is not this epoch aborts them here. Returns how long
   * the authority lasts, if it does. */
  check(cell, held) {
    let epoch, left;
    try {
      [epoch, left] = sync(() => this.#core.authority(cell));
    } catch (e) {
      this.#ended(cell, held.epoch, e);
      return undefined;
    }
    if (epoch === held.epoch) return left;
    this.#ended(cell, held.epoch, coded("fenced", `authority over cell ${JSON.stringify(cell)} at epoch ${held.epoch} ended (reclaimed)`));
    return undefined;
  }

  #arm(ms) {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
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

  /** No signal listens any more; `trapped`: the core is gone, and is not asked to stop telling. */
  #idle(trapped = false) {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#unwatchTrap?.();
    this.#unwatchTrap = undefined;
    if (!trapped) sync(() => this.#core.watch(undefined));
  }

  /** A trap ended this core: nothing it held can be acted on. */
  #abortAll(err) {
    this.#unwatchTrap = undefined;
    const live = [...this.#live.values()];
    this.#live.clear();
    this.#idle(true);
    for (const held of live) for (const controller of held.controllers) abort(controller, err);
  }
}

/** An already aborted signal for an instance whose wasm core is being replaced after a trap. */
export function trappedSignal() {
  return aborted(coded("internal", "internal error: celld-edge trapped; the wasm instance is being replaced"));
}

/** Why `name` cannot be a key under the scope's data prefix, or undefined when it can. The key is placed
 * in URLs as it is (the README's fenced PUT): a segment that a URL resolves (`.`, `..`, also %-encoded or
 * behind a backslash, which URLs read as a slash), ends the path (`?`, `#`) or that a store decodes into a
 * separator or a control character could reach outside `data/e<epoch>/`. */
function badKeyName(name) {
  if (name === "") return "is empty";
  for (const segment of name.split("/")) {
    if (segment === "") return "has an empty segment";
    // What a store or a URL may decode it to (one level, as S3 decodes a path).
    const decoded = segment.replace(/%([0-9A-Fa-f]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
    if (decoded === "." || decoded === "..") return `has the segment ${JSON.stringify(segment)}`;
    if (/[/?#\\\u0000-\u001f\u007f]/.test(decoded)) {
      return `has a segment ${JSON.stringify(segment)} holding '/', '?', '#', '\\' or a control character (%-encoded or not)`;
    }
  }
  return undefined;
}

/**
 * Runs `fn({ epoch, signal, fetch, key })` under the claim this instance holds on `cell` (SPEC 4.2):
 * `fetch` calls the injected fetch with one `Request` (as every other request of the instance), whose
 * signal aborts when the scope's does or the caller's own does, and asks the core before each one;
 * `key(name)` is `<prefix>cells/<cell>/data/e<epoch>/<name>`, the epoch-fenced data layout of SPEC 5
 * (`name` refused where it could resolve elsewhere). The scope's signal is its own (a new controller:
 * see `Authority`). Resolves to what `fn` returned only if `verify(cell, epoch)` still holds afterwards;
 * otherwise rejects with why authority ended (`fenced`, `released`).
 */
export async function scope(authority, cell, fn, { fetch, prefix, verify }) {
  if (typeof fn !== "function") throw coded("invalid-input", `invalid input: scope(cell, fn) needs a function, got ${typeof fn}`);
  const { held, controller } = authority.open(cell);
  const { epoch } = held;
  const signal = controller.signal;
  const scoped = (input, init) => {
    try {
      authority.check(cell, held);
      if (signal.aborted) return Promise.reject(signal.reason);
      const request = new Request(input, init);
      return Promise.resolve(fetch.call(globalThis, new Request(request, { signal: anySignal([signal, request.signal]) })));
    } catch (e) {
      return Promise.reject(e);
    }
  };
  const key = (name) => {
    if (typeof name !== "string") throw coded("invalid-input", `invalid input: key(name) needs a string, got ${typeof name}`);
    const why = badKeyName(name);
    if (why !== undefined) throw coded("invalid-input", `invalid input: key(${JSON.stringify(name)}) ${why}: it must stay under ${prefix}cells/${cell}/data/e${epoch}/`);
    return `${prefix}cells/${cell}/data/e${epoch}/${name}`;
  };
  try {
    const result = await fn({ epoch, signal, fetch: scoped, key });
    if (signal.aborted) throw signal.reason;
    if (!(await verify(cell, epoch))) {
      // verify read the record: a takeover it saw has aborted the signal with its reason.
      if (signal.aborted) throw signal.reason;
      throw coded("fenced", `verify(${JSON.stringify(cell)}, ${epoch}) failed after the scope's work: it may not be acknowledged`);
    }
    return result;
  } finally {
    authority.close(cell, held, controller);
  }
}
