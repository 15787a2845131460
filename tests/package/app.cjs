// A user's CommonJS program in a fresh project (no "type": "module"): `require("celld-edge")` resolves the
// require condition and signs AWS's S3 GET example synchronously.
const { signRequest, presignUrl, S3Ownership } = require("celld-edge");

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
console.log("required:", resolved);
