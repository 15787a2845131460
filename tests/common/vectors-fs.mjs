// Loads the vector subset from tests/data (a copy of shared/testdata, or $CELLD_TESTDATA) for the
// runtimes that can read files (Node, Deno; the workerd runner passes the result into the Worker).
// readText(path) is the runtime's own synchronous file read.
import { VECTOR_CASES, vectorFileBase } from "./signing.mjs";

export function testdataDir(env) {
  return env.CELLD_TESTDATA || new URL("../data/", import.meta.url).pathname;
}

export function loadVectors(readText, env) {
  const suite = testdataDir(env).replace(/\/?$/, "/") + "aws-sig-v4-test-suite/";
  return VECTOR_CASES.map((name) => ({
    name,
    req: readText(suite + vectorFileBase(name) + ".req"),
    authz: readText(suite + vectorFileBase(name) + ".authz"),
  }));
}

/** Like loadVectors, for any list of case names (e.g. AWS_CLIENT_VECTOR_CASES). */
export function loadVectorCases(readText, env, cases) {
  const suite = testdataDir(env).replace(/\/?$/, "/") + "aws-sig-v4-test-suite/";
  return cases.map((name) => ({
    name,
    req: readText(suite + vectorFileBase(name) + ".req"),
    authz: readText(suite + vectorFileBase(name) + ".authz"),
  }));
}
