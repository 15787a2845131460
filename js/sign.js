// The signer's fast path (`signRequest`, `presignUrl`): this file reads and type-checks the options
// objects and writes them straight into the signer's I/O buffer in wasm memory, in the format
// src/bindings/sign.rs defines (its module comment is the one description; the constants below are checked
// against it by tests/node/sign-format.test.mjs), then decodes the answer from the same buffer. Errors
// thrown by wasm are re-thrown as they are; errors found here are the same class (CelldEdgeError,
// js/error.js) with `code` = "invalid-input". AwsClient (aws-client.js) signs through it; api.js exports it.
// It must never call into wasm while modules are being evaluated: the entry initialises wasm after its
// imports (this file included) have been evaluated.

import { hashBody, ioBuffer, ioMemory, ownershipOptionNames, presignIo, signIo, signerStart } from "../pkg/celld_edge.js";
import { currentInstance, settled, signerHooks, sync, trapped } from "./instance.js";
import { FORMAT } from "./sign-format.js";
import { CelldEdgeError, describe, invalidInput } from "./error.js";

const SEP = FORMAT.sep;
const CALLER_CODE = FORMAT.callerCode;
const CALLER_END = FORMAT.callerCode + FORMAT.callerCodes;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Default X-Amz-Expires in seconds (one day), as aws4fetch's. */
const DEFAULT_EXPIRES_IN = 86400;
const IO_KEEP = FORMAT.ioKeep;
const { payloadBody: PAYLOAD_BODY, payloadUnsigned: PAYLOAD_UNSIGNED, payloadHashed: PAYLOAD_HASHED, maxExpiresIn: MAX_EXPIRES_IN } = FORMAT;

/** The wasm instance the signer was started in (`signerStart`, on first use: never while modules are
 * being evaluated), wasm memory, the I/O buffer's address and length there, and a view of it (empty once
 * detached). */
let signerInstance;
let memory;
let ioPtr = 0;
let ioLen = 0;
let io = new Uint8Array(0);
/**
 * Whether a call is past reading the caller's options, in the part that calls into the wasm (set from
 * there until it returns: two stores a call, where one pair around each wasm call measurably slowed
 * signing). Whatever is thrown meanwhile that is not the signer's own answer (a `CelldEdgeError` it made)
 * may have left the wasm midway: a trap, or a stack overflow inside it (a caller already deep in
 * recursion) or in a function it called. Its state is then undefined (a signer still borrowed, a half-done
 * allocation), so `failed` handles that as a trap, as the ownership classes' calls are. The signer's
 * plain-string refusals ("already in use") mean just that: a signer left borrowed by such a call, so they
 * are handled alike, and the next task signs afresh.
 */
let inWasm = false;

/** A view of the I/O buffer at least `need` bytes long. */
function ioView(need) {
  if (signerInstance !== currentInstance()) {
    // First use, or a trap replaced the instance: a fresh signer, buffer and memory.
    sync(() => signerStart(signerHooks));
    signerInstance = currentInstance();
    memory = undefined;
    ioLen = 0;
    io = new Uint8Array(0);
  }
  if (need > ioLen) {
    ioPtr = ioBuffer(need);
    ioLen = need;
    io = new Uint8Array(0);
  }
  // A view goes empty (detached) whenever wasm memory grows, which any call into wasm may do.
  if (io.byteLength === 0) {
    memory ??= ioMemory();
    io = new Uint8Array(memory.buffer, ioPtr, ioLen);
  }
  return io;
}

/** Set when a call left the wasm midway with too little stack left to record the trap: the next call
 * records it (notTrapped). */
let unrecorded;

/** What signRequest / presignUrl throw for `e`: a trap, or anything that left the wasm midway (`inWasm`),
 * is recorded as a trap and becomes an "internal" error; anything else is thrown as it is. */
