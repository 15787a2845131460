// A user's CommonJS program in a fresh project (no "type": "module"): `require("celld-edge")` resolves the
// require condition and signs AWS's S3 GET example synchronously; its errors are CelldEdgeError, also for
// errors of the ES module copy loaded beside it (import()), and keep the runtime's error as cause.
const { signRequest, presignUrl, S3Ownership, CelldEdgeError } = require("celld-edge");

if (typeof S3Ownership !== "function" || typeof presignUrl !== "function") throw new Error("missing exports");
const resolved = require.resolve("celld-edge");
if (!resolved.endsWith("/node_modules/celld-edge/pkg/node.cjs")) throw new Error(`resolved to ${resolved}`);
const get = signRequest({
  accessKeyId: "AKIAIOSFODNN7EXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  region: "us-east-1",
  datetime: "20130524T000000Z",
  url: "https://examplebucket.s3.amazonaws.com/test.txt",
  headers: { Range: "bytes=0-9" },
});
if (!get.headers.authorization.endsWith("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")) {
  throw new Error(`GET example: ${get.headers.authorization}`);
}

const refused = (fn) => {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("did not throw");
};
const cjsError = refused(() => presignUrl({ url: "https://h/k", region: "r", accessKeyId: "a", secretAccessKey: "b", expires: 60 }));
if (!(cjsError instanceof CelldEdgeError) || cjsError.code !== "invalid-input" || !cjsError.message.includes("expiresIn")) throw new Error(`presign: ${cjsError}`);

(async () => {
  const esm = await import("celld-edge");
  if (esm.CelldEdgeError === CelldEdgeError) throw new Error("expected the ES module to be a second copy");
  const esmError = refused(() => esm.signRequest({ url: "https://h/k", region: "r", accessKeyId: "a", secretAccessKey: "b", endpoint: "x" }));
  if (!(esmError instanceof CelldEdgeError) || !(cjsError instanceof esm.CelldEdgeError)) throw new Error("instanceof fails across the two copies");
  const own = new S3Ownership({ endpoint: "http://127.0.0.1:2", bucket: "cells", accessKeyId: "a", secretAccessKey: "b", node: "n", probe: false });
  const network = await own.readOwner("c").then(() => undefined, (e) => e);
  if (!(network instanceof CelldEdgeError) || network.code !== "transport" || !(network.cause instanceof Error) || !network.message.includes("ECONNREFUSED")) {
    throw new Error(`network failure: ${network?.code} ${network?.message} cause ${network?.cause}`);
  }
  console.log("required:", resolved);
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
