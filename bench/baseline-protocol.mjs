// Baseline for bench/claims.mjs (not shipped): the same claim / release protocol written in plain JS
// over aws4fetch, as a user might without celld-edge — read own.json, decide, conditional PUT, and the
// owner's lease when another node holds the cell. It keeps celld-edge's rules where they cost requests
// (peer lease read, cached token for release) so the comparison is like for like, but skips what it
// would take to be safe under faults (nonces, readbacks, the probe): it is a speed floor, not a rival.
import { AwsClient } from "aws4fetch";

export class BaselineOwnership {
  constructor({ endpoint, bucket, region, accessKeyId, secretAccessKey, node, prefix, leaseTtlMs = 10000, maxClockSkewMs = 1000 }) {
    this.aws = new AwsClient({ accessKeyId, secretAccessKey, region, service: "s3" });
    Object.assign(this, { base: `${endpoint}/${bucket}/${prefix}`, node, ttl: leaseTtlMs, skew: maxClockSkewMs, claims: new Map() });
  }
  url(key) {
    return this.base + key.split("/").map(encodeURIComponent).join("/");
  }
  async get(key) {
    const res = await this.aws.fetch(this.url(key), { cache: "no-store" });
    if (res.status === 404) return (await res.arrayBuffer(), null);
    if (!res.ok) throw new Error(`GET ${key}: ${res.status}`);
    return { body: await res.json(), etag: res.headers.get("etag") };
  }
  async put(key, body, guard) {
    const headers = { "content-type": "application/json", ...(guard ? { "if-match": guard } : { "if-none-match": "*" }) };
    const res = await this.aws.fetch(this.url(key), { method: "PUT", headers, body: JSON.stringify(body) });
    await res.arrayBuffer();
    if (res.ok) return res.headers.get("etag");
    if (res.status === 412 || res.status === 404) return null;
    throw new Error(`PUT ${key}: ${res.status}`);
  }
  async acquireLease() {
    const cur = await this.get(`nodes/${this.node}.json`);
    this.leaseEtag = await this.put(`nodes/${this.node}.json`, { node: this.node, expires_ms: Date.now() + this.ttl, addr: "" }, cur?.etag);
  }
  async claim(cell) {
    const key = `cells/${cell}/own.json`;
    const cur = await this.get(key);
    let epoch = 1;
    if (cur) {
      epoch = cur.body.epoch + 1;
      if (cur.body.node && cur.body.node !== this.node) {
        const lease = await this.get(`nodes/${cur.body.node}.json`);
        if (lease && lease.body.expires_ms + this.skew > Date.now()) return { outcome: "rejected" };
      }
    }
    const etag = await this.put(key, { node: this.node, epoch }, cur?.etag);
    if (!etag) return { outcome: "rejected" };
    this.claims.set(cell, { epoch, etag });
    return { outcome: "applied", epoch };
  }
  async release(cell) {
    const c = this.claims.get(cell);
    this.claims.delete(cell);
    return (await this.put(`cells/${cell}/own.json`, { node: "", epoch: c.epoch }, c.etag)) ? "applied" : "rejected";
  }
}
