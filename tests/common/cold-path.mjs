// A new instance's first requests, counted in round trips *in sequence* (tests/common/round-trips.mjs), on
// either transport (SPEC §8): on a qualified bucket, the first reads go out together (the qualification
// record, the backend marker, wake/format.json), an instance's first lease is created without reading
// first (a made-up node id or a given one), then the claim. And the guarantees that must survive it: nothing
// is written before the marker and the qualification say it may be, and a lease record already at the key
// (a given id's predecessor) is read and judged after the create's refusal.
// Runtime-neutral: each harness supplies the API and `transport(trips)`, the store options with every
// request going through `trips` (an injected fetch, or a wrapped R2 binding), and `plant(key, body)`, which
// writes a whole key (prefix included) directly.
import { eq, fail, unique } from "./checks.mjs";
import { RoundTrips } from "./round-trips.mjs";

export function coldPathChecks({ api, name, transport, plant }) {
  const { S3Ownership } = api;
  const checks = [];
  const check = (what, fn) => checks.push([`${name}: ${what}`, fn]);
  const FIRST_READS = ["GET fleet/control.json", "GET probe/qualified.json", "GET wake/format.json"];
  /** The first round trip: the qualification record, the backend marker and wake/format.json, each once, and nothing else. */
  const firstReads = (wave, what) => eq([...wave].sort(), FIRST_READS, `${what}: the first reads, each once`);

  /** A fresh prefix, qualified by an instance of its own; then instances whose requests are counted. */
  const qualifiedBucket = async () => {
    const prefix = `cold-${unique()}/`;
    const trips = new RoundTrips(prefix);
    await new S3Ownership({ ...transport(new RoundTrips(prefix)), prefix, node: `qualifier-${unique()}` }).probe();
    return { prefix, trips, make: (extra = {}) => new S3Ownership({ ...transport(trips), prefix, ...extra }) };
  };

  check("a new instance's acquireLease + first claim on a qualified bucket: 3 round trips in sequence", async () => {
    const { trips, make } = await qualifiedBucket();
    const own = make();
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(own.node)) fail(`the made-up node id is not in celld's set: ${own.node}`);
    const cell = `c-${unique()}`;
    const { result, sequence, waves } = await trips.measure(async () => {
      await own.acquireLease();
      return own.claim(cell, { expectNew: true });
    });
    eq([result.outcome, result.epoch], ["applied", 1], "the claim");
    firstReads(waves[0], "round trip 1: the first reads, together");
    eq(waves[1], [`PUT nodes/${own.node}.json if-none-match`], "round trip 2: the lease, created without reading");
    eq(waves[2], [`PUT cells/${cell}/own.json if-none-match`], "round trip 3: the claim");
    eq(sequence, 3, `round trips in sequence (${RoundTrips.show(waves)})`);
    // A claim that must read first (a cell it never saw, no hint) costs its read on top.
    const plain = make();
    const second = await trips.measure(async () => {
      await plain.acquireLease();
      return plain.claim(`c-${unique()}`);
    });
    eq([second.result.outcome, second.sequence], ["applied", 4], `acquireLease + claim() of a cell never seen (${RoundTrips.show(second.waves)})`);
    await own.close();
    await plain.close();
  });

  check("a node id given by the caller: its first lease is created unread too, and a predecessor's lease is read after the refusal", async () => {
    const { prefix, trips, make } = await qualifiedBucket();
    const node = `given-${unique()}`;
    const own = make({ node });
    const cell = `c-${unique()}`;
    const { result, sequence, waves } = await trips.measure(async () => {
      await own.acquireLease();
      return own.claim(cell, { expectNew: true });
    });
    eq(result.outcome, "applied", "the claim");
    firstReads(waves[0], "round trip 1");
    eq(waves.slice(1), [[`PUT nodes/${node}.json if-none-match`], [`PUT cells/${cell}/own.json if-none-match`]], "then the create, then the claim");
    eq([sequence, waves.flat().length], [3, 5], "round trips in sequence, requests");
    await own.close();
    // The same id again, its predecessor's live lease in place (another process): refused, then read once.
    const reused = `given-${unique()}`;
    await plant(`${prefix}nodes/${reused}.json`, JSON.stringify({ node: reused, expires_ms: Date.now() + 60_000, addr: "" }));
    const next = make({ node: reused });
    let refused;
    const second = await trips.measure(() => next.acquireLease().catch((e) => { refused = e; }));
    eq(refused?.code, "not-leased", `acquireLease over another process's live lease (${refused?.message})`);
    eq(second.waves.slice(1), [[`PUT nodes/${reused}.json if-none-match`], [`GET nodes/${reused}.json`]], "the create, refused, then one read");
  });

  check("a made-up node id whose create is refused falls back to the careful path", async () => {
    const { prefix, trips, make } = await qualifiedBucket();
    const own = make();
    // Another process's live lease at that very key: the create is refused (412), the read shows whose it is.
    await plant(`${prefix}nodes/${own.node}.json`, JSON.stringify({ node: own.node, expires_ms: Date.now() + 60_000, addr: "" }));
    let refused;
    const { waves } = await trips.measure(() => own.acquireLease().catch((e) => { refused = e; }));
    eq(refused?.code, "not-leased", `acquireLease over another process's live lease (${refused?.message})`);
    eq(waves[1], [`PUT nodes/${own.node}.json if-none-match`], "the create, refused");
    // Then one read of the record (the careful path's, which would also find this create's own nonce): no other write.
    eq(waves.slice(2).flat().filter((r) => r !== `GET nodes/${own.node}.json`), [], "after the refusal");
    eq(own.leaseValid(), false, "no lease");
  });

  check("nothing is written before the marker and the qualification say it may be", async () => {
    // Another backend's fleet: refused after the first reads, with no write at all.
    const fleet = await qualifiedBucket();
    await plant(`${fleet.prefix}fleet/control.json`, JSON.stringify({ format: 1, backend: "dynamodb" }));
    const refusedFleet = fleet.make();
    const marker = await fleet.trips.measure(() => refusedFleet.acquireLease().catch((e) => e));
    if (!marker.result?.message?.includes("dynamodb")) fail(`a dynamodb fleet was not refused: ${marker.result?.message ?? marker.result}`);
    eq(marker.waves.flat().filter((r) => !r.startsWith("GET")), [], "requests other than reads");
    // An unqualified bucket: the probe runs, and the lease is written after every probe request.
    const prefix = `cold-${unique()}/`;
    const trips = new RoundTrips(prefix);
    const fresh = new S3Ownership({ ...transport(trips), prefix });
    const { waves } = await trips.measure(() => fresh.acquireLease());
    const leaseAt = waves.findIndex((w) => w.some((r) => r.startsWith(`PUT nodes/`)));
    const probeLast = waves.findLastIndex((w) => w.some((r) => r.includes("probe/")));
    if (leaseAt <= probeLast) fail(`the lease was written in round trip ${leaseAt + 1}, before the qualification ended (${probeLast + 1})`);
    await fresh.close();
  });

  return checks;
}
