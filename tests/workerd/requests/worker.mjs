// Test Worker for tests/workerd/requests.test.mjs: one S3Ownership per isolate, as the README's Worker
// keeps it, used by consecutive requests. Each request renews (or acquires) the lease, takes a signal of
// the cell, passes it to a fetch of its own, and writes `req-<step>` through scope(): in workerd a signal
// or a timer belongs to the request that made it, so one kept from an earlier request fails a later one.
// `?step=1` claims the cell first; `?lapse=1` then stops renewing and waits (in the request) for the
// signal to abort at the lease's deadline, which only a timer armed by this request can tell.
import { S3Ownership, signRequest } from "celld-edge";

let own;
/** `?mode=`: fencing across requests (SPEC 4.4), driven by requests.test.mjs. */
const kept = new Map();

/** One step of the fencing-across-requests test: `keep` claims `cell` and keeps its scope's fetch and key
 * for a later request; `release` releases it; `send` sends a fenced PUT through the kept fetch (its status,
 * or the refusal's code, lost, cell, epoch); `wait` takes a signal of the cell and answers when it aborts,
 * in this request (its own timer), whatever request ended the claim. */
async function fencing(mode, cell, name, env, keys, url) {
  switch (mode) {
    case "keep": {
      const claim = await own.claim(cell);
      kept.set(cell, await own.scope(cell, ({ epoch, fetch, key }) => ({ epoch, fetch, key })));
      return { epoch: claim.epoch };
    }
    case "release":
      return { released: await own.release(cell) };
    case "send": {
      const { fetch, key } = kept.get(cell);
      const put = signRequest({ method: "PUT", url: url(key(name)), body: name, ...keys });
      return fetch(put.url, { method: "PUT", headers: put.headers, body: name })
        .then((r) => ({ status: r.status }), (e) => ({ refused: [e.code, e.lost, e.cell, e.epoch] }));
    }
    case "wait": {
      const signal = own.signal(cell);
      return new Promise((resolve) => {
        const t = setTimeout(() => resolve({ lost: "the signal never aborted" }), 10_000);
        signal.addEventListener("abort", () => {
          clearTimeout(t);
          resolve({ lost: signal.reason?.lost });
        }, { once: true });
      });
    }
  }
  throw new Error(`unknown mode ${mode}`);
}

export default {
  async fetch(request, env) {
    const params = new URL(request.url).searchParams;
    const step = params.get("step");
    const keys = { region: env.S3_REGION, accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY };
    const url = (key) => `${env.S3_ENDPOINT}/${env.S3_BUCKET}/${key.split("/").map(encodeURIComponent).join("/")}`;
    try {
      own ??= new S3Ownership({
        endpoint: env.S3_ENDPOINT, bucket: env.S3_BUCKET, prefix: env.S3_PREFIX, ...keys, node: env.NODE_ID, probe: false,
        leaseTtlMs: Number(env.LEASE_TTL_MS), maxClockSkewMs: Number(env.MAX_CLOCK_SKEW_MS),
      });
      const mode = params.get("mode");
      if (mode) {
        if (!own.leaseValid() && mode !== "send") await own.acquireLease();
        return Response.json(await fencing(mode, params.get("cell"), params.get("name"), env, keys, url));
      }
      if (own.leaseValid()) await own.renewLease();
      else await own.acquireLease();
      if (step === "1") await own.claim(env.CELL);
      const signal = own.signal(env.CELL);
      const out = { step, aborted: signal.aborted };
      // The signal in this request's own I/O.
      const probe = signRequest({ url: url(`${env.S3_PREFIX}none`), ...keys });
      out.read = (await fetch(probe.url, { headers: probe.headers, signal })).status;
      out.scope = await own.scope(env.CELL, async ({ epoch, fetch: scoped, key }) => {
        const body = `request ${step}`;
        const put = signRequest({ method: "PUT", url: url(key(`req-${step}`)), body, ...keys });
        const res = await scoped(put.url, { method: "PUT", headers: put.headers, body });
        return { epoch, status: res.status };
      });
      if (params.get("lapse")) {
        out.lapse = await new Promise((resolve) => {
          const t = setTimeout(() => resolve("the signal never aborted"), 10_000);
          signal.addEventListener("abort", () => {
            clearTimeout(t);
            resolve(signal.reason?.lost);
          }, { once: true });
        });
      }
      return Response.json(out);
    } catch (e) {
      return Response.json({ step, error: String(e?.stack ?? e), code: e?.code }, { status: 500 });
    }
  },
};
