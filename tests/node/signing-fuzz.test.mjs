// Robustness of the JS/wasm boundary: thousands of generated, mostly malformed option objects go through
// signRequest and presignUrl. Each call must either sign or throw an Error with code "invalid-input" —
// never a wasm trap (RuntimeError), a TypeError, or a hang — and a known request must still sign to the
// same Authorization afterwards. Seeded, so a failure names a reproducible case.
import { test } from "node:test";
import { signRequest, presignUrl } from "celld-edge";

/** xorshift32: small, seeded, good enough to pick cases. */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const STRINGS = ["", " ", "\0", "a\0b", "GET", "PUT", "get", "GE T", "ünï☃", "\ud800", "x".repeat(3000), "%", "%zz", "+", "20150830T123600Z", "20151330T123600Z", "auto", "s3", "service", "https://h/b/k", "https://h", "http://", "ftp://h/x", "https://user:pw@h/k", "https://h/a//b/../c?x=1&x=&y", "https://h/%E2%98%83?%=1", "not a url", "https://[::1]:9/k"];
const VALUES = [undefined, null, 0, -1, 1.5, NaN, Infinity, 604800, 604801, 86400, true, false, {}, [], [["a", "b"]], [["a"]], new Date(0), new Date(NaN), new Date(8.64e15), new Uint8Array(3), new ArrayBuffer(2), Symbol.iterator, () => 1, 10n];

function pick(r, xs) {
  return xs[Math.floor(r() * xs.length)];
}

function value(r) {
  return r() < 0.6 ? pick(r, STRINGS) : pick(r, VALUES);
}

function headers(r) {
  const n = Math.floor(r() * 4);
  const kind = r();
  if (kind < 0.1) return value(r);
  if (kind < 0.5) return Object.fromEntries(Array.from({ length: n }, () => [pick(r, STRINGS), value(r)]));
  if (kind < 0.8) return Array.from({ length: n }, () => [value(r), value(r)]);
  return new Map(Array.from({ length: n }, () => [pick(r, STRINGS), value(r)]));
}

function options(r) {
  const good = {
    method: "PUT",
    url: "https://examplebucket.s3.amazonaws.com/a b/ünï+☃",
    region: "us-east-1",
    accessKeyId: "AKIAIOSFODNN7EXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    datetime: "20130524T000000Z",
  };
  const keys = ["method", "url", "region", "service", "accessKeyId", "secretAccessKey", "sessionToken", "datetime", "body", "unsignedPayload", "expiresIn"];
  for (const k of keys) if (r() < 0.12) good[k] = value(r);
  if (r() < 0.3) good.headers = headers(r);
  if (r() < 0.2) good.signedHeaders = headers(r);
  return r() < 0.02 ? value(r) : good;
}

const reference = {
  method: "GET",
  url: "https://examplebucket.s3.amazonaws.com/test.txt",
  headers: { Range: "bytes=0-9" },
  region: "us-east-1",
  accessKeyId: "AKIAIOSFODNN7EXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  datetime: "20130524T000000Z",
};
const REFERENCE_SIGNATURE = "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";

test("generated bad input: invalid-input or a signature, never a trap; the module keeps working", () => {
  const seed = Number(process.env.CELLD_FUZZ_SEED ?? 20261129);
  const r = rng(seed);
  let signed = 0;
  let refused = 0;
  for (let i = 0; i < 4000; i++) {
    const opts = options(r);
    const fn = r() < 0.5 ? signRequest : presignUrl;
    try {
      const out = fn(opts);
      if (fn === signRequest ? typeof out?.headers?.authorization !== "string" : typeof out !== "string") {
        throw new Error(`case ${i} (seed ${seed}): ${fn.name} returned ${JSON.stringify(out)}`);
      }
      signed++;
    } catch (e) {
      if (!(e instanceof Error) || e.code !== "invalid-input") {
        throw new Error(`case ${i} (seed ${seed}): ${fn.name} threw ${e?.constructor?.name} ${e?.code ?? ""}: ${e?.message}`);
      }
      refused++;
    }
    if (!signRequest(reference).headers.authorization.endsWith(REFERENCE_SIGNATURE)) {
      throw new Error(`case ${i} (seed ${seed}): the reference request no longer signs correctly`);
    }
  }
  // The generator must exercise both paths, or this test proves nothing.
  console.log(`${signed} signed, ${refused} refused`);
  if (signed < 400 || refused < 400) throw new Error(`unbalanced cases: ${signed} signed, ${refused} refused`);
});
