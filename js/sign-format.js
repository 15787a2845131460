// The constants of the signer's buffer format, as js/sign.js uses them. The format is defined (and
// described) in src/bindings/sign.rs; tests/node/sign-format.test.mjs checks these against the values
// the wasm reports (`signBufferFormat`). Not part of the package's API.
export const FORMAT = Object.freeze({
  /** Field separator. */
  sep: "\0",
  /** Fields before the header pairs: method, url, region, service, key id, secret, token, datetime. */
  fixedFields: 8,
  /** The I/O buffer is cut back to this many bytes after a larger request. */
  ioKeep: 64 * 1024,
  /** Header names that answer as one code character: index + 1 (sign.js `signed` stores them by literal). */
  nameCodes: Object.freeze(["authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"]),
  /** The code of `authorization`, which the answer ends with. */
  authorizationCode: 1,
  /** The caller's header i answers as code callerCode + i, for i < callerCodes. */
  callerCode: 0x10,
  callerCodes: 16,
  /** The longest I/O buffer the signer grants (a larger body is hashed in pieces of at most ioKeep). */
  maxIo: 64 * 1024 * 1024,
  /** signIo's payload argument: the body follows the fields; UNSIGNED-PAYLOAD; hashed by hashBody. */
  payloadBody: 0,
  payloadUnsigned: 1,
  payloadHashed: 2,
  /** The longest validity of a presigned URL in seconds (AWS's bound for X-Amz-Expires). */
  maxExpiresIn: 604800,
});
