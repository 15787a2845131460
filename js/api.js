// The public JS surface of celld-edge, shared by every runtime entry (node.js, deno.js, workerd.js,
// browser.js). It reads and type-checks the options objects, packs them as UTF-8 into one byte array
// for one crossing into wasm (see src/bindings/sign.rs for the format), and unpacks the answer. Errors
// thrown by wasm are re-thrown as they are; errors found here have the same shape: an Error with
// `code` = "invalid-input".
// It must never call into wasm while modules are being evaluated: the entry initialises wasm after its
// imports (this file included) have been evaluated.

import { signPacked, presignPacked } from "../pkg/celld_edge.js";

export * from "./ownership.js";

const SEP = "\0";
const encoder = new TextEncoder();
/** Packing buffer reused between calls; requests larger than this get a buffer of their own. */
const SCRATCH_KEEP = 64 * 1024;
let scratch = new Uint8Array(4096);
/** Default X-Amz-Expires in seconds (one day), as aws4fetch's. */
const DEFAULT_EXPIRES_IN = 86400;

function invalid(message) {
  const err = new Error(`invalid input: ${message}`);
  err.code = "invalid-input";
  return err;
}

function describe(v) {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v;
}

function optionsObject(opts, fn) {
  if (opts === null || typeof opts !== "object") {
    throw invalid(`${fn} needs an options object, got ${describe(opts)}`);
  }
  return opts;
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

/** datetime: ISO-8601 basic string, a Date, or absent (now). Returns [text, unixMs]; text wins when set. */
function datetimeParts(v) {
  if (v === undefined || v === null) return ["", Date.now()];
  if (typeof v === "string") {
    if (v === "") throw invalid("datetime must be YYYYMMDDTHHMMSSZ or a Date, got an empty string");
    return [v, 0];
  }
  if (v instanceof Date) return ["", v.getTime()];
  throw invalid(`datetime must be YYYYMMDDTHHMMSSZ or a Date, got ${describe(v)}`);
}

function pushHeader(out, name, value, what) {
  if (typeof name !== "string") throw invalid(`${what}: header names must be strings, got ${describe(name)}`);
  if (typeof value !== "string") {
    throw invalid(`${what}: header ${JSON.stringify(name)} must have a string value, got ${describe(value)}`);
  }
  out.push(name, value);
}

/** Headers as a flat [name, value, ...] list, from a plain object, a Headers/Map, or [name, value] pairs. */
function headerList(h, what) {
  const out = [];
  if (h === undefined || h === null) return out;
  if (typeof h !== "object") throw invalid(`${what} must be an object, Headers or [name, value] pairs, got ${describe(h)}`);
  if (Array.isArray(h) || typeof h[Symbol.iterator] === "function") {
    for (const pair of h) {
      if (!Array.isArray(pair) || pair.length !== 2) throw invalid(`${what}: each entry must be a [name, value] pair`);
      pushHeader(out, pair[0], pair[1], what);
    }
    return out;
  }
  for (const name of Object.keys(h)) pushHeader(out, name, h[name], what);
  return out;
}

/** The body as [text, bytes] for hashing; anything else (a stream) only with unsignedPayload. */
function bodyParts(body, unsigned) {
  if (unsigned || body === undefined || body === null) return [undefined, undefined];
  if (typeof body === "string") return [body, undefined];
  if (body instanceof Uint8Array) return [undefined, body];
  if (body instanceof ArrayBuffer) return [undefined, new Uint8Array(body)];
  if (ArrayBuffer.isView(body)) return [undefined, new Uint8Array(body.buffer, body.byteOffset, body.byteLength)];
  throw invalid(`body of type ${describe(body)} cannot be hashed: pass a string or Uint8Array, or set unsignedPayload: true`);
}

/** The fixed fields plus headers, joined for signPacked / presignPacked. */
function pack(o, method, url, headers, datetimeText) {
  let packed =
    method + SEP + url + SEP + nonEmpty(o.region, "region") + SEP + nonEmpty(str(o.service, "service", "s3"), "service") +
    SEP + nonEmpty(o.accessKeyId, "accessKeyId") + SEP + nonEmpty(o.secretAccessKey, "secretAccessKey") +
    SEP + str(o.sessionToken, "sessionToken", "") + SEP + datetimeText;
  for (let i = 0; i < headers.length; i++) packed += SEP + headers[i];
  return packed;
}

/** UTF-8 of `fields`, then the body, in one array: [bytes, fieldsLength]. */
function packBytes(fields, text, bytes) {
  // encodeInto writes at most 3 bytes per UTF-16 code unit.
  const need = fields.length * 3 + (text !== undefined ? text.length * 3 : bytes !== undefined ? bytes.length : 0);
  let buf = scratch;
  if (need > buf.length) {
    buf = new Uint8Array(need);
    if (need <= SCRATCH_KEEP) scratch = buf;
  }
  const fieldsLength = encoder.encodeInto(fields, buf).written;
  let end = fieldsLength;
  if (text !== undefined) end += encoder.encodeInto(text, buf.subarray(fieldsLength)).written;
  else if (bytes !== undefined) {
    buf.set(bytes, fieldsLength);
    end += bytes.length;
  }
  return [buf.subarray(0, end), fieldsLength];
}

function headersObject(parts) {
  const headers = {};
  for (let i = 1; i < parts.length; i += 2) {
    // defineProperty keeps a header literally named "__proto__" an ordinary entry.
    if (parts[i] === "__proto__") Object.defineProperty(headers, parts[i], { value: parts[i + 1], enumerable: true, writable: true, configurable: true });
    else headers[parts[i]] = parts[i + 1];
  }
  return headers;
}

/**
 * Signs a request with SigV4 header auth. Returns `{ method, url, headers }` with lower-case header names.
 */
export function signRequest(opts) {
  const o = optionsObject(opts, "signRequest");
  const method = nonEmpty(str(o.method, "method", "GET"), "method");
  const url = urlString(o.url);
  const headers = headerList(o.headers, "headers");
  const unsigned = o.unsignedPayload === undefined ? false : o.unsignedPayload;
  if (typeof unsigned !== "boolean") throw invalid(`unsignedPayload must be a boolean, got ${describe(unsigned)}`);
  const [text, bytes] = bodyParts(o.body, unsigned);
  const [datetimeText, unixMs] = datetimeParts(o.datetime);
  const packed = pack(o, method, url, headers, datetimeText);
  const [input, fieldsLength] = packBytes(packed, text, bytes);
  const parts = signPacked(input, fieldsLength, headers.length / 2, unsigned, unixMs).split(SEP);
  return { method, url: parts[0], headers: headersObject(parts) };
}

/** Presigns a URL (query-string auth, UNSIGNED-PAYLOAD). `expiresIn` is in seconds, 1..=604800. */
export function presignUrl(opts) {
  const o = optionsObject(opts, "presignUrl");
  const method = nonEmpty(str(o.method, "method", "GET"), "method");
  const url = urlString(o.url);
  const headers = headerList(o.signedHeaders, "signedHeaders");
  const expiresIn = o.expiresIn === undefined || o.expiresIn === null ? DEFAULT_EXPIRES_IN : o.expiresIn;
  if (typeof expiresIn !== "number") throw invalid(`expiresIn must be a number of seconds, got ${describe(expiresIn)}`);
  const [datetimeText, unixMs] = datetimeParts(o.datetime);
  const packed = pack(o, method, url, headers, datetimeText);
  return presignPacked(packBytes(packed)[0], headers.length / 2, expiresIn, unixMs);
}