function failed(e) {
  const midway = inWasm && !(e instanceof CelldEdgeError);
  inWasm = false;
  if (!midway && !(e instanceof WebAssembly.RuntimeError)) return e;
  unrecorded = e;
  const err = trapped(e); // may throw for want of stack: `unrecorded` stays set
  unrecorded = undefined;
  return err;
}

/** The `len`-byte answer the signer just wrote into the I/O buffer. */
function answer(len) {
  // The signer moves the buffer when the answer outgrew it or when it cut a large buffer back (only ever
  // on success, so a call that threw leaves this view valid).
  if (len > ioLen || ioLen > IO_KEEP) ioLen = 0;
  return decoder.decode(ioView(len).subarray(0, len));
}

const invalid = invalidInput;

function optionsObject(opts, fn) {
  if (opts === null || typeof opts !== "object") {
    throw invalid(`${fn} needs an options object, got ${describe(opts)}`);
  }
  return opts;
}

/** What to say about an option the signers do not take: what was probably meant, where there is a
 * usual mistake. S3Ownership's own options are refused too (docs/signing.md says why). */
const STORE_OPTION = "is an S3Ownership option: the signers take the full url, the region and the credentials only";
const MISTAKES = {
  signRequest: {
    expiresIn: "expiresIn is presignUrl's (a header signature is accepted for about 15 minutes from its datetime)",
    expires: "expiresIn is presignUrl's (a header signature is accepted for about 15 minutes from its datetime)",
    signedHeaders: "did you mean headers?",
    signQuery: "use presignUrl for query-string auth",
  },
  presignUrl: {
    expires: "did you mean expiresIn (seconds)?",
    headers: "did you mean signedHeaders (the headers the request must send)?",
    body: "a presigned URL is UNSIGNED-PAYLOAD: its body is not signed",
    unsignedPayload: "a presigned URL is always UNSIGNED-PAYLOAD",
  },
};
/** S3Ownership's option names, as the wasm checks them (src/bindings/option_names.rs, the one list, which
 * it answers comma-separated): asked for only when an unknown option is refused. */
let storeOptions;
function isStoreOption(key) {
  if (storeOptions === undefined) {
    inWasm = true;
    storeOptions = new Set(sync(() => ownershipOptionNames()).split(","));
    inWasm = false;
  }
  return storeOptions.has(key);
}

/** Refuses `o`'s first key that `fn` does not take (`known` says), naming it. */
function refuseUnknown(o, known, fn) {
  // for-in rather than Object.keys: no array per call on the signing path.
  for (const key in o) {
    if (!known(key)) {
      // hasOwn: a key named "constructor" or "__proto__" is unknown, not a hint.
      const hint = Object.hasOwn(MISTAKES[fn], key) ? MISTAKES[fn][key] : isStoreOption(key) ? STORE_OPTION : undefined;
      throw invalid(`unknown ${fn} option ${JSON.stringify(key)}${hint === undefined ? "" : hint === STORE_OPTION ? ` ${hint}` : `: ${hint}`}`);
    }
  }
}

/** The options signRequest takes (a switch on literals: the fastest membership test V8 has here). */
function signKey(key) {
  switch (key) {
    case "method": case "url": case "headers": case "body": case "unsignedPayload": case "region": case "service":
    case "accessKeyId": case "secretAccessKey": case "sessionToken": case "datetime":
      return true;
  }
  return false;
}

function presignKey(key) {
  switch (key) {
    case "method": case "url": case "signedHeaders": case "expiresIn": case "region": case "service":
    case "accessKeyId": case "secretAccessKey": case "sessionToken": case "datetime":
      return true;
  }
  return false;
}

function str(v, name, fallback) {
  if (v === undefined || v === null) {
    if (fallback === undefined) throw invalid(`${name} is required`);
    return fallback;
  }
  if (typeof v !== "string") throw invalid(`${name} must be a string, got ${describe(v)}`);
  return v;
}

