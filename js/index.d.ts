// Type declarations for the celld-edge package (every runtime entry exports the same API).
// The ownership API (S3Ownership and its types) is declared in ownership.d.ts and re-exported here.

export * from "./ownership.js";

/** The stable `code` of every error celld-edge throws. */
export type ErrorCode =
  | "invalid-input"
  | "auth"
  | "request"
  /** In a browser: the bucket's CORS rule does not allow `if-match` / `if-none-match`, so the browser refused
   * to send a conditional write (its preflight failed); nothing was sent, and only the rule can change that. */
  | "cors"
  | "transport"
  | "ambiguous"
  /** The store kept turning a request away (429, 503 SlowDown) until the caller's deadline (`requestTimeoutMs`
   * from the first send; a renewal's remaining authority): nothing was applied. `status` and `s3Code` are the
   * store's last answer. */
  | "throttled"
  | "corrupt-record"
  | "store-violation"
  | "not-leased"
  | "fenced"
  /** An `AbortSignal` of `signal(cell)` / `scope` aborted because this instance released the cell. */
  | "released"
  /** The bucket's fleet marker (`<prefix>fleet/control.json`) names another celld backend (e.g. DynamoDB):
   * the ownership records are not in the bucket, so nothing was written. */
  | "unsupported-backend"
  /** `celld: true`, but no celld node has initialised the bucket (`<prefix>wake/format.json` is absent, or
   * celld is still migrating it): nothing was written. Start a celld node first. */
  | "uninitialized-fleet"
  /** A waiting claim (`claim(cell, { wait: true, signal })`) was ended by its `AbortSignal`. */
  | "aborted"
  /** celld-edge hit a bug (a wasm trap): every operation in flight rejected with it, a write among them
   * may or may not have landed, and the next call runs in a fresh wasm instance (acquire the lease again). */
  | "internal";

/**
 * What celld-edge throws (and reports to `onError`), from `S3Ownership`, `signRequest`/`presignUrl` and
 * `AwsClient` alike: `err instanceof CelldEdgeError` holds for all of them, in every entry, and across two
 * copies of the package loaded at once (ES module and CommonJS). Messages never contain secrets.
 */
export class CelldEdgeError extends Error {
  constructor(message: string, details?: { code?: ErrorCode; key?: string; status?: number; s3Code?: string; cause?: unknown });
  readonly name: "CelldEdgeError";
  /** The stable code to branch on. */
  code: ErrorCode;
  /** The object key (or probe step) concerned, when there is one: `cells/<cell>/own.json`, `nodes/<node>.json`, ... */
  key?: string;
  /** The store's HTTP status, when it answered: 403 for `auth`, the 4xx of a `request`, the last 5xx/429 of a `transport`. */
  status?: number;
  /** The store's S3 error code (`SignatureDoesNotMatch`, `NoSuchBucket`, `SlowDown`, ...), when it sent one. */
  s3Code?: string;
  /** For `transport` and `ambiguous` errors of a request that got no answer: what the runtime's `fetch`
   * threw (in Node a `TypeError` whose own `cause` says `ECONNREFUSED`, `ENOTFOUND`, ...). */
  cause?: unknown;
}

/**
 * Request headers: a plain object, a `Headers` (or any iterable of pairs, such as a `Map`), or an array of
 * `[name, value]` pairs (repeated names are joined with `,`). Values must be strings.
 */
export type HeadersInput = Record<string, string> | Iterable<readonly [string, string]>;

/** An absolute http(s) URL, as a string or a `URL`. For S3, key segments should be percent-encoded once. */
export type UrlInput = string | { readonly href: string };

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials' token; sent and signed as `x-amz-security-token`. */
  sessionToken?: string | null;
}

interface SignCommon extends Credentials {
  /** Default `"GET"`. */
  method?: string;
  url: UrlInput;
  /** `"auto"` for R2, `"us-east-1"` etc. for AWS. */
  region: string;
  /** Default `"s3"` (S3 rules: no path normalisation, no double encoding); anything else uses the generic rules. */
  service?: string;
  /** ISO-8601 basic (`20150830T123600Z`) or a `Date`; default now. */
  datetime?: string | Date | null;
}

