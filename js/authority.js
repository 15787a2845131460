// Fencing for work done outside the core (SPEC 4.2, 4.4): `scope`, whose fetch asks the core at the moment
// it sends and sends nothing once authority ended (the guarantee, kept or not after the scope returned),
// and `signal(cell)`, a convenience on top: an AbortSignal that aborts when the core says the claim ended,
// told at once by the core while the claim's signals are watched (`#ended`, from inside the operation that
// learnt it), and otherwise by a timer of the context that made the signal, which asks the core at the
// lease's deadline (and at least once a second). In Workers an AbortController and a timer belong to the
// request that made them: one request cannot abort another's signal, so each request's signals are served
// by that request's own timers, and no guarantee depends on one request reaching into another. It decides
// nothing itself: every answer is the core's.
//
// Memory stays flat in the number of calls: where one context runs everything (Node, Deno, browsers) a
// claim has one signal, handed to every caller; in Workers a signal per call is held by its request's
// timer and goes with the request, and the instance keeps only a few of each claim's newest. Only claims
// this instance holds are kept, and only while a signal or scope of theirs lives.

import { CelldEdgeError } from "./error.js";
import { sync, untilTrap } from "./instance.js";

/** Longest wait between two questions to the core while a signal is live: a machine that slept or a wall
 * clock stepped forward ends authority before a timer armed on the monotonic clock would fire. */
const RECHECK_MS = 1000;

/** Per claim, the newest per-call watches (Workers) the core's word aborts at once; older ones are served by
 * their own request's timer only. */
const NEWEST_KEPT = 16;

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

/** Node and Deno keep a process alive for a pending timer: these only serve signals, never work. */
function unref(timer) {
  if (typeof timer?.unref === "function") timer.unref();
  else if (typeof globalThis.Deno?.unrefTimer === "function") globalThis.Deno.unrefTimer(timer);
}

/** Runs `f`, which touches an object of another request in Workers (an AbortController, a timer): that
 * request has ended or is served by its own timer, and must not keep the others from being told. */
function quietly(f) {
  try {
    f();
  } catch {
    // Another request's object (Workers): its own timer serves it.
  }
}

/** One AbortController of a claim (`cell` at `epoch`), with a timer of the context that made it. */
class Watch {
  constructor(cell, epoch) {
    this.cell = cell;
    this.epoch = epoch;
    this.controller = new AbortController();
    this.timer = undefined;
  }

  get signal() {
    return this.controller.signal;
  }

  /** Stops its timer; aborts with `reason` when given. */
  end(reason) {
    if (this.timer !== undefined) quietly(() => clearTimeout(this.timer));
    this.timer = undefined;
    if (reason !== undefined) quietly(() => this.controller.abort(reason));
  }
}

/** The signals and scopes of one wasm core's claims. */
export class Authority {
  #core;
  /** Workers: a signal per call (each request's own), not one per claim. */
  #perRequest;
  /** cell -> { epoch, shared: the claim's one signal (one context), watches: the live watches the core's
   * word aborts (insertion order, the newest last) }, for claims with a live signal or scope. */
  #live = new Map();
  #unwatchTrap;

  constructor(core, perRequest) {
    this.#core = core;
    this.#perRequest = perRequest;
  }

