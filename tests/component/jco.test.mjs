// The component in Node through jco (transpiled here into test-output/jco/, beside jco's own
// node_modules, which scripts/setup installs into ~/.cache/celld-edge/jco): the shared ownership checks of
// tests/common/ownership.mjs whose API the world exports, against versitygw (out of process: jco's calls
// block the main thread), and the signing checks against the same vectors as the JS entry.
import { test } from "node:test";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { homedir } from "node:os";
import { ownershipChecks, ownershipServers } from "../common/ownership.mjs";
import { signingChecks } from "../common/signing.mjs";
import { loadVectors } from "../common/vectors-fs.mjs";
import { componentApi } from "./jco-api.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const jcoHome = process.env.CELLD_JCO_DIR ?? join(homedir(), ".cache/celld-edge/jco");
const component = process.env.CELLD_COMPONENT ?? join(root, "target/component/celld_edge.wasm");

// The transpiled component imports @bytecodealliance/preview2-shim: its directory resolves it through a
// node_modules link to jco's.
const out = join(root, "test-output/jco");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
symlinkSync(join(jcoHome, "node_modules"), join(out, "node_modules"));
execFileSync(join(jcoHome, "node_modules/.bin/jco"), ["transpile", component, "-o", join(out, "celld-edge"), "--name", "celld_edge", "--quiet"]);
const api = componentApi(await import(pathToFileURL(join(out, "celld-edge/celld_edge.js"))));

// The shared checks that use only what the world exports (no injected fetch, onEvent, waiting claims,
// probe() or option-typo messages, which are the JS shell's).
const OWNERSHIP = [
  "create, duplicate create rejected with a routing hint, verify",
  "release keeps the epoch; a stale release is rejected and changes nothing",
  "takeover only after the owner's lease is dead; verify after takeover is false",
  "renewal keeps the lease valid past its ttl",
  "low-level casOwner / casNodeLease follow their guards",
  "corrupt records are corrupt-record naming the key, and are left alone",
  "records celld writes, with extra fields, are read and taken over",
  "instances that close leave no live-looking lease in nodes/",
];
const [versitygw] = ownershipServers(process.env);
const checks = ownershipChecks({ api, server: versitygw, runtime: "jco" });
for (const name of OWNERSHIP) {
  const found = checks.find(([n]) => n === `${versitygw.name}: ${name}`);
  test(`jco ${versitygw.name}: ${name}`, () => {
    if (!found) throw new Error(`no shared check named ${name}`);
    return found[1]();
  });
}

const SIGNING = [
  "AWS SigV4 test-suite vectors",
  "S3 example: GET with Range",
  "S3 example: PUT with a body (string and Uint8Array alike)",
  "S3 example: presigned GET",
  "session token and unsigned payload",
  "versitygw (a real S3 server) accepts signed and presigned requests from this runtime, and refuses a wrong secret",
];
const vectors = loadVectors((p) => readFileSync(p, "utf8"), process.env);
const signing = signingChecks({ api, vectors, env: process.env, runtime: "jco" });
for (const name of SIGNING) {
  const found = signing.find(([n]) => n === name);
  test(`jco signing: ${name}`, () => {
    if (!found) throw new Error(`no shared signing check named ${name}`);
    return found[1]();
  });
}
