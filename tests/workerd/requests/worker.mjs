// Test Worker for tests/workerd/requests.test.mjs: one S3Ownership per isolate, as the README's Worker
// keeps it, used by consecutive requests. Each request renews (or acquires) the lease, takes a signal of
// the cell, passes it to a fetch of its own, and writes `req-<step>` through scope(): in workerd a signal
// or a timer belongs to the request that made it, so one kept from an earlier request fails a later one.
// `?step=1` claims the cell first; `?lapse=1` then stops renewing and waits (in the request) for the
// signal to abort at the lease's deadline, which only a timer armed by this request can tell.
import { S3Ownership, signRequest } from "celld-edge";

let own;

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