export interface SignRequestBase extends SignCommon {
  /** Signed too, except those proxies and runtimes rewrite (`user-agent`, `content-length`, `expect`, ...). */
  headers?: HeadersInput | null;
}

/** Options of {@link signRequest}: the body is hashed, unless `unsignedPayload` is true (then it may be anything, e.g. a stream). */
export type SignRequestOptions =
  | (SignRequestBase & { body?: string | ArrayBuffer | ArrayBufferView | null; unsignedPayload?: false })
  | (SignRequestBase & { body?: unknown; unsignedPayload: true });

/** What {@link signRequest} returns, ready for `fetch(url, { method, headers, body })`. */
export interface SignedRequest {
  method: string;
  /** The URL with its path canonically encoded. */
  url: string;
  /** Lower-case names: the caller's headers plus `authorization`, `x-amz-date`, `x-amz-content-sha256` (S3) and `x-amz-security-token` (with a session token). */
  headers: Record<string, string>;
}

export interface PresignUrlOptions extends SignCommon {
  /** Seconds the URL stays valid, a whole number in 1..=604800; default 86400. */
  expiresIn?: number;
  /** Headers the eventual request must send with exactly these values (`host` is always signed). */
  signedHeaders?: HeadersInput | null;
}

/**
 * Signs a request with AWS Signature Version 4 (`Authorization` header).
 * @throws {CelldEdgeError} `invalid-input` for a URL that does not parse, a bad datetime, missing or empty
 * credentials, non-string header values, or a body that cannot be hashed without `unsignedPayload: true`.
 */
export function signRequest(options: SignRequestOptions): SignedRequest;

/**
 * Presigns a URL (query-string authentication, `UNSIGNED-PAYLOAD`).
 * @throws {CelldEdgeError} `invalid-input`, as for {@link signRequest}, and for `expiresIn` out of range.
 */
export function presignUrl(options: PresignUrlOptions): string;

/** Options of {@link AwsClient} (unknown keys are refused with `invalid-input`). */
export interface AwsClientOptions extends Credentials {
  /** Guessed from the host when absent (AWS, R2, B2); `invalid-input` when it cannot be. */
  service?: string;
  /** Guessed from the host when absent (`auto` for R2); `invalid-input` when it cannot be. */
  region?: string;
  /** Retries of requests safe to repeat, on 5xx, 429 and network errors; default 10. */
  retries?: number;
  /** The first backoff's upper bound (full jitter, doubling per retry, each at most 20 s); default 50. */
  initRetryMs?: number;
  /** Default true for S3 (`UNSIGNED-PAYLOAD`, as aws4fetch), false elsewhere (the body is hashed). */
  unsignedPayload?: boolean;
  /** Default `globalThis.fetch`; called with the signed `Request`. */
  fetch?: (request: Request) => Promise<Response>;
}

/** Per-request overrides in `init.aws` (unknown keys are refused, e.g. `expires`, `allHeaders`). */
export interface AwsRequestOptions extends Partial<Credentials> {
  service?: string;
  region?: string;
  /** `sign()` only: fetch() signs each attempt at the current time. */
  datetime?: string | Date;
  /** Query-string auth (a presigned URL), signed for the request's headers. */
  signQuery?: boolean;
  /** With `signQuery`: seconds, 1..=604800; default 86400 (or the URL's `X-Amz-Expires`). */
  expiresIn?: number;
  unsignedPayload?: boolean;
}

export type AwsRequestInit = RequestInit & { aws?: AwsRequestOptions };

/**
 * A drop-in for aws4fetch's `AwsClient` (SPEC §4.1). Conditional requests (`If-Match`, `If-None-Match`,
 * ...), POSTs and one-shot stream bodies are never resent.
 */
export class AwsClient {
  constructor(options: AwsClientOptions);
  readonly accessKeyId: string;
  readonly service: string | undefined;
  readonly region: string | undefined;
  readonly retries: number;
  readonly initRetryMs: number;
  /** The signed `Request` (for a `Request` input, its body is read into memory unless it carries `x-amz-content-sha256`). */
  sign(input: string | URL | Request, init?: AwsRequestInit | null): Promise<Request>;
  /** Signs and sends with retries; rejects with `transport` when no answer came. */
  fetch(input: string | URL | Request, init?: AwsRequestInit | null): Promise<Response>;
}