function nonEmpty(v, name) {
  const s = str(v, name);
  if (s === "") throw invalid(`${name} must not be empty`);
  return s;
}

function urlString(v) {
  if (typeof v === "string") return v;
  // URL objects (from any realm) carry their serialisation in `href`.
  if (v !== null && typeof v === "object" && typeof v.href === "string") return v.href;
  throw invalid(v === undefined || v === null ? "url is required" : `url must be a string or URL, got ${describe(v)}`);
}

function checkHeader(name, value, what) {
  if (typeof name !== "string") throw invalid(`${what}: header names must be strings, got ${describe(name)}`);
  if (typeof value !== "string") {
    throw invalid(`${what}: header ${JSON.stringify(name)} must have a string value, got ${describe(value)}`);
  }
}

/**
 * Headers from a plain object, a Headers/Map, or [name, value] pairs, as the `NUL name NUL value ...`
 * tail of the packed fields; pushes their names as given onto `names`, the call's own array: reading
 * `h` runs the caller's code (getters, an iterator, a Proxy), which may sign another request meanwhile.
 */
function headerFields(h, what, names) {
  if (h === undefined || h === null) return "";
  if (typeof h !== "object") throw invalid(`${what} must be an object, Headers or [name, value] pairs, got ${describe(h)}`);
  let out = "";
  if (Array.isArray(h) || typeof h[Symbol.iterator] === "function") {
    for (const pair of h) {
      if (!Array.isArray(pair) || pair.length !== 2) throw invalid(`${what}: each entry must be a [name, value] pair`);
      const name = pair[0];
      const value = pair[1];
      checkHeader(name, value, what);
      out += SEP + name + SEP + value;
      names.push(name);
    }
    return out;
  }
  const keys = Object.keys(h);
  for (let i = 0; i < keys.length; i++) {
    const value = h[keys[i]];
    checkHeader(keys[i], value, what);
    out += SEP + keys[i] + SEP + value;
    names.push(keys[i]);
  }
  return out;
}

/** The method as fetch sends it, so as it is signed: the six that fetch normalizes, upper-cased (AwsClient
 * uses it too). */
export function fetchMethod(method) {
  const upper = method.toUpperCase();
  switch (upper) {
    case "DELETE": case "GET": case "HEAD": case "OPTIONS": case "POST": case "PUT":
      return upper;
  }
  return method;
}

/** A plain Uint8Array over a body's bytes (read once: the view's getters may be the caller's code). */
function bodyBytes(body) {
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw invalid(`body of type ${describe(body)} cannot be hashed: pass a string or Uint8Array, or set unsignedPayload: true`);
}

/** Hashes `bytes` into the signer in pieces of IO_KEEP: wasm memory never holds a body larger than that. */
function hashBytes(bytes) {
  let at = 0;
  do {
    const piece = bytes.subarray(at, at + IO_KEEP);
    ioView(piece.length).set(piece);
    hashBody(piece.length, at === 0);
    at += IO_KEEP;
  } while (at < bytes.length);
}

/** Hashes `text` as UTF-8 into the signer in pieces of at most IO_KEEP bytes (never splitting a
 * character: encodeInto stops before one that does not fit). */
function hashText(text) {
  let at = 0;
  do {
    const { read, written } = encoder.encodeInto(at === 0 ? text : text.slice(at), ioView(IO_KEEP));
    hashBody(written, at === 0);
    at += read;
  } while (at < text.length);
}

/** Refuses to call into an instance that trapped and is about to be replaced (its state is undefined). */
function notTrapped() {
  if (unrecorded !== undefined) {
    const err = trapped(unrecorded);
    unrecorded = undefined;
    throw err;
  }
  if (settled() !== undefined) {
    throw new CelldEdgeError("internal error: celld-edge trapped and its wasm instance is being replaced; sign again from the next task (a fresh signer)", { code: "internal" });
  }
}

/** The last region, service, key id, secret and token as given, and them checked and packed: a client
 * passes the same five strings call after call, and comparing is cheaper than checking and packing. */
