// Runs the workerd suites under node:test: bundles each Worker with wrangler (as a user's deploy would,
// resolving "celld-edge" through its "workerd" export condition), loads the bundle into workerd with
// Miniflare, and checks what it answers.
// - Every tests/workerd/<suite>/wrangler.toml is a check Worker: GET / runs its checks inside workerd and
//   answers [{ name, ok, error }]; it gets VECTORS and every CELLD_TEST_* variable as bindings.
// - Every tests/workerd/*.test.mjs drives an example Worker from the outside (imported from here).
import { after, test } from "node:test";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { asSubtests } from "../common/checks.mjs";
import { loadVectors } from "../common/vectors-fs.mjs";
import { disposeAll, root, startWorker } from "./miniflare.mjs";

const serverBindings = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("CELLD_TEST_")));
after(disposeAll);

const suites = readdirSync(join(root, "tests/workerd"), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, "tests/workerd", d.name, "wrangler.toml")))
  .map((d) => d.name);

for (const suite of suites) {
  test(`${suite} checks inside workerd`, async (t) => {
    const mf = await startWorker(join(root, "tests/workerd", suite, "wrangler.toml"), {
      ...serverBindings,
      VECTORS: JSON.stringify(loadVectors((p) => readFileSync(p, "utf8"), process.env)),
    });
    const res = await mf.dispatchFetch("http://worker/");
    await asSubtests(t, await res.json(), "the Worker");
  });
}

for (const file of readdirSync(join(root, "tests/workerd")).filter((f) => f.endsWith(".test.mjs")).sort()) {
  await import(`./${file}`);
}
