// Trap recovery checks shared by the JS runtimes' suites (Node, Deno, workerd): a wasm trap (a bug) inside
// an operation's microtask poll, where no wrapper of the loader is on the stack, must not hang anyone.
// `testTrap` is the glue's test-only `__celldTestTrap` export of the very instance `api` runs on (import
// both through the same glue module). `uncaught()` answers what the harness saw reach the runtime's
// uncaught-error/unhandled-rejection handling since the check started. Runtime-neutral on purpose.
import { eq, fail, sleep, unique } from "./checks.mjs";

async function rejection(promise, what) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  fail(`${what}: expected a rejection, but it resolved`);
}

/**
 * Acquires `own`'s lease once the trapped core's lease of the same node id is dead by the peer rule: a ttl
 * after the fresh core first saw it unchanged, or its expiry on the store's clock (written at the upper
 * bound of that clock, up to a `Date`'s 2 s span late, and judged by the lower bound). Until then the
 * fresh core refuses with not-leased; it is asked again every half second, for at most `patienceMs`.
 */
async function acquireOnceDead(own, patienceMs) {
  const until = Date.now() + patienceMs;
  for (;;) {
    try {
      return await own.acquireLease();
    } catch (e) {
      if (e?.code !== "not-leased" || Date.now() > until) throw e;
      await sleep(500);
    }
  }
}

