// Test Worker: a new instance's acquireLease + first claim counted in round trips in sequence inside
// workerd, through the R2 binding (env.CELLS) and over the S3 API (versitygw, through an injected fetch);
// answers GET / with [{ name, ok, error }] as JSON.
import * as api from "celld-edge";
import { runChecks } from "../../common/checks.mjs";
import { coldPathChecks } from "../../common/cold-path.mjs";
import { ownershipServers } from "../../common/ownership.mjs";
import { s3Transport } from "../../common/round-trips.mjs";

export default {
  async fetch(request, env) {
    const [real] = ownershipServers(env);
    const s3 = s3Transport(api, real);
    const checks = [
      ...coldPathChecks({ api, name: "r2-binding", transport: (trips) => ({ r2: trips.binding(env.CELLS) }), plant: (key, body) => env.CELLS.put(key, body) }),
      ...coldPathChecks({ api, name: real.name, ...s3 }),
    ];
    return Response.json(await runChecks(checks));
  },
};
