// CPU per claim + release over an in-process store, against its floor (SPEC §8), in the runtime that
// imports it: bench/claims.mjs runs it in Node, bench/deno/claims-cpu.mjs in Deno, bench/claims-worker/ in
// workerd. Runtime-neutral (no node: imports); the caller passes the classes and, where a clock runs, a CPU
// clock in µs (the whole process's user + system).
// - The store answers at once with S3's conditional semantics, so no socket or HTTP parser hides what
//   each contender adds; like a runtime's fetch, it makes a `Request` of whatever it is handed.
// - The floor is what the runtime itself charges for the requests a claim + release must make: the very
//   requests celld-edge sent (recorded from it: URL, method, headers, body; the protocol's minimum, two,
//   checked by `requestsPerPair`), handed to the store as `fetch(url, init)` with the timeout every request
//   of the protocol carries (an AbortController's signal and a timer), answered, their ETags read; no
//   signing, no decision. The same without the signal and timer is printed beside.
// - Rounds of ~1 s take turns (the floors, celld-edge, the plain-JS baseline), best of `rounds` each.

/** The in-process store: a fetch over a Map. Like a runtime's fetch it first makes a `Request` of what
 * it is given (the Fetch standard's fetch() does `new Request(input, init)`, a given `Request` included,
 * which it copies), then answers from the Map with S3's conditional semantics. */
export function memoryStore(onRequest) {
  const objects = new Map();
  let version = 0;
  const xml = (status, code) => new Response(`<Error><Code>${code}</Code></Error>`, { status });
  return async (input, init) => {
    const request = new Request(input, init);
    onRequest?.(request);
    const key = new URL(request.url).pathname;
    const cur = objects.get(key);
    if (request.method === "GET") {
      return cur ? new Response(cur.body, { headers: { etag: cur.etag } }) : xml(404, "NoSuchKey");
    }
    const [none, match] = [request.headers.get("if-none-match"), request.headers.get("if-match")];
    if ((none === "*" && cur) || (match !== null && cur?.etag !== match)) return xml(412, "PreconditionFailed");
    const etag = `"v${++version}"`;
    objects.set(key, { body: await request.arrayBuffer(), etag });
    return new Response(null, { headers: { etag } });
  };
}

const ENDPOINT = "http://memory.test";

/** A contender ready to run `n` claim + release pairs over its own store (four cells in turn); its
 * `sent()` counts the requests its store answered. The store is `globalThis.fetch` while it is made and
 * runs (what aws4fetch, and celld-edge without a `fetch` option, call), and is also given as `fetch`. */
async function contender(make) {
  let sent = 0;
  const fetch = memoryStore(() => sent++);
  // A lease that outlives every round: nobody renews it, and no contender pays for renewals.
  const options = { endpoint: ENDPOINT, bucket: "cells", region: "us-east-1", accessKeyId: "AK", secretAccessKey: "SK", prefix: "", node: "solo", fetch, leaseTtlMs: 3_600_000 };
  const realFetch = globalThis.fetch;
  globalThis.fetch = fetch;
  let o;
  try {
    o = make(options);
  } finally {
    globalThis.fetch = realFetch;
  }
  const run = async (n) => {
    const realFetch = globalThis.fetch;
    globalThis.fetch = fetch;
    try {
      let claims = 0;
      for (let attempts = 0; claims < n; attempts++) {
        const cell = `c${attempts % 4}`;
        if ((await o.claim(cell)).outcome === "applied") {
          claims++;
          await o.release(cell);
        }
      }
    } finally {
      globalThis.fetch = realFetch;
    }
  };
  globalThis.fetch = fetch;
  try {
    await o.acquireLease();
  } finally {
    globalThis.fetch = realFetch;
  }
  run.sent = () => sent;
  return run;
}



/** The requests of one steady-state claim + release, as celld-edge sends them. */
async function recordClaimRelease(S3Ownership) {
  let requests;
  const fetch = memoryStore((r) => requests?.push(r.clone()));
  const o = new S3Ownership({ endpoint: ENDPOINT, bucket: "cells", region: "us-east-1", accessKeyId: "AK", secretAccessKey: "SK", prefix: "", node: "solo", fetch, probe: false });
  await o.acquireLease();
  for (let i = 0; i < 3; i++) {
    requests = i === 2 ? [] : undefined;
    if ((await o.claim("c0")).outcome !== "applied") throw new Error("floor: the recording claim did not apply");
    await o.release("c0");
  }
  const recorded = requests;
  requests = undefined;
  await o.close();
  requests = recorded;
  return Promise.all(requests.map(async (r) => ({ url: r.url, method: r.method, headers: Object.fromEntries(r.headers), body: new Uint8Array(await r.arrayBuffer()) })));
}

/** The runtime alone, ready to run `n` claim + release pairs: the recorded requests handed to the store
 * as `fetch(url, init)` (the least a caller can hand a fetch; the store builds its `Request` as every
 * runtime's fetch does) and answered; with `timed`, each also given what a request timeout takes (an
 * AbortController's signal and a timer). */
