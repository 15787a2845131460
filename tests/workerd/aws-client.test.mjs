// AwsClient inside workerd: bundles tests/workerd/aws-client (as a user's deploy would), starts it with the
// vectors, the botocore cases and the server coordinates as bindings, and turns its results into subtests,
// once through each entry (celld-edge, celld-edge/sign).
import { after, test } from "node:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { asSubtests } from "../common/checks.mjs";
import { AWS_CLIENT_VECTOR_CASES } from "../common/aws-client.mjs";
import { loadVectorCases } from "../common/vectors-fs.mjs";
import { loadBotocoreCases } from "../botocore/cases.mjs";
import { disposeAll, root, startWorker } from "./miniflare.mjs";

after(disposeAll); // also when run on its own, not from run.mjs

test("AwsClient checks inside workerd", async (t) => {
  const { cases, skip } = loadBotocoreCases();
  const bindings = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("CELLD_TEST_") || k === "CELLD_EDGE_REQUIRE_BOTOCORE"));
  const mf = await startWorker(join(root, "tests/workerd/aws-client/aws-client.toml"), {
    ...bindings,
    AWS_CLIENT_VECTORS: JSON.stringify(loadVectorCases((p) => readFileSync(p, "utf8"), process.env, AWS_CLIENT_VECTOR_CASES)),
    ...(cases ? { BOTOCORE: JSON.stringify(cases) } : { BOTOCORE_SKIP: skip }),
  });
  for (const [path, entry] of [["/", "celld-edge"], ["/sign", "celld-edge/sign"]]) {
    await t.test(entry, async (t) => {
      const res = await mf.dispatchFetch(`http://worker${path}`);
      await asSubtests(t, await res.json(), "the Worker");
    });
  }
});
