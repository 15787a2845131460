import { signRequest, presignUrl } from "celld-edge";

const creds = { region: process.env.S3_REGION, accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY };
const url = `${process.env.S3_ENDPOINT}/${process.env.S3_BUCKET}/reports/${encodeURIComponent("q3 ü.txt")}`;

// Header auth: { method, url, headers }, ready for fetch. The body (string or Uint8Array) is hashed.
const put = signRequest({ ...creds, method: "PUT", url, body: "hello", headers: { "if-none-match": "*" } });
console.log("PUT", (await fetch(put.url, { method: "PUT", headers: put.headers, body: "hello" })).status);

// Query auth: a URL anyone can GET for the next 5 minutes.
const link = presignUrl({ ...creds, url, expiresIn: 300 });
console.log("GET", await (await fetch(link)).text());
