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

Deno.test("Deno's own fetch error (it names the whole URL) is scrubbed in the transport error and in its cause", async () => {
  // A port nothing listens on: Deno's TypeError names the URL, presigned token and signature included.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const token = "IQoJb3JpZ2luX2VjDENOTOKEN";
  const client = new api.AwsClient({ accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", sessionToken: token, region: "us-east-1", service: "s3", retries: 0 });
  let err;
  try {
    await client.fetch(`http://127.0.0.1:${port}/b/k`, { aws: { signQuery: true } });
  } catch (e) {
    err = e;
  }
  if (err?.code !== "transport") throw new Error(`expected a transport error, got ${err}`);
  const texts = [];
  for (let e = err; e !== undefined && e !== null && texts.length < 15; e = e.cause) texts.push(String(e.message), String(e.stack), Deno.inspect(e));
  for (const text of texts) {
    for (const secret of [token, "X-Amz-Signature", "X-Amz-Credential"]) {
      if (text.includes(secret)) throw new Error(`${secret} appears in ${JSON.stringify(text)}`);
    }
  }
  // Deno 2 says "fetch failed" and names the URL in that error's own cause: the chain is kept, scrubbed.
  if (!(err.cause instanceof Error) || !texts.some((t) => t.includes(`127.0.0.1:${port}/b/k?…`))) {
    throw new Error(`the cause chain is Deno's, scrubbed: ${texts.join(" | ")}`);
  }
});
