import { S3Ownership, CelldEdgeError } from "celld-edge";

const own = new S3Ownership({
  endpoint: process.env.S3_ENDPOINT, bucket: process.env.S3_BUCKET, region: process.env.S3_REGION,
  accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY, node: "reader",
});
try {
  console.log(await own.readOwner("cell-1"));
} catch (e) {
  if (!(e instanceof CelldEdgeError)) throw e;
  // e.g. "auth cells/cell-1/own.json 403 SignatureDoesNotMatch"; a network failure: "transport", and the
  // runtime's error as e.cause
  console.log(e.code, e.key, e.status, e.s3Code);
}
