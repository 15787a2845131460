// Test helper shared by runtimes: a fresh bucket per run on a test server, so examples that use fixed
// names (cell-1, reports/...) start from an empty store every time.

/** Creates `<prefix>-<time>-<random>` on the server with a signed PUT; returns the server with that bucket. */
export async function freshBucket(signRequest, server, prefix) {
  const bucket = `${prefix}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const signed = signRequest({
    method: "PUT", url: `${server.endpoint}/${bucket}`, region: "us-east-1",
    accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey,
  });
  const res = await fetch(signed.url, { method: "PUT", headers: signed.headers });
  const text = await res.text();
  if (!res.ok) throw new Error(`creating bucket ${bucket}: ${res.status} ${text}`);
  return { ...server, bucket };
}

/** The environment the quick starts read (S3_* and AWS_*). */
export function quickstartEnv(server) {
  return {
    S3_ENDPOINT: server.endpoint, S3_BUCKET: server.bucket, S3_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: server.accessKeyId, AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
  };
}
