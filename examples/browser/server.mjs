// The browser example's server (node examples/browser/server.mjs): serves the page (index.html, app.js)
// and the celld-edge package it imports (the page's import map points at /celld-edge/js/inline.js), says
// where the store is (GET /store), and hands the page short-lived credentials that reach one prefix of
// one bucket (POST /credentials). Its own long-lived keys never leave it. Configuration, from the
// environment: S3_ENDPOINT (as the browser reaches the store), S3_BUCKET, S3_REGION (default us-east-1),
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (this server's keys: they may call sts:AssumeRole on
// ROLE_ARN, nothing else), ROLE_ARN, STS_ENDPOINT (default https://sts.amazonaws.com), PREFIX (default
// browser/) and PORT (default 8080; 0 picks a free one). It prints the address it listens on.
import http from "node:http";
import { readFile } from "node:fs/promises";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { AwsClient, S3Inspector } from "celld-edge";

const env = process.env;
const here = dirname(fileURLToPath(import.meta.url));
const pkg = dirname(fileURLToPath(import.meta.resolve("celld-edge/package.json")));
const store = { endpoint: env.S3_ENDPOINT, bucket: env.S3_BUCKET, region: env.S3_REGION || "us-east-1", prefix: env.PREFIX ?? "browser/" };
const sts = new AwsClient({ accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, service: "sts", region: store.region });
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

/**
 * Keys for this page: STS AssumeRole of ROLE_ARN for 15 minutes with a session policy that narrows the
 * role to the objects under the prefix (the keys can do what both the role and this policy allow). This
 * is what a real backend does on AWS; on R2 it asks for temporary credentials instead (POST
 * /accounts/<account>/r2/temporary-access-credentials with { bucket, prefixes: [prefix], permission:
 * "object-read-write", ttlSeconds: 900, parentAccessKeyId }). Decide first whether this user may have
 * them at all (your session cookie): this example hands them to anyone who can reach it. The test
 * command's store (ministack, run without AUTH=true) answers AssumeRole but enforces neither the
 * signatures nor the policy; AWS enforces both.
 */
async function mint() {
  const objects = `arn:aws:s3:::${store.bucket}/${store.prefix}*`;
  const policy = {
    Version: "2012-10-17",
    Statement: [
      { Effect: "Allow", Action: ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], Resource: objects },
      { Effect: "Allow", Action: "s3:ListBucket", Resource: `arn:aws:s3:::${store.bucket}`, Condition: { StringLike: { "s3:prefix": `${store.prefix}*` } } },
    ],
  };
  const form = { Action: "AssumeRole", Version: "2011-06-15", RoleArn: env.ROLE_ARN, RoleSessionName: `page-${Date.now()}`, DurationSeconds: "900", Policy: JSON.stringify(policy) };
  const answer = await sts.fetch(env.STS_ENDPOINT || "https://sts.amazonaws.com/", { method: "POST", body: new URLSearchParams(form) });
  const xml = await answer.text();
  const field = (name) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
  if (!answer.ok || !field("SessionToken")) throw new Error(`AssumeRole answered ${answer.status}: ${xml.slice(0, 300)}`);
  return { accessKeyId: field("AccessKeyId"), secretAccessKey: field("SecretAccessKey"), sessionToken: field("SessionToken"), expiration: field("Expiration") };
}

/** The file a GET of `path` serves: the page's own, or the package's js/ and pkg/ under /celld-edge/. */
function fileOf(path) {
  if (path === "/" || path === "/index.html") return join(here, "index.html");
  if (path === "/app.js") return join(here, "app.js");
  const inPackage = /^\/celld-edge\/((?:js|pkg)\/[\w.-]+)$/.exec(normalize(path));
  return inPackage ? join(pkg, inPackage[1]) : null;
}

const server = http.createServer(async (req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  try {
    if (path === "/store" && req.method === "GET") return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(store));
    if (path === "/credentials" && req.method === "POST") {
      return res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(await mint()));
    }
    const file = req.method === "GET" ? fileOf(path) : null;
    if (file === null) return res.writeHead(404).end();
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(await readFile(file));
  } catch (e) {
    console.error(`${req.method} ${path}: ${e.message}`);
    if (!res.headersSent) res.writeHead(e.code === "ENOENT" ? 404 : 502).end();
  }
});
// Qualify the bucket once, with this server's keys (what `npx celld-edge probe` does at deploy): pages
// then trust the recorded verdict instead of each probing the store.
await new S3Inspector({ ...store, accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY }).probe();
server.listen(Number(env.PORT ?? 8080), "127.0.0.1", () => console.log(`http://127.0.0.1:${server.address().port}/`));
