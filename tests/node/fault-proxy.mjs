// The fault front as a real local HTTP proxy (Node): forwards each request byte for byte (Host header
// included, so signatures still verify upstream) unless the front's script says to answer it, or to cut
// the connection, first. Same interface as injectedFront in tests/common/aws-client.mjs. Test use only.
import http from "node:http";
import { frontDecide, frontEntry } from "../common/aws-client.mjs";

export async function proxyFront(upstream) {
  const up = new URL(upstream);
  const log = [];
  const script = [];
  const server = http.createServer((req, res) => {
    const entry = frontEntry(req.method, req.url, (n) => req.headers[n] ?? null);
    log.push(entry);
    const decision = frontDecide(script, entry);
    if (decision.kind === "drop") {
      req.socket.destroy();
      return;
    }
    if (decision.kind === "answer") {
      req.resume();
      res.writeHead(decision.status, decision.headers).end(decision.body);
      return;
    }
    const fwd = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
      res.writeHead(upRes.statusCode, upRes.headers);
      upRes.pipe(res);
    });
    // No answer from the store (s3s-fs may close without reading a chunked body it refuses): the client
    // sees a cut connection, as it would without the proxy.
    fwd.on("error", () => (res.headersSent ? res.destroy() : req.socket.destroy()));
    req.pipe(fwd);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${server.address().port}`,
    fetch: undefined,
    log,
    script,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
