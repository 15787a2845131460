// Example Worker: a small signing gateway in front of an S3-compatible bucket, using celld-edge as any
// Worker would. Credentials stay in the Worker (set them with `wrangler secret put`); clients get:
//   GET  /objects/<key>   the object, fetched with a SigV4-signed request
//   PUT  /objects/<key>   stores the request body (If-None-Match / If-Match are passed on, so conditional
//                         writes work through it); answers the store's status and ETag
//   GET  /presign/<key>   { url }: a presigned GET valid for 5 minutes
// <key> is the request path after the prefix, sent to the store exactly as it arrived (already encoded).
import { signRequest, presignUrl } from "celld-edge";

const PASSED_ON = ["content-type", "if-match", "if-none-match"];

function storeUrl(env, encodedKey) {
  return `${env.S3_ENDPOINT.replace(/\/$/, "")}/${env.S3_BUCKET}/${encodedKey}`;
}

function credentials(env) {
  return { region: env.S3_REGION || "auto", accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY };
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    const [, route, ...rest] = pathname.split("/");
    const key = rest.join("/");
    if (!key) return new Response("usage: /objects/<key> (GET, PUT) or /presign/<key> (GET)\n", { status: 404 });
    try {
      if (route === "presign" && request.method === "GET") {
        return Response.json({ url: presignUrl({ ...credentials(env), method: "GET", url: storeUrl(env, key), expiresIn: 300 }) });
      }
      if (route === "objects" && (request.method === "GET" || request.method === "PUT")) {
        const headers = {};
        for (const name of PASSED_ON) {
          const value = request.headers.get(name);
          if (value !== null) headers[name] = value;
        }
        const body = request.method === "PUT" ? new Uint8Array(await request.arrayBuffer()) : undefined;
        const signed = signRequest({ ...credentials(env), method: request.method, url: storeUrl(env, key), headers, body });
        const answer = await fetch(signed.url, { method: signed.method, headers: signed.headers, body });
        return new Response(answer.body, { status: answer.status, headers: { etag: answer.headers.get("etag") ?? "" } });
      }
      return new Response("not found\n", { status: 404 });
    } catch (e) {
      // Only invalid-input can come from the signer here; say what was wrong, without secrets.
      return Response.json({ code: e.code ?? "internal", message: e.message }, { status: e.code === "invalid-input" ? 400 : 500 });
    }
  },
};
