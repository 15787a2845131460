import { S3Ownership } from "celld-edge"; // via your bundler, or an import map to celld-edge/js/inline.js

// Short-lived credentials from your backend (STS, R2 temporary credentials); the bucket must allow CORS.
const store = await (await fetch("/credentials")).json(); // { endpoint, bucket, region, accessKeyId, ... }
const own = new S3Ownership({ ...store, node: `tab-${crypto.randomUUID()}` });
await own.acquireLease();
own.startRenewing();
const claim = await own.claim("cell-1");
document.body.textContent = claim.outcome === "applied" ? `mine at epoch ${claim.epoch}` : `owned by ${claim.owner.node}`;
