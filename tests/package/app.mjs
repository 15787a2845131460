// A user's program, run inside a fresh project that installed the packed tarball: imports "celld-edge" by
// name, checks which entry its runtime resolved (argv: the expected js/ file), signs AWS's S3 examples,
// also through AwsClient, gets a typed error for bad input, and finds the ownership and inspector classes.
import * as api from "celld-edge";

const { signRequest, presignUrl, S3Ownership, S3Inspector, AwsClient } = api;
if (typeof S3Ownership !== "function") throw new Error("S3Ownership is not exported");
if (typeof S3Inspector !== "function") throw new Error("S3Inspector is not exported");

const expected = (globalThis.Deno ? Deno.args : process.argv.slice(2))[0];
const resolved = import.meta.resolve("celld-edge");
if (expected && !resolved.endsWith(`/node_modules/celld-edge/${expected}`)) {
  throw new Error(`"celld-edge" resolved to ${resolved}, expected its ${expected}`);
}

// Every runtime export must be declared in js/index.d.ts; app.ts type-checks each of these names.
const exported = Object.keys(api).sort().join(",");
if (exported !== "AwsClient,CelldEdgeError,S3Inspector,S3Ownership,presignUrl,signRequest") {
  throw new Error(`the package exports ${exported}: declare any new export in js/*.d.ts and use it in app.ts`);
}

const example = {
  accessKeyId: "AKIAIOSFODNN7EXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  region: "us-east-1",
  datetime: "20130524T000000Z",
};
const get = signRequest({ ...example, url: "https://examplebucket.s3.amazonaws.com/test.txt", headers: { Range: "bytes=0-9" } });
if (!get.headers.authorization.endsWith("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")) {
  throw new Error(`GET example: ${get.headers.authorization}`);
}
const url = presignUrl({ ...example, url: "https://examplebucket.s3.amazonaws.com/test.txt", expiresIn: 86400 });
if (!url.endsWith("X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")) {
  throw new Error(`presign example: ${url}`);
}
const viaClient = await new AwsClient({ accessKeyId: example.accessKeyId, secretAccessKey: example.secretAccessKey, region: example.region, unsignedPayload: false }).sign("https://examplebucket.s3.amazonaws.com/test.txt", {
  headers: { Range: "bytes=0-9" }, aws: { datetime: example.datetime },
});
if (viaClient.headers.get("authorization") !== get.headers.authorization) throw new Error(`AwsClient GET example: ${viaClient.headers.get("authorization")}`);
try {
  signRequest({ ...example, url: "not a url" });
  throw new Error("a bad URL was signed");
} catch (e) {
  if (e.code !== "invalid-input" || !(e instanceof api.CelldEdgeError)) throw e;
}
console.log("signed with", resolved);
