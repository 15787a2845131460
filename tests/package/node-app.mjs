// A user's Node program, bundled with `esbuild --platform=node --bundle` and run from another folder
// (no node_modules, no wasm file beside it): signs AWS's S3 GET example.
import { signRequest } from "celld-edge";

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
console.log("bundled for node: signed");
