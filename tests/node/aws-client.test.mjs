// Node suite for AwsClient: the shared checks (tests/common/aws-client.mjs), through both entries, with the
// fault front as a real local proxy (tests/node/fault-proxy.mjs), and what only Node has here: aws4fetch
// itself, to show that signatures agree with it where both sign the same thing.
import { test } from "node:test";
import { readFileSync } from "node:fs";
import * as api from "celld-edge";
import * as signOnly from "celld-edge/sign";
import { AwsClient as Aws4fetchClient } from "aws4fetch";
import { AWS_CLIENT_VECTOR_CASES, awsClientChecks } from "../common/aws-client.mjs";
import { loadVectorCases } from "../common/vectors-fs.mjs";
import { loadBotocoreCases, loadBotocoreHosts } from "../botocore/cases.mjs";
import { proxyFront } from "./fault-proxy.mjs";

const vectors = loadVectorCases((p) => readFileSync(p, "utf8"), process.env, AWS_CLIENT_VECTOR_CASES);
const { cases: botocore, skip: botocoreSkip } = loadBotocoreCases();

for (const [name, fn] of awsClientChecks({ api, vectors, botocore, botocoreSkip, env: process.env, runtime: "node", front: proxyFront, streamUploads: true })) {
  test(name, fn);
}
// The same checks through the signing-only entry, whose bundle (pkg/sign-node.js) is minified apart.
for (const [name, fn] of awsClientChecks({ api: signOnly, vectors, botocore, botocoreSkip, env: process.env, runtime: "node", front: proxyFront, streamUploads: true })) {
  test(`celld-edge/sign: ${name}`, fn);
}

/** botocore endpoints whose service or region cannot be told from the host, with the reason. */
const BOTOCORE_HOSTS_NOT_GUESSED = {
  "https://localhost:8000/": "DynamoDB Local: not an AWS host, service and region must be given",
  "https://codecatalyst.global.api.aws/": "bearer-token service; its region is botocore's pseudo-region aws-global",
  "https://mturk-requester-sandbox.us-east-1.amazonaws.com/": "botocore signs it in its pseudo-region sandbox",
};

test("service and region guessed from every host in botocore's endpoint data agree with botocore's signing name and region", async (t) => {
  const { hosts, skip } = loadBotocoreHosts();
  if (hosts === null) {
    if (process.env.CELLD_EDGE_REQUIRE_BOTOCORE === "1") throw new Error(`botocore endpoints unavailable: ${skip}`);
    t.skip(skip);
    return;
  }
  const client = new api.AwsClient({ accessKeyId: "AKID", secretAccessKey: "secret" });
  const differ = [];
  const excused = new Set();
  for (const [url, service, region, key] of hosts) {
    let got;
    try {
      const [, scope] = /Credential=[^/]+\/\d{8}\/([^,]+)\/aws4_request/.exec((await client.sign(url)).headers.get("authorization"));
      got = scope;
    } catch (e) {
      got = e.code;
    }
    if (got === `${region}/${service}`) continue;
    if (url in BOTOCORE_HOSTS_NOT_GUESSED) excused.add(url);
    else differ.push(`${url} (${key}): guessed ${got}, botocore ${region}/${service}`);
  }
  t.diagnostic(`${hosts.length} botocore endpoints checked`);
  if (differ.length > 0) throw new Error(`${differ.length} hosts guessed unlike botocore:\n${differ.slice(0, 40).join("\n")}`);
  const stale = Object.keys(BOTOCORE_HOSTS_NOT_GUESSED).filter((u) => !excused.has(u));
  if (stale.length > 0) throw new Error(`excused but now guessed right (or gone from botocore): ${stale.join(", ")}`);
});

test("signatures agree with aws4fetch's where both sign the same headers and payload", async () => {
  const creds = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", sessionToken: "tok/en+=" };
  const datetime = "20260102T030405Z";
  const cases = [
    ["https://bucket.s3.eu-west-3.amazonaws.com/dir/key.txt", { method: "GET" }],
    ["https://bucket.s3.eu-west-3.amazonaws.com/dir/key.txt?list-type=2&prefix=a%2Fb", { method: "GET", headers: { "x-amz-meta-a": "b" } }],
    ["https://s3.us-east-1.amazonaws.com/bucket/k", { method: "PUT", body: "hello", headers: { "if-none-match": "*" } }],
    ["https://acct.r2.cloudflarestorage.com/bucket/k", { method: "DELETE" }],
    ["https://sqs.us-east-2.amazonaws.com/123/queue", { method: "POST", body: "Action=SendMessage&MessageBody=hi" }],
    ["https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08", { method: "GET" }],
  ];
  const ours = new api.AwsClient(creds);
  const theirs = new Aws4fetchClient(creds);
  for (const [url, init] of cases) {
    const a = await ours.sign(url, { ...init, aws: { datetime } });
    const b = await theirs.sign(url, { ...init, aws: { datetime } });
    if (a.headers.get("authorization") !== b.headers.get("authorization")) {
      throw new Error(`${init.method} ${url}:\n ours   ${a.headers.get("authorization")}\n theirs ${b.headers.get("authorization")}`);
    }
    if (a.headers.get("x-amz-content-sha256") !== b.headers.get("x-amz-content-sha256")) throw new Error(`${url}: payload header differs`);
    // aws4fetch presigns without X-Amz-Expires for services other than S3 (where ours always has one).
    if (!url.includes("s3") && !url.includes("r2")) continue;
    const qa = await ours.sign(url, { ...init, body: undefined, aws: { datetime, signQuery: true } });
    const qb = await theirs.sign(url, { ...init, body: undefined, aws: { datetime, signQuery: true } });
    if (new URL(qa.url).searchParams.get("X-Amz-Signature") !== new URL(qb.url).searchParams.get("X-Amz-Signature")) {
      throw new Error(`presigned ${url}:\n ours   ${qa.url}\n theirs ${qb.url}`);
    }
  }
});
