// A Worker that only signs (bench/size.mjs bundles it with wrangler): signRequest and presignUrl from
// celld-edge/sign alone, the request then sent with the runtime's fetch.
import { presignUrl, signRequest } from "celld-edge/sign";

export default {
  async fetch(request, env) {
    const keys = { region: "auto", accessKeyId: env.ACCESS_KEY_ID, secretAccessKey: env.SECRET_ACCESS_KEY };
    const url = `${env.ENDPOINT}${new URL(request.url).pathname}`;
    if (request.method === "HEAD") return new Response(presignUrl({ ...keys, url }));
    const signed = signRequest({ ...keys, url });
    return fetch(signed.url, { headers: signed.headers });
  },
};
