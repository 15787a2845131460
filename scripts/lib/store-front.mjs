// A store front for the test command (started by scripts/lib/servers.sh): stands in front of one local S3
// server and answers like a store under load, or like a store that half-honours conditions, forwarding
// everything else byte for byte (the Host header included, so signatures still verify upstream).
//   node store-front.mjs UPSTREAM_PORT MODE[,MODE...]      prints the port it listens on
// Modes:
//   r2        R2's rate: a second write (PUT, DELETE) to one key within 1 s of the last one let through is
//             answered 429 TooManyRequests (not forwarded: nothing is applied).
//   slowdown  S3's 503 SlowDown in random bursts of 50-250 ms at random times (every request in a burst;
//             half of the bursts with Retry-After), whatever the request rate; not forwarded either.
//   throttle  both.
//   lose      a fraction of writes is forwarded and applied, then its answer is lost: half of them by a
//             reset connection, half by never answering (the client's timeout ends them).
//   dialect   by the key's first segment (the test's prefix): `if-match-unquoted-…` honours If-Match only
//             without quotes, `if-match-quoted-…` gives ETags unquoted and honours If-Match only quoted,
//             `delete-ignores-if-match-…` and `put-ignores-if-none-match-…` drop that header,
//             `multi-winner-…` checks If-None-Match: * and writes in two steps, so concurrent creates all
//             win (Tigris before April 2026). Only in front of a server that checks no signatures.
// Rates come from CELLD_FRONT_SLOWDOWN (mean ms between bursts, default 3000: about 5% of the time in a
// burst) and CELLD_FRONT_LOSE (share of writes whose answer is lost, default 0.08). `GET /__front/log?prefix=P`
// gives every write let through under P as JSON: what the client sent and what the store answered, for
// tests that check each answer the client reported against what the store did.
import http from "node:http";

const [upstreamPort, modeList = ""] = process.argv.slice(2);
const modes = new Set(modeList.split(",").filter(Boolean));
const burstEvery = Number(process.env.CELLD_FRONT_SLOWDOWN ?? 3000);
const lose = Number(process.env.CELLD_FRONT_LOSE ?? 0.08);
const xml = (code, message) => `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;
const failed = xml("PreconditionFailed", "At least one of the pre-conditions you specified did not hold");

const lastWrite = new Map();
let burst = { until: 0, retryAfter: false };
/** When the next burst starts: exponential gaps, so bursts come at random times, not per request. */
const nextBurst = (now) => now - burstEvery * Math.log(1 - Math.random());
let burstAt = nextBurst(Date.now());
const log = [];

/** The object key of a path-style request (`/bucket/key`), without its query. */
const keyOf = (url) => decodeURIComponent(url.split("?")[0].split("/").slice(2).join("/"));
const dialectOf = (key) =>
  ["if-match-unquoted", "if-match-quoted", "delete-ignores-if-match", "put-ignores-if-none-match", "multi-winner"].find((d) =>
    key.startsWith(`${d}-`),
  );

function refuse(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/xml", ...headers }).end(body);
}

/** The throttling front's answer, or null to let the request through. */
function throttled(req, key, now) {
  const r2 = modes.has("throttle") || modes.has("r2");
  const slowdown = modes.has("throttle") || modes.has("slowdown");
  if (slowdown && now >= burst.until && now >= burstAt) {
    burst = { until: now + 50 + Math.random() * 200, retryAfter: !burst.retryAfter };
    burstAt = nextBurst(burst.until);
  }
  if (slowdown && now < burst.until) return [503, xml("SlowDown", "Please reduce your request rate."), burst.retryAfter ? { "retry-after": "1" } : {}];
  if (!r2 || (req.method !== "PUT" && req.method !== "DELETE")) return null;
  if (now - (lastWrite.get(key) ?? -Infinity) < 1000) return [429, xml("TooManyRequests", "Reduce your rate of requests to this object."), {}];
  lastWrite.set(key, now);
  return null;
}

function forward(req, res, body, { headers = req.headers, etag = (e) => e, lost = false } = {}) {
  const write = req.method === "PUT" || req.method === "DELETE";
  const fwd = http.request({ host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url, headers }, (up) => {
    const chunks = [];
    up.on("data", (c) => chunks.push(c));
    up.on("end", () => {
      const answer = Buffer.concat(chunks);
      if (write) {
        log.push({ at: Date.now(), method: req.method, key: keyOf(req.url), status: up.statusCode, lost, body: body.toString("utf8", 0, 4096), ifMatch: headers["if-match"] ?? null, ifNoneMatch: headers["if-none-match"] ?? null });
      }
      if (lost) {
        // Applied, and the answer never arrives: a reset, or silence until the client gives up.
        if (Math.random() < 0.5) req.socket.destroy();
        return;
      }
      const out = { ...up.headers };
      if (out.etag) out.etag = etag(out.etag);
      res.writeHead(up.statusCode, out).end(answer);
    });
  });
  fwd.on("error", () => req.socket.destroy());
  fwd.end(body);
}

async function dialect(req, res, body, name) {
  const headers = { ...req.headers };
  const ifMatch = headers["if-match"];
  switch (name) {
    case "if-match-unquoted":
      if (ifMatch?.startsWith('"')) return refuse(res, 412, failed);
      if (ifMatch) headers["if-match"] = `"${ifMatch}"`;
      return forward(req, res, body, { headers });
    case "if-match-quoted":
      if (ifMatch && !ifMatch.startsWith('"')) return refuse(res, 412, failed);
      return forward(req, res, body, { headers, etag: (e) => e.replace(/^"(.*)"$/, "$1") });
    case "delete-ignores-if-match":
      if (req.method === "DELETE") delete headers["if-match"];
      return forward(req, res, body, { headers });
    case "put-ignores-if-none-match":
      if (req.method === "PUT") delete headers["if-none-match"];
      return forward(req, res, body, { headers });
    case "multi-winner": {
      if (req.method !== "PUT" || headers["if-none-match"] !== "*") return forward(req, res, body, { headers });
      const exists = await new Promise((resolve) => {
        const head = http.request({ host: "127.0.0.1", port: upstreamPort, method: "HEAD", path: req.url, headers: { host: headers.host } }, (r) => {
          r.resume();
          resolve(r.statusCode === 200);
        });
        head.on("error", () => resolve(true));
        head.end();
      });
      if (exists) return refuse(res, 412, failed);
      // The check and the write apart: every creator that checked meanwhile writes too.
      await new Promise((resolve) => setTimeout(resolve, 100));
      delete headers["if-none-match"];
      return forward(req, res, body, { headers });
    }
  }
}

const server = http.createServer((req, res) => {
  if (req.url.startsWith("/__front/log")) {
    const prefix = new URL(req.url, "http://front").searchParams.get("prefix") ?? "";
    return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(log.filter((e) => e.key.startsWith(prefix))));
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const key = keyOf(req.url);
    const turned = throttled(req, key, Date.now());
    if (turned) return refuse(res, ...turned);
    const name = modes.has("dialect") ? dialectOf(key.split("/")[0]) : undefined;
    if (name) return dialect(req, res, body, name);
    const write = req.method === "PUT" || req.method === "DELETE";
    forward(req, res, body, { lost: modes.has("lose") && write && Math.random() < lose });
  });
});
server.keepAliveTimeout = 1000;
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
