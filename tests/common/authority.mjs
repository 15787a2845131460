// Authority checks shared by every JS runtime's suite (Node, Deno, workerd, Chromium) against the atomic
// test server: `own.signal(cell)` aborts when the lease lapses with no renewal loop and no operation to
// notice (the timer the core's deadline arms), when the instance releases or claims again, and when a
// read sees a takeover; `own.scope(cell, fn)` threads the signal into its fetch and resolves only after
// verify; `own.metrics()` counts what happened. Runtime-neutral: no fs, no node: imports. No timing assertions: each check waits for an event
// (bounded only so that a broken build fails instead of hanging) and asserts order and cause.

import { atomicStore } from "./ownership.mjs";
import { eq, fail, unique } from "./checks.mjs";

/** Resolves when `signal` aborts; fails after `ms` (far beyond any deadline used here). */
function aborted(signal, ms, what) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(signal.reason);
    const t = setTimeout(() => reject(new Error(`${what}: the signal never aborted`)), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve(signal.reason);
    }, { once: true });
  });
}

function reasonIs(reason, { code, lost, cell, epoch }, what) {
  if (!(reason instanceof Error)) fail(`${what}: reason is not an Error: ${reason}`);
  eq([reason.code, reason.lost, reason.cell, reason.epoch], [code, lost, cell, epoch], `${what}: reason ${reason.message}`);
}

/** A lease this short lapses within seconds: authority = ttl - skew = 1300 ms. */
const SHORT = { leaseTtlMs: 1500, maxClockSkewMs: 200 };

