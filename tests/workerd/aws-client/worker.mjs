// Test Worker: imports celld-edge and celld-edge/sign by name as a user's Worker would, runs the shared
// AwsClient checks inside workerd (the fault front as an injected fetch) through the main entry (GET /) or
// the signing-only one (GET /sign), and answers with [{ name, ok, error }] as JSON. The runner passes the
// vectors, the botocore cases and the server coordinates as bindings.
import * as main from "celld-edge";
import * as signOnly from "celld-edge/sign";
import { runChecks } from "../../common/checks.mjs";
import { awsClientChecks, injectedFront } from "../../common/aws-client.mjs";

export default {
  async fetch(request, env) {
    const botocore = env.BOTOCORE ? JSON.parse(env.BOTOCORE) : null;
    const ctx = {
      api: new URL(request.url).pathname === "/sign" ? signOnly : main, vectors: JSON.parse(env.AWS_CLIENT_VECTORS), botocore,
      botocoreSkip: env.BOTOCORE_SKIP ?? "", env, runtime: "workerd", front: async (endpoint) => injectedFront(endpoint), streamUploads: true,
    };
    return Response.json(await runChecks(awsClientChecks(ctx)));
  },
};
