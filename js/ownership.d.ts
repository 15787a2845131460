// Type declarations for S3Ownership (js/ownership.js) and S3Inspector (js/inspector.js), re-exported by
// index.d.ts.

// `Symbol.asyncDispose` for projects whose `lib` predates explicit resource management (it merges with
// lib.esnext.disposable's and @types/node's declarations).
declare global {
  interface SymbolConstructor {
    readonly asyncDispose: unique symbol;
  }
}

/** A Workers R2 bucket binding (`env.CELLS` with `[[r2_buckets]]` in wrangler.toml): what celld-edge calls
 * on it. Workers' `R2Bucket` is one. */
export interface R2BucketBinding {
  get(key: string): Promise<unknown>;
  put(key: string, value: Uint8Array, options?: unknown): Promise<unknown>;
  delete(keys: string | string[]): Promise<void>;
  list(options?: unknown): Promise<unknown>;
}

/** Options of `new S3Ownership(...)`. */
export interface S3OwnershipOptions {
  /**
   * A Workers R2 bucket binding, instead of the S3 API: no endpoint, bucket, region, keys or fetch (giving
   * any of them with it is `invalid-input`). The same records, in a bucket S3-API clients can share.
   */
  r2?: R2BucketBinding;
  /** `https://<account>.r2.cloudflarestorage.com`, `https://s3.us-east-1.amazonaws.com`, `http://127.0.0.1:9000`, ...
   * (required without `r2`) */
  endpoint?: string;
  /** Required without `r2`. */
  bucket?: string;
  /** `"auto"` for R2; default `"us-east-1"`. */
  region?: string;
  /** Static keys; or give `credentials` instead (not both). */
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  /**
   * Short-lived credentials: called before the first request, and again before `expiration` (5 minutes
   * before, or halfway through keys that live less than 10; keys in their last 10 seconds are not used).
   * Concurrent callers share one call; a lease renewal never waits on it while the keys held still work.
   * A failure (or an answer that is not such an object) is an `auth` error with what it threw as `cause`,
   * and only once no usable keys are left; the lease and claims are kept. A store refusing the keys
   * (`ExpiredToken`, `InvalidAccessKeyId`, `SignatureDoesNotMatch`, ...) has them asked for again.
   * AWS SDK credential providers can be passed as they are.
   */
  credentials?: () => Promise<ProvidedCredentials> | ProvidedCredentials;
  /** This node's id: 1..=256 bytes, no `/`, `\`, control characters, not `.`/`..`; unique per running
   * instance. Without it the instance makes one up (`edge-<16 hex>`, read it as `own.node`), and its first
   * lease is written without reading first: a new instance's first claim costs one round trip less. */
  node?: string;
  /** Advertised in the node lease for routing (celld treats an empty addr as dead). Default `""`. */
  addr?: string;
  /** Key prefix: empty or `[A-Za-z0-9._/-]+` ending in `/`. Default `""`. */
  prefix?: string;
  /** Default 10000. */
  leaseTtlMs?: number;
  /**
   * Assumed bound between nodes' wall clocks. Default 1000; must leave a renewal 250 ms for its round
   * trip: `leaseTtlMs - maxClockSkewMs - leaseTtlMs / 3 >= 250` (else `invalid-input`).
   */
  maxClockSkewMs?: number;
  /** Timeout of each request other than renewals. Default 10000. */
  requestTimeoutMs?: number;
  /** Path-style URLs (`endpoint/bucket/key`); virtual-hosted (`bucket.endpoint/key`) when false. Default true. */
  pathStyle?: boolean;
  /** Qualify the store before this instance's first write: `true` (default) trusts a verdict recorded in the
   * bucket (`<prefix>probe/qualified.json`) for `probeTrustMs`, probing and recording when there is none;
   * `"always"` probes every instance; `false` trusts the store. */
  probe?: boolean | "always";
  /** How long a recorded verdict is trusted. Default 7 days, at most 90; 0 never trusts one. */
  probeTrustMs?: number;
  /** Accepted cell and node ids: `"celld"` (default: celld's sets, cells `[A-Za-z0-9_.:$-]` 1..=255 bytes,
   * nodes `[A-Za-z0-9_.-]` 1..=128) or `"utf8"` (1..=256 bytes of UTF-8 without `/`, `\`, control
   * characters, `.` or `..`; only for buckets that no celld node shares). */
  ids?: "celld" | "utf8";
  /** A celld v0.6 fleet shares the bucket. Before its first write an instance reads
   * `<prefix>wake/format.json` (celld writes it when it initialises a bucket); with `true`, a bucket no
   * celld node has initialised is refused with `uninitialized-fleet` and nothing is written. Either way,
   * where that file exists every lease is written as celld v0.6 reads it, and `ids: "utf8"` is refused.
   * Default false. */
  celld?: boolean;
  /** Receives structured events (leases, claims, settled ambiguity, retried reads); never secrets. */
  onEvent?: (event: OwnershipEvent) => void;
  /** Injected fetch; default `globalThis.fetch`. Called once per request as `fetch(request)` with a
   * `Request` (its `signal` aborts at the timeout; `cache: "no-store"` where the runtime supports it),
   * with `globalThis` as `this`. Without this option `globalThis.fetch` is called as `fetch(url, init)`
   * instead (the same method, headers, body, signal and cache in `init`): a runtime's fetch builds its
   * own `Request` from what it is handed, and Node's would copy a given one. A request whose fetch threw
   * or rejected is never sent again by the transport (it may have landed). */
  fetch?: (input: Request) => Promise<Response>;
}