  /** The core's word that `cell`'s claim at `epoch` ended (called from inside wasm, nothing borrowed). */
  #ended = (cell, epoch, reason) => {
    const held = this.#live.get(cell);
    if (held === undefined || held.epoch !== epoch) return;
    this.#forget(cell, held);
    for (const w of held.watches) w.end(reason);
    held.watches.clear();
  };

  /** How long this instance may still act for `cell` at `epoch` (ms); throws why not: the core's typed
   * reason (`released`, `fenced` with `lost` lease-lost / taken-over / reclaimed, `not-leased` after
   * close), naming the cell and epoch. Sends nothing. */
  admit(cell, epoch) {
    return sync(() => this.#core.authorityAt(cell, epoch));
  }

  /** A watch of this instance's claim on `cell`, armed on a timer of the caller's context; throws the core's
   * reason when it holds none (`fenced`, `not-leased`, `invalid-input`). `shared`: the claim's one signal
   * where one context runs everything. */
  #open(cell, shared) {
    const [epoch, left] = sync(() => this.#core.authority(cell));
    let held = this.#live.get(cell);
    if (held !== undefined && held.epoch !== epoch) {
      // The core ends an older epoch before it records a newer one; this only keeps the map honest.
      this.#ended(cell, held.epoch, coded("fenced", `authority over cell ${JSON.stringify(cell)} at epoch ${held.epoch} ended (reclaimed)`));
      held = undefined;
    }
    if (held === undefined) {
      held = { epoch, shared: undefined, watches: new Set() };
      // The core tells of ended claims only while someone listens: building each reason costs an Error.
      if (this.#live.size === 0) sync(() => this.#core.watch(this.#ended));
      this.#live.set(cell, held);
      this.#unwatchTrap ??= untilTrap((err) => this.#abortAll(err));
    }
    if (shared && held.shared !== undefined) return held.shared;
    const w = new Watch(cell, epoch);
    held.watches.add(w);
    if (held.watches.size > NEWEST_KEPT) {
      // The oldest per-call watch: its own request's timer still serves it.
      const [oldest] = held.watches;
      if (oldest !== held.shared) held.watches.delete(oldest);
    }
    if (shared) held.shared = w;
    this.#arm(w, left);
    return w;
  }

  /** Asks the core again at `w`'s next deadline (at most RECHECK_MS away), in the context that armed it. */
  #arm(w, ms) {
    w.timer = setTimeout(() => this.#recheck(w), Math.max(1, Math.ceil(Math.min(ms, RECHECK_MS))));
    unref(w.timer);
  }

  #recheck(w) {
    w.timer = undefined;
    let left;
    try {
      left = this.admit(w.cell, w.epoch);
    } catch (e) {
      // Asking fenced a lapsed lease (the core's word ended the watched ones); this one ends here too.
      this.#ended(w.cell, w.epoch, e);
      w.end(e);
      return;
    }
    this.#arm(w, left);
  }

  /** `held` (the claim on `cell`) has nothing live left: forgotten, and nobody listens once none is. */
  #forget(cell, held) {
    if (this.#live.get(cell) === held) this.#live.delete(cell);
    if (this.#live.size > 0) return;
    this.#unwatchTrap?.();
    this.#unwatchTrap = undefined;
    sync(() => this.#core.watch(undefined));
  }

  /** A signal of `cell`'s claim, or an already aborted one (reason: why none is held). */
  signal(cell) {
    if (typeof cell !== "string") return this.#open(cell, false); // throws invalid-input
    try {
      return this.#open(cell, !this.#perRequest).signal;
    } catch (e) {
      if (e?.code === "fenced" || e?.code === "not-leased") return aborted(e);
      throw e;
    }
  }

  /** A scope's own watch of `cell`'s claim (ended by `close`). */
  openScope(cell) {
    return this.#open(cell, false);
  }

  /** A scope ended: its watch stops (its signal is not aborted by the claim's end any more). */
  closeScope(w) {
    w.end();
    const held = this.#live.get(w.cell);
    if (held === undefined || held.epoch !== w.epoch) return;
    held.watches.delete(w);
    if (held.watches.size === 0 && held.shared === undefined) this.#forget(w.cell, held);
  }

  /** A trap ended this core: nothing it held can be acted on. The core is gone, and not asked to stop. */
  #abortAll(err) {
    this.#unwatchTrap = undefined;
    const live = [...this.#live.values()];
    this.#live.clear();
    for (const held of live) for (const w of held.watches) w.end(err);
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
 * Runs `fn({ epoch, signal, fetch, key })` under the claim this instance holds on `cell` (SPEC 4.2, 4.4):
 * `fetch` calls the injected fetch with one `Request` (as every other request of the instance) and, at the
 * moment it sends, asks the core whether this instance still holds the cell at `epoch`: a "no" rejects
 * with the core's typed reason and sends nothing, also for a `fetch` kept and called after the scope
 * returned (a renewal due is made first, as every operation makes it). While the scope runs, its request's
 * signal also aborts when the scope's does. `key(name)` is `<prefix>cells/<cell>/data/e<epoch>/<name>`, the
 * epoch-fenced data layout of SPEC 5 (`name` refused where it could resolve elsewhere). Resolves to what
 * `fn` returned only if `verify(cell, epoch)` still holds afterwards; otherwise rejects with why authority
 * ended (`fenced`, `released`).
 */
export async function scope(authority, cell, fn, { fetch, prefix, verify, renewIfDue }) {
  if (typeof fn !== "function") throw coded("invalid-input", `invalid input: scope(cell, fn) needs a function, got ${typeof fn}`);
  await renewIfDue();
  const w = authority.openScope(cell);
  const { epoch, signal } = w;
  let running = true;
  const scoped = async (input, init) => {
    const request = new Request(input, init);
    await renewIfDue();
    // Sent in the same synchronous step as the core's answer: nothing can end authority in between.
    authority.admit(cell, epoch);
    const fenced = running ? anySignal([signal, request.signal]) : request.signal;
    return fetch.call(globalThis, new Request(request, { signal: fenced }));
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
    running = false;
    authority.closeScope(w);
  }
}
