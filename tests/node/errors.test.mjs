// Error text as a user reads it (issue 38), from the library in Node against real answers: versitygw
// refusing a request signed for another region (its message arrives with `&#34;` entities), a web server
// that is not S3, and https:// to a port that speaks plain HTTP. Each checks the whole message.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { S3Inspector, S3Ownership } from "celld-edge";

const env = process.env;
if (!env.CELLD_TEST_REAL_ENDPOINT) throw new Error("CELLD_TEST_REAL_ENDPOINT is not set: run through scripts/test");
const real = { endpoint: env.CELLD_TEST_REAL_ENDPOINT, bucket: env.CELLD_TEST_REAL_BUCKET, accessKeyId: env.CELLD_TEST_REAL_KEY_ID, secretAccessKey: env.CELLD_TEST_REAL_SECRET };

/** What `op` rejects with: { code, status, s3Code, message }. */
async function refusal(op) {
  try {
    await op();
  } catch (e) {
    return { code: e.code, status: e.status, s3Code: e.s3Code, message: e.message };
  }
  assert.fail("it did not fail");
}

/** A plain-HTTP server answering every request with `status` and an HTML page, until `fn` settles. */
async function withWebServer(status, fn) {
  const web = createServer((_, res) => res.writeHead(status, { "content-type": "text/html" }).end("<!DOCTYPE html><html><body>nope</body></html>"));
  await new Promise((resolve) => web.listen(0, "127.0.0.1", resolve));
  try {
    return await fn(web.address().port);
  } finally {
    web.close();
  }
}

test("a wrong region is a request error naming the region the store wants, its message decoded", async () => {
  const prefix = `t-region-${Date.now()}/`;
  const own = new S3Ownership({ ...real, region: "eu-west-1", prefix, node: "n1", probe: false });
  assert.deepEqual(await refusal(() => own.acquireLease()), {
    code: "request",
    status: 400,
    s3Code: "AuthorizationHeaderMalformed",
    message: `store refused request for ${prefix}fleet/control.json: 400 AuthorizationHeaderMalformed: the bucket is in region "us-east-1": set the region option to it (the store said: The authorization header is malformed; the region "eu-west-1" is wrong; expecting "us-east-1")`,
  });
});

test("an endpoint that is not S3: the status, then the reason, with no empty code between", async () => {
  await withWebServer(404, async (port) => {
    const view = new S3Inspector({ ...real, endpoint: `http://127.0.0.1:${port}`, region: "us-east-1" });
    const e = await refusal(() => view.listCells());
    assert.equal(e.code, "request");
    assert.equal(e.message, "store refused request for cells/: 404: not an S3 API: it answered 404 with an HTML page (check the endpoint)");
  });
});

test("https:// to a plain-HTTP port says so in words, at once, without the TLS library's text", async () => {
  await withWebServer(200, async (port) => {
    const own = new S3Ownership({ ...real, endpoint: `https://127.0.0.1:${port}`, region: "us-east-1", node: "n1", probe: false });
    const started = performance.now();
    const e = await refusal(() => own.acquireLease());
    assert.equal(e.code, "transport");
    assert.match(e.message, /^transport failure on \S+: the endpoint does not speak TLS; use http:\/\/$/);
    // Not retried: a read that fails in transport is otherwise tried again with backoff for seconds.
    assert.ok(performance.now() - started < 1500, `${performance.now() - started} ms`);
  });
});
