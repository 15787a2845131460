// CPU per claim + release over an in-process store, against its floor (SPEC §8), in the runtime that
// imports it: bench/claims.mjs runs it in Node, bench/deno/claims-cpu.mjs in Deno, bench/claims-worker/ in
// workerd. Runtime-neutral (no node: imports); the caller passes the classes and, where a clock runs, a CPU
// clock in µs (the whole process's user + system).
// - The store answers at once with S3's conditional semantics, so no socket or HTTP parser hides what
//   each contender adds.
// - The floor is what the runtime itself charges for the requests a claim + release must make: the very
//   requests celld-edge sent (recorded from it: URL, method, headers, body), each built as a `Request`
//   (what `fetch` is handed), answered by the same store, its ETag read; no signing, no timer, no decision.
// - Rounds of ~1 s take turns (the floors, celld-edge, the plain-JS baseline), best of `rounds` each.

/** The in-process store: a fetch over a Map. Takes a Request (celld-edge, aws4fetch) or (url, init). */
export function memoryStore(onRequest) {
  const objects = new Map();
  let version = 0;
  const xml = (status, code) => new Response(`<Error><Code>${code}</Code></Error>`, { status });
  return async (input, init = {}) => {
    const isRequest = input instanceof Request;
    onRequest?.(input);
    const header = (name) => (isRequest ? input.headers.get(name) : init.headers?.[name] ?? null);
    const key = new URL(isRequest ? input.url : input).pathname;
    const cur = objects.get(key);
    if ((isRequest ? input.method : init.method ?? "GET") === "GET") {
      return cur ? new Response(cur.body, { headers: { etag: cur.etag } }) : xml(404, "NoSuchKey");
    }
    const [none, match] = [header("if-none-match"), header("if-match")];
    if ((none === "*" && cur) || (match !== null && cur?.etag !== match)) return xml(412, "PreconditionFailed");
    const etag = `"v${++version}"`;
    objects.set(key, { body: isRequest ? await input.arrayBuffer() : init.body, etag });
    return new Response(null, { headers: { etag } });
  };
}

const ENDPOINT = "http://memory.test";

/** A contender ready to run `n` claim + release pairs over its own store (four cells in turn). */
async function contender(make) {
  const fetch = memoryStore();
  // A lease that outlives every round: nobody renews it, and no contender pays for renewals.
  const o = make({ endpoint: ENDPOINT, bucket: "cells", region: "us-east-1", accessKeyId: "AK", secretAccessKey: "SK", prefix: "", node: "solo", fetch, leaseTtlMs: 3_600_000 });
  const run = async (n) => {
    // aws4fetch calls the global fetch; celld-edge was given it.
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
  const realFetch = globalThis.fetch;
  globalThis.fetch = fetch;
  try {
    await o.acquireLease();
  } finally {
    globalThis.fetch = realFetch;
  }
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

/** The runtime alone, ready to run `n` claim + release pairs: the recorded requests built and answered;
 * with `timed`, each also given what a request timeout takes (an AbortController's signal and a timer). */
async function floorRunner(requests, timed) {
  const fetch = memoryStore();
  // Each key's current version in this store, for the recorded If-Match (which named the recording's).
  const etags = new Map();
  for (const { url } of requests) etags.set(url, (await fetch(new Request(url, { method: "PUT", body: "{}" }))).headers.get("etag"));
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
        const res = await fetch(new Request(r.url, init));
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
      ours: await contender((o) => new S3Ownership({ ...o, probe: false })),
      baseline: await contender(({ fetch, ...o }) => new BaselineOwnership(o)),
    },
    requests: requests.map((r) => `${r.method} ${new URL(r.url).pathname} (${Object.keys(r.headers).length} headers, ${r.body.length} B)`),
  };
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
  const { runners, requests } = await claimRunners({ S3Ownership, BaselineOwnership });
  const best = {};
  for (const name of Object.keys(runners)) await runners[name](20); // warm-up
  for (let i = 0; i < rounds; i++) {
    for (const [name, run] of Object.entries(runners)) best[name] = Math.min(best[name] ?? Infinity, await timed(run, ms, cpuMicros));
  }
  return { ...best, requests };
}

/** The line bench/claims prints for one runtime. */
export function claimCpuLine(runtime, { floor, timedFloor, ours, baseline }) {
  const x = (v) => `${(v / floor).toFixed(2)}x`;
  const us = (v) => `${v.toFixed(0).padStart(4)} µs`;
  return `  ${runtime.padEnd(20)} floor ${us(floor)} (with timeout signals ${us(timedFloor)}) | celld-edge ${us(ours)} = ${x(ours)} the floor (goal <= 1.5x; ` +
    `${(ours / timedFloor).toFixed(2)}x the timed one) | plain-JS baseline ${us(baseline)} = ${x(baseline)}`;
}