/** What a `credentials` function gives. Other keys are refused, except those AWS SDK providers add. */
export interface ProvidedCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** When the keys stop working: a `Date`, an ISO-8601 string or Unix ms; absent: they do not expire. */
  expiration?: Date | string | number | null;
  credentialScope?: string;
  accountId?: string;
}

/** What `onEvent` receives; `ms` is how long the operation took on the monotonic clock. */
export type OwnershipEvent =
  | { type: "lease-acquired" | "lease-renewed"; node: string; expiresMs: number; ms: number }
  | { type: "fenced"; node: string; reason: string }
  /** `close()` was called: the instance acts for no cell from now on. */
  | { type: "closed"; node: string }
  /** `close()` retired the lease (peers take over at once); `deleted`: the retired record was deleted too. */
  | { type: "lease-retired"; node: string; deleted: boolean; ms: number }
  | { type: "claim-applied" | "claim-took-over"; cell: string; epoch: number; ms: number }
  | { type: "claim-rejected"; cell: string; owner: string; epoch: number; ms: number }
  | { type: "ambiguous-settled"; key: string; outcome: "applied" | "rejected" | "superseded"; readbacks: number }
  | { type: "read-retried"; key: string; attempt: number; backoffMs: number; detail: string }
  | { type: "authority-lost"; cell: string; epoch: number; reason: AuthorityLost; detail: string }
  /** One request to the store and how it went (`status` 0: no answer); `ms` from sending to the answer. */
  | { type: "request"; key: string; op: "read" | "write" | "delete" | "list"; record: "owner" | "lease" | "fleet" | "probe" | "other"; outcome: RequestOutcome; status: number; ms: number }
  | { type: "credentials-refreshed"; expiresMs: number; ms: number }
  | { type: "credentials-failed"; detail: string };

export type RequestOutcome = "found" | "missing" | "retryable" | "refused" | "applied" | "rejected" | "conflict" | "throttled" | "ambiguous";

/** Count, sum, largest and last of a duration, in ms. */
export interface Latency {
  count: number;
  sumMs: number;
  maxMs: number;
  lastMs: number;
}

/** `own.metrics()`: counters since the instance was made (see docs/observability.md). */
export interface Metrics {
  /** By `"<op>-<record>"` (`"write-owner"`, `"read-lease"`, ...), then by outcome. */
  requests: Record<string, Partial<Record<RequestOutcome, number>>>;
  /** Latency of answered requests, by `"<op>-<record>"`. */
  requestMs: Record<string, Latency>;
  claims: { applied: number; takeovers: number; rejected: number };
  fences: number;
  authorityLost: Record<AuthorityLost, number>;
  leases: { acquired: number; acquireMs: Latency; renewMs: Latency; retired: number };
  /** Ambiguous writes settled by reading back, by how. */
  ambiguous: { applied: number; rejected: number; superseded: number };
  readRetries: number;
  closes: number;
  credentials: { refreshed: number; failed: number };
}

