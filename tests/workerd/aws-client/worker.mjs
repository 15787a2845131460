// Test Worker: imports celld-edge by name as a user's Worker would, runs the shared AwsClient checks inside
// workerd (the fault front as an injected fetch) and answers GET / with [{ name, ok, error }] as JSON.
// The runner passes the vectors, the botocore cases and the server coordinates as bindings.
import * as api from "celld-edge";
import { runChecks } from "../../common/checks.mjs";
import { awsClientChecks, injectedFront } from "../../common/aws-client.mjs";

export default {
  async fetch(request, env) {
    const botocore = env.BOTOCORE ? JSON.parse(env.BOTOCORE) : null;
    const ctx = {
      api, vectors: JSON.parse(env.AWS_CLIENT_VECTORS), botocore, botocoreSkip: env.BOTOCORE_SKIP ?? "", env, runtime: "workerd",
      front: async (endpoint) => injectedFront(endpoint), streamUploads: true,
    };
    return Response.json(await runChecks(awsClientChecks(ctx)));
  },
};
