// Ownership checks shared by every JS runtime's suite (Node, Deno, workerd, Chromium): the protocol's
// paths against a real S3-compatible server. Runtime-neutral on purpose (no fs, no node: imports): each
// harness supplies the package's API and the server coordinates, and wraps each [name, fn] pair in its own
// test runner. Each server says what it offers: `atomic` (conditional writes applied atomically: it is
// probed, and gets the concurrent paths and the conditional DELETE) and `checksSignatures` (a wrong secret
// is refused: the credential checks). versitygw offers both; moto in auth mode checks signatures but races
// now and then, so it runs unprobed (`probe: false`): the paths of a store whose conditional DELETE is not
// verified. A Workers R2 binding is a server too (`r2BindingServer`, workerd only): the same checks run
// through it, each injected fetch becoming a wrapped binding (`via`); the few that are about HTTP itself
// (an HTML page, a 409, signed bodies, fetch's own errors) run over the S3 API only.
import { fail, sleep, unique } from "./checks.mjs";

/** JSON with object keys sorted, so comparisons ignore key order. */
function canonical(v) {
  return JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x));
}

function eq(actual, expected, what) {
  const a = canonical(actual);
  const e = canonical(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

async function rejectsWith(promise, code, what, mention) {
  try {
    await promise;
  } catch (e) {
    if (!(e instanceof Error)) fail(`${what}: threw a non-Error ${e}`);
    if (e.code !== code) fail(`${what}: expected code ${code}, got ${e.code} (${e.message})`);
    if (mention && !e.message.includes(mention)) fail(`${what}: message should mention ${mention}: ${e.message}`);
    return e;
  }
  fail(`${what}: expected a ${code} error, but it succeeded`);
}

/** The fast atomic server (ministack: no signature checks) as S3Ownership options, from the environment scripts/test exports. */
export function atomicStore(env) {
  const pick = (name) => env[`CELLD_TEST_ATOMIC_${name}`] ?? fail(`CELLD_TEST_ATOMIC_${name} is not set: run the suites through scripts/test`);
  return { endpoint: pick("ENDPOINT"), bucket: pick("BUCKET"), region: "us-east-1", accessKeyId: pick("KEY_ID"), secretAccessKey: pick("SECRET") };
}

/** Server coordinates from the environment scripts/test exports (scripts/lib/servers.sh says who is who). */
export function ownershipServers(env) {
  const pick = (kind, name, atomic) => {
    const endpoint = env[`CELLD_TEST_${kind}_ENDPOINT`];
    if (!endpoint) fail(`CELLD_TEST_${kind}_ENDPOINT is not set: run the suites through scripts/test`);
    return {
      name,
      kind,
      atomic,
      checksSignatures: true,
      endpoint,
      bucket: env[`CELLD_TEST_${kind}_BUCKET`],
      accessKeyId: env[`CELLD_TEST_${kind}_KEY_ID`],
      secretAccessKey: env[`CELLD_TEST_${kind}_SECRET`],
    };
  };
  return [pick("REAL", "versitygw", true), pick("STRICT", "moto-auth", false)];
}

/** An R2 bucket binding as a server: atomic (probed), no signatures; its probe finds no conditional DELETE. */
export function r2BindingServer(bucket, name = "r2-binding") {
  return { name, kind: "r2", r2: bucket, atomic: true, checksSignatures: false, variants: { ifMatchMissingStatus: 412, conditionalDelete: false, etagQuoted: true } };
}

/** Each [options, what the message says ("": anything), which case] is refused by the constructor with
 * invalid-input saying so, and never naming `secret`. */
function refusesOptions(S3Ownership, cases, secret) {
  for (const [opts, says, what] of cases) {
    let threw;
    try {
      new S3Ownership(opts);
    } catch (e) {
      threw = e;
    }
    if (threw?.code !== "invalid-input") fail(`${what}: expected invalid-input, got ${threw?.code ?? "no error"}`);
    if (!threw.message.includes(says)) fail(`${what}: expected the message to say ${says}: ${threw.message}`);
    if (secret && threw.message.includes(secret)) fail(`${what}: the secret leaked into the message`);
  }
}

/**
 * What a check sees of one request, whatever the transport: { method: GET/PUT/DELETE/LIST, key (from the
 * bucket's root), condition ("if-none-match", "if-match" or "") }. `hook(op, send)` runs instead of the
 * request and returns what `send()` returns, or throws (a lost answer).
 */
function tapFetch(hook, inner = (req) => fetch(req)) {
  return async (req) => {
    const url = new URL(req.url);
    const h = req.headers;
    const op = {
      method: url.searchParams.has("list-type") ? "LIST" : req.method,
      key: decodeURIComponent(url.pathname).replace(/^\/[^/]*\//, ""),
      condition: h.get("if-none-match") ? "if-none-match" : h.get("if-match") ? "if-match" : "",
    };
    return hook(op, () => inner(req));
  };
}

function tapBinding(bucket, hook) {
  const condition = (o) => (o?.onlyIf?.etagDoesNotMatch ? "if-none-match" : o?.onlyIf?.etagMatches ? "if-match" : "");
  return {
    get: (key, o) => hook({ method: "GET", key, condition: "" }, () => bucket.get(key, o)),
    head: (key) => hook({ method: "HEAD", key, condition: "" }, () => bucket.head(key)),
    put: (key, value, o) => hook({ method: "PUT", key, condition: condition(o) }, () => bucket.put(key, value, o)),
    delete: (keys) => hook({ method: "DELETE", key: String(keys), condition: "" }, () => bucket.delete(keys)),
    list: (o) => hook({ method: "LIST", key: o?.prefix ?? "", condition: "" }, () => bucket.list(o)),
  };
}

/** The checks for one server, as [name, async fn] pairs. */
export function ownershipChecks({ api, server, runtime }) {
  const { S3Ownership, signRequest } = api;
  const s3 = !server.r2;
  /** Options that send every request of an instance through `hook` (see tapFetch), on either transport. */
  const via = (hook) => (s3 ? { fetch: tapFetch(hook) } : { r2: tapBinding(server.r2, hook) });
  /** Everything one check uses, under a prefix of its own (so node ids never meet across checks). */
  const scope = () => {
    const prefix = `t-${runtime}-${unique()}/`;
    const store = s3
      ? { endpoint: server.endpoint, bucket: server.bucket, region: "us-east-1", accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey }
      : { r2: server.r2 };
    const base = {
      ...store,
      prefix,
      // moto's conditional writes race under load, so it is not asked to pass the probe's concurrent
      // steps. versitygw runs the probe before every first write.
      probe: server.atomic,
    };
    const make = (node, extra = {}) => new S3Ownership({ ...base, node: `${runtime}-${node}`, addr: `${node}.test:1`, ...extra });
    const leased = async (node, extra) => {
      const o = make(node, extra);
      await o.acquireLease();
      if (!o.leaseValid()) fail(`${node}: lease not valid after acquireLease`);
      return o;
    };
    // celld's id set (the default, SPEC §2), with characters the path must percent-encode (`:` `$`).
    const cell = (name) => `${name}:${unique()}$x`;

    /** Writes raw bytes at a key under the test prefix (to plant corrupt records). */
    const plant = async (key, body) => {
      if (!s3) return server.r2.put(`${prefix}${key}`, body);
      const url = `${server.endpoint}/${server.bucket}/${prefix}${key.split("/").map(encodeURIComponent).join("/")}`;
      const signed = signRequest({ method: "PUT", url, body, region: "us-east-1", accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey });
      const res = await fetch(signed.url, { method: "PUT", headers: signed.headers, body });
      if (!res.ok) fail(`planting ${key}: ${res.status} ${await res.text()}`);
      return signed;
    };
    const raw = async (key) => {
      if (!s3) return (await server.r2.get(`${prefix}${key}`))?.text() ?? null;
      const url = `${server.endpoint}/${server.bucket}/${prefix}${key.split("/").map(encodeURIComponent).join("/")}`;
      const signed = signRequest({ method: "GET", url, region: "us-east-1", accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey });
      const res = await fetch(signed.url, { headers: signed.headers, cache: "no-store" });
      return res.status === 200 ? res.text() : null;
    };

    return { base, make, leased, cell, plant, raw };
  };

  const checks = [];
  const check = (name, fn) => checks.push([`${server.name}: ${name}`, () => fn(scope())]);
  /** A check about HTTP itself (fetch, signatures, S3's answers): over the S3 API only. */
  const httpCheck = (name, fn) => s3 && check(name, fn);

  check("create, duplicate create rejected with a routing hint, verify", async ({ base, make, leased, cell, plant, raw }) => {
    const [a, b] = [await leased("a"), await leased("b")];
    const c = cell("create");
    const won = await a.claim(c);
    eq([won.outcome, won.epoch, won.tookOver, won.prior], ["applied", 1, false, null], "first claim");
    const lost = await b.claim(c);
    eq(lost, { outcome: "rejected", owner: { node: `${runtime}-a`, epoch: 1, addr: "a.test:1", live: true, awaitingRecovery: false, held: false } }, "second claim");
    const rec = await b.readOwner(c);
    eq([rec.node, rec.epoch, typeof rec.etag], [`${runtime}-a`, 1, "string"], "readOwner");
    eq(await a.verify(c, 1), true, "owner verifies");
    eq(await b.verify(c, 1), false, "non-owner verifies");
    eq(await b.owner(c), { node: `${runtime}-a`, epoch: 1, addr: "a.test:1", live: true, awaitingRecovery: false, held: false }, "owner()");
    eq(await a.claim(c).then((r) => r.epoch), 2, "re-claim by the owner advances the epoch");
  });

  check("release keeps the epoch; a stale release is rejected and changes nothing", async ({ base, make, leased, cell, plant, raw }) => {
    const [a, b] = [await leased("a"), await leased("b")];
    const c = cell("release");
    await a.claim(c);
    eq(await a.release(c), "applied", "release");
    const rec = await a.readOwner(c);
    eq([rec.node, rec.epoch], [null, 1], "released record");
    eq(await b.owner(c).then((o) => [o.node, o.live]), [null, false], "owner() of a released cell");
    eq(await b.claim(c).then((r) => [r.outcome, r.epoch]), ["applied", 2], "claim after release");
    const before = await a.readOwner(c);
    eq(await a.releaseOwner(c, 1), "rejected", "stale releaseOwner");
    eq(await a.release(c), "rejected", "release of a cell now owned by another");
    eq(await a.readOwner(c), before, "record after stale releases");
    eq(await b.verify(c, 2), true, "the new owner still verifies");
  });

  check("takeover only after the owner's lease is dead; verify after takeover is false", async ({ base, make, leased, cell, plant, raw }) => {
    // Short leases; no probe here, so the time it takes under load cannot eat into them.
    const short = { leaseTtlMs: 1200, maxClockSkewMs: 200, probe: false };
    const a = await leased("a", short);
    const c = cell("takeover");
    await a.claim(c);
    const b = await leased("b", short);
    b.startRenewing();
    try {
      eq((await b.claim(c)).outcome, "rejected", "claim while the owner's lease is live");
      await sleep(1600); // a never renews: its lease expires (1200) and the skew margin (200) passes
      eq(a.leaseValid(), false, "the stopped owner's own view");
      const took = await b.claim(c);
      eq([took.outcome, took.epoch, took.tookOver, took.prior.node, took.prior.epoch], ["applied", 2, true, `${runtime}-a`, 1], "takeover");
      eq(await a.verify(c, 1), false, "old owner verifies after takeover");
      await rejectsWith(a.renewLease(), "fenced", "late renewal");
      await rejectsWith(a.claim(c), "fenced", "claim while fenced");
      await a.acquireLease();
      eq((await a.claim(c)).outcome, "rejected", "b is live: a fresh lease does not win it back");
    } finally {
      b.stopRenewing();
    }
  });

  check("renewal keeps the lease valid past its ttl", async ({ base, make, leased, cell, plant, raw }) => {
    const a = await leased("a", { leaseTtlMs: 900, maxClockSkewMs: 100, probe: false });
    const c = cell("renew");
    await a.claim(c);
    a.startRenewing((e) => fail(`renewal failed: ${e.message}`));
    try {
      await sleep(1500);
      eq(a.leaseValid(), true, "lease after 1.5 ttl of renewing");
      eq(await a.verify(c, 1), true, "claim survives renewals");
    } finally {
      a.stopRenewing();
    }
    const lease = await a.readNodeLease(`${runtime}-a`);
    eq([lease.node, lease.addr, typeof lease.expiresMs, typeof lease.etag], [`${runtime}-a`, "a.test:1", "number", "string"], "lease record");
  });

  check("low-level casOwner / casNodeLease follow their guards", async ({ base, make, leased, cell, plant, raw }) => {
    const a = await leased("low"); // every write on behalf of a node needs its valid lease
    const c = cell("low");
    eq(await a.casOwner(c, "absent", 5), "applied", "create at epoch 5");
    eq(await a.casOwner(c, "absent", 6), "rejected", "create again");
    const rec = await a.readOwner(c);
    eq(await a.casOwner(c, { match: rec.etag }, 6), "applied", "update with the current token");
    eq(await a.casOwner(c, { match: rec.etag }, 7), "rejected", "update with a stale token");
    const node = `${runtime}-low-lease-${unique()}`;
    const o = make("x", { node });
    const first = await o.casNodeLease("absent", 1000);
    eq(first.outcome, "applied", "lease create");
    eq((await o.casNodeLease("absent", 2000)).outcome, "rejected", "lease create again");
    eq((await o.casNodeLease({ match: first.etag }, 3000)).outcome, "applied", "lease update");
    eq((await o.readNodeLease(node)).expiresMs, 3000, "lease record");
  });

  check("bad input is invalid-input and the instance keeps working", async ({ base, make, leased, cell, plant, raw }) => {
    const a = await leased("bad");
    for (const id of ["", ".", "..", "a/b", "a\\b", "a\u0001b", "x".repeat(257), 42, null]) {
      await rejectsWith(a.claim(id), "invalid-input", `claim(${JSON.stringify(id)})`);
      await rejectsWith(a.readOwner(id), "invalid-input", `readOwner(${JSON.stringify(id)})`);
    }
    for (const epoch of [0, -1, 1.5, 2 ** 53, NaN, "1"]) {
      await rejectsWith(a.verify("c", epoch), "invalid-input", `verify epoch ${epoch}`);
      await rejectsWith(a.casOwner("c", "absent", epoch), "invalid-input", `casOwner epoch ${epoch}`);
    }
    await rejectsWith(a.casOwner("c", { match: "" }, 1), "invalid-input", "empty guard");
    refusesOptions(S3Ownership, [
      [{ ...base, node: "a/b" }, "", "node id"],
      [{ ...base, node: "n", endpoint: "not a url" }, "", "endpoint"],
      [{ ...base, node: "n", leaseTtlMs: 100, maxClockSkewMs: 100 }, "", "ttl vs skew"],
      [{ ...base, node: "n", secretAccessKey: "" }, "", "empty secret"],
      [{ ...base, node: "n", leaseTtlMs: "10" }, "", "ttl type"],
      [{ ...base, node: "n", fetch: 5 }, "", "fetch"],
      [{ ...base, node: "n", bogus: 1 }, "", "unknown option"],
    ], s3 ? server.secretAccessKey : undefined);
    eq((await a.claim(cell("still-works"))).outcome, "applied", "claim after bad input");
  });

  httpCheck("a mistyped option name gets a suggestion, a duration given as a string says milliseconds, missing keys name credentials", async ({ base }) => {
    const { secretAccessKey, ...noSecret } = base;
    refusesOptions(S3Ownership, [
      [{ ...base, node: "n", endPoint: base.endpoint }, '"endPoint": did you mean endpoint?', "case"],
      [{ ...base, node: "n", leaseTTLMs: 5000 }, '"leaseTTLMs": did you mean leaseTtlMs?', "case"],
      [{ ...noSecret, node: "n", secretKey: secretAccessKey }, '"secretKey": did you mean secretAccessKey?', "another client's name"],
      [{ ...base, node: "n", endpiont: base.endpoint }, '"endpiont": did you mean endpoint?', "a transposition"],
      [{ ...base, node: "n", bogus: 1 }, 'unknown option "bogus"', "nothing close"],
      [{ ...base, node: "n", leaseTtlMs: "5000" }, 'leaseTtlMs must be a whole number of milliseconds, got the string "5000" (pass the number 5000)', "a string of digits"],
      [{ ...base, node: "n", requestTimeoutMs: true }, "requestTimeoutMs must be a whole number of milliseconds, got boolean", "a boolean"],
      [{ ...noSecret, node: "n" }, "secretAccessKey is required (or give credentials: an async function", "no secret"],
    ], secretAccessKey);
    if (new S3Ownership({ ...base, node: "n" }).leaseValid()) fail("the options without a typo are taken");
  });

  check("corrupt records are corrupt-record naming the key, and are left alone", async ({ base, make, leased, cell, plant, raw }) => {
    const a = await leased("corrupt");
    const c = `corrupt-${unique()}`;
    await plant(`cells/${c}/own.json`, "<html>not json</html>");
    await rejectsWith(a.claim(c), "corrupt-record", "claim over a corrupt record", `cells/${c}/own.json`);
    eq(await raw(`cells/${c}/own.json`), "<html>not json</html>", "the corrupt record is untouched");
    const d = `peer-${unique()}`;
    await plant(`cells/${d}/own.json`, JSON.stringify({ node: "ghost", epoch: 3 }));
    await plant("nodes/ghost.json", JSON.stringify({ node: "ghost", expires_ms: "soon" }));
    await rejectsWith(a.claim(d), "corrupt-record", "claim over a corrupt peer lease", "nodes/ghost.json");
    eq((await a.claim(cell("after-corrupt"))).outcome, "applied", "claim after corrupt records");
  });

  check("records celld writes, with extra fields, are read and taken over", async ({ base, make, leased, cell, plant, raw }) => {
    const a = await leased("celld");
    const c = `celld-${unique()}`;
    await plant(`cells/${c}/own.json`, JSON.stringify({ node: "celld-9", epoch: 41, extra: { x: 1 } }));
    await plant("nodes/celld-9.json", JSON.stringify({ node: "celld-9", expires_ms: 1, addr: "10.0.0.9:4000", load: 0.5, peer_protocol: 2 }));
    eq(await a.owner(c), { node: "celld-9", epoch: 41, addr: "10.0.0.9:4000", live: false, awaitingRecovery: false, held: false }, "owner() of a dead celld node");
    eq((await a.claim(c)).epoch, 42, "takeover from celld");
    const body = JSON.parse(await raw(`cells/${c}/own.json`));
    eq([body.node, body.epoch, typeof body.nonce], [`${runtime}-celld`, 42, "string"], "what celld will read");
  });

  check("a celld v0.6 fleet (wake/format.json): celld: true, the leases celld reads, who recovers a log, removeDeadLease", async ({ base, make, leased, plant, raw }) => {
    // A bucket no celld node initialised: refused with nothing written.
    const bare = make("bare", { prefix: `${base.prefix}bare/`, celld: true, addr: "" });
    await rejectsWith(bare.acquireLease(), "uninitialized-fleet", "celld: true on an uninitialised bucket", "wake/format.json");
    eq([await raw(`bare/nodes/${runtime}-bare.json`), await raw("bare/fleet/control.json")], [null, null], "nothing written");
    let refused;
    try {
      make("wide", { celld: true, ids: "utf8" });
    } catch (e) {
      refused = e.code;
    }
    eq(refused, "invalid-input", "ids: utf8 with celld: true");
    // The fleet as celld v0.6 lays it out.
    await plant("wake/format.json", JSON.stringify({ format: 2 }));
    const before = Date.now();
    const a = await leased("edge", { celld: true, addr: "" });
    const lease = async () => JSON.parse(await raw(`nodes/${runtime}-edge.json`));
    const required = ["sampled_ms", "resident_cells", "host_websockets", "rss_bytes", "cpu_percent_x100", "open_fds", "fd_limit", "pressured", "shed_cells"];
    const celldShaped = (l, what) => {
      eq([l.peer_protocol, l.log, l.probe_public_key, l.addr, l.paced_handoff], [undefined, undefined, undefined, "celld-edge.invalid:no-peer-protocol", true], `${what}: never a target, never dead`);
      eq(required.filter((f) => !(f in l.load)), [], `${what}: every load field celld v0.6 requires`);
      eq([l.load.owned_cells, l.load.placement_weight, l.load.bucket_format, l.load.draining, l.load.pressured, "rebalance_paused" in l.load, "restoring" in l.load], [0, 1, 2, true, false, false, false], `${what}: its load`);
    };
    // A cell held at close keeps the retired lease in place (its takeover may need it).
    eq((await a.claim(`edge-${unique()}`)).outcome, "applied", "a claim in a celld fleet");
    const acquired = await lease();
    celldShaped(acquired, "acquired");
    // On the store's clock, at the upper bound Dates leave (a 2 s span: up to two seconds ahead of ours).
    if (acquired.load.sampled_ms < before - 1000 || acquired.load.sampled_ms > Date.now() + 2000) fail(`sampled_ms ${acquired.load.sampled_ms} not when it was written`);
    await a.renewLease();
    const renewed = await lease();
    celldShaped(renewed, "renewed");
    if (renewed.load.sampled_ms < acquired.load.sampled_ms) fail("the renewal's sample is older");
    // A dead celld owner whose log celld-c is recovering (its heartbeat 10 s ago).
    const c = `celld-${unique()}`;
    await plant(`cells/${c}/own.json`, JSON.stringify({ node: "celld-b", epoch: 41 }));
    const log = { state: "recovering", epoch: 6, ensemble: ["celld-a", "celld-c"], tiered: 90211, active: false, claimant: "celld-c", claimed_ms: Date.now() - 10_000 };
    await plant("nodes/celld-b.json", JSON.stringify({ node: "celld-b", expires_ms: 1000, addr: "10.0.0.8:9000", probe_public_key: "k", peer_protocol: 5, paced_handoff: true, log }));
    const { outcome, owner } = await a.claim(c);
    eq([outcome, owner.awaitingRecovery, owner.recovery?.claimant, owner.recovery?.heartbeatMs, owner.recovery?.stale], ["rejected", true, "celld-c", log.claimed_ms, false], "a rejection names who recovers");
    // Aged on the store's clock, estimated from Date headers (the middle of a 2 s span plus a round trip):
    // 10 s, give or take a second and the time the claim took.
    if (!(owner.recovery.heartbeatAgeMs >= 8_000 && owner.recovery.heartbeatAgeMs < 13_000)) fail(`heartbeatAgeMs ${owner.recovery.heartbeatAgeMs}`);
    eq((await a.owner(c)).recovery?.claimant, "celld-c", "owner() names who recovers");
    if (server.atomic) {
      // Qualified: with a verified conditional DELETE, celld's lease is left to celld and ours is removed;
      // without one (an R2 binding), neither is touched.
      const deletes = server.variants?.conditionalDelete ?? true;
      const cleaner = make("cleaner", { celld: true });
      eq(await cleaner.removeDeadLease("celld-b", { cells: [] }), { outcome: deletes ? "celld" : "unsupported" }, "a lease celld wrote");
      await plant(`nodes/${runtime}-crashed.json`, JSON.stringify({ node: `${runtime}-crashed`, expires_ms: 1000, addr: "x", nonce: "n" }));
      eq(await cleaner.removeDeadLease(`${runtime}-crashed`, { cells: [] }), { outcome: deletes ? "removed" : "unsupported" }, "a dead lease of ours");
      if (!deletes) eq(JSON.parse(await raw("nodes/celld-b.json")).log.claimant, "celld-c", "celld's lease untouched");
    }
    const closed = await a.close();
    eq(closed.retired, true, "retired");
    const retired = await lease();
    celldShaped(retired, "retired");
    eq(retired.expires_ms, 0, "the retirement");
    eq(await raw("fleet/control.json"), null, "the marker is never created");
  });

  httpCheck("an endpoint that answers HTML or drops the connection is a transport/request error", async ({ base, make, leased, cell, plant, raw }) => {
    const html = make("html", { fetch: async () => new Response("<html>gateway</html>", { status: 200 }) });
    await rejectsWith(html.readOwner("c"), "request", "200 HTML without an ETag (not an S3 API)");
    const page = make("page", { fetch: async () => new Response("<html>nope</html>", { status: 404 }) });
    await rejectsWith(page.readOwner("c"), "request", "404 HTML page");
    const dropped = make("drop", { fetch: async () => { throw new TypeError("fetch failed: connection reset"); } });
    await rejectsWith(dropped.readOwner("c"), "transport", "dropped connection", "connection reset");
    // Never answers: our timer aborts it, and the core must hear a timeout, not the abort's own text.
    const hang = (req) => new Promise((_, reject) => req.signal.addEventListener("abort", () => reject(new Error("signal"))));
    const hung = make("hung", { requestTimeoutMs: 30, fetch: hang });
    await rejectsWith(hung.readOwner("c"), "transport", "a request our timer aborted", "timed out (aborted)");
    const closed = make("closed", { endpoint: "http://127.0.0.1:9" });
    await rejectsWith(closed.readOwner("c"), "transport", "closed port");
    await rejectsWith(dropped.claim("c"), "not-leased", "claim without a lease");
    await rejectsWith(dropped.acquireLease(), "transport", "acquire through a dropped connection");
  });

  httpCheck("errors are CelldEdgeError and keep their cause: the runtime's error, the store's status and code", async ({ make }) => {
    const { CelldEdgeError, AwsClient } = api;
    const isOurs = (e, what) => {
      if (!(e instanceof CelldEdgeError) || !(e instanceof Error) || e.name !== "CelldEdgeError") fail(`${what}: not a CelldEdgeError: ${e?.name} ${e?.message}`);
      return e;
    };
    // What the injected fetch threw is the error's cause, the very value.
    const thrown = new TypeError("fetch failed");
    thrown.cause = Object.assign(new Error("connect ECONNRESET 10.0.0.1:443"), { code: "ECONNRESET" });
    const dropped = make("cause", { fetch: async () => { throw thrown; } });
    const e = isOurs(await rejectsWith(dropped.readOwner("c"), "transport", "a fetch that threw", "fetch failed (connect ECONNRESET 10.0.0.1:443)"), "transport");
    if (e.cause !== thrown) fail(`the cause is not what fetch threw: ${e.cause}`);
    eq([e.key?.replace(/^t-[^/]+\//, ""), e.status, e.s3Code], ["cells/c/own.json", undefined, undefined], "a transport error names its key; no status came");
    // A store that keeps answering 503 SlowDown: throttled (issue 36), with the last answer's status and code.
    const slow = make("slow", { fetch: async () => new Response("<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>", { status: 503 }) });
    const s = isOurs(await rejectsWith(slow.readOwner("c"), "throttled", "a store that keeps answering 503 SlowDown", "SlowDown"), "503");
    eq([s.status, s.s3Code, s.cause], [503, "SlowDown", undefined], "503's status and code");
    // A refusal: status and code, whatever the variant.
    const denied = make("denied", { fetch: async () => new Response("<Error><Code>AccessDenied</Code><Message>no</Message></Error>", { status: 403 }) });
    const d = isOurs(await rejectsWith(denied.readOwner("c"), "auth", "a 403", "AccessDenied"), "403");
    eq([d.status, d.s3Code], [403, "AccessDenied"], "403's status and code");
    // A closed port and an unknown host both carry the runtime's error; where the runtime says why
    // (Node, Deno, workerd; browsers say "Failed to fetch" for both, by design), the messages differ.
    const refused = isOurs(await rejectsWith(make("refused", { endpoint: "http://127.0.0.1:2" }).readOwner("c"), "transport", "a closed port"), "closed port");
    const unknown = isOurs(await rejectsWith(make("unknown", { endpoint: "http://nonexistent.invalid" }).readOwner("c"), "transport", "an unknown host"), "unknown host");
    for (const [err, what] of [[refused, "closed port"], [unknown, "unknown host"]]) {
      if (!(err.cause instanceof Error)) fail(`${what}: the runtime's error is not the cause: ${err.cause}`);
    }
    const says = { node: ["ECONNREFUSED", "ENOTFOUND"] }[runtime];
    if (says) {
      if (!refused.message.includes(says[0]) || !unknown.message.includes(says[1])) fail(`messages should say ${says}: ${refused.message} / ${unknown.message}`);
    } else if (runtime !== "chromium" && refused.message === unknown.message) {
      fail(`a closed port and an unknown host read the same: ${refused.message}`);
    }
    // The same class from every part of the package, thrown synchronously too.
    const sync = (fn, what) => {
      try {
        fn();
      } catch (err) {
        return isOurs(err, what);
      }
      fail(`${what}: did not throw`);
    };
    eq(sync(() => new S3Ownership({ endpoint: server.endpoint }), "bad options").code, "invalid-input", "bad options");
    eq(sync(() => api.presignUrl({ url: "https://h/k", region: "r", accessKeyId: "a", secretAccessKey: "b", expires: 60 }), "presign").code, "invalid-input", "presign");
    eq(sync(() => new AwsClient({ accessKeyId: "a" }), "AwsClient").code, "invalid-input", "AwsClient");
    const client = new AwsClient({ accessKeyId: "a", secretAccessKey: "b", region: "us-east-1", service: "s3", retries: 0, fetch: async () => { throw thrown; } });
    let sent;
    try {
      await client.fetch("https://h.example/k", { method: "PUT", body: "x", headers: { "if-none-match": "*" } });
    } catch (err) {
      sent = isOurs(err, "AwsClient.fetch");
    }
    eq([sent?.code, sent?.cause === thrown], ["transport", true], "AwsClient.fetch keeps the cause");
    if ((await rejectsWith(make("late").claim("c"), "not-leased", "claim without a lease")) instanceof CelldEdgeError !== true) fail("not-leased");
  });

  check("claims start with a write when they can (expectNew, a remembered version); a refused guard reads", async ({ make, leased, cell }) => {
    let wire = [];
    const counting = via((op, send) => {
      wire.push(`${op.method} ${op.key.endsWith("own.json") ? "own" : "lease"}${op.condition ? ` ${op.condition}` : ""}`);
      return send();
    });
    const [a, b] = [await leased("rt-a", counting), await leased("rt-b")];
    if (s3) {
      // Called as fetch(request): a Request with no-store caching wherever the runtime has the option.
      let seen;
      await make("seen", { fetch: async function (req) { seen = [this, req instanceof Request, req.cache]; return fetch(req); } }).readOwner("c");
      let cacheOption = true;
      try {
        new Request("http://h.test/", { cache: "no-store" });
      } catch {
        cacheOption = false;
      }
      eq([seen[0] === globalThis, seen[1], cacheOption ? seen[2] : "no-store"], [true, true, "no-store"], "how the injected fetch is called");
    }
    const c = cell("rt");
    const sent = async (what, op, expected) => {
      wire = [];
      const result = await op();
      eq(wire, expected, `requests of ${what}`);
      return result;
    };
    const won = await sent("claim with expectNew of a new cell", () => a.claim(c, { expectNew: true }), ["PUT own if-none-match"]);
    eq([won.outcome, won.epoch, won.prior], ["applied", 1, null], "expectNew claim");
    eq(await sent("release with the claim's token", () => a.release(c), ["PUT own if-match"]), "applied", "release");
    const again = await sent("re-claim after our own release", () => a.claim(c), ["PUT own if-match"]);
    eq([again.outcome, again.epoch, again.prior?.node, again.prior?.epoch], ["applied", 2, null, 1], "re-claim");
    await a.release(c);
    eq((await b.claim(c)).epoch, 3, "another node claims the released cell");
    const owner = { node: `${runtime}-rt-b`, epoch: 3, addr: "rt-b.test:1", live: true, awaitingRecovery: false, held: false };
    const stale = await sent("a claim over a stale remembered version", () => a.claim(c), ["PUT own if-match", "GET own", "GET lease"]);
    eq(stale, { outcome: "rejected", owner }, "stale version: the refused write, then the usual read");
    const held = await sent("expectNew on an existing cell", () => a.claim(c, { expectNew: true }), ["PUT own if-none-match", "GET own", "GET lease"]);
    eq(held, { outcome: "rejected", owner }, "expectNew on a held cell");
    eq(await b.verify(c, 3), true, "the refused writes changed nothing");
    await rejectsWith(a.claim(c, { expectNew: "yes" }), "invalid-input", "expectNew not a boolean");
    await rejectsWith(a.claim(c, { fresh: true }), "invalid-input", "unknown claim option");
    await rejectsWith(a.claim(c, 1), "invalid-input", "claim options not an object");
  });

  httpCheck("an injected fetch that reads the body later still sends the body that was signed", async ({ leased, cell }) => {
    // A fetch wrapper that waits before forwarding (a rate limiter, a logger that awaits): meanwhile the
    // instance runs other operations and wasm memory grows, so the request body must be JS's own copy.
    let grown = false;
    const mismatches = [];
    const later = async (req) => {
      await sleep(20);
      if (!grown) {
        // Grow the wasm memory meanwhile (a large signature): views of the old memory go empty.
        grown = true;
        signRequest({ method: "PUT", url: "https://h.test/b/k", body: new Uint8Array(24 << 20), region: "us-east-1", accessKeyId: "a", secretAccessKey: "s" });
      }
      if (req.method === "PUT") {
        const body = await req.clone().arrayBuffer();
        const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
        const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
        if (hex !== req.headers.get("x-amz-content-sha256")) mismatches.push(`${req.method} ${req.url}: ${body.byteLength} bytes`);
      }
      return fetch(req);
    };
    const a = await leased("later", { fetch: later });
    const cells = [cell("later-1"), cell("later-2"), cell("later-3"), cell("later-4")];
    const claims = await Promise.all(cells.map((c) => a.claim(c)));
    eq(claims.map((r) => [r.outcome, r.epoch]), cells.map(() => ["applied", 1]), "concurrent claims through a deferring fetch");
    const records = await Promise.all(cells.map((c) => a.readOwner(c)));
    eq(records.map((r) => [r.node, r.epoch]), cells.map(() => [`${runtime}-later`, 1]), "the records as written");
    eq(await Promise.all(cells.map((c) => a.release(c))), cells.map(() => "applied"), "releases through it");
    eq(mismatches, [], "bodies that no longer match their signed hash");
  });

  httpCheck("a 409 ConditionalRequestConflict is re-read, never taken as someone else's claim", async ({ base, make, leased, cell, plant, raw }) => {
    let conflicts = 0;
    const conflicting = async (req) => {
      if (req.method === "PUT" && req.url.endsWith("own.json") && conflicts === 0) {
        conflicts++;
        return new Response("<Error><Code>ConditionalRequestConflict</Code><Message>busy</Message></Error>", { status: 409 });
      }
      return fetch(req);
    };
    const a = await leased("conflict", { fetch: conflicting });
    eq((await a.claim(cell("conflict"))).outcome, "applied", "claim through one 409");
    eq(conflicts, 1, "the 409 was served");
  });

  check("a lost response to a landed claim is settled by readback, not resent blindly", async ({ base, make, leased, cell, plant, raw }) => {
    const puts = [];
    const lossy = via(async (op, send) => {
      const res = await send();
      if (op.method === "PUT" && op.key.endsWith("own.json")) {
        puts.push(op.condition);
        if (puts.length === 1) throw new TypeError("network lost the response");
      }
      return res;
    });
    const a = await leased("lossy", lossy);
    const c = cell("lossy");
    eq((await a.claim(c)).outcome, "applied", "claim whose answer was lost");
    eq(puts, ["if-none-match"], "exactly one PUT was sent");
    eq(await a.verify(c, 1), true, "the landed claim verifies");
  });

  check("onEvent receives structured events, without secrets", async ({ make, cell }) => {
    const events = [];
    let lost = 0;
    const lossy = via(async (op, send) => {
      const res = await send();
      if (op.method === "PUT" && op.key.endsWith("own.json") && lost++ === 0) throw new TypeError("lost answer");
      return res;
    });
    const a = make("events", { onEvent: (e) => events.push(e), ...lossy });
    await a.acquireLease();
    await a.renewLease();
    const c = cell("events");
    await a.claim(c);
    await make("other", { onEvent: () => { throw new Error("observers may throw"); } }).acquireLease();
    const types = events.map((e) => e.type);
    for (const t of ["lease-acquired", "lease-renewed", "ambiguous-settled", "claim-applied"]) {
      if (!types.includes(t)) fail(`no ${t} event in ${JSON.stringify(types)}`);
    }
    const claimed = events.find((e) => e.type === "claim-applied");
    eq([claimed.cell, claimed.epoch, typeof claimed.ms], [c, 1, "number"], "claim event");
    eq(events.find((e) => e.type === "ambiguous-settled").outcome, "applied", "settled event");
    if (s3 && JSON.stringify(events).includes(server.secretAccessKey)) fail("a secret appeared in an event");
  });

  check("one instance runs operations concurrently, retries reads after a timer, and observers may start operations", async ({ make, cell }) => {
    // Answers must reach the operation that waits on them, a backoff timer must wake its operation, and
    // an operation started from inside an event (from within wasm) must run.
    let failed = 0;
    const flaky = via((op, send) => {
      if (op.method === "GET" && op.key.endsWith("own.json") && failed++ === 0) throw new TypeError("flaky network");
      return send();
    });
    const started = [];
    const events = [];
    const a = make("busy", {
      ...flaky,
      onEvent: (e) => {
        events.push(e.type);
        if (e.type === "claim-applied") started.push(a.owner(e.cell).then((o) => [e.cell, o.node, o.epoch]));
      },
    });
    await a.acquireLease();
    const cells = [1, 2, 3, 4, 5, 6].map((i) => cell(`busy${i}`));
    const claims = await Promise.all(cells.map((c) => a.claim(c)));
    eq(claims.map((r) => [r.outcome, r.epoch]), cells.map(() => ["applied", 1]), "concurrent claims");
    if (!events.includes("read-retried")) fail(`the failed read was not retried: ${JSON.stringify(events)}`);
    const owners = (await Promise.all(started)).sort();
    eq(owners, cells.map((c) => [c, `${runtime}-busy`, 1]).sort(), "owner() started by the observer");
    eq(await Promise.all(cells.map((c) => a.verify(c, 1))), cells.map(() => true), "concurrent verifies");
  });

  // ---- stopping cleanly and waiting without polling (SPEC §4.2) ----

  /** Options that count the requests an instance sends (`n`), on either transport. */
  const counting = () => {
    const counted = { n: 0 };
    counted.options = via((op, send) => {
      counted.n++;
      return send();
    });
    return counted;
  };

  check("close() retires the lease in one write: a peer takes over at once; claimed() and refusals", async ({ make, leased, cell, raw }) => {
    const sent = counting();
    const a = await leased("closer", sent.options);
    const [c1, c2] = [cell("close1"), cell("close2")];
    await a.claim(c1);
    await a.claim(c2);
    eq(a.claimed().sort((x, y) => (x.cell < y.cell ? -1 : 1)), [{ cell: c1, epoch: 1 }, { cell: c2, epoch: 1 }].sort((x, y) => (x.cell < y.cell ? -1 : 1)), "claimed()");
    const b = await leased("taker");
    const before = sent.n;
    const closing = a.close();
    // Synchronously: no authority from the moment close() is called.
    eq([a.leaseValid(), a.claimed()], [false, []], "right after close()");
    const closed = await closing;
    eq(closed, { retired: true, deleted: false, released: 0 }, "close() result");
    eq(sent.n - before, 1, "requests close() sent (one conditional write, whatever the number of cells)");
    eq(JSON.parse(await raw(`nodes/${runtime}-closer.json`)).expires_ms, 0, "the retired lease's expires_ms");
    // No waiting out the 10 s ttl: the retired lease is dead by the peer rule now.
    for (const c of [c1, c2]) {
      const took = await b.claim(c);
      eq([took.outcome, took.epoch, took.tookOver, took.prior?.node], ["applied", 2, true, `${runtime}-closer`], `takeover of ${c}`);
    }
    eq(await a.verify(c1, 1), false, "verify after close");
    await rejectsWith(a.claim(cell("after")), "not-leased", "claim after close", "closed");
    await rejectsWith(a.acquireLease(), "not-leased", "acquireLease after close", "closed");
    await rejectsWith(a.release(c1), "not-leased", "release after close", "closed");
    const again = sent.n;
    eq(await a.close(), closed, "close() again");
    eq(sent.n, again, "a second close() sends nothing");
    // The node id is free again at once.
    await leased("closer");
  });

  check("onEvent is called after the core's step, never inside it", async ({ leased, cell }) => {
    const events = [];
    const a = await leased("outside", { onEvent: (e) => events.push(e.type) });
    await a.claim(cell("outside"));
    // close() ends authority synchronously (the core emits `closed` then): the user's function hears of it
    // only once the call has returned.
    const closing = a.close();
    eq(events.includes("closed"), false, "an event delivered inside close()'s synchronous half");
    await closing;
    eq(["closed", "lease-retired"].map((t) => events.includes(t)), [true, true], `events after close: ${JSON.stringify(events)}`);
  });

  check("[Symbol.asyncDispose] closes (what `await using` calls)", async ({ make, cell, raw }) => {
    const events = [];
    const a = make("disposed", { onEvent: (e) => events.push(e.type) });
    if (typeof a[Symbol.asyncDispose] !== "function") fail("no [Symbol.asyncDispose]");
    await a.acquireLease();
    a.startRenewing();
    await a.claim(cell("dispose"));
    await a[Symbol.asyncDispose]();
    eq([a.leaseValid(), a.claimed()], [false, []], "after dispose");
    eq(JSON.parse(await raw(`nodes/${runtime}-disposed.json`)).expires_ms, 0, "retired");
    for (const t of ["closed", "lease-retired"]) if (!events.includes(t)) fail(`no ${t} event in ${JSON.stringify(events)}`);
  });

  check("close({ release: true }) releases the cells, and deletes the lease where DELETE If-Match is verified", async ({ make, leased, cell, raw }) => {
    const a = await leased("releaser");
    const cells = [cell("rel1"), cell("rel2"), cell("rel3")];
    await Promise.all(cells.map((c) => a.claim(c)));
    const closed = await a.close({ release: true });
    // Only a store whose probe showed a conditional DELETE (versitygw, probed here) gets the delete.
    const deletes = server.atomic && (server.variants?.conditionalDelete ?? true);
    eq(closed, { retired: true, deleted: deletes, released: 3 }, "close({ release: true })");
    const lease = await raw(`nodes/${runtime}-releaser.json`);
    if (deletes) eq(lease, null, "nothing left in nodes/");
    else eq(JSON.parse(lease).expires_ms, 0, "the retired lease is left (the store's conditional DELETE is not verified)");
    for (const c of cells) eq(await a.readOwner(c).then((r) => [r.node, r.epoch]), [null, 1], `${c} released at its epoch`);
    await rejectsWith(a.close({ releases: true }), "invalid-input", "an unknown close option", "releases");
  });

  check("instances that close leave no live-looking lease in nodes/", async ({ base, make, cell, raw }) => {
    const ids = [];
    for (let i = 0; i < 6; i++) {
      const id = `run${i}-${unique()}`;
      ids.push(id);
      const own = make(id);
      await own.acquireLease();
      own.startRenewing();
      await own.claim(cell(`run${i}`));
      await own.close({ release: i % 2 === 0 });
    }
    const now = Date.now();
    for (const id of ids) {
      const lease = await raw(`nodes/${runtime}-${id}.json`);
      if (lease !== null && JSON.parse(lease).expires_ms + (base.maxClockSkewMs ?? 1000) > now) fail(`${id}'s lease looks live: ${lease}`);
    }
  });

  check("removeDeadLease deletes a crashed node's dead lease only when nothing needs it, and only where DELETE If-Match is verified", async ({ make, leased, cell, raw }) => {
    const fast = { leaseTtlMs: 1500, maxClockSkewMs: 200 };
    const crashed = await leased("crashed", fast);
    const c = cell("crashed");
    await crashed.claim(c);
    const cleaner = make("cleaner", fast);
    const deletes = server.atomic && (server.variants?.conditionalDelete ?? true);
    eq(await cleaner.removeDeadLease(`${runtime}-crashed`, { cells: [c] }), { outcome: deletes ? "live" : "unsupported" }, "a live lease");
    if (!deletes) {
      eq(await cleaner.removeDeadLease(`${runtime}-crashed`, { cells: [c] }), { outcome: "unsupported" }, "no verified conditional DELETE");
      return;
    }
    // The crashed node's lease runs out by the store's clock (its expiry written at the upper bound of that
    // clock, up to a Date's 2 s span late, judged by the lower bound), or once the cleaner has watched it
    // unchanged for a ttl: "live" until then, asked again every quarter second for at most 10 s.
    let removal;
    for (const until = Date.now() + 10_000; ; await sleep(250)) {
      removal = await cleaner.removeDeadLease(`${runtime}-crashed`, { cells: [c] });
      if (removal.outcome !== "live" || Date.now() > until) break;
    }
    eq(removal, { outcome: "needed", cell: c }, "a record still names it");
    // A fresh peer has watched nothing: it waits for the store's clock to pass the expiry (renewing meanwhile).
    const taker = await leased("taker2", fast);
    taker.startRenewing();
    eq((await taker.claim(c, { wait: true }).finally(() => taker.stopRenewing())).tookOver, true, "taken over");
    eq(await cleaner.removeDeadLease(`${runtime}-crashed`, { cells: [c] }), { outcome: "removed" }, "nothing needs it");
    eq(await raw(`nodes/${runtime}-crashed.json`), null, "deleted");
    eq(await cleaner.removeDeadLease(`${runtime}-crashed`, { cells: [] }), { outcome: "absent" }, "again");
    await rejectsWith(cleaner.removeDeadLease(`${runtime}-crashed`), "invalid-input", "no cells", "cells");
    await taker.close();
  });

  check("claim({ wait: true }) sleeps until the holder's lease is dead (the store's clock past its expiresMs, or unchanged for a ttl), again after a renewal, then takes over", async ({ make, leased, cell }) => {
    const fast = { leaseTtlMs: 1500, maxClockSkewMs: 200 };
    const holder = await leased("holder", fast);
    const c = cell("wait");
    await holder.claim(c);
    const sent = counting();
    const waiter = await leased("waiter", { ...fast, ...sent.options });
    waiter.startRenewing();
    const [before, started] = [sent.n, Date.now()];
    const waiting = waiter.claim(c, { wait: true });
    // The holder renews once while the waiter sleeps, then stops (as a crashed process would).
    await sleep(300);
    const renewing = Date.now();
    await holder.renewLease();
    const { expiresMs } = await make("reader").readNodeLease(`${runtime}-holder`);
    const won = await waiting;
    const at = Date.now();
    waiter.stopRenewing();
    eq([won.outcome, won.epoch, won.tookOver], ["applied", 2, true], "the waiting claim");
    // Dead once the store's clock (this machine's here) passes expiresMs, or once the waiter watched the
    // renewed version unchanged for a ttl: it first saw it after the renewal was sent. Whichever comes
    // first (expiresMs is up to a Date's 2 s span late); the margin is 0.25 % of the ttl.
    const margin = Math.ceil(fast.leaseTtlMs / 400);
    const dead = Math.min(expiresMs, renewing + fast.leaseTtlMs) + margin;
    if (at < dead) fail(`took over at ${at}, before the renewed lease could be judged dead (${dead}: expiresMs ${expiresMs}, renewal sent at ${renewing})`);
    // Owner record + holder lease per look, and the write: no polling while asleep (renewals aside).
    const renewals = Math.ceil((at - started) / 500) + 4;
    if (sent.n - before > 7 + renewals) fail(`the wait sent ${sent.n - before} requests`);
    await waiter.close();
  });

  check("claim({ wait: true, signal }) rejects with aborted; close() ends a wait; bad signals are invalid-input", async ({ leased, cell }) => {
    const holder = await leased("held");
    const c = cell("abort");
    await holder.claim(c);
    const waiter = await leased("impatient");
    const ctrl = new AbortController();
    const waiting = rejectsWith(waiter.claim(c, { wait: true, signal: ctrl.signal }), "aborted", "an aborted wait", c);
    await sleep(50);
    ctrl.abort();
    await waiting;
    await rejectsWith(waiter.claim(c, { wait: true, signal: ctrl.signal }), "aborted", "an already-aborted signal");
    await rejectsWith(waiter.claim(c, { signal: new AbortController().signal }), "invalid-input", "a signal without wait", "wait");
    await rejectsWith(waiter.claim(c, { wait: true, signal: {} }), "invalid-input", "a signal that is not one", "AbortSignal");
    const closing = rejectsWith(waiter.claim(c, { wait: true }), "not-leased", "a wait ended by close()", "closed");
    await sleep(50);
    await waiter.close();
    await closing;
    eq((await holder.readOwner(c)).node, `${runtime}-held`, "the holder still owns it");
    await holder.close();
  });

  if (server.atomic) {
    check("the probe qualifies the store and reports its variants", async ({ make }) => {
      const report = await make("prober").probe();
      // server.variants: what this store is known to report (the conformance runner passes its own probe's); versitygw's by default.
      const expected = server.variants ?? { ifMatchMissingStatus: 404, conditionalDelete: true, etagQuoted: true };
      eq(report, expected, `${server.name}'s variants`);
    });
  }

  if (!s3) {
    check("the r2 option takes a binding, and no endpoint, keys or fetch beside it", async ({ base }) => {
      refusesOptions(S3Ownership, [
        [{ ...base, node: "n", r2: {} }, "r2 must be an R2 bucket binding", "an object without the binding's methods"],
        [{ ...base, node: "n", r2: "CELLS" }, "r2 must be an R2 bucket binding", "the binding's name instead of the binding"],
        [{ ...base, node: "n", endpoint: "https://acct.r2.cloudflarestorage.com" }, "endpoint", "an endpoint beside it"],
        [{ ...base, node: "n", accessKeyId: "a", secretAccessKey: "s" }, "accessKeyId", "keys beside it"],
        [{ ...base, node: "n", fetch: globalThis.fetch }, "fetch", "a fetch beside it"],
      ]);
    });
  }

  if (server.checksSignatures) {
    check("wrong credentials are auth errors with the store's code; nothing is written", async ({ base, make, leased, cell, plant, raw }) => {
      const bad = make("badcreds", { secretAccessKey: "not-the-secret" });
      const read = await rejectsWith(bad.readOwner("c"), "auth", "read with a wrong secret", "SignatureDoesNotMatch");
      eq([read instanceof api.CelldEdgeError, read.status, read.s3Code, read.key?.endsWith("cells/c/own.json")], [true, 403, "SignatureDoesNotMatch", true], "the refusal's status, S3 code and key");
      await rejectsWith(bad.acquireLease(), "auth", "acquire with a wrong secret");
      // An access key the store does not know (versitygw answers 404 XAdminUserNotFound, AWS 403 InvalidAccessKeyId).
      const unknown = await rejectsWith(make("unknownkey", { accessKeyId: `no-such-key-${unique()}` }).readOwner("c"), "auth", "read with an unknown access key");
      eq([unknown.status >= 400, unknown.s3Code !== ""], [true, true], `the refusal's status and S3 code (${unknown.status} ${unknown.s3Code})`);
      const e = await rejectsWith(bad.casNodeLease("absent", 1), "auth", "write with a wrong secret");
      if (e.message.includes("not-the-secret")) fail("the secret leaked into the error");
      eq(await make("check").readOwner("c"), null, "nothing was written");
    });
  }
  return checks;
}
