// Deno suite for ownership: the shared checks against versitygw (probed) and moto in auth mode (unprobed),
// importing "celld-edge" through tests/deno/deno.json (the deno entry).
import * as api from "celld-edge";
import { ownershipChecks, ownershipServers } from "../common/ownership.mjs";

for (const server of ownershipServers(Deno.env.toObject())) {
  for (const [name, fn] of ownershipChecks({ api, server, runtime: "deno" })) {
    Deno.test(name, fn);
  }
}

// `await using` itself (Deno parses it; Node 20 does not): the instance closes at the end of the scope.
Deno.test("await using closes the instance at the end of its scope", async () => {
  const [server] = ownershipServers(Deno.env.toObject());
  const { endpoint, bucket, accessKeyId, secretAccessKey } = server;
  const options = { endpoint, bucket, accessKeyId, secretAccessKey, prefix: `t-deno-using-${crypto.randomUUID()}/`, probe: false };
  let escaped;
  {
    await using own = new api.S3Ownership({ ...options, node: "using" });
    await own.acquireLease();
    await own.claim("cell-using");
    if (own.claimed().length !== 1) throw new Error("claimed() inside the scope");
    escaped = own;
  }
  if (escaped.leaseValid() || escaped.claimed().length !== 0) throw new Error("still holding after the scope");
  const lease = await new api.S3Ownership({ ...options, node: "reader" }).readNodeLease("using");
  if (lease.expiresMs !== 0) throw new Error(`the lease was not retired: ${JSON.stringify(lease)}`);
});
