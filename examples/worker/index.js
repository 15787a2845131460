// The example Worker (root wrangler.toml): routes each request for /cells/<cell>/... to the node that owns
// the cell. It reads the owner and the owner's lease; when the cell is free or its owner is dead it claims
// the cell itself; it answers who owns the cell, at which epoch, and where to reach the owner:
//   200 { cell, owner, epoch, addr, self, live }             someone (maybe this node) owns it
//   200 { cell, owner, epoch, self: true, tookOver }         this node has just claimed it
//   4xx/5xx { cell, code, message }                          a celld-edge error (codes in the README)
// The bucket is the R2 binding CELLS (wrangler.toml's [[r2_buckets]]): no keys, no endpoint. Without the
// binding it uses the S3 API with S3_ENDPOINT / S3_BUCKET / S3_REGION and the keys as Worker secrets
// (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY), never in source: for a bucket elsewhere.
//
// One S3Ownership per isolate: its node id is NODE_ID when set (one Worker = one node), else one the
// instance makes up (a new one per isolate, whose first lease needs no read: the first request is one
// round trip faster), because two isolates sharing an id would be one node in two places. Workers cannot run timers
// between requests, so the lease is renewed by the requests themselves (once a third of the ttl has
// passed); an isolate that gets no requests lets its lease lapse, and its cells are taken over by others.
import { S3Ownership } from "celld-edge";

let own = null;
let nodeId = "";
let ttlMs = 10000;
let renewedAt = 0; // Date.now() after the last lease write; Workers' clock advances at I/O, enough here
let leasing = null; // the lease upkeep in flight, shared by concurrent requests of this isolate

function ownership(env) {
  if (own) return own;
  ttlMs = Number(env.LEASE_TTL_MS || 10000);
  const store = env.CELLS
    ? { r2: env.CELLS }
    : {
        endpoint: env.S3_ENDPOINT,
        bucket: env.S3_BUCKET,
        region: env.S3_REGION || "auto",
        accessKeyId: env.S3_ACCESS_KEY_ID,
        secretAccessKey: env.S3_SECRET_ACCESS_KEY,
      };
  own = new S3Ownership({
    ...store,
    node: env.NODE_ID || undefined,
    addr: env.NODE_ADDR || "",
    prefix: env.S3_PREFIX || "",
    leaseTtlMs: ttlMs,
    maxClockSkewMs: Number(env.MAX_CLOCK_SKEW_MS || 1000),
    // The bucket is qualified once (43 requests, 32 of them PUTs) and the verdict recorded in
    // <prefix>probe/qualified.json; a later isolate reads it (one GET) while it is trusted (probeTrustMs,
    // 7 days). PROBE = "false" skips even that read, once the store is known to pass.
    probe: env.PROBE !== "false",
  });
  nodeId = own.node;
  return own;
}

/** Holds a valid lease: acquires one when there is none, renews once a third of the ttl has passed. */
function keepLease() {
  if (own.leaseValid() && Date.now() - renewedAt < ttlMs / 3) return;
  leasing ??= (async () => {
    try {
      if (!own.leaseValid()) {
        await own.acquireLease(); // a fresh lease: claims made under an earlier one are void
      } else {
        try {
          await own.renewLease();
        } catch (e) {
          if (e.code !== "fenced") throw e;
          await own.acquireLease();
        }
      }
      renewedAt = Date.now();
    } finally {
      leasing = null;
    }
  })();
  return leasing;
}

/** Who owns the cell, claiming it when it is free, its owner is dead, or it is ours from a void claim. */
async function route(cell) {
  await keepLease();
  const owner = await own.owner(cell);
  // A record naming this node counts only if this isolate holds the cell (`held`): after an idle gap the
  // lease was acquired afresh and the claims made under the old one are void, so claim anew at epoch + 1.
  if (owner?.held || (owner?.live && owner.node !== nodeId)) {
    return { cell, owner: owner.node, epoch: owner.epoch, addr: owner.addr, self: owner.held, live: true };
  }
  const claim = await own.claim(cell);
  if (claim.outcome === "applied") return { cell, owner: nodeId, epoch: claim.epoch, self: true, tookOver: claim.tookOver };
  const o = claim.owner; // a live owner won the race: the routing hint
  return { cell, owner: o.node, epoch: o.epoch, addr: o.addr, self: o.node === nodeId, live: o.live };
}

/** The <cell> of /cells/<cell>/..., or null; the id itself is checked by celld-edge (invalid-input). */
function cellOf(url) {
  const [, prefix, cell] = new URL(url).pathname.split("/");
  if (prefix !== "cells" || !cell) return null;
  try {
    return decodeURIComponent(cell);
  } catch {
    return null; // malformed percent-encoding
  }
}

const STATUS = { "invalid-input": 400, auth: 502, request: 502, "corrupt-record": 502, "store-violation": 502 };

export default {
  async fetch(request, env) {
    const cell = cellOf(request.url);
    if (cell === null) return new Response("usage: /cells/<cell>/...\n", { status: 404 });
    try {
      ownership(env);
    } catch (e) {
      return Response.json({ code: e.code, message: `worker misconfigured: ${e.message}` }, { status: 500 });
    }
    try {
      return Response.json(await route(cell));
    } catch (e) {
      // transport / ambiguous / not-leased / fenced are transient: 503, the client may retry.
      return Response.json({ cell, code: e.code ?? "internal", message: e.message }, { status: STATUS[e.code] ?? 503 });
    }
  },
};
