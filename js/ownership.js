// S3Ownership, the public class: checks option types, builds the host object the wasm core sends
// through (the injected fetch with an abort timer and `cache: "no-store"`, clocks, randomness, timers),
// drives the core's operations (start, then poll again whenever a request or timer it waits on has been
// answered), parses the JSON they end with, and runs the renewal loop for long-lived runtimes. Every
// protocol decision is made in Rust (src/ownership); nothing here may decide ownership.

import { WasmOwnership } from "../pkg/celld_edge.js";

function invalid(message) {
  const err = new Error(`invalid input: ${message}`);
  err.code = "invalid-input";
  return err;
}

const STRINGS = ["endpoint", "bucket", "region", "accessKeyId", "secretAccessKey", "sessionToken", "node", "addr", "prefix"];
const NUMBERS = ["leaseTtlMs", "maxClockSkewMs", "requestTimeoutMs"];
const KNOWN = new Set([...STRINGS, ...NUMBERS, "pathStyle", "fetch", "probe", "onEvent"]);

/** The options minus functions, type-checked, as the JSON the core reads. */
function optionsJson(opts) {
  if (opts === null || typeof opts !== "object") throw invalid("new S3Ownership() needs an options object");
  const out = {};
  for (const [k, v] of Object.entries(opts)) {
    if (!KNOWN.has(k)) throw invalid(`unknown S3Ownership option ${JSON.stringify(k)}`);
    if (v === undefined || k === "fetch" || k === "onEvent") continue;
    if (STRINGS.includes(k) && typeof v !== "string") throw invalid(`${k} must be a string`);
    if (NUMBERS.includes(k) && !(Number.isSafeInteger(v) && v >= 0)) throw invalid(`${k} must be a non-negative integer`);
    if ((k === "pathStyle" || k === "probe") && typeof v !== "boolean") throw invalid(`${k} must be a boolean`);
    out[k] = v;
  }
  for (const k of ["endpoint", "bucket", "accessKeyId", "secretAccessKey", "node"]) {
    if (typeof out[k] !== "string") throw invalid(`${k} is required`);
  }
  return JSON.stringify(out);
}

/** Runtimes that do not implement RequestInit.cache throw on it; then send without it. */
let cacheOption = true;

/**
 * Sends one request; resolves to `[status, text, body, timedOut]` (status 0: no answer, `text` says why; else
 * the ETag), never rejects.
 * `lines` is each header name and value followed by a newline.
 */
