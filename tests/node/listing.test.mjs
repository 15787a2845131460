// Node suite for seeing the bucket: the shared listing checks (tests/common/listing.mjs) against versitygw
// and moto in auth mode, importing the package by its name as users do; plus a listing past 1000 keys,
// which follows the store's own continuation token (too many writes to repeat in every runtime).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as api from "celld-edge";
import { listingChecks } from "../common/listing.mjs";
import { atomicStore, ownershipServers } from "../common/ownership.mjs";

for (const server of ownershipServers(process.env)) {
  for (const [name, fn] of listingChecks({ api, server, runtime: "node" })) {
    test(name, fn);
  }
}

test("listing (node, ministack): 1,050 records page past 1000 keys on the store's own token", async () => {
  const store = atomicStore(process.env);
  const prefix = `t-list-many-${Math.random().toString(36).slice(2, 10)}/`;
  const body = '{"node":"","epoch":3}';
  const put = async (i) => {
    const url = `${store.endpoint}/${store.bucket}/${prefix}cells/m${String(i).padStart(4, "0")}/own.json`;
    const signed = api.signRequest({ method: "PUT", url, body, region: "us-east-1", accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey });
    const res = await fetch(signed.url, { method: "PUT", headers: signed.headers, body });
    await res.arrayBuffer();
    assert.ok(res.ok, `PUT ${url}: ${res.status}`);
  };
  for (let i = 0; i < 1050; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => put(i + j)));
  const pages = [];
  const fetchNoting = (request) => {
    const url = new URL(request.url);
    if (url.searchParams.get("list-type") === "2") pages.push(url.searchParams);
    return fetch(request);
  };
  const cells = await new api.S3Inspector({ ...store, prefix, fetch: fetchNoting }).listCells();
  assert.equal(cells.length, 1050);
  assert.ok(cells.every((c, i) => c.cell === `m${String(i).padStart(4, "0")}` && c.status === "released" && c.epoch === 3));
  const cellPages = pages.filter((p) => p.get("prefix") === `${prefix}cells/`);
  assert.equal(cellPages.length, 2);
  assert.ok(cellPages[1].get("continuation-token"), "the second page sends the store's token back");
});
