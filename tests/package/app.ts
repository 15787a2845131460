// Type-checks against the shipped declarations (tsc --strict --noEmit): the calls users write must
// compile, and the misuse below must not (each @ts-expect-error fails the check if it compiles).
import { signRequest, presignUrl, CelldEdgeError, type ErrorCode, type SignedRequest } from "celld-edge";

const creds = { accessKeyId: "AKID", secretAccessKey: "secret", region: "auto" };
const signed: SignedRequest = signRequest({ ...creds, method: "PUT", url: "https://h/b/k", body: new Uint8Array(2), headers: { "if-match": '"e"' } });
const auth: string | undefined = signed.headers["authorization"];
signRequest({ ...creds, url: new URL("https://h/b/k"), body: "text", datetime: new Date(), headers: [["a", "b"]] });
signRequest({ ...creds, url: "https://h/b/k", body: new ReadableStream(), unsignedPayload: true });
const link: string = presignUrl({ ...creds, url: "https://h/b/k", expiresIn: 60, signedHeaders: { "content-type": "text/plain" } });

// @ts-expect-error a stream cannot be hashed: it needs unsignedPayload: true
signRequest({ ...creds, url: "https://h/b/k", body: new ReadableStream() });
// @ts-expect-error header values are strings
signRequest({ ...creds, url: "https://h/b/k", headers: { "x-n": 1 } });
// @ts-expect-error credentials are required
presignUrl({ url: "https://h/b/k", region: "auto" });

try {
  presignUrl({ ...creds, url: "https://h/b/k", expiresIn: 0 });
} catch (e) {
  const code: ErrorCode = (e as CelldEdgeError).code;
  console.log(code, auth, link);
}

// S3Ownership: every option, events narrowed by type, claim results narrowed by outcome, errors by code.
import { S3Ownership, type AuthorityLost, type AuthorityLostError, type Metrics, type RequestOutcome, type ClaimResult, type OwnershipEvent, type OwnerInfo, type ProbeReport, type S3OwnershipOptions } from "celld-edge";

const seen: string[] = [];
const options: S3OwnershipOptions = {
  endpoint: "https://account.r2.cloudflarestorage.com",
  bucket: "cells",
  region: "auto",
  accessKeyId: "AKID",
  secretAccessKey: "secret",
  sessionToken: "token",
  node: "edge-7",
  addr: "edge-7.example:443",
  prefix: "app/",
  leaseTtlMs: 10_000,
  maxClockSkewMs: 1_000,
  requestTimeoutMs: 5_000,
  pathStyle: true,
  probe: false,
  fetch: globalThis.fetch,
  onEvent(event: OwnershipEvent) {
    switch (event.type) {
      case "lease-acquired":
      case "lease-renewed":
        seen.push(`${event.node} until ${event.expiresMs} (${event.ms} ms)`);
        break;
      case "fenced":
        seen.push(event.reason);
        break;
      case "closed":
        seen.push(`${event.node} closed`);
        break;
      case "lease-retired":
        seen.push(`${event.node} retired (deleted: ${event.deleted}) in ${event.ms} ms`);
        break;
      case "claim-applied":
      case "claim-took-over":
        seen.push(`${event.cell}@${event.epoch}`);
        break;
      case "claim-rejected":
        seen.push(`${event.cell} owned by ${event.owner}@${event.epoch}`);
        break;
      case "ambiguous-settled":
        seen.push(`${event.key}: ${event.outcome} after ${event.readbacks}`);
        break;
      case "read-retried":
        seen.push(`${event.key} #${event.attempt} in ${event.backoffMs} ms: ${event.detail}`);
        break;
      case "request":
        seen.push(`${event.op} ${event.record} ${event.key}: ${event.outcome satisfies RequestOutcome} ${event.status} in ${event.ms} ms`);
        break;
      case "credentials-refreshed":
        seen.push(`keys until ${event.expiresMs}`);
        break;
      case "credentials-failed":
        seen.push(event.detail);
        break;
      case "authority-lost":
        seen.push(`${event.cell}@${event.epoch} ${event.reason satisfies AuthorityLost}: ${event.detail}`);
        break;
      default: {
        const unhandled: never = event;
        throw new Error(`unknown event ${JSON.stringify(unhandled)}`);
      }
    }
  },
};
const own = new S3Ownership(options);