async function send(fetchFn, method, url, lines, body, timeoutMs) {
  const flat = lines.split("\n");
  const headers = {};
  for (let i = 0; i + 1 < flat.length; i += 2) headers[flat[i]] = flat[i + 1];
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = timeoutMs > 0 ? setTimeout(() => { timedOut = true; ctrl.abort(); }, timeoutMs) : undefined;
  const init = { method, headers, signal: ctrl.signal };
  // `body` is a view of the core's memory: a fetch that reads it after an await (a wrapper, a retry)
  // would find it reused, or empty once the memory grew. Send a copy.
  if (body.length > 0) init.body = body.slice();
  try {
    let res;
    try {
      res = await fetchFn(url, cacheOption ? { ...init, cache: "no-store" } : init);
    } catch (e) {
      // Thrown before anything was sent: the runtime rejected the option itself.
      if (!cacheOption || !(e instanceof TypeError) || !/cache/i.test(String(e.message))) throw e;
      cacheOption = false;
      res = await fetchFn(url, init);
    }
    const bytes = new Uint8Array(await res.arrayBuffer());
    return [res.status, res.headers.get("etag"), bytes, false];
  } catch (e) {
    return [0, String((e && e.message) || e), null, timedOut];
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The host the core calls (src/bindings/ownership.rs, `Host`). `send` and `sleep` start I/O for a task
 * and, once it is answered, hand the answer to the core and poll that task again (`runner.answer`).
 */
function makeHost(fetchFn, onEvent, runner) {
  // Random words drawn 64 at a time: one getRandomValues call per 16 nonces instead of one per word.
  const words = new Uint32Array(64);
  let used = words.length;
  const random32 = () => {
    if (used === words.length) {
      crypto.getRandomValues(words);
      used = 0;
    }
    return words[used++];
  };
  return {
    events: typeof onEvent === "function",
    event: (json, ms) => {
      try {
        const e = JSON.parse(json);
        if (!Number.isNaN(ms)) e.ms = ms;
        onEvent(e);
      } catch {
        // A throwing observer must not break the protocol.
      }
    },
    send: (task, io, method, url, headers, body, timeoutMs) => {
      send(fetchFn, method, url, headers, body, timeoutMs).then((a) => runner.answer(task, io, a));
    },
    sleep: (task, io, ms) => setTimeout(() => runner.answer(task, io, [0, null, null, false]), ms),
    wall: () => Date.now(),
    mono: () => performance.now(),
    random32,
  };
}

/** Runs core operations to completion: one promise per task, settled when its poll ends it. */
class Runner {
  core = undefined;
  #settle = new Map();

  run(op, id, etag, n) {
    return new Promise((resolve, reject) => {
      const task = this.core.start(op, id, etag, n);
      this.#settle.set(task, [resolve, reject]);
      // Polled from a fresh microtask, never from inside another task's poll (an onEvent observer).
      queueMicrotask(() => this.#poll(task));
    });
  }

  answer(task, io, [status, text, body, timedOut]) {
    this.core.resume(io, status, text ?? undefined, body ?? new Uint8Array(), timedOut);
    this.#poll(task);
  }

  #poll(task) {
    const settle = this.#settle.get(task);
    if (settle === undefined) return;
    let json;
    try {
      json = this.core.poll(task);
    } catch (e) {
      this.#settle.delete(task);
      settle[1](e);
      return;
    }
    if (json !== undefined) {
      this.#settle.delete(task);
      settle[0](JSON.parse(json));
    }
  }
}

function guardEtag(guard) {
  if (guard === "absent") return undefined;
  if (guard !== null && typeof guard === "object" && typeof guard.match === "string" && guard.match !== "") return guard.match;
  throw invalid('guard must be "absent" or { match: etag }');
}

function text(v, name) {
  if (typeof v !== "string") throw invalid(`${name} must be a string`);
  return v;
}

function num(v, name) {
  if (typeof v !== "number") throw invalid(`${name} must be a number`);
  return v;
}

/** The core's operation numbers (src/bindings/ownership.rs): one wasm entry point serves them all. */
const OP = { readOwner: 0, casOwner: 1, releaseOwner: 2, readNodeLease: 3, casNodeLease: 4, acquireLease: 5, renewLease: 6, claim: 7, release: 8, owner: 9, verify: 10, probe: 11, claimNew: 12 };

/** `claim`'s options: undefined, or an object whose only key is `expectNew` (a boolean). */
function expectNew(options) {
  if (options === undefined) return false;
  if (options === null || typeof options !== "object") throw invalid("claim options must be an object");
  for (const [k, v] of Object.entries(options)) {
    if (k !== "expectNew") throw invalid(`unknown claim option ${JSON.stringify(k)}`);
    if (v !== undefined && typeof v !== "boolean") throw invalid("expectNew must be a boolean");
  }
  return options.expectNew === true;
}

export class S3Ownership {
  #core;
  #runner = new Runner();
  #timer = undefined;
  #renewing = false;

  constructor(options) {
    const fetchFn = options?.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== "function") throw invalid("fetch must be a function (none given and no globalThis.fetch)");
    const onEvent = options?.onEvent;
    if (onEvent !== undefined && typeof onEvent !== "function") throw invalid("onEvent must be a function");
    this.#core = new WasmOwnership(optionsJson(options), makeHost(fetchFn.bind(globalThis), onEvent, this.#runner));
    this.#runner.core = this.#core;
  }

  /** Runs a core operation; resolves with the JSON it answers, parsed. */
  #call(op, id = "", etag = undefined, n = 0) {
    return this.#runner.run(op, id, etag, n);
  }

  // Async methods, so bad arguments reject like every other failure instead of throwing synchronously.
  async readOwner(cell) { return this.#call(OP.readOwner, text(cell, "cell")); }
  async casOwner(cell, guard, epoch) { return this.#call(OP.casOwner, text(cell, "cell"), guardEtag(guard), num(epoch, "epoch")); }
  async releaseOwner(cell, epoch) { return this.#call(OP.releaseOwner, text(cell, "cell"), undefined, num(epoch, "epoch")); }
  async readNodeLease(node) { return this.#call(OP.readNodeLease, text(node, "node")); }
  async casNodeLease(guard, expiresMs) { return this.#call(OP.casNodeLease, "", guardEtag(guard), num(expiresMs, "expiresMs")); }
  async acquireLease() { await this.#call(OP.acquireLease); }
  async renewLease() { await this.#call(OP.renewLease); }
  leaseValid() { return this.#core.leaseValid(); }
  async probe() { return this.#call(OP.probe); }
  async claim(cell, options) { return this.#call(expectNew(options) ? OP.claimNew : OP.claim, text(cell, "cell")); }
  async release(cell) { return this.#call(OP.release, text(cell, "cell")); }
  async owner(cell) { return this.#call(OP.owner, text(cell, "cell")); }
  async verify(cell, epoch) { return this.#call(OP.verify, text(cell, "cell"), undefined, num(epoch, "epoch")); }

  /**
   * Renews every ttl/3 until stopRenewing(). A renewal that fails with `fenced` or `not-leased` stops the
   * loop and is passed to `onError` (the node must acquireLease() and re-claim); other failures are
   * passed to `onError` and retried at the next tick while the lease lasts.
   */
  startRenewing(onError = () => {}) {
    if (this.#renewing) return;
    this.#renewing = true;
    const tick = async () => {
      if (!this.#renewing) return;
      try {
        await this.#call(OP.renewLease);
      } catch (e) {
        onError(e);
        if (e && (e.code === "fenced" || e.code === "not-leased")) {
          this.#renewing = false;
          return;
        }
      }
      if (this.#renewing) this.#timer = setTimeout(tick, this.#core.renewIntervalMs());
    };
    this.#timer = setTimeout(tick, this.#core.renewIntervalMs());
  }

  stopRenewing() {
    this.#renewing = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
