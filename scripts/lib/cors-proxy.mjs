// A CORS-answering pass-through for browser tests: moto in auth mode tries to authenticate the browser's
// (unsigned, by definition) OPTIONS preflight and fails with 500, so this answers preflights itself and
// forwards every other request byte for byte, Host header included, so signatures still verify upstream.
// Usage: node cors-proxy.mjs UPSTREAM_PORT — listens on a free loopback port and prints it (permissive:
// any origin, method and header, ETag and Date exposed). Imported, `corsFront(upstreamPort, rule)` applies one
// bucket CORS rule (S3's JSON shape) as S3 does, and counts what it saw. Test use only.
import http from "node:http";
import { fileURLToPath } from "node:url";

const PERMISSIVE = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, PUT, DELETE, HEAD, POST",
  "access-control-allow-headers": "*, authorization",
  "access-control-expose-headers": "etag, date",
  "access-control-max-age": "600",
};

/** An S3 CORS pattern (`*` matches any run of characters, case-insensitively) against a value. */
function matches(pattern, value) {
  const re = pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*");
  return new RegExp(`^${re}$`, "i").test(value);
}

/**
 * The headers S3 answers for `rule` ({ AllowedOrigins, AllowedMethods, AllowedHeaders, ExposeHeaders,
 * MaxAgeSeconds }): for a preflight, null when the rule does not allow it (S3 then answers 403).
 */
export function corsHeaders(rule, req) {
  const origin = req.headers.origin;
  if (!origin || !rule.AllowedOrigins.some((o) => matches(o, origin))) return null;
  const out = { "access-control-allow-origin": origin, vary: "Origin" };
  if (req.method !== "OPTIONS") {
    if (rule.ExposeHeaders?.length) out["access-control-expose-headers"] = rule.ExposeHeaders.join(", ");
    return out;
  }
  const method = req.headers["access-control-request-method"];
  const asked = (req.headers["access-control-request-headers"] ?? "").split(",").map((h) => h.trim()).filter(Boolean);
  if (!rule.AllowedMethods.includes(method)) return null;
  if (!asked.every((h) => (rule.AllowedHeaders ?? []).some((p) => matches(p, h)))) return null;
  out["access-control-allow-methods"] = rule.AllowedMethods.join(", ");
  if (asked.length) out["access-control-allow-headers"] = asked.join(", ");
  if (rule.MaxAgeSeconds !== undefined) out["access-control-max-age"] = String(rule.MaxAgeSeconds);
  return out;
}

/** A loopback front to 127.0.0.1:upstreamPort; `rule` null: permissive. Resolves to { server, url, seen }
 * where `seen` lists "METHOD path" of every request, preflights included. */
export async function corsFront(upstreamPort, rule = null) {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const cors = rule ? corsHeaders(rule, req) : PERMISSIVE;
    if (req.method === "OPTIONS") {
      if (cors === null) res.writeHead(403, { "content-type": "application/xml" }).end("<Error><Code>AccessForbidden</Code><Message>CORSResponse: This CORS request is not allowed.</Message></Error>");
      else res.writeHead(rule ? 200 : 204, cors).end();
      return;
    }
    const up = http.request(
      { host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url, headers: req.headers },
      (upRes) => {
        // The rule alone decides (some servers, ministack among them, add CORS headers of their own).
        const headers = rule ? Object.fromEntries(Object.entries(upRes.headers).filter(([k]) => !k.startsWith("access-control-"))) : upRes.headers;
        res.writeHead(upRes.statusCode, { ...headers, ...cors });
        upRes.pipe(res);
      },
    );
    up.on("error", (e) => res.writeHead(502, cors ?? {}).end(String(e)));
    req.pipe(up);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}`, seen };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { url } = await corsFront(Number(process.argv[2]));
  console.log(new URL(url).port);
}
