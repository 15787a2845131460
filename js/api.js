// The public JS surface of celld-edge, shared by every runtime entry (node.js, deno.js, workerd.js,
// browser.js). S3Ownership comes from ownership.js, S3Inspector from inspector.js. The signer's fast path:
// this file reads and type-checks the options objects and writes them straight into the signer's I/O buffer
// in wasm memory, in the format src/bindings/sign.rs defines (its module comment is the one description;
// the constants below are checked against it by tests/node/sign-format.test.mjs), then decodes the answer
// from the same buffer. Errors thrown by wasm are re-thrown as they are; errors found here are the same
// class (CelldEdgeError, js/error.js) with `code` = "invalid-input".
// It must never call into wasm while modules are being evaluated: the entry initialises wasm after its
// imports (this file included) have been evaluated.

import { SignerIo, ioMemory } from "../pkg/celld_edge.js";
import { currentInstance, hooks, sync, trapped } from "./instance.js";
import { FORMAT } from "./sign-format.js";
import { invalidInput } from "./error.js";

export * from "./ownership.js";
export { S3Inspector } from "./inspector.js";
export { AwsClient } from "./aws-client.js";
export { CelldEdgeError } from "./error.js";

const SEP = FORMAT.sep;
const CALLER_CODE = FORMAT.callerCode;
const CALLER_END = FORMAT.callerCode + FORMAT.callerCodes;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Default X-Amz-Expires in seconds (one day), as aws4fetch's. */
const DEFAULT_EXPIRES_IN = 86400;
const IO_KEEP = FORMAT.ioKeep;

/** The signer and its I/O buffer (made on first use: never while modules are being evaluated) and the
 * wasm instance it lives in, wasm memory, the I/O buffer's address and length there, and a view of it
 * (empty once detached). */
let signer;
let signerInstance;
let memory;
let ioPtr = 0;
let ioLen = 0;
let io = new Uint8Array(0);

