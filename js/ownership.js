// S3Ownership, the public class: checks option types, builds the host object the wasm core sends
// through (the injected fetch with an abort timer and `cache: "no-store"`, clocks, randomness, timers),
// parses the JSON the core answers with, and runs the renewal loop for long-lived runtimes. Every
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

async function send(fetchFn, method, url, flat, body, timeoutMs) {
  const headers = {};
  for (let i = 0; i + 1 < flat.length; i += 2) headers[flat[i]] = flat[i + 1];
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = timeoutMs > 0 ? setTimeout(() => { timedOut = true; ctrl.abort(); }, timeoutMs) : undefined;
  const init = { method, headers, signal: ctrl.signal };
  if (body.length > 0) init.body = body;
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
    return [res.status, res.headers.get("etag"), bytes, null, false];
  } catch (e) {
    return [0, null, null, String((e && e.message) || e), timedOut];
  } finally {
    clearTimeout(timer);
  }
}

function makeHost(fetchFn, onEvent) {
  const words = new Uint32Array(1);
  return {
    events: typeof onEvent === "function",
    event: (json) => {
      try {
        onEvent(JSON.parse(json));
      } catch {
        // A throwing observer must not break the protocol.
      }
    },
    send: (method, url, headers, body, timeoutMs) => send(fetchFn, method, url, headers, body, timeoutMs),
    wall: () => Date.now(),
    mono: () => performance.now(),
    random32: () => crypto.getRandomValues(words)[0],
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
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

const parse = (json) => JSON.parse(json);

export class S3Ownership {
  #core;
  #timer = undefined;
  #renewing = false;

  constructor(options) {
    const fetchFn = options?.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== "function") throw invalid("fetch must be a function (none given and no globalThis.fetch)");
    const onEvent = options?.onEvent;
    if (onEvent !== undefined && typeof onEvent !== "function") throw invalid("onEvent must be a function");
    this.#core = new WasmOwnership(optionsJson(options), makeHost(fetchFn.bind(globalThis), onEvent));
  }

  // Async methods, so bad arguments reject like every other failure instead of throwing synchronously.
  async readOwner(cell) { return parse(await this.#core.readOwner(text(cell, "cell"))); }
  async casOwner(cell, guard, epoch) { return parse(await this.#core.casOwner(text(cell, "cell"), guardEtag(guard), num(epoch, "epoch"))); }
  async releaseOwner(cell, epoch) { return parse(await this.#core.releaseOwner(text(cell, "cell"), num(epoch, "epoch"))); }
  async readNodeLease(node) { return parse(await this.#core.readNodeLease(text(node, "node"))); }
  async casNodeLease(guard, expiresMs) { return parse(await this.#core.casNodeLease(guardEtag(guard), num(expiresMs, "expiresMs"))); }
  async acquireLease() { await this.#core.acquireLease(); }
  async renewLease() { await this.#core.renewLease(); }
  leaseValid() { return this.#core.leaseValid(); }
  async probe() { return parse(await this.#core.probe()); }
  async claim(cell) { return parse(await this.#core.claim(text(cell, "cell"))); }
  async release(cell) { return parse(await this.#core.release(text(cell, "cell"))); }
  async owner(cell) { return parse(await this.#core.owner(text(cell, "cell"))); }
  async verify(cell, epoch) { return parse(await this.#core.verify(text(cell, "cell"), num(epoch, "epoch"))); }

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
        await this.#core.renewLease();
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
