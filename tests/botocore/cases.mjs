// For the JS suites run from Node (Node, workerd, Chromium harnesses): runs gen.py with the venv's Python
// (or $CELLD_EDGE_PYTHON) and returns { cases, skip }: the cases AwsClient can carry (botocoreCases), or
// null and why they could not be made. Test use only.
import { spawnSync } from "node:child_process";
import { homedir } from "node:os";
import { botocoreCases } from "../common/aws-client.mjs";

/** How many cases gen.py makes (the Rust differential's count; the filter keeps about half). */
export const BOTOCORE_CASES = 1500;

export function loadBotocoreCases(env = process.env) {
  const python = env.CELLD_EDGE_PYTHON || `${homedir()}/.cache/celld-edge/venv/bin/python`;
  const out = spawnSync(python, [new URL("./gen.py", import.meta.url).pathname, String(BOTOCORE_CASES)], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (out.error) return { cases: null, skip: `${python} does not run: ${out.error.message}` };
  if (out.status !== 0) return { cases: null, skip: `gen.py failed: ${out.stderr.trim().split("\n").pop()}` };
  return { cases: botocoreCases(out.stdout), skip: "" };
}

/** botocore's endpoints as [url, service, region, key] rows (hosts.py), or null and why they could not be read. */
export function loadBotocoreHosts(env = process.env) {
  const python = env.CELLD_EDGE_PYTHON || `${homedir()}/.cache/celld-edge/venv/bin/python`;
  const out = spawnSync(python, [new URL("./hosts.py", import.meta.url).pathname], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (out.error) return { hosts: null, skip: `${python} does not run: ${out.error.message}` };
  if (out.status !== 0) return { hosts: null, skip: `hosts.py failed: ${out.stderr.trim().split("\n").pop()}` };
  return { hosts: JSON.parse(out.stdout), skip: "" };
}
