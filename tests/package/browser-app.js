// A user's browser program, bundled by each bundler inside a fresh project that installed the packed
// tarball (tests/package/bundlers.mjs): it signs AWS's S3 GET example and checks that bad options are
// refused, then reports on the page.
import { signRequest, S3Ownership } from "celld-edge";

let result;
try {
  const get = signRequest({
    accessKeyId: "AKIAIOSFODNN7EXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    region: "us-east-1",
    datetime: "20130524T000000Z",
    url: "https://examplebucket.s3.amazonaws.com/test.txt",
    headers: { Range: "bytes=0-9" },
  });
  let refused = "not refused";
  try {
    new S3Ownership({ endpoint: "http://127.0.0.1:1", bucket: "b", region: "auto", accessKeyId: "k", secretAccessKey: "s", node: "n", notAnOption: 1 });
  } catch (e) {
    refused = e.code;
  }
  result = { authorization: get.headers.authorization, refused };
} catch (e) {
  result = { error: String(e && e.stack || e) };
}
globalThis.celldResult = result;