/** The checks, as [name, async fn] pairs, against the atomic server (ministack). */
export function trapChecks({ api, testTrap, server, runtime, uncaught }) {
  const { S3Ownership, signRequest } = api;
  const checks = [];
  for (const kind of ["panic", "unreachable"]) {
    checks.push([`a trap (${kind}) in an operation's poll rejects every pending operation with "internal", and the next call gets a fresh instance`, async () => {
      const before = uncaught().length;
      // Leases long enough that acquiring (and releasing the claim in flight) through a fetch that waits
      // 150 ms per request leaves authority for the claim after it, on a loaded machine too.
      const base = { endpoint: server.endpoint, bucket: server.bucket, region: "us-east-1", accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, prefix: `t-trap-${runtime}-${unique()}/`, probe: false, leaseTtlMs: 2400, maxClockSkewMs: 200 };
      // A fetch that answers late, so operations are pending on it when the trap happens (and its answers
      // arrive after the module was re-instantiated).
      const slow = async (req) => {
        await sleep(150);
        return fetch(req);
      };
      const a = new S3Ownership({ ...base, node: `${runtime}-trap-a`, fetch: slow });
      const b = new S3Ownership({ ...base, node: `${runtime}-trap-b`, fetch: slow });
      await a.acquireLease();
      await b.acquireLease();
      const renewalErrors = [];
      b.startRenewing((e) => renewalErrors.push(e.code));
      const pendingA = a.claim(`cell-${unique()}`);
      const pendingB = b.readOwner("x");
      await sleep(10);
      testTrap(kind);
      const trapped = a.owner("y"); // its first poll traps
      for (const [what, p] of [["the trapping operation", trapped], ["a pending operation of the same instance", pendingA], ["a pending operation of another instance", pendingB]]) {
        const e = await rejection(p, what);
        if (e?.code !== "internal") fail(`${what}: expected code internal, got ${e?.code} (${e?.message})`);
      }
      if (kind === "panic" && !(await rejection(trapped, "trapped")).message.includes("test trap")) fail("the panic's message is not in the error");
      if (!renewalErrors.includes("internal")) fail(`the renewal loop's onError did not hear of the trap: ${JSON.stringify(renewalErrors)}`);
      if (a.leaseValid() || b.leaseValid()) fail("a lease is still valid after the trap");
      // The next calls run in a fresh instance: no lease, working protocol and signer.
      const e = await rejection(a.claim("z"), "claim after the trap");
      if (e?.code !== "not-leased") fail(`claim after the trap: expected not-leased, got ${e?.code} (${e?.message})`);
      // The old instance's lease is not known to be ours any more: it must be dead first.
      await acquireOnceDead(a, 10_000); // it also releases the cell of the claim that was in flight (one read, one write)
      const c = `after-${unique()}`;
      const won = await a.claim(c);
      if (won.outcome !== "applied" || !(await a.verify(c, won.epoch))) fail(`claim after the trap: ${JSON.stringify(won)}`);
      const signed = signRequest({ url: "https://h.test/b/k", region: "us-east-1", accessKeyId: "a", secretAccessKey: "s", datetime: "20150830T123600Z" });
      if (!signed.headers.authorization?.startsWith("AWS4-HMAC-SHA256 ")) fail("signing after the trap");
      b.stopRenewing();
      await sleep(300); // the old instance's late answers arrive: they must reach nothing
      const seen = uncaught().slice(before);
      if (seen.length > 0) fail(`errors reached the runtime: ${seen.map(String).join("; ")}`);
    }]);
  }
  checks.push(["after a trap: callbacks hear of it once the instance is marked replaced, a refused close() changed nothing, and the trapped core's cells are released once the fresh core holds a lease", async () => {
    const before = uncaught().length;
    const base = { endpoint: server.endpoint, bucket: server.bucket, region: "us-east-1", accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, prefix: `t-trap-${runtime}-${unique()}/`, probe: false, leaseTtlMs: 2400, maxClockSkewMs: 200 };
    const a = new S3Ownership({ ...base, node: `${runtime}-orphan-a` });
    const peer = new S3Ownership({ ...base, node: `${runtime}-orphan-b` });
    await a.acquireLease();
    await peer.acquireLease();
    const cell = `kept-${unique()}`;
    eq((await a.claim(cell)).outcome, "applied", "a's claim");
    // Recovery code as users write it: the renewal loop restarted on `internal`, a signal asked for again
    // by its abort listener. Each is capped, so that a loop shows as a count instead of a hang.
    const heard = [];
    let during;
    const onError = (e) => {
      heard.push(e.code);
      if (e.code !== "internal" || heard.length > 5) return;
      during ??= [a.leaseValid(), a.claimed().length, a.metrics(), a.signal(cell).reason?.code];
      a.startRenewing(onError);
    };
    a.startRenewing(onError);
    // A close() refused for its options changes nothing: the loop's trap report stays hooked.
    const refused = await rejection(a.close({ relase: true }), "close with a misspelt option");
    eq(refused.code, "invalid-input", `the refused close (${refused.message})`);
    eq([a.leaseValid(), a.claimed().length], [true, 1], "the instance after a refused close()");
    let listened = 0;
    const listen = () => {
      if (++listened < 5) a.signal(cell).addEventListener("abort", listen);
    };
    a.signal(cell).addEventListener("abort", listen);
    testTrap("panic");
    const trapped = await rejection(a.owner("y"), "the trapping operation");
    eq(trapped.code, "internal", "the trapping operation");
    eq([heard.filter((c) => c === "internal").length, listened], [1, 1], "callbacks heard of the trap once each, and registered nothing on the dying instance");
    eq(during, [false, 0, undefined, "internal"], "what the instance answers while it is being replaced");
    // The old lease must be dead by the peer rule before the fresh cores may take the node ids' leases.
    await acquireOnceDead(a, 10_000); // a closed instance would refuse this forever
    await acquireOnceDead(peer, 10_000);
    eq((await peer.readOwner(cell)).node, null, "the trapped core's cell, released by the fresh core's acquireLease()");
    const taken = await peer.claim(cell);
    eq([taken.outcome, taken.epoch], ["applied", 2], "a peer claims it at once, without waiting on a lease the fresh core renews");
    eq((await a.claim(`${cell}-new`)).outcome, "applied", "the fresh core claims");
    a.stopRenewing();
    await sleep(300);
    const seen = uncaught().slice(before);
    if (seen.length > 0) fail(`errors reached the runtime: ${seen.map(String).join("; ")}`);
  }]);
  return checks;
}
