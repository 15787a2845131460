// A Worker that only signs (bench/size.mjs bundles it with wrangler): a GET forwarded to S3 through
// AwsClient, and a presigned URL, from celld-edge/sign alone.
import { AwsClient, presignUrl } from "celld-edge/sign";

export default {
  async fetch(request, env) {
    const keys = { accessKeyId: env.ACCESS_KEY_ID, secretAccessKey: env.SECRET_ACCESS_KEY };
    const url = new URL(request.url);
    if (url.pathname === "/presign") return new Response(presignUrl({ ...keys, region: "auto", url: `${env.ENDPOINT}/bucket/key` }));
    return new AwsClient({ ...keys, service: "s3", region: "auto" }).fetch(`${env.ENDPOINT}${url.pathname}`);
  },
};
