// A Cloudflare Worker that routes each request for /cells/<cell>/... to the node that owns the cell.
// It reads the owner and the owner's lease; when the cell is free or its owner is dead it claims the cell
// itself; it answers who owns the cell, at which epoch, and where to reach the owner. Credentials come
// from Worker secrets/vars (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY), never from source.
//
// One S3Ownership per isolate: its node id is NODE_ID when set (one Worker = one node) or a random id per
// isolate, because two isolates sharing an id would be one node in two places. Workers cannot run timers
// between requests, so the lease is renewed on the requests themselves (renewLease when a third of the ttl
// has passed); an isolate that gets no requests lets its lease lapse, and its cells are taken over.
import { S3Ownership } from "celld-edge";

let own;
let nodeId;
let lastRenewal = 0;

function ownership(env) {
  if (!own) {
    nodeId = env.NODE_ID || `worker-${crypto.randomUUID()}`;
    own = new S3Ownership({
      endpoint: env.S3_ENDPOINT,
      bucket: env.S3_BUCKET,
      region: env.S3_REGION || "auto",
      accessKeyId: env.S3_ACCESS_KEY_ID,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY,
      node: nodeId,
      addr: env.NODE_ADDR || "",
      prefix: env.S3_PREFIX || "",
      leaseTtlMs: Number(env.LEASE_TTL_MS || 10000),
      maxClockSkewMs: Number(env.MAX_CLOCK_SKEW_MS || 1000),
    });
  }
  return own;
}

/** Holds a valid lease: acquires one when there is none, renews when a third of the ttl has passed. */
async function leased(own, ttl) {
  if (!own.leaseValid()) {
    await own.acquireLease();
    lastRenewal = Date.now();
  } else if (Date.now() - lastRenewal >= ttl / 3) {
    try {
      await own.renewLease();
    } catch (e) {
      if (e.code !== "fenced") throw e;
      await own.acquireLease(); // fenced: a fresh lease; the cells must be claimed again at new epochs
    }
    lastRenewal = Date.now();
  }
}

export default {
  async fetch(request, env) {
    const [, route, cell] = new URL(request.url).pathname.split("/").map(decodeURIComponent);
    if (route !== "cells" || !cell) return new Response("usage: /cells/<cell>/...\n", { status: 404 });
    const own = ownership(env);
    try {
      await leased(own, Number(env.LEASE_TTL_MS || 10000));
      const owner = await own.owner(cell);
      if (owner && owner.node !== null && owner.live) {
        return Response.json({ cell, owner: owner.node, epoch: owner.epoch, addr: owner.addr, self: owner.node === nodeId });
      }
      const claim = await own.claim(cell);
      if (claim.outcome === "applied") {
        return Response.json({ cell, owner: nodeId, epoch: claim.epoch, tookOver: claim.tookOver, self: true });
      }
      const o = claim.owner;
      return Response.json({ cell, owner: o.node, epoch: o.epoch, addr: o.addr, self: false });
    } catch (e) {
      return Response.json({ cell, code: e.code ?? "internal", message: e.message }, { status: 503 });
    }
  },
};