let scope = {};

/** The fixed fields, then `headers` (from headerFields), for signIo / presignIo. */
function pack(o, method, url, headers, datetimeText) {
  const { region, service, accessKeyId, secretAccessKey, sessionToken } = o;
  let s = scope;
  if (s.packed === undefined || region !== s.region || service !== s.service || accessKeyId !== s.accessKeyId || secretAccessKey !== s.secretAccessKey || sessionToken !== s.sessionToken) {
    const packed =
      nonEmpty(region, "region") + SEP + nonEmpty(str(service, "service", "s3"), "service") + SEP + nonEmpty(accessKeyId, "accessKeyId") +
      SEP + nonEmpty(secretAccessKey, "secretAccessKey") + SEP + str(sessionToken, "sessionToken", "");
    s = scope = { region, service, accessKeyId, secretAccessKey, sessionToken, packed };
  }
  return method + SEP + url + SEP + s.packed + SEP + datetimeText + headers;
}

/** datetime as packed text: ISO-8601 basic as given, or "" (the time is then passed as Unix ms). */
function datetimeText(v) {
  if (v === undefined || v === null || v instanceof Date) return "";
  if (typeof v === "string") {
    if (v === "") throw invalid("datetime must be YYYYMMDDTHHMMSSZ or a Date, got an empty string");
    return v;
  }
  throw invalid(`datetime must be YYYYMMDDTHHMMSSZ or a Date, got ${describe(v)}`);
}

/** Unix ms of a Date datetime, or now (ignored by the signer when a text datetime is packed). */
function datetimeMs(v) {
  return v instanceof Date ? v.getTime() : v === undefined || v === null ? Date.now() : 0;
}

/**
 * Signs a request with SigV4 header auth. Returns `{ method, url, headers }` with lower-case header names.
 */
export function signRequest(opts) {
  return guarded(sign, opts);
}

/** `f(opts)` (sign or presign) on an instance that has not trapped; what it throws as `failed` says. */
function guarded(f, opts) {
  try {
    notTrapped();
    const out = f(opts);
    inWasm = false;
    return out;
  } catch (e) {
    throw failed(e);
  }
}

function sign(opts) {
  const o = optionsObject(opts, "signRequest");
  refuseUnknown(o, signKey, "signRequest");
  const method = fetchMethod(nonEmpty(str(o.method, "method", "GET"), "method"));
  const url = urlString(o.url);
  const names = [];
  const headers = headerFields(o.headers, "headers", names);
  const unsigned = o.unsignedPayload === undefined ? false : o.unsignedPayload;
  if (typeof unsigned !== "boolean") throw invalid(`unsignedPayload must be a boolean, got ${describe(unsigned)}`);
  const given = o.body;
  const body = unsigned || given === null ? undefined : given;
  // The body is hashed: a string or bytes (any view of them); anything else (a stream) only unsigned.
  // A caller's x-amz-content-sha256 is the payload hash, so the body is not even looked at.
  const hashGiven = body !== undefined && names.some((n) => n.length === 20 && n.toLowerCase() === "x-amz-content-sha256");
  const bytes = body === undefined || hashGiven || typeof body === "string" ? undefined : bodyBytes(body);
  const datetime = o.datetime;
  const fields = pack(o, method, url, headers, datetimeText(datetime));
  const unixMs = datetimeMs(datetime);
  // From here on no caller code runs: the signer's buffer is written and read in one go.
  inWasm = true;
  let payload = unsigned ? PAYLOAD_UNSIGNED : PAYLOAD_BODY;
  let bodyLen = 0;
  if (bytes !== undefined) {
    if (bytes.length > IO_KEEP) {
      hashBytes(bytes);
      payload = PAYLOAD_HASHED;
    } else {
      const view = ioView(fields.length * 3 + bytes.length);
      const fieldsLen = encoder.encodeInto(fields, view).written;
      view.set(bytes, fieldsLen);
      return signed(method, url, names, signIo(fieldsLen, bytes.length, names.length, payload, unixMs));
    }
  } else if (body !== undefined && !hashGiven && body.length * 3 > IO_KEEP) {
    hashText(body);
    payload = PAYLOAD_HASHED;
  }
  const inline = payload === PAYLOAD_BODY && body !== undefined && !hashGiven;
  // encodeInto writes at most 3 bytes per UTF-16 code unit.
  const view = ioView((fields.length + (inline ? body.length : 0)) * 3);
  const fieldsLen = encoder.encodeInto(fields, view).written;
  if (inline) bodyLen = encoder.encodeInto(body, view.subarray(fieldsLen)).written;
  return signed(method, url, names, signIo(fieldsLen, bodyLen, names.length, payload, unixMs));
}

