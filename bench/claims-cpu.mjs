// CPU per claim + release over an in-process store, against its floor (SPEC §8), in the runtime that
// imports it: bench/claims.mjs runs it in Node, bench/deno/claims-cpu.mjs in Deno. Runtime-neutral (no
// node: imports); the caller passes the classes and a CPU clock in µs (the whole process's user + system).
// - The store answers at once with S3's conditional semantics, so no socket or HTTP parser hides what
//   each contender adds.
// - The floor is what the runtime itself charges for the requests a claim + release must make: the very
//   requests celld-edge sent (recorded from it: URL, method, headers, body), each built as a `Request`
//   (what `fetch` is handed), answered by the same store, its ETag read; no signing, no timer, no decision.
// - Rounds of ~1 s take turns (celld-edge, the plain-JS baseline, the floor), best of `rounds` each.

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

/** µs of CPU per claim + release of `make`'s instance (claims and releases of four cells in turn). */
async function ownCpu(make, ms, cpuMicros, record) {
  const realFetch = globalThis.fetch;
  const fetch = memoryStore(record);
  globalThis.fetch = fetch; // aws4fetch calls the global; celld-edge gets it injected
  try {
    const o = make({ endpoint: ENDPOINT, bucket: "cells", region: "us-east-1", accessKeyId: "AK", secretAccessKey: "SK", prefix: "", node: "solo", fetch });
    await o.acquireLease();
    let claims = 0;
    let attempts = 0;
    const cpu0 = cpuMicros();
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const cell = `c${attempts++ % 4}`;
      if ((await o.claim(cell)).outcome === "applied") {
        claims++;
        await o.release(cell);
      }
    }
    return (cpuMicros() - cpu0) / claims;
  } finally {
    globalThis.fetch = realFetch;
  }
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

/** µs of CPU per claim + release for the runtime alone: the recorded requests built and answered; with
 * `timed`, each also given what a request timeout takes (an AbortController's signal and a timer). */
async function floorCpu(requests, ms, cpuMicros, timed) {
  const fetch = memoryStore();
  // Each key's current version in this store, for the recorded If-Match (which named the recording's).
  const etags = new Map();
  for (const { url } of requests) etags.set(url, (await fetch(new Request(url, { method: "PUT", body: "{}" }))).headers.get("etag"));
  let rounds = 0;
  const cpu0 = cpuMicros();
  const end = Date.now() + ms;
  while (Date.now() < end) {
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
      if (res.status !== 200) throw new Error(`floor: the store answered ${res.status} to ${r.method} ${r.url} ${JSON.stringify(headers)}`);
      etags.set(r.url, res.headers.get("etag"));
    }
    rounds++;
  }
  return (cpuMicros() - cpu0) / rounds;
}

/** { floor, timedFloor, ours, baseline, requests }: best µs per claim + release of `rounds` ~`ms` rounds each. */
export async function claimCpu({ S3Ownership, BaselineOwnership, cpuMicros, rounds = 3, ms = 1000 }) {
  const requests = await recordClaimRelease(S3Ownership);
  const floor = [];
  const timedFloor = [];
  const ours = [];
  const base = [];
  for (let i = 0; i < rounds; i++) {
    ours.push(await ownCpu((o) => new S3Ownership({ ...o, probe: false }), ms, cpuMicros));
    base.push(await ownCpu(({ fetch, ...o }) => new BaselineOwnership(o), ms, cpuMicros));
    floor.push(await floorCpu(requests, ms, cpuMicros, false));
    timedFloor.push(await floorCpu(requests, ms, cpuMicros, true));
  }
  return { floor: Math.min(...floor), timedFloor: Math.min(...timedFloor), ours: Math.min(...ours), baseline: Math.min(...base), requests: requests.map((r) => `${r.method} ${new URL(r.url).pathname} (${Object.keys(r.headers).length} headers, ${r.body.length} B)`) };
}

/** The line bench/claims prints for one runtime. */
export function claimCpuLine(runtime, { floor, timedFloor, ours, baseline }) {
  const x = (v) => `${(v / floor).toFixed(2)}x`;
  const us = (v) => `${v.toFixed(0).padStart(4)} µs`;
  return `  ${runtime.padEnd(16)} floor ${us(floor)} (with timeout signals ${us(timedFloor)}) | celld-edge ${us(ours)} = ${x(ours)} the floor (goal <= 1.5x; ` +
    `${(ours / timedFloor).toFixed(2)}x the timed one) | plain-JS baseline ${us(baseline)} = ${x(baseline)}`;
}