/** Every error code, handled exhaustively: adding a code to ErrorCode breaks this until it is handled. */
function retryable(e: CelldEdgeError): boolean {
  switch (e.code) {
    case "transport":
    case "ambiguous":
    case "throttled":
      return true;
    case "not-leased":
    case "fenced":
    case "released":
    case "invalid-input":
    case "auth":
    case "request":
    case "cors":
    case "corrupt-record":
    case "store-violation":
    case "unsupported-backend":
    case "uninitialized-fleet":
    case "aborted":
    case "internal":
      return false;
    default: {
      const unhandled: never = e.code;
      return unhandled;
    }
  }
}

async function fencedWrite(cell: string): Promise<OwnerInfo | number> {
  await own.acquireLease();
  own.startRenewing((e) => console.log(e.code satisfies ErrorCode, own.leaseValid()));
  const result: ClaimResult = await own.claim(cell, { expectNew: cell.startsWith("new-") });
  if (result.outcome === "rejected") return result.owner; // the routing hint
  const { epoch, tookOver, prior } = result;
  const key = `cells/${cell}/data/e${epoch}/0001.json`;
  const put = signRequest({ ...creds, method: "PUT", url: `https://h/cells/${key}`, body: "{}", headers: { "if-none-match": "*" } });
  await fetch(put.url, { method: put.method, headers: put.headers, body: "{}" });
  if (!(await own.verify(cell, epoch))) throw new Error("fenced: do not acknowledge");
  console.log(tookOver, prior?.node ?? "(none)", prior?.etag);
  await own.release(cell);
  own.stopRenewing();
  return epoch;
}

async function lowLevel(cell: string): Promise<void> {
  const probe: ProbeReport = await own.probe();
  const rec = await own.readOwner(cell);
  const applied: "applied" | "rejected" = await own.casOwner(cell, rec ? { match: rec.etag } : "absent", (rec?.epoch ?? 0) + 1);
  const lease = await own.readNodeLease("edge-7");
  const written = await own.casNodeLease(lease ? { match: lease.etag } : "absent", Date.now() + 10_000);
  if (written.outcome === "applied") console.log(written.etag);
  await own.renewLease();
  console.log(probe.ifMatchMissingStatus, probe.conditionalDelete, probe.etagQuoted, applied, await own.releaseOwner(cell, 1), await own.owner(cell));
  // A record naming this node that this instance does not hold (a lapsed lease's void claim): claim it again.
  const info: OwnerInfo | null = await own.owner(cell);
  if (info !== null && !info.held && info.live) await own.claim(cell);
}

/** Stopping cleanly, waiting for a cell, cleaning up (issue 17). */
async function lifecycle(cell: string): Promise<number> {
  const ctrl = new AbortController();
  const waited: ClaimResult = await own.claim(cell, { wait: true, signal: ctrl.signal });
  const held: { cell: string; epoch: number }[] = own.claimed();
  const removal = await own.removeDeadLease("edge-8", { cells: held.map((h) => h.cell) });
  if (removal.outcome === "needed") console.log(removal.cell);
  const closed = await own.close({ release: true });
  await own[Symbol.asyncDispose]();
  return (waited.outcome === "applied" ? waited.epoch : 0) + closed.released + Number(closed.retired && closed.deleted);
}
void lifecycle;
// @ts-expect-error close options are { release?: boolean }
own.close({ releases: true });

fencedWrite("cell-1").then(console.log, (e: unknown) => {
  // A class: instanceof narrows, and the store's answer and the runtime's error are typed fields.
  if (e instanceof CelldEdgeError) console.log(retryable(e), e.key, e.status satisfies number | undefined, e.s3Code, e.cause);
});
void lowLevel;

/** Fenced work under a scope: the signal stops it, verify gates the result. */
async function scoped(cell: string): Promise<string> {
  const signal: AbortSignal = own.signal(cell);
  signal.addEventListener("abort", () => {
    const why = signal.reason as AuthorityLostError;
    console.log(why.code satisfies "fenced" | "released" | "not-leased", why.lost satisfies AuthorityLost, why.cell, why.epoch);
  });
  return own.scope(cell, async ({ epoch, signal, fetch, key }) => {
    const res: Response = await fetch(`https://h/b/${key("0001.json")}`, { method: "PUT", body: "{}", signal });
    return `${epoch}: ${res.status} ${key("0002.json")}`;
  });
}
void scoped;