/**
 * The result of signRequest from the answer `url NUL name NUL value ...`: an empty url is the one given; a
 * name below U+0020 is a code (NAME_CODES, CALLER_CODE in src/bindings/sign.rs) for a literal or the
 * caller's own name string, which V8 stores under far faster than under a name sliced from the answer.
 */
function signed(method, url, names, len) {
  const s = answer(len);
  let at = s.indexOf(SEP);
  if (at !== 0) url = at < 0 ? s : s.slice(0, at);
  const headers = {};
  while (at >= 0) {
    const v = s.indexOf(SEP, at + 1);
    const code = v === at + 2 ? s.charCodeAt(at + 1) : 0x20;
    const name = at + 1;
    at = s.indexOf(SEP, v + 1);
    const value = at < 0 ? s.slice(v + 1) : s.slice(v + 1, at);
    // FORMAT.nameCodes, by literal: V8 stores under a literal name much faster.
    if (code === 1) headers.authorization = value;
    else if (code === 2) headers["x-amz-date"] = value;
    else if (code === 3) headers["x-amz-content-sha256"] = value;
    else if (code === 4) headers["x-amz-security-token"] = value;
    else setHeader(headers, code >= CALLER_CODE && code < CALLER_END ? names[code - CALLER_CODE] : s.slice(name, v), value);
  }
  return { method, url, headers };
}

function setHeader(headers, name, value) {
  // defineProperty keeps a header literally named "__proto__" an ordinary entry.
  if (name === "__proto__") Object.defineProperty(headers, name, { value, enumerable: true, writable: true, configurable: true });
  else headers[name] = value;
}

/** Presigns a URL (query-string auth, UNSIGNED-PAYLOAD). `expiresIn` is in seconds, 1..=604800. */
export function presignUrl(opts) {
  return guarded(presign, opts);
}

function presign(opts) {
  const o = optionsObject(opts, "presignUrl");
  refuseUnknown(o, presignKey, "presignUrl");
  const method = fetchMethod(nonEmpty(str(o.method, "method", "GET"), "method"));
  const url = urlString(o.url);
  const names = [];
  const headers = headerFields(o.signedHeaders, "signedHeaders", names);
  const given = o.expiresIn;
  const expiresIn = given === undefined || given === null ? DEFAULT_EXPIRES_IN : given;
  if (typeof expiresIn !== "number") throw invalid(`expiresIn must be a number of seconds, got ${describe(expiresIn)}`);
  // The signer refuses these too; here they are named as JS writes them.
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_EXPIRES_IN) {
    throw invalid(`expiresIn must be a whole number of seconds in 1..=${MAX_EXPIRES_IN}, got ${expiresIn}`);
  }
  const datetime = o.datetime;
  const fields = pack(o, method, url, headers, datetimeText(datetime));
  const unixMs = datetimeMs(datetime);
  inWasm = true;
  const fieldsLen = encoder.encodeInto(fields, ioView(fields.length * 3)).written;
  return answer(presignIo(fieldsLen, names.length, expiresIn, unixMs));
}
