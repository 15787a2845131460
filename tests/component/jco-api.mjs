// The component as transpiled by jco, presented as the JS API the shared checks call (S3Ownership,
// signRequest), so tests/common/ownership.mjs and the signing vectors run through it unchanged. Only
// shapes are converted here (u64 <-> Number, options and variants to the JS API's objects, the world's
// error record to an Error with its code): every decision and every check of input is the component's.
// jco's calls are synchronous (its I/O runs on a worker thread); `startRenewing` is a timer calling the
// world's `renew`, the loop a long-lived JS host runs around a component.

const PROBE = { true: "recorded", false: "off", always: "always" };

/** The world's error record as an Error with the JS API's `code`. */
function translated(e) {
  const p = e?.payload;
  if (!p || typeof p.code !== "string") return e;
  const out = new Error(p.message);
  Object.assign(out, { code: p.code, key: p.key, status: p.status, storeCode: p.storeCode });
  return out;
}

function call(f) {
  try {
    return f();
  } catch (e) {
    throw translated(e);
  }
}

const fail = (why) => {
  throw new TypeError(why);
};
const big = (n) => (n === undefined ? undefined : BigInt(n));
const num = (n) => Number(n);
const nodeOrNull = (n) => n ?? null;
const ownerInfo = (o) => ({ node: nodeOrNull(o.node), epoch: num(o.epoch), addr: o.addr, live: o.live, awaitingRecovery: o.awaitingRecovery, held: o.held });
const guard = (g) => (g === "absent" ? { tag: "absent" } : { tag: "match", val: g?.match });

export function componentApi(component) {
  const { ownership, signing } = component;

  class S3Ownership {
    #node;
    #renewing;
    #ttl;
    constructor(o) {
      this.#ttl = o.leaseTtlMs ?? 10000;
      this.#node = call(() =>
        ownership.Node.open({
          endpoint: o.endpoint,
          bucket: o.bucket,
          region: o.region,
          accessKeyId: o.accessKeyId,
          secretAccessKey: o.secretAccessKey,
          sessionToken: o.sessionToken,
          node: o.node,
          addr: o.addr,
          prefix: o.prefix,
          leaseTtlMs: big(o.leaseTtlMs),
          maxClockSkewMs: big(o.maxClockSkewMs),
          pathStyle: o.pathStyle,
          requestTimeoutMs: o.requestTimeoutMs,
          probe: o.probe === undefined ? undefined : (PROBE[o.probe] ?? fail(`probe ${o.probe} has no value in the world`)),
          ids: o.ids,
          celld: o.celld,
        }),
      );
    }
    get node() {
      return this.#node.id();
    }
    async acquireLease() {
      call(() => this.#node.acquireLease());
    }
    async renewLease() {
      call(() => this.#node.renew());
    }
    leaseValid() {
      return this.#node.leaseValid();
    }
    async claim(cell) {
      const r = call(() => this.#node.claim(cell));
      if (r.tag === "rejected") return { outcome: "rejected", owner: ownerInfo(r.val) };
      const prior = r.val.prior ? { node: nodeOrNull(r.val.prior.node), epoch: num(r.val.prior.epoch) } : null;
      return { outcome: "applied", epoch: num(r.val.epoch), tookOver: r.val.tookOver, prior };
    }
    async release(cell) {
      return call(() => this.#node.release(cell));
    }
    async owner(cell) {
      const o = call(() => this.#node.owner(cell));
      return o ? ownerInfo(o) : null;
    }
    async verify(cell, epoch) {
      return call(() => this.#node.verify(cell, big(epoch)));
    }
    async readOwner(cell) {
      const r = call(() => this.#node.readOwner(cell));
      return r ? { node: nodeOrNull(r.node), epoch: num(r.epoch), etag: r.etag } : null;
    }
    async casOwner(cell, g, epoch) {
      return call(() => this.#node.casOwner(cell, guard(g), big(epoch)));
    }
    async releaseOwner(cell, epoch) {
      return call(() => this.#node.releaseOwner(cell, big(epoch)));
    }
    async readNodeLease(node) {
      const r = call(() => this.#node.readNodeLease(node));
      return r ? { node: r.node, expiresMs: num(r.expiresMs), addr: r.addr, etag: r.etag } : null;
    }
    async casNodeLease(g, expiresMs) {
      const r = call(() => this.#node.casNodeLease(guard(g), big(expiresMs)));
      return r.tag === "applied" ? { outcome: "applied", etag: r.val } : { outcome: "rejected" };
    }
    claimed() {
      return this.#node.claimed().map((c) => ({ cell: c.cell, epoch: num(c.epoch) }));
    }
    startRenewing(onError) {
      if (this.#renewing) return;
      this.#renewing = setInterval(() => {
        try {
          call(() => this.#node.renew());
        } catch (e) {
          onError?.(e);
          if (e.code === "fenced" || e.code === "not-leased") this.stopRenewing();
        }
      }, Math.max(50, Math.floor(this.#ttl / 3)));
    }
    stopRenewing() {
      clearInterval(this.#renewing);
      this.#renewing = undefined;
    }
    async close(options = {}) {
      this.stopRenewing();
      return call(() => this.#node.close(Boolean(options.release)));
    }
  }

  function signRequest(o) {
    const body = o.body === undefined ? new Uint8Array() : typeof o.body === "string" ? new TextEncoder().encode(o.body) : o.body;
    const headers = Array.isArray(o.headers) || o.headers instanceof Map ? [...o.headers] : Object.entries(o.headers ?? {});
    const datetime = o.datetime instanceof Date ? o.datetime.toISOString().replace(/[-:]|\.\d{3}/g, "") : o.datetime;
    const signed = call(() =>
      signing.signRequest({
        method: o.method ?? "GET",
        url: o.url,
        headers,
        body,
        unsignedPayload: Boolean(o.unsignedPayload),
        region: o.region,
        service: o.service,
        credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey, sessionToken: o.sessionToken },
        datetime,
      }),
    );
    return { method: signed.method, url: signed.url, headers: Object.fromEntries(signed.headers) };
  }

  function presignUrl(o) {
    return call(() =>
      signing.presignUrl({
        method: o.method ?? "GET",
        url: o.url,
        region: o.region,
        service: o.service,
        credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey, sessionToken: o.sessionToken },
        datetime: o.datetime,
        expiresIn: BigInt(o.expiresIn ?? 86400),
        signedHeaders: Object.entries(o.signedHeaders ?? {}),
      }),
    );
  }

  return { S3Ownership, signRequest, presignUrl };
}
