// Deno suite for AwsClient: the shared checks (tests/common/aws-client.mjs) with the fault front as an
// injected fetch, and the botocore cases made by running gen.py here (Deno.Command).
import * as api from "celld-edge";
import { AWS_CLIENT_VECTOR_CASES, awsClientChecks, botocoreCases, injectedFront } from "../common/aws-client.mjs";
import { loadVectorCases } from "../common/vectors-fs.mjs";

const env = Deno.env.toObject();
const vectors = loadVectorCases((p) => Deno.readTextFileSync(p), env, AWS_CLIENT_VECTOR_CASES);

function loadBotocore() {
  const python = env.CELLD_EDGE_PYTHON || `${env.HOME}/.cache/celld-edge/venv/bin/python`;
  try {
    const out = new Deno.Command(python, { args: [new URL("../botocore/gen.py", import.meta.url).pathname, "1500"] }).outputSync();
    if (!out.success) return { cases: null, skip: `gen.py failed: ${new TextDecoder().decode(out.stderr).trim().split("\n").pop()}` };
    return { cases: botocoreCases(new TextDecoder().decode(out.stdout)), skip: "" };
  } catch (e) {
    return { cases: null, skip: `${python} does not run: ${e.message}` };
  }
}
const { cases: botocore, skip: botocoreSkip } = loadBotocore();

const front = async (endpoint) => injectedFront(endpoint);
for (const [name, fn] of awsClientChecks({ api, vectors, botocore, botocoreSkip, env, runtime: "deno", front, streamUploads: true })) {
  Deno.test(name, fn);
}