/** A view of the I/O buffer at least `need` bytes long. */
function ioView(need) {
  if (signer === undefined || signerInstance !== currentInstance()) {
    // First use, or a trap replaced the instance: a fresh signer, buffer and memory.
    signer = sync(() => new SignerIo(hooks));
    signerInstance = currentInstance();
    memory = undefined;
    ioLen = 0;
    io = new Uint8Array(0);
  }
  if (need > ioLen) {
    ioPtr = signer.ioBuffer(need);
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

/** The `len`-byte answer the signer just wrote into the I/O buffer. */
function answer(len) {
  // The signer moves the buffer when the answer outgrew it or when it cut a large buffer back (only ever
  // on success, so a call that threw leaves this view valid).
  if (len > ioLen || ioLen > IO_KEEP) ioLen = 0;
  return decoder.decode(ioView(len).subarray(0, len));
}

const invalid = invalidInput;

function describe(v) {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v;
}

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
for (const key of ["endpoint", "bucket", "prefix", "node", "addr", "leaseTtlMs", "maxClockSkewMs", "requestTimeoutMs", "pathStyle", "probe", "probeTrustMs", "ids", "fetch", "onEvent", "credentials"]) {
  MISTAKES.signRequest[key] ??= STORE_OPTION;
  MISTAKES.presignUrl[key] ??= STORE_OPTION;
}

/** Refuses `o`'s first key that `fn` does not take (`known` says), naming it. */
function refuseUnknown(o, known, fn) {
  // for-in rather than Object.keys: no array per call on the signing path.
  for (const key in o) {
    if (!known(key)) {
      // hasOwn: a key named "constructor" or "__proto__" is unknown, not a hint.
      const hint = Object.hasOwn(MISTAKES[fn], key) ? MISTAKES[fn][key] : undefined;
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

/** How many headers the last headerFields call packed, and their names as given (module variables
 * rather than a result object). */
let headerCount = 0;
const headerNames = [];

/**
 * Headers from a plain object, a Headers/Map, or [name, value] pairs, as the `NUL name NUL value ...`
 * tail of the packed fields; sets headerCount.
 */
function headerFields(h, what) {
  headerCount = 0;
  if (h === undefined || h === null) return "";
  if (typeof h !== "object") throw invalid(`${what} must be an object, Headers or [name, value] pairs, got ${describe(h)}`);
  let out = "";
  if (Array.isArray(h) || typeof h[Symbol.iterator] === "function") {
    for (const pair of h) {
      if (!Array.isArray(pair) || pair.length !== 2) throw invalid(`${what}: each entry must be a [name, value] pair`);
      checkHeader(pair[0], pair[1], what);
      out += SEP + pair[0] + SEP + pair[1];
      headerNames[headerCount++] = pair[0];
    }
    return out;
  }
  const names = Object.keys(h);
  for (let i = 0; i < names.length; i++) {
    const value = h[names[i]];
    checkHeader(names[i], value, what);
    out += SEP + names[i] + SEP + value;
    headerNames[i] = names[i];
  }
  headerCount = names.length;
  return out;
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
  try {
    return sign(opts);
  } catch (e) {
    throw e instanceof WebAssembly.RuntimeError ? trapped(e) : e;
  }
}

function sign(opts) {
  const o = optionsObject(opts, "signRequest");
  refuseUnknown(o, signKey, "signRequest");
  const method = nonEmpty(str(o.method, "method", "GET"), "method");
  const url = urlString(o.url);
  const headers = headerFields(o.headers, "headers");
  const count = headerCount;
  const unsigned = o.unsignedPayload === undefined ? false : o.unsignedPayload;
  if (typeof unsigned !== "boolean") throw invalid(`unsignedPayload must be a boolean, got ${describe(unsigned)}`);
  const body = unsigned || o.body === null ? undefined : o.body;
  // The body is hashed: a string or bytes (any view of them); anything else (a stream) only unsigned.
  let bytes;
  if (body !== undefined && typeof body !== "string") {
    if (body instanceof Uint8Array) bytes = body;
    else if (body instanceof ArrayBuffer) bytes = new Uint8Array(body);
    else if (ArrayBuffer.isView(body)) bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    else throw invalid(`body of type ${describe(body)} cannot be hashed: pass a string or Uint8Array, or set unsignedPayload: true`);
  }
  const fields = pack(o, method, url, headers, datetimeText(o.datetime));
  const unixMs = datetimeMs(o.datetime);
  let bodyLen = 0;
  if (bytes !== undefined) {
    const view = ioView(fields.length * 3 + bytes.length);
    const fieldsLen = encoder.encodeInto(fields, view).written;
    view.set(bytes, fieldsLen);
    return signed(method, url, signer.signIo(fieldsLen, bytes.length, count, unsigned, unixMs));
  }
  // encodeInto writes at most 3 bytes per UTF-16 code unit.
  const view = ioView((fields.length + (body === undefined ? 0 : body.length)) * 3);
  const fieldsLen = encoder.encodeInto(fields, view).written;
  if (body !== undefined) bodyLen = encoder.encodeInto(body, view.subarray(fieldsLen)).written;
  return signed(method, url, signer.signIo(fieldsLen, bodyLen, count, unsigned, unixMs));
}

/**
 * The result of signRequest from the answer `url NUL name NUL value ...`: an empty url is the one given; a
 * name below U+0020 is a code (NAME_CODES, CALLER_CODE in src/bindings/sign.rs) for a literal or the
 * caller's own name string, which V8 stores under far faster than under a name sliced from the answer.
 */
function signed(method, url, len) {
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
    else setHeader(headers, code >= CALLER_CODE && code < CALLER_END ? headerNames[code - CALLER_CODE] : s.slice(name, v), value);
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
  try {
    return presign(opts);
  } catch (e) {
    throw e instanceof WebAssembly.RuntimeError ? trapped(e) : e;
  }
}

function presign(opts) {
  const o = optionsObject(opts, "presignUrl");
  refuseUnknown(o, presignKey, "presignUrl");
  const method = nonEmpty(str(o.method, "method", "GET"), "method");
  const url = urlString(o.url);
  const headers = headerFields(o.signedHeaders, "signedHeaders");
  const count = headerCount;
  const expiresIn = o.expiresIn === undefined || o.expiresIn === null ? DEFAULT_EXPIRES_IN : o.expiresIn;
  if (typeof expiresIn !== "number") throw invalid(`expiresIn must be a number of seconds, got ${describe(expiresIn)}`);
  const fields = pack(o, method, url, headers, datetimeText(o.datetime));
  const unixMs = datetimeMs(o.datetime);
  const fieldsLen = encoder.encodeInto(fields, ioView(fields.length * 3)).written;
  return answer(signer.presignIo(fieldsLen, count, expiresIn, unixMs));
}
