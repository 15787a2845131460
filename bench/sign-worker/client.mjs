// The same Worker through AwsClient (aws4fetch's drop-in) from celld-edge/sign (bench/size.mjs).
import { AwsClient } from "celld-edge/sign";

export default {
  async fetch(request, env) {
    const client = new AwsClient({ accessKeyId: env.ACCESS_KEY_ID, secretAccessKey: env.SECRET_ACCESS_KEY, service: "s3", region: "auto" });
    return client.fetch(`${env.ENDPOINT}${new URL(request.url).pathname}`);
  },
};
