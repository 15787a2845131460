// CelldEdgeError: the one class of every error celld-edge throws or reports, whether it comes from the
// wasm core (S3Ownership, the signers) or from this package's JS (option checks, AwsClient). The wasm
// builds its errors with this class too (js/instance.js hands it over with `hooks`), so `instanceof`
// holds for all of them. The check is a brand, not the prototype chain: an app that loads the package
// twice (its ES module and, through a CommonJS dependency, pkg/node.cjs) still recognises the errors of
// either copy. It must never carry a secret: callers put only keys, codes and the runtime's error here.

const BRAND = Symbol.for("celld-edge.CelldEdgeError");

export class CelldEdgeError extends Error {
  /**
   * `details`: `code` (the stable code), and where known `key` (the object key or probe step concerned),
   * `status` (the store's HTTP status), `s3Code` (its S3 `<Code>`) and `cause` (the runtime's error).
   */
  constructor(message, details) {
    const { code, key, status, s3Code, cause } = details ?? {};
    super(message, cause === undefined ? undefined : { cause });
    this.code = code ?? "internal";
    if (key !== undefined) this.key = key;
    if (status !== undefined) this.status = status;
    if (s3Code !== undefined) this.s3Code = s3Code;
  }

  static [Symbol.hasInstance](value) {
    return value !== null && (typeof value === "object" || typeof value === "function") && value[BRAND] === true;
  }
}

Object.defineProperty(CelldEdgeError.prototype, BRAND, { value: true });
Object.defineProperty(CelldEdgeError.prototype, "name", { value: "CelldEdgeError", writable: true, configurable: true });

/** An `invalid-input` error (nothing was sent). */
export const invalidInput = (message, cause) => new CelldEdgeError(`invalid input: ${message}`, { code: "invalid-input", cause });

/** What a value is, for an `invalid-input` message ("null", "an array", else its typeof). */
export function describe(v) {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v;
}