async function floorRunner(requests, timed) {
  const fetch = memoryStore();
  // Each key's current version in this store, for the recorded If-Match (which named the recording's).
  const etags = new Map();
  for (const { url } of requests) etags.set(url, (await fetch(url, { method: "PUT", body: "{}" })).headers.get("etag"));
  return async (n) => {
    for (let i = 0; i < n; i++) {
      for (const r of requests) {
        const headers = r.headers["if-match"] === undefined ? r.headers : { ...r.headers, "if-match": etags.get(r.url) };
        const init = { method: r.method, headers, body: r.method === "PUT" ? r.body : undefined };
        let timer;
        if (timed) {
          const ctrl = new AbortController();
          timer = setTimeout(() => ctrl.abort(), 10_000);
          init.signal = ctrl.signal;
        }
        const res = await fetch(r.url, init);
        clearTimeout(timer);
        if (res.status !== 200) throw new Error(`floor: the store answered ${res.status} to ${r.method} ${r.url}`);
        etags.set(r.url, res.headers.get("etag"));
      }
    }
  };
}

/** The four runners by name: `floor`, `timedFloor`, `ours` (celld-edge), `baseline` (plain JS over
 * aws4fetch); each `(n) => Promise` runs n claim + release pairs. Also the recorded requests, described. */
export async function claimRunners({ S3Ownership, BaselineOwnership }) {
  const requests = await recordClaimRelease(S3Ownership);
  return {
    runners: {
      floor: await floorRunner(requests, false),
      timedFloor: await floorRunner(requests, true),
      ours: await contender(({ fetch, ...o }) => new S3Ownership({ ...o, probe: false })),
      injected: await contender((o) => new S3Ownership({ ...o, probe: false })),
      baseline: await contender(({ fetch, ...o }) => new BaselineOwnership(o)),
    },
    requests: requests.map((r) => `${r.method} ${new URL(r.url).pathname} (${Object.keys(r.headers).length} headers, ${r.body.length} B)`),
  };
}

/** Requests per claim + release of the floor, celld-edge and the baseline in their steady state. The
 * floor's are the protocol's minimum for a steady-state claim + release (a re-claim after its own
 * release: one conditional PUT; the release: one), and celld-edge must send exactly those in the timed
 * loop, else the floor would not be the same work: throws otherwise. */
export async function requestsPerPair({ runners, requests }) {
  const perPair = { floor: requests.length };
  for (const name of ["ours", "injected", "baseline"]) {
    await runners[name](8); // every cell seen once
    const before = runners[name].sent();
    await runners[name](40);
    perPair[name] = (runners[name].sent() - before) / 40;
  }
  if (perPair.floor !== 2 || perPair.ours !== perPair.floor || perPair.injected !== perPair.floor) {
    throw new Error(`floor: celld-edge sent ${perPair.ours} (${perPair.injected} with an injected fetch) requests per claim + release in the loop and ${perPair.floor} were recorded; the protocol's minimum is 2`);
  }
  return perPair;
}

/** µs of CPU per pair of `run` over a round of about `ms` (runs of 20 pairs until then). */
async function timed(run, ms, cpuMicros) {
  let pairs = 0;
  const cpu0 = cpuMicros();
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await run(20);
    pairs += 20;
  }
  return (cpuMicros() - cpu0) / pairs;
}

/** { floor, timedFloor, ours, baseline, requests }: best µs per claim + release of `rounds` ~`ms` rounds
 * each, taking turns (Node and Deno, where a clock runs; workerd's is measured from outside). */
export async function claimCpu({ S3Ownership, BaselineOwnership, cpuMicros, rounds = 3, ms = 1000 }) {
  const runs = await claimRunners({ S3Ownership, BaselineOwnership });
  const { runners, requests } = runs;
  const best = {};
  for (const name of Object.keys(runners)) await runners[name](20); // warm-up
  const perPair = await requestsPerPair(runs);
  for (let i = 0; i < rounds; i++) {
    for (const [name, run] of Object.entries(runners)) best[name] = Math.min(best[name] ?? Infinity, await timed(run, ms, cpuMicros));
  }
  return { ...best, requests, perPair };
}

/** The line bench/claims prints for one runtime. */
export function claimCpuLine(runtime, { floor, timedFloor, ours, injected, baseline, perPair }) {
  const x = (v) => `${(v / timedFloor).toFixed(2)}x`;
  const us = (v) => `${v.toFixed(0).padStart(4)} µs`;
  const sent = perPair ? ` | requests per pair: floor ${perPair.floor}, celld-edge ${perPair.ours}, baseline ${perPair.baseline}` : "";
  return `  ${runtime.padEnd(20)} floor ${us(timedFloor)} (without timeout signals ${us(floor)}) | celld-edge ${us(ours)} = ${x(ours)} the floor (goal <= 1.5x; ` +
    `${(ours / floor).toFixed(2)}x the one without signals; with an injected fetch(request) ${us(injected)} = ${x(injected)}) | plain-JS baseline ${us(baseline)} = ${x(baseline)}${sent}`;
}
