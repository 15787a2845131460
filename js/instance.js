// The wasm instance's lifecycle, shared by ownership.js, inspector.js and sign.js. A trap (a bug in celld-edge) leaves
// the instance's state undefined, so: every operation in flight rejects with code "internal", the old
// instance's promises stop settling (`hooks.gate`: no callback of the old instance may run in the new
// one), and once it has gone quiet (after the current macrotask) wasm-bindgen re-instantiates the module
// (`scheduleReinit`); objects made before that are re-created on their next use. How a trap inside a
// microtask poll is caught at all: src/bindings/trap.rs. Nothing here decides anything about ownership.

import { lastPanic, scheduleReinit } from "../pkg/celld_edge.js";
import { CelldEdgeError } from "./error.js";

/** Counts traps: a gate opened under an earlier count never settles. */
let traps = 0;
/** Counts instances: objects made under an earlier one must be re-created. */
let instance = 0;
/** While a re-instantiation is pending: a promise that settles once it happened. */
let fresh;
/** The reject functions of the operations in flight, and of the renewal loops running. */
const pending = new Set();

function internal(what) {
  return new CelldEdgeError(`internal error: celld-edge trapped (${what}); the wasm instance is replaced, and a write in flight may or may not have landed`, { code: "internal" });
}

/** Records a trap (`e`: what was thrown); returns the coded error for the caller. */
export function trapped(e) {
  let what = e instanceof Error ? e.message : String(e);
  try {
    what = lastPanic() ?? what;
  } catch {
    // The instance is past answering: the trap's own message will do.
  }
  const err = internal(what);
  if (fresh !== undefined) return err;
  // The replacement is scheduled before anything is marked: a trap found with little stack left (a signer
  // call that overflowed it, deep in a caller's recursion) may leave too little for this, which then
  // throws with nothing changed, and the next call finds the instance still broken and records it.
  const next = replacement();
  // Replaced first, then told: what the callbacks below call (an onError restarting renewals, an abort
  // listener asking for a signal again) sees a replacement pending and waits for it or gets `internal`,
  // instead of registering on the dying instance while this very loop runs.
  traps++;
  fresh = next;
  const told = [...pending];
  pending.clear();
  for (const f of told) {
    try {
      f(err);
    } catch (thrown) {
      // The caller's callback threw: reported as the runtime reports any callback's error, after the
      // others have heard.
      setTimeout(() => {
        throw thrown;
      }, 0);
    }
  }
  return err;
}

/** The re-instantiation after the current macrotask (the trapped instance has gone quiet by then); throws
 * when it cannot be scheduled. */
function replacement() {
  let done;
  const replaced = new Promise((resolve) => {
    done = resolve;
  });
  if (done === undefined) {
    // An executor that ran out of stack rejects its promise instead of throwing: thrown here instead.
    replaced.catch(() => {});
    throw new RangeError("no stack left to schedule the wasm instance's replacement");
  }
  setTimeout(() => {
    try {
      scheduleReinit();
      instance++;
    } finally {
      fresh = undefined;
      done();
    }
  }, 0);
  return replaced;
}

/** Handed to the signer (src/bindings/sign.rs, `signerStart`): a coded error, which it builds its errors
 * with. Apart from `hooks`, which the signing-only entry then does not carry. */
export const signerHooks = {
  error: (code, message) => new CelldEdgeError(message, { code }),
};

/** Handed to every WasmOwnership and WasmInspector (src/bindings/trap.rs, `Hooks`). */
export const hooks = {
  /** The class the wasm builds its errors with. */
  errorClass: CelldEdgeError,
  poll(f) {
    try {
      f();
      return undefined;
    } catch (e) {
      trapped(e);
      return e instanceof Error ? e.message : String(e);
    }
  },
  /** `p` (a promise or a value) as a promise that never settles once this instance trapped. */
  gate(p) {
    const at = traps;
    return Promise.resolve(p).then(
      (v) => (at === traps ? v : new Promise(() => {})),
      (e) => {
        if (at === traps) throw e;
        return new Promise(() => {});
      },
    );
  },
};

/** The current instance's number (objects remember the one they were made in). */
export const currentInstance = () => instance;

/** Waits out a pending re-instantiation, if any. */
export const settled = () => fresh;

/**
 * Calls into wasm synchronously; a trap there becomes an "internal" error (and is recorded).
 */
export function sync(f) {
  try {
    return f();
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError) throw trapped(e);
    throw e;
  }
}

/** Calls `onTrap(err)` at the next trap (a renewal loop's way to hear that it ended); returns the
 * function that cancels that. */
export function untilTrap(onTrap) {
  pending.add(onTrap);
  return () => pending.delete(onTrap);
}

let holdRequests = false;

/**
 * Workers (js/workerd.js): an operation that joins one another request already runs inside the wasm (a
 * cold isolate's concurrent acquireLease(), claims of one cell) is woken only by that request's I/O, and
 * workerd cancels a request with no I/O of its own pending as hung. A timer in the caller's request, held
 * while the operation runs, is that I/O (docs/r2.md, "Concurrent requests").
 */
export const holdEachRequest = () => {
  holdRequests = true;
};

/** Whether timers and AbortControllers belong to the request that made them (Workers, js/workerd.js). */
export const perRequestIo = () => holdRequests;

/** Runs an operation (`start` returns the wasm Promise), tracked so that a trap rejects it. */
export function track(start) {
  return new Promise((resolve, reject) => {
    pending.add(reject);
    const held = holdRequests ? setInterval(idle, 1000) : undefined;
    let p;
    try {
      p = sync(start);
    } catch (e) {
      untrack(held, reject);
      reject(e);
      return;
    }
    // Functions made per operation are passed, never named: a bundler that keeps names (wrangler's
    // esbuild) names every named one as it is made, which Workers charge for (bench/README.md, i37u).
    p.then(
      (v) => {
        untrack(held, reject);
        resolve(v);
      },
      (e) => {
        untrack(held, reject);
        reject(e);
      },
    );
  });
}

/** What a held operation's timer runs: nothing. */
function idle() {}

/** An operation tracked by `track` has settled. */
function untrack(held, reject) {
  if (held !== undefined) clearInterval(held);
  pending.delete(reject);
}