const m: Metrics | undefined = own.metrics();
console.log(m?.requests["write-owner"]?.applied, m?.leases.renewMs.maxMs, m?.authorityLost["taken-over"], m?.claims.takeovers);
// Short-lived keys from a function (an STS call, an R2 temporary-credentials endpoint, an AWS SDK provider).
new S3Ownership({
  endpoint: "https://h", bucket: "b", node: "n",
  credentials: async () => ({ accessKeyId: "a", secretAccessKey: "s", sessionToken: "t", expiration: new Date(Date.now() + 900_000) }),
});
// @ts-expect-error scope needs a function
own.scope("c", 5);
// @ts-expect-error key() needs a name (an empty one is refused)
own.scope("c", ({ key }) => key());

// Without a node id the instance makes one up, and says which.
const madeUpNode: string = new S3Ownership({ endpoint: "https://h", bucket: "b", accessKeyId: "a", secretAccessKey: "s" }).node;
console.log(madeUpNode);
// A Worker's R2 bucket binding instead of the S3 API: Workers' R2Bucket has these methods (and more).
const binding = {
  get: async (key: string) => (key ? null : null),
  put: async (_key: string, _value: Uint8Array, _options?: unknown) => null,
  delete: async (_keys: string | string[]) => {},
  list: async (_options?: unknown) => ({ objects: [], truncated: false }),
  head: async (_key: string) => null,
};
new S3Ownership({ r2: binding, prefix: "cells/", celld: true });
// @ts-expect-error node is a string
new S3Ownership({ r2: binding, node: 7 });
// @ts-expect-error r2 is a binding with get, put, delete and list
new S3Ownership({ r2: { get: async () => null } });
// @ts-expect-error leaseTtlMs is a number
new S3Ownership({ ...options, leaseTtlMs: "10s" });
// @ts-expect-error unknown options are refused (the runtime refuses them too)
new S3Ownership({ ...options, ttl: 5 });
// @ts-expect-error claim options are { expectNew?: boolean } (the runtime refuses others too)
own.claim("c", { fresh: true });
// @ts-expect-error a guard is "absent" or { match }
own.casOwner("c", "present", 1);
own.claim("c").then((r) => {
  // @ts-expect-error the epoch exists only on an applied claim: narrow on outcome first
  console.log(r.epoch);
});
// AwsClient, aws4fetch's drop-in: sign() and fetch() take what fetch takes.
import { AwsClient, type AwsClientOptions } from "celld-edge";

const awsOptions: AwsClientOptions = { accessKeyId: "AKID", secretAccessKey: "secret", service: "s3", region: "auto", retries: 3, initRetryMs: 20, unsignedPayload: true, fetch: (r: Request) => fetch(r) };
const aws = new AwsClient(awsOptions);
async function viaAwsClient(): Promise<number> {
  const presigned: Request = await aws.sign("https://h/b/k", { method: "PUT", aws: { signQuery: true, expiresIn: 300 } });
  const res: Response = await aws.fetch(new Request(presigned.url), { headers: { "if-none-match": "*" }, body: "x" });
  return res.status + aws.retries;
}
void viaAwsClient;
// @ts-expect-error aws4fetch's cache option is refused (the runtime refuses it too)
new AwsClient({ ...awsOptions, cache: new Map() });
// @ts-expect-error init.aws knows expiresIn, not expires
aws.sign("https://h/b/k", { aws: { signQuery: true, expires: 60 } });

// @ts-expect-error not an error code
const bogus: ErrorCode = "timeout";
void bogus;

// S3Inspector: the connection options only (no node), entries typed by status.
import { S3Inspector, type CellEntry, type NodeEntry, type S3InspectorOptions } from "celld-edge";

const inspectorOptions: S3InspectorOptions = { endpoint: "https://h", bucket: "cells", accessKeyId: "AKID", secretAccessKey: "secret", prefix: "app/", maxClockSkewMs: 500 };
const inspector = new S3Inspector(inspectorOptions);
inspector.listCells().then((cells: CellEntry[]) => {
  for (const c of cells) if (c.status === "awaiting-recovery" && c.node !== null && c.error === null) console.log(c.cell, c.epoch, c.leaseAgeMs);
});
inspector.listNodes().then((nodes: NodeEntry[]) => nodes.filter((n) => n.live).map((n) => n.expiresInMs));
const viaOwnership: Promise<CellEntry[]> = new S3Ownership({ ...inspectorOptions, node: "n" }).listCells();
void viaOwnership;
// @ts-expect-error an inspector has no node
new S3Inspector({ ...inspectorOptions, node: "n" });