/** Why this instance's authority over a cell ended: its lease lapsed (by either clock), was replaced or
 * renewed too late; a read saw another owner or a newer epoch; it claimed the cell again (a new epoch);
 * it began releasing the cell. */
export type AuthorityLost = "lease-lost" | "taken-over" | "reclaimed" | "released" | "closed";

/** The reason of an aborted `signal(cell)`, and what `scope` rejects with when authority ended. `code` is
 * `"released"` when this instance released the cell, `"fenced"` otherwise. */
export interface AuthorityLostError extends Error {
  /** `"not-leased"` after `close()`, as every operation of a closed instance. */
  code: "fenced" | "released" | "not-leased";
  cell: string;
  epoch: number;
  /** Absent only from a scope `fetch` refused for a claim that ended too long ago to say how. */
  lost: AuthorityLost;
}

/** What `scope(cell, fn)` passes to `fn`. */
export interface Scope {
  /** The epoch this instance holds the cell at: the fencing token for data written on its behalf. */
  epoch: number;
  /** Aborts the moment this instance may no longer act for the cell (as `signal(cell)`); this scope's own. */
  signal: AbortSignal;
  /** Calls the injected fetch with one `Request` (while the scope runs, its signal is `signal` combined
   * with the request's own). Asks the core at the moment it sends: once authority has ended, also when
   * kept and called after the scope returned, it rejects with an `AuthorityLostError` and sends nothing. */
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** `<prefix>cells/<cell>/data/e<epoch>/<name>`: the epoch-fenced data layout (SPEC §5). Throws
   * `invalid-input` for a `name` that could resolve elsewhere once placed in a URL: empty, an empty, `.` or
   * `..` segment (also %-encoded), or `?`, `#`, `\`, a control character (also %-encoded) or a %-encoded `/`. */
  key: (name: string) => string;
}

/** `"absent"` (`If-None-Match: *`) or the ETag the write must match (`If-Match`). */
export type CasGuard = "absent" | { match: string };
export type CasOutcome = "applied" | "rejected";

export interface OwnerRecord {
  /** `null` when released. */
  node: string | null;
  epoch: number;
  etag: string;
}

export interface NodeLease {
  node: string;
  expiresMs: number;
  addr: string;
  etag: string;
}

export interface OwnerInfo {
  /** `null` when released. */
  node: string | null;
  epoch: number;
  addr: string;
  /** The owner's lease is not provably dead by the peer rule (SPEC §5: not yet seen unchanged for its ttl by
   * this instance, nor past its expiry by the store's clock; a missing lease until it stayed missing). */
  live: boolean;
  /** The owner is a dead celld node whose node log is not sealed: not claimable until celld recovers it. */
  awaitingRecovery: boolean;
  /** While `awaitingRecovery`: who is recovering that log (absent otherwise). */
  recovery?: Recovery;
  /** This instance holds the cell now (it claimed it at `epoch` under its current lease). A record naming
   * this node with `held: false` is a void claim from a lapsed lease (a Worker after an idle gap): claim
   * it again. Always `false` in a rejected claim's `owner`. */
  held: boolean;
}

/** Who is recovering a dead celld node's log, from its lease's `log` (celld v0.6). */
export interface Recovery {
  /** The celld node that claimed the recovery; `null` while none has. */
  claimant: string | null;
  /** Its last heartbeat on the claim (`claimed_ms`, celld's clock), Unix ms; `null` when none. */
  heartbeatMs: number | null;
  /** How long ago that was on this runtime's clock (0 if ahead of it); `null` when none. */
  heartbeatAgeMs: number | null;
  /** No claimant, no heartbeat, or none for 30 s: celld reads the claim as stale, and any celld node
   * may take the recovery over. */
  stale: boolean;
}

/** Options of `claim`. */
export interface ClaimOptions {
  /**
   * The cell is probably new (never claimed): send the create (`If-None-Match: *`) first, one request
   * instead of a read and a create. When a record exists the store refuses the create (412) and the claim
   * reads and decides as usual, one request more than without the option (and the refused PUT is a
   * class-A request on S3 and R2). Never less safe: the store checks the condition. Default false.
   */
  expectNew?: boolean;
  /**
   * Wait until the cell can be claimed instead of returning a rejection: after reading the holder's lease
   * once, sleep until exactly `expiresMs + maxClockSkewMs` (a missing lease: until it has stayed missing
   * `leaseTtlMs + maxClockSkewMs`), then read again and decide; a holder that renewed means another sleep
   * until its new expiry. A released cell, or one whose holder closed, is taken at once. Nothing is sent
   * while it sleeps; a release during the sleep is seen at the next wake. This node's lease must stay valid
   * meanwhile (keep `startRenewing()` running). Resolves `applied`, or rejects with `aborted` (the signal)
   * or `not-leased` (close(), or the lease lapsed). Default false.
   */
  wait?: boolean;
  /** Ends a `wait` early: the claim rejects with `aborted` (an attempt already sent is answered first, and
   * returned if it applied). Only with `wait: true`. */
  signal?: AbortSignal;
}

/** Options of `close`. */
export interface CloseOptions {
  /** Also release every cell this instance holds (one conditional write each, sent together) before the
   * lease is retired: their records then read released, and the retired lease can be deleted. Default false:
   * the retired lease alone lets peers take every cell at once. */
  release?: boolean;
}

/** What `removeDeadLease` found: `removed`; or left alone because it was `absent`, `live`, `needed` (by
 * `cell`), `changed` (re-acquired meanwhile), `celld` (celld wrote it: a node log, sealed included, a
 * `probe_public_key` or a `peer_protocol`; celld's clean-up keeps or removes it), or `unsupported` (the
 * store's conditional DELETE is not verified: probe it, `probe: true`). */
export type LeaseRemoval =
  | { outcome: "removed" | "absent" | "live" | "unsupported" | "changed" | "celld" }
  | { outcome: "needed"; cell?: string };

/** What `close` did. */
export interface CloseResult {
  /** The lease record was retired: an expired copy written over this instance's own token (never over a
   * lease another process wrote). False when there was no lease to retire. */
  retired: boolean;
  /** ...and then deleted, leaving nothing in `nodes/` (only when no cell can still need it and the store's
   * probe showed it honours a conditional DELETE). */
  deleted: boolean;
  /** Cells `release: true` released. */
  released: number;
}

export type ClaimResult =
  | { outcome: "applied"; epoch: number; tookOver: boolean; prior: OwnerRecord | null }
  | { outcome: "rejected"; owner: OwnerInfo };

export type CasNodeLeaseResult = { outcome: "applied"; etag: string } | { outcome: "rejected" };

/** What the store probe learnt about a store that passed. */
export interface ProbeReport {
  /** 404 (AWS) or 412 for `If-Match` on a missing key. */
  ifMatchMissingStatus: number;
  /** The store refuses a DELETE whose `If-Match` does not hold. */
  conditionalDelete: boolean;
  /** ETags come back in double quotes. */
  etagQuoted: boolean;
}

/**
 * Exclusive, fenced ownership of named cells in an S3-compatible bucket. Every method rejects with a
 * `CelldEdgeError` (see `ErrorCode`) on failure.
 */
export declare class S3Ownership {
  constructor(options: S3OwnershipOptions);
  /** This node's id: the `node` option, or the one this instance made up without it. */
  readonly node: string;
  /** Low level: the owner record, or `null` when absent. */
  readOwner(cell: string): Promise<OwnerRecord | null>;
  /** Low level: writes `{node: this node, epoch}` under `guard`. */
  casOwner(cell: string, guard: CasGuard, epoch: number): Promise<CasOutcome>;
  /** Low level: clears `node` (keeping the epoch) if the record still names this node at `epoch`. */
  releaseOwner(cell: string, epoch: number): Promise<CasOutcome>;
  readNodeLease(node: string): Promise<NodeLease | null>;
  /** Low level: writes this node's lease record; does not change this instance's lease state. */
  casNodeLease(guard: CasGuard, expiresMs: number): Promise<CasNodeLeaseResult>;
  /** Installs this node's lease (renews it when one is held). */
  acquireLease(): Promise<void>;
  /** Extends the lease; rejects with `fenced` when it was replaced or renewed too late. */
  renewLease(): Promise<void>;
  /** True while this node may act as an owner (monotonic deadline: ttl - maxClockSkewMs after the write was sent). */
  leaseValid(): boolean;
  /** Renews every ttl/3 (the loop runs in wasm) until stopRenewing(); failures go to `onError` (`fenced`,
   * `not-leased` and `internal` stop the loop). A second call while it runs does nothing. */
  startRenewing(onError?: (error: import("./index.js").CelldEdgeError) => void): void;
  stopRenewing(): void;
  /**
   * Claims the cell at a new epoch when absent, released, this node's, or held by a dead node. Starts
   * with a write instead of a read when it can: with `expectNew`, or when this instance last saw the
   * cell absent, released or its own (a refused guard costs one request more, then it reads).
   */
  claim(cell: string, options?: ClaimOptions): Promise<ClaimResult>;
  /** Releases a cell this node claimed, at its epoch. */
  release(cell: string): Promise<CasOutcome>;
  /** Who owns the cell, whether that owner's lease is live and whether this instance holds it (`held`);
   * `null` when the record is absent. */
  owner(cell: string): Promise<OwnerInfo | null>;
  /** The ack gate: true iff this node claimed `cell` at `epoch` under its current, valid lease and the record still says so. */
  verify(cell: string, epoch: number): Promise<boolean>;
  /**
   * An `AbortSignal` that aborts the moment this instance may no longer act for `cell` (its reason an
   * `AuthorityLostError`): the lease's deadline by either clock (a timer, with no renewal or operation
   * needed), a fence, a release begun, a re-claim, a takeover seen by any read. One signal per claim,
   * handed to every caller; in Workers one per call, which fires within the request that made it (its own
   * timer). Already aborted (reason code `not-leased` or `fenced`) when this instance holds no claim of the
   * cell. Its timer does not keep Node or Deno alive.
   */
  signal(cell: string): AbortSignal;
  /** This instance's counters as a fresh plain object (`undefined` only while a trapped wasm instance is
   * being replaced). */
  metrics(): Metrics | undefined;
  /**
   * Runs `fn` under this instance's claim of `cell` and resolves to what it returned only if
   * `verify(cell, epoch)` still holds afterwards; otherwise rejects (`fenced`, `released`, with the
   * signal's reason). Rejects `not-leased` without running `fn` when no claim is held.
   */
  scope<T>(cell: string, fn: (scope: Scope) => T | Promise<T>): Promise<T>;
  /** Qualifies the store (create, re-create, current and stale tokens, concurrent creates); rejects with `store-violation` naming the step when it ignores conditions. */
  probe(): Promise<ProbeReport>;
  /**
   * Dead-lease clean-up, for leases left by processes that did not close (a crash): deletes `nodes/<node>.json`
   * only if the store's conditional DELETE was verified by the probe, the lease is dead by the peer rule, it
   * carries no celld node log awaiting recovery, and no owner record among `cells` names the node (list the
   * bucket's cells for that); and only the version read (`If-Match`), so a lease someone re-acquired stays.
   * Needs no lease. `needed` names the cell whose record still needs the lease.
   */
  removeDeadLease(node: string, options: { cells: string[] }): Promise<LeaseRemoval>;
  /** The cells this instance holds under its current, valid lease, with their epochs (none once closed). */
  claimed(): { cell: string; epoch: number }[];
  /**
   * Stops cleanly. Synchronously, when called: this instance acts for no cell any more (`leaseValid()` false,
   * `claimed()` empty, `verify` false), the renewal loop and waiting claims end, and every later write
   * rejects with `not-leased`; claims in flight do not count when answered. Then it retires this node's lease
   * with one conditional write (an expired copy over its own token), so that peers take over its cells at
   * once instead of waiting out the TTL. Idempotent; a retirement that could not be settled (`ambiguous`,
   * `transport`) is tried again by the next `close()`.
   */
  close(options?: CloseOptions): Promise<CloseResult>;
  /** `await using own = new S3Ownership(...)`: `close()` at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>;
  /** Every cell's owner record with its owner's lease (see `S3Inspector.listCells`); needs no lease and
   * leaves this instance's lease and claims alone. */
  listCells(): Promise<CellEntry[]>;
  /** Every node's lease (see `S3Inspector.listNodes`); needs no lease. */
  listNodes(): Promise<NodeEntry[]>;
}

/** Options of `new S3Inspector(...)`: the connection's part of `S3OwnershipOptions`. An inspector has no
 * node id, lease or probe policy: `node`, `addr`, `leaseTtlMs`, `probe`, `probeTrustMs` and `ids` are
 * refused (`invalid-input`) like any unknown option. */
export type S3InspectorOptions = Pick<
  S3OwnershipOptions,
  "endpoint" | "bucket" | "region" | "accessKeyId" | "secretAccessKey" | "sessionToken" | "prefix" | "maxClockSkewMs"
  | "requestTimeoutMs" | "pathStyle" | "fetch" | "onEvent" | "credentials" | "r2"
>;

/** What a peer would conclude from one look at a node's lease now (SPEC §5), by the store's clock (the `Date`
 * of its answers): `live` before its expiry, `dead` once surely past it, `undecided` past it but not yet
 * provably dead (the `Date` has whole seconds, or only a peer watching it for its ttl could tell);
 * `missing` (no lease record) is not proof of death. */
export type LeaseState = "live" | "undecided" | "dead" | "missing" | "corrupt";

/** The `corrupt-record` error of one entry (the rest of the listing is still returned). */
export interface EntryError {
  code: "corrupt-record";
  /** Names the key of the record that does not decode. */
  message: string;
}

/** One cell's owner record (`<prefix>cells/<cell>/own.json`) with its owner's lease. A snapshot: nothing
 * may be decided from it (that is `claim` / `verify`). */
export interface CellEntry {
  cell: string;
  /** The owner record's object key. */
  key: string;
  /** `released`, the owner's `LeaseState`, `awaiting-recovery` (a dead celld owner whose node log is not
   * sealed), or `corrupt` (the record or the owner's lease does not decode). */
  status: "live" | "undecided" | "dead" | "missing" | "released" | "awaiting-recovery" | "corrupt";
  /** The owner; `null` when released or corrupt. */
  node: string | null;
  /** `null` when the record is corrupt. */
  epoch: number | null;
  etag: string | null;
  released: boolean;
  /** The record's `LastModified` (the store's clock), Unix ms. */
  modifiedMs: number | null;
  /** The owner's lease; `null` when released or the record is corrupt. */
  lease: LeaseState | null;
  leaseExpiresMs: number | null;
  /** Negative once expired (by this runtime's wall clock). */
  leaseExpiresInMs: number | null;
  /** How long ago the store last wrote the owner's lease (its last renewal). */
  leaseAgeMs: number | null;
  /** The owner's `addr`, from its lease. */
  addr: string | null;
  awaitingRecovery: boolean;
  /** While `awaitingRecovery`: who is recovering the owner's celld log; `null` otherwise. */
  recovery: Recovery | null;
  error: EntryError | null;
}

/** One node's lease (`<prefix>nodes/<node>.json`). */
export interface NodeEntry {
  node: string;
  key: string;
  /** Never `missing` here: a listed lease was read. */
  lease: LeaseState;
  /** Not provably dead. */
  live: boolean;
  expiresMs: number | null;
  expiresInMs: number | null;
  /** How long ago the store last wrote the lease (its last renewal). */
  ageMs: number | null;
  modifiedMs: number | null;
  addr: string;
  etag: string;
  awaitingRecovery: boolean;
  /** While `awaitingRecovery`: who is recovering the node's celld log; `null` otherwise. */
  recovery: Recovery | null;
  error: EntryError | null;
}

/**
 * A view of one bucket + prefix that needs no node id and no lease (dashboards, the CLI, a browser
 * page). It writes nothing, except `probe()`, which writes and deletes its own keys under
 * `<prefix>probe/` and records the verdict there. Every method rejects with a `CelldEdgeError`.
 */
export declare class S3Inspector {
  constructor(options: S3InspectorOptions);
  /** Every `<prefix>cells/<cell>/own.json`, in key order, each with its owner's lease (read once per
   * owner). Pages past 1000 keys; other keys under `cells/` are ignored. */
  listCells(): Promise<CellEntry[]>;
  /** Every `<prefix>nodes/<node>.json`, in key order. */
  listNodes(): Promise<NodeEntry[]>;
  /** Qualifies the store now and records the verdict at `<prefix>probe/qualified.json`, which later
   * `S3Ownership` instances trust for their `probeTrustMs`; `store-violation` naming the step when the
   * store breaks conditional writes (recorded so too). */
  probe(): Promise<ProbeReport>;
}
