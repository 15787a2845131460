// A CORS-answering pass-through for browser tests: moto in auth mode tries to authenticate the browser's
// (unsigned, by definition) OPTIONS preflight and fails with 500, so this answers preflights itself and
// forwards every other request byte for byte, Host header included, so signatures still verify upstream.
// Usage: node cors-proxy.mjs UPSTREAM_PORT — listens on a free loopback port and prints it. Test use only.
import http from "node:http";

const upstreamPort = Number(process.argv[2]);
const cors = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, PUT, DELETE, HEAD, POST",
  "access-control-allow-headers": "*, authorization",
  "access-control-expose-headers": "etag",
  "access-control-max-age": "600",
};

const server = http.createServer((req, res) => {
  if (req.method === "OPTIONS") {
    res.writeHead(204, cors).end();
    return;
  }
  const up = http.request(
    { host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url, headers: req.headers },
    (upRes) => {
      res.writeHead(upRes.statusCode, { ...upRes.headers, ...cors });
      upRes.pipe(res);
    },
  );
  up.on("error", (e) => res.writeHead(502, cors).end(String(e)));
  req.pipe(up);
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