export function authorityChecks({ api, env, runtime }) {
  const { S3Ownership, signRequest } = api;
  const store = atomicStore(env);
  const checks = [];
  const check = (name, fn) => {
    checks.push([`authority: ${name}`, () => {
      const prefix = `t-${runtime}-auth-${unique()}/`;
      const make = (node, extra = {}) => new S3Ownership({ ...store, prefix, probe: false, node: `${runtime}-${node}-${unique()}`, ...extra });
      const leased = async (node, extra) => {
        const o = make(node, extra);
        await o.acquireLease();
        return o;
      };
      return fn({ prefix, make, leased, cell: `c-${unique()}` });
    }]);
  };

  check("the signal aborts at the lease deadline, with no renewal loop and no operation in flight", async ({ leased, cell }) => {
    const own = await leased("a", SHORT);
    const { epoch } = await own.claim(cell);
    const signal = own.signal(cell);
    const second = own.signal(cell);
    // One per claim where one context runs everything (memory stays flat in the calls); one per call in
    // Workers, where a signal belongs to the request that made it.
    eq([signal.aborted, second.aborted, second === signal], [false, false, runtime !== "workerd"], "a held claim's signals");
    const seen = [];
    signal.addEventListener("abort", () => seen.push(["abort", own.leaseValid()]));
    const reason = await aborted(signal, 10_000, "lapse");
    reasonIs(reason, { code: "fenced", lost: "lease-lost", cell, epoch }, "lapse");
    eq(seen, [["abort", false]], "aborted once, and only once authority had ended");
    reasonIs(second.reason, { code: "fenced", lost: "lease-lost", cell, epoch }, "the other call's signal, aborted with it");
    const after = own.signal(cell);
    eq([after.aborted, after.reason.code], [true, "fenced"], "a signal asked for afterwards");
  });

  check("renewals keep the signal alive; when they stop it aborts", async ({ leased, cell }) => {
    let renewed = 0;
    let onRenew;
    const own = await leased("a", { ...SHORT, onEvent: (e) => e.type === "lease-renewed" && (renewed++, onRenew?.()) });
    await own.claim(cell);
    const signal = own.signal(cell);
    own.startRenewing();
    // Three renewals span more than one lease's authority (each extends it by 1300 ms from its sending).
    await new Promise((resolve) => (onRenew = () => renewed >= 3 && resolve()));
    own.stopRenewing();
    eq(signal.aborted, false, "still held after three renewals");
    const reason = await aborted(signal, 10_000, "after stopRenewing");
    eq([reason.code, reason.lost], ["fenced", "lease-lost"], "lapse after the last renewal");
  });

  check("release aborts the signal before the release's write is answered", async ({ leased, cell }) => {
    const own = await leased("a");
    const { epoch } = await own.claim(cell);
    const signal = own.signal(cell);
    const order = [];
    signal.addEventListener("abort", () => order.push("abort"));
    const released = own.release(cell).then((r) => order.push(`release ${r}`));
    await released;
    eq(order, ["abort", "release applied"], "order");
    reasonIs(signal.reason, { code: "released", lost: "released", cell, epoch }, "release");
    eq(own.signal(cell).reason.code, "not-leased", "no claim after the release");
  });

  check("claiming again aborts the older epoch's signal; the new epoch has its own", async ({ leased, cell }) => {
    const own = await leased("a");
    await own.claim(cell);
    const first = own.signal(cell);
    const again = await own.claim(cell);
    eq([again.outcome, again.epoch], ["applied", 2], "re-claim");
    reasonIs(first.reason, { code: "fenced", lost: "reclaimed", cell, epoch: 1 }, "older epoch");
    const second = own.signal(cell);
    eq([second.aborted, second === first], [false, false], "the new epoch's signal");
    await own.release(cell);
  });

  check("a scope's fetch kept after the scope returned asks at send: after release, re-claim or a lapse it sends nothing and rejects naming the cell and why", async ({ leased, cell }) => {
    const sent = [];
    const spy = (request) => {
      sent.push(request.url);
      return fetch(request);
    };
    const own = await leased("a", { ...SHORT, fetch: spy });
    const keys = { region: store.region, accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
    const url = (k) => `${store.endpoint}/${store.bucket}/${k.split("/").map(encodeURIComponent).join("/")}`;
    /** A scope that keeps its fetch and key for later (a batcher's flush, a retry on a timer). */
    const keep = (c) => own.scope(c, ({ epoch, fetch: f, key }) => ({ epoch, f, key }));
    /** Sends a fenced PUT through a kept fetch: its status, or the refusal's [code, lost, cell, epoch]. */
    const put = async ({ f, key }, name) => {
      const signed = signRequest({ method: "PUT", url: url(key(name)), body: name, ...keys });
      return f(signed.url, { method: "PUT", headers: signed.headers, body: name }).then((r) => r.status, (e) => [e.code, e.lost, e.cell, e.epoch]);
    };
    await own.claim(cell);
    const kept = await keep(cell);
    eq(await put(kept, "while-held"), 200, "a kept fetch while the claim holds");
    await own.release(cell);
    const before = sent.length;
    eq(await put(kept, "after-release"), ["released", "released", cell, kept.epoch], "after release()");

    const c2 = `${cell}-2`;
    await own.claim(c2);
    const old = await keep(c2);
    await own.claim(c2);
    eq(await put(old, "after-reclaim"), ["fenced", "reclaimed", c2, old.epoch], "after a re-claim at a newer epoch");

    const c3 = `${cell}-3`;
    await own.claim(c3);
    const lapsing = await keep(c3);
    await aborted(own.signal(c3), 10_000, "the lapse");
    eq(await put(lapsing, "after-lapse"), ["fenced", "lease-lost", c3, lapsing.epoch], "after the lease lapsed");
    await own.acquireLease();
    eq(await put(lapsing, "after-fresh-lease"), ["fenced", "lease-lost", c3, lapsing.epoch], "after a fresh lease too");
    eq(sent.slice(before).filter((u) => u.includes("/data/e")), [], "no refused request reached the fetch");
  });

  check("a takeover seen by verify aborts the signal", async ({ leased, cell }) => {
    const [a, b] = [await leased("a"), await leased("b")];
    await a.claim(cell);
    const signal = a.signal(cell);
    // b writes over a's record at a higher epoch (the low-level write takes any current token).
    const rec = await b.readOwner(cell);
    eq(await b.casOwner(cell, { match: rec.etag }, 2), "applied", "b's write");
    eq(signal.aborted, false, "not seen yet");
    eq(await a.verify(cell, 1), false, "verify");
    reasonIs(signal.reason, { code: "fenced", lost: "taken-over", cell, epoch: 1 }, "takeover");
    const now = await b.readOwner(cell);
    if (!signal.reason.message.includes(`names "${now.node}" at epoch 2`)) fail(`the reason names the new owner: ${signal.reason.message}`);
  });

  check("close() aborts every signal at once, before its retirement is sent", async ({ leased, cell }) => {
    const own = await leased("a");
    await own.claim(cell);
    await own.claim(`${cell}-2`);
    const signals = [own.signal(cell), own.signal(`${cell}-2`)];
    const closing = own.close();
    eq(signals.map((s) => [s.aborted, s.reason?.code, s.reason?.lost]), [[true, "not-leased", "closed"], [true, "not-leased", "closed"]], "synchronously aborted by close()");
    await closing;
    eq(own.signal(cell).aborted, true, "a signal asked for after close()");
  });

  check("a signal for a cell not held is already aborted; a bad cell id throws", async ({ make, leased, cell }) => {
    const unleased = make("u");
    eq([unleased.signal(cell).aborted, unleased.signal(cell).reason.code], [true, "not-leased"], "no lease");
    const own = await leased("a");
    const s = own.signal(cell);
    eq([s.aborted, s.reason.code, s.reason instanceof Error], [true, "not-leased", true], "no claim");
    let threw;
    try {
      own.signal(42);
    } catch (e) {
      threw = e.code;
    }
    eq(threw, "invalid-input", "a number as the cell");
  });

  check("scope's fetch calls a one-parameter injected fetch with one Request: the fenced PUT, its body, signed headers and the signal", async ({ prefix, leased, make, cell }) => {
    const sent = [];
    // One parameter, as the README says the injected fetch is called (a logging wrapper, a proxy).
    const spy = (request) => {
      sent.push(request);
      return fetch(request);
    };
    const own = await leased("a", { fetch: spy });
    const { epoch } = await own.claim(cell);
    const before = sent.length;
    const theirs = new AbortController();
    const keys = { region: store.region, accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
    const url = (k) => `${store.endpoint}/${store.bucket}/${k.split("/").map(encodeURIComponent).join("/")}`;
    const out = await own.scope(cell, async ({ epoch: e, signal, fetch: scoped, key }) => {
      eq([e, signal.aborted, signal instanceof AbortSignal, key("x/1")], [epoch, false, true, `${prefix}cells/${cell}/data/e${epoch}/x/1`], "scope's arguments");
      const put = signRequest({ method: "PUT", url: url(key("x/1")), body: "fenced data", ...keys });
      const res = await scoped(put.url, { method: "PUT", headers: put.headers, body: "fenced data" });
      eq(res.status, 200, "fenced data write");
      // With a signal of the caller's own: either aborts the request.
      theirs.abort(new Error("caller gave up"));
      const mine = await scoped(put.url, { method: "PUT", headers: put.headers, body: "data", signal: theirs.signal }).then(() => "sent", (err) => err.message);
      eq(mine, "caller gave up", "the caller's signal still aborts its request");
      return "done";
    });
    eq(out, "done", "scope resolves to fn's result");
    const scoped = sent.slice(before).filter((r) => r.url.includes("/data/e"));
    eq(scoped.map((r) => [r instanceof Request, r.method, r.headers.has("authorization"), r.headers.get("x-amz-content-sha256")?.length]), [[true, "PUT", true, 64], [true, "PUT", true, 64]], "both requests went through the injected fetch as signed PUT Requests");
    if (!(scoped[0].signal instanceof AbortSignal)) fail("the first request carries no signal");
    eq(scoped[1].signal.aborted, true, "the second carried the caller's (aborted) signal combined with the scope's");
    const get = signRequest({ url: url(`${prefix}cells/${cell}/data/e${epoch}/x/1`), ...keys });
    const stored = await fetch(get.url, { headers: get.headers });
    eq([stored.status, await stored.text()], [200, "fenced data"], "the PUT's body is in the store");
    const other = make("b");
    eq((await other.readOwner(cell)).epoch, epoch, "the claim is untouched");
  });

  check("scope's key(name) refuses names that could resolve outside cells/<cell>/data/e<epoch>/", async ({ prefix, leased, cell }) => {
    const own = await leased("a");
    const { epoch } = await own.claim(cell);
    const refused = await own.scope(cell, ({ key }) => {
      const bad = ["../../own.json", "..", ".", "%2E%2E/own.json", "%2e./x", "a/.%2E/b", "", "a//b", "/a", "a/", "x?y", "x#y", "a\\..\\..\\own.json", "a%2F..", "a%3Fb", "a\u0000b", "a\nb", "a\u007fb", undefined, 7];
      return bad.map((name) => {
        try {
          return [name, key(name)];
        } catch (e) {
          return [name, e.code];
        }
      }).filter(([, out]) => out !== "invalid-input");
    });
    eq(refused, [], "names key() did not refuse");
    const fine = await own.scope(cell, ({ key }) => ["order-42.json", "a/b/c", "...", "a..b", "100%.txt", "%41"].map((n) => key(n)));
    eq(fine, ["order-42.json", "a/b/c", "...", "a..b", "100%.txt", "%41"].map((n) => `${prefix}cells/${cell}/data/e${epoch}/${n}`), "ordinary names");
  });

  check("scope rejects with the reason when authority ends during fn, and its fetch refuses", async ({ leased, cell }) => {
    const [a, b] = [await leased("a"), await leased("b")];
    await a.claim(cell);
    let fetchAfter;
    const err = await a.scope(cell, async ({ signal, fetch: scoped }) => {
      const rec = await b.readOwner(cell);
      await b.casOwner(cell, { match: rec.etag }, 2);
      await a.readOwner(cell); // a sees the takeover: the signal aborts
      fetchAfter = await scoped(`${store.endpoint}/`).then(() => "sent", (e) => e.code);
      return signal.aborted ? "kept going" : "unreachable";
    }).then((v) => ({ resolved: v }), (e) => e);
    eq([err.code, err.lost], ["fenced", "taken-over"], `scope's rejection (${err.message ?? JSON.stringify(err)})`);
    eq(fetchAfter, "fenced", "the scope's fetch after the loss");

    // verify is what settles it even when nothing was seen during fn.
    const c2 = `${cell}-2`;
    await a.claim(c2);
    const err2 = await a.scope(c2, async () => {
      const rec = await b.readOwner(c2);
      await b.casOwner(c2, { match: rec.etag }, 2);
      return "result";
    }).then((v) => ({ resolved: v }), (e) => e);
    eq([err2.code, err2.lost], ["fenced", "taken-over"], "scope's verify found b");
  });

  check("scope of a cell not held rejects before running fn", async ({ leased, cell }) => {
    const own = await leased("a");
    let ran = false;
    const err = await own.scope(cell, () => (ran = true)).then(() => null, (e) => e);
    eq([err?.code, ran], ["not-leased", false], "scope without a claim");
  });

  check("metrics count requests by kind and outcome, claims, takeovers, fences and lost authority", async ({ leased, cell }) => {
    const a = await leased("a", SHORT);
    await a.claim(cell);
    const reason = await aborted(a.signal(cell), 10_000, "a's lapse");
    eq(reason.lost, "lease-lost", "a lapsed");
    const b = await leased("b", SHORT);
    // a's lease is dead by the peer rule once the store's clock is past its expiry (written at the upper
    // bound of the store's clock, read through Dates): b waits for that, renewing meanwhile.
    b.startRenewing();
    const taken = await b.claim(cell, { wait: true }).finally(() => b.stopRenewing());
    eq([taken.outcome, taken.tookOver], ["applied", true], "b took the cell over");
    const ma = a.metrics();
    eq([ma.leases.acquired, ma.fences, ma.authorityLost["lease-lost"], ma.claims.applied], [1, 1, 1, 1], "a's counters");
    eq([ma.requests["write-owner"]?.applied, ma.requests["write-lease"]?.applied], [1, 1], "a's writes");
    eq(ma.requestMs["write-owner"].count, 1, "one timed owner write");
    const mb = b.metrics();
    eq(mb.claims.takeovers, 1, "b's takeover");
    if (!(mb.requests["read-lease"]?.found >= 1)) fail(`b read a's lease: ${JSON.stringify(mb.requests)}`);
    if (!(mb.requests["read-owner"]?.found >= 1)) fail(`b read the record: ${JSON.stringify(mb.requests)}`);
    eq(typeof mb.leases.renewMs.count, "number", "renewal latency is there even before any renewal");
    if (a.metrics() === ma) fail("metrics() returns a fresh object each time");
  });

  return checks;
}
