// The README's Deno quick start (examples/quickstart/deno.js) in its own Deno process against ministack,
// on a fresh bucket: it must print its claim (epoch 1), keep running, and on SIGINT or SIGTERM (what a
// service manager or a container runtime sends) release the cell (epoch kept, checked in the store) and
// exit 0.
import { S3Ownership, signRequest } from "celld-edge";
import { freshBucket, quickstartEnv } from "../common/buckets.mjs";
import { testServer } from "../common/signing.mjs";

const atomic = testServer(Deno.env.toObject(), "CELLD_TEST_ATOMIC");
const script = new URL("../../examples/quickstart/deno.js", import.meta.url).pathname;
const config = new URL("../../examples/deno/deno.json", import.meta.url).pathname;

for (const signal of ["SIGINT", "SIGTERM"]) {
  Deno.test(`Deno quick start: claims cell-1, releases it on ${signal}`, async () => {
    const server = await freshBucket(signRequest, atomic, `qs-deno-${signal.toLowerCase()}`);
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-net", "--allow-env", "--config", config, script],
      env: { DENO_NO_UPDATE_CHECK: "1", ...quickstartEnv(server) },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    let out = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      out += chunk;
      if (out.endsWith("\n")) break;
    }
    if (out !== "mine at epoch 1\n") throw new Error(`printed ${JSON.stringify(out)}; stderr: ${await stderr}`);
    const observer = new S3Ownership({ ...server, region: "us-east-1", node: "observer", probe: false });
    const held = await observer.readOwner("cell-1");
    if (held?.epoch !== 1 || !held.node?.startsWith("deno-")) throw new Error(`while running: ${JSON.stringify(held)}`);
    child.kill(signal);
    const status = await child.status;
    clearTimeout(timer);
    if (status.code !== 0) throw new Error(`exit ${status.code} after ${signal}; stderr: ${await stderr}`);
    const rec = await observer.readOwner("cell-1");
    if (rec?.node !== null || rec.epoch !== 1) throw new Error(`after ${signal}: ${JSON.stringify(rec)}`);
  });
}
