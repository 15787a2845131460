"""The ownership checks through the component in wasmtime (wasmtime-py drives it as a library), against
versitygw: the paths of tests/common/ownership.mjs that the world exports (claims, releases, takeover and
fencing, the low-level records, bad input, corrupt records, celld's records, close), plus the import list
(WASI only: no sockets, no filesystem) and signing through a real server. Run by scripts/test's
`component` suite."""

import http.server
import json
import os
import socket
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
import uuid

from host import COMPONENT, PROXY, ComponentError, Host, real_server, s3_request

SERVER = real_server()
HOST = Host()


def unique():
    return uuid.uuid4().hex[:12]


class Scope:
    """One check's prefix and nodes (so node ids never meet across checks)."""

    def __init__(self):
        self.prefix = f"t-wasmtime-{unique()}/"

    def make(self, name, **extra):
        config = dict(endpoint=SERVER["endpoint"], bucket=SERVER["bucket"], access_key_id=SERVER["key_id"],
                      secret_access_key=SERVER["secret"], prefix=self.prefix, node=f"wasmtime-{name}", addr=f"{name}.test:1")
        config.update(extra)
        return HOST.open(**config)

    def leased(self, node, **extra):
        n = self.make(node, **extra)
        n.acquire_lease()
        assert n.lease_valid(), f"{node}: lease not valid after acquire-lease"
        return n

    def plant(self, key, body):
        status, text = s3_request(HOST, SERVER, "PUT", self.prefix + key, body.encode())
        assert status == 200, f"planting {key}: {status} {text!r}"

    def raw(self, key):
        status, body = s3_request(HOST, SERVER, "GET", self.prefix + key)
        return body.decode() if status == 200 else None


# The `guard` variant as wasmtime-py takes it: its cases carry nothing or a string, so it is untagged
# (None is `absent`, a string is `match(etag)`).
ABSENT = None


def cell(name):
    # celld's id set, with characters the path must percent-encode (`:` `$`).
    return f"{name}:{unique()}$x"


def fields(rec, *names):
    return [getattr(rec, n) for n in names]


class Ownership(unittest.TestCase):
    def rejects(self, code, fn, *args, **kwargs):
        with self.assertRaises(ComponentError) as caught:
            fn(*args, **kwargs)
        self.assertEqual(caught.exception.code, code, str(caught.exception))
        return caught.exception

    def test_create_duplicate_verify(self):
        s = Scope()
        a, b = s.leased("a"), s.leased("b")
        c = cell("create")
        won = a.claim(c)
        self.assertEqual(won.tag, "applied")
        self.assertEqual(fields(won.payload, "epoch", "took-over", "prior"), [1, False, None])
        lost = b.claim(c)
        self.assertEqual(lost.tag, "rejected")
        self.assertEqual(fields(lost.payload, "node", "epoch", "addr", "live", "awaiting-recovery", "held"),
                         ["wasmtime-a", 1, "a.test:1", True, False, False])
        rec = b.read_owner(c)
        self.assertEqual(fields(rec, "node", "epoch"), ["wasmtime-a", 1])
        self.assertTrue(a.verify(c, 1))
        self.assertFalse(b.verify(c, 1))
        self.assertEqual(fields(a.owner(c), "node", "live", "held"), ["wasmtime-a", True, True])
        self.assertEqual(a.claim(c).payload.epoch, 2, "a re-claim by the owner advances the epoch")
        self.assertEqual([(getattr(x, "cell"), getattr(x, "epoch")) for x in a.claimed()], [(c, 2)])

    def test_release_keeps_epoch_and_stale_release_changes_nothing(self):
        s = Scope()
        a, b = s.leased("a"), s.leased("b")
        c = cell("release")
        a.claim(c)
        self.assertEqual(a.release(c), "applied")
        self.assertEqual(fields(a.read_owner(c), "node", "epoch"), [None, 1])
        self.assertEqual(fields(b.owner(c), "node", "live"), [None, False])
        self.assertEqual(fields(b.claim(c).payload, "epoch"), [2])
        before = fields(a.read_owner(c), "node", "epoch", "etag")
        self.assertEqual(a.release_owner(c, 1), "rejected")
        self.assertEqual(a.release(c), "rejected")
        self.assertEqual(fields(a.read_owner(c), "node", "epoch", "etag"), before)
        self.assertTrue(b.verify(c, 2))

    def test_takeover_only_after_the_lease_is_dead_and_the_old_owner_is_fenced(self):
        s = Scope()
        short = dict(lease_ttl_ms=1200, max_clock_skew_ms=200, probe="off")
        a = s.leased("a", **short)
        c = cell("takeover")
        a.claim(c)
        b = s.leased("b", **short)
        self.assertEqual(b.claim(c).tag, "rejected", "a claim while the owner's lease is live")
        for _ in range(8):  # a never renews: its lease expires (1200) and the skew margin (200) passes
            time.sleep(0.2)
            b.renew()
        self.assertFalse(a.lease_valid())
        took = b.claim(c)
        self.assertEqual(took.tag, "applied")
        self.assertEqual(fields(took.payload, "epoch", "took-over"), [2, True])
        self.assertEqual(fields(took.payload.prior, "node", "epoch"), ["wasmtime-a", 1])
        self.assertFalse(a.verify(c, 1))
        self.rejects("fenced", a.renew)
        self.rejects("fenced", a.claim, c)
        a.acquire_lease()
        self.assertEqual(a.claim(c).tag, "rejected", "b is live: a fresh lease does not win it back")

    def test_renewing_keeps_the_claim(self):
        s = Scope()
        a = s.leased("a", lease_ttl_ms=900, max_clock_skew_ms=100, probe="off")
        c = cell("renew")
        a.claim(c)
        for _ in range(5):
            time.sleep(0.3)
            a.renew()
        self.assertTrue(a.lease_valid())
        self.assertTrue(a.verify(c, 1))
        lease = a.read_node_lease("wasmtime-a")
        self.assertEqual(fields(lease, "node", "addr"), ["wasmtime-a", "a.test:1"])

    def test_low_level_records_follow_their_guards(self):
        s = Scope()
        a = s.leased("low")
        c = cell("low")
        self.assertEqual(a.cas_owner(c, ABSENT, 5), "applied")
        self.assertEqual(a.cas_owner(c, ABSENT, 6), "rejected")
        etag = a.read_owner(c).etag
        self.assertEqual(a.cas_owner(c, etag, 6), "applied")
        self.assertEqual(a.cas_owner(c, etag, 7), "rejected")
        o = s.make("x", node=f"wasmtime-low-lease-{unique()}")
        first = o.cas_node_lease(ABSENT, 1000)
        self.assertEqual(first.tag, "applied")
        self.assertEqual(o.cas_node_lease(ABSENT, 2000).tag, "rejected")
        self.assertEqual(o.cas_node_lease(first.payload, 3000).tag, "applied")
        self.assertEqual(getattr(o.read_node_lease(o.id()), "expires-ms"), 3000)

    def test_bad_input_is_invalid_input_and_the_node_keeps_working(self):
        s = Scope()
        a = s.leased("bad")
        for bad in ["", ".", "..", "a/b", "a\\b", "a\u0001b", "x" * 257]:
            self.rejects("invalid-input", a.claim, bad)
            self.rejects("invalid-input", a.read_owner, bad)
        for epoch in [0, 2**53]:
            self.rejects("invalid-input", a.verify, "c", epoch)
            self.rejects("invalid-input", a.cas_owner, "c", ABSENT, epoch)
        self.rejects("invalid-input", a.cas_owner, "c", "", 1)
        self.rejects("invalid-input", s.make, "n", node="a/b")
        self.rejects("invalid-input", s.make, "n", endpoint="not a url")
        self.rejects("invalid-input", s.make, "n", lease_ttl_ms=100, max_clock_skew_ms=100)
        e = self.rejects("invalid-input", s.make, "n", secret_access_key="")
        self.assertNotIn(SERVER["secret"], str(e))
        self.assertEqual(a.claim(cell("still-works")).tag, "applied")

    def test_corrupt_records_are_corrupt_record_naming_the_key_and_left_alone(self):
        s = Scope()
        a = s.leased("corrupt")
        c = f"corrupt-{unique()}"
        s.plant(f"cells/{c}/own.json", "<html>not json</html>")
        e = self.rejects("corrupt-record", a.claim, c)
        self.assertIn(f"cells/{c}/own.json", str(e))
        self.assertEqual(s.raw(f"cells/{c}/own.json"), "<html>not json</html>")
        self.assertEqual(a.claim(cell("after-corrupt")).tag, "applied")

    def test_records_celld_writes_are_read_and_taken_over(self):
        s = Scope()
        a = s.leased("celld")
        c = f"celld-{unique()}"
        s.plant(f"cells/{c}/own.json", json.dumps({"node": "celld-9", "epoch": 41, "extra": {"x": 1}}))
        s.plant("nodes/celld-9.json", json.dumps({"node": "celld-9", "expires_ms": 1, "addr": "10.0.0.9:4000", "load": 0.5}))
        self.assertEqual(fields(a.owner(c), "node", "epoch", "addr", "live"), ["celld-9", 41, "10.0.0.9:4000", False])
        self.assertEqual(a.claim(c).payload.epoch, 42)
        body = json.loads(s.raw(f"cells/{c}/own.json"))
        self.assertEqual([body["node"], body["epoch"], type(body["nonce"])], ["wasmtime-celld", 42, str])

    def test_close_retires_the_lease_so_a_peer_takes_over_at_once(self):
        s = Scope()
        a = s.leased("a", lease_ttl_ms=60000)
        c = cell("close")
        a.claim(c)
        closed = a.close(False)
        self.assertEqual(fields(closed, "retired", "released"), [True, 0])
        self.assertFalse(a.lease_valid())
        self.rejects("not-leased", a.claim, cell("after-close"))
        b = s.leased("b")
        took = b.claim(c)
        self.assertEqual(fields(took.payload, "epoch", "took-over"), [2, True])

    def test_a_wrong_secret_is_auth_with_the_store_code(self):
        s = Scope()
        a = s.make("wrong", secret_access_key="not-the-secret", probe="off")
        e = self.rejects("auth", a.acquire_lease)
        self.assertEqual(e.status, 403)
        self.assertTrue(e.store_code, "the store's S3 code is kept")

    def test_a_store_that_refuses_a_write_before_reading_its_body_is_auth(self):
        # wasmtime writes a body after the request is handed over, so a refusal can come before the body
        # is read: the answer is still the store's (auth, with its code). With records this small the
        # write itself has not been seen to fail here (docs/component.md).
        class Refusing(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.answer(404, b"<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>")

            def do_PUT(self):
                self.answer(403, b"<Error><Code>SignatureDoesNotMatch</Code><Message>refused early</Message></Error>")
                self.rfile.read(int(self.headers.get("content-length", 0)))  # then drained, as servers do

            def answer(self, status, body):
                self.send_response(status)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            a = Scope().make("early", endpoint=f"http://127.0.0.1:{server.server_address[1]}", probe="off")
            e = self.rejects("auth", a.acquire_lease)
            self.assertEqual([e.status, e.store_code], [403, "SignatureDoesNotMatch"])
        finally:
            server.shutdown()
            server.server_close()

    def test_an_unreachable_store_is_transport(self):
        s = Scope()
        a = s.make("gone", endpoint="http://127.0.0.1:9", probe="off", request_timeout_ms=2000)
        e = self.rejects("transport", a.acquire_lease)
        self.assertIn("ECONNREFUSED", str(e))


class Signing(unittest.TestCase):
    def test_a_presigned_url_is_accepted_by_the_server(self):
        key = f"t-wasmtime-{unique()}/presigned"
        status, _ = s3_request(HOST, SERVER, "PUT", key, b"hello")
        self.assertEqual(status, 200)
        url = HOST.presign_url("GET", f"{SERVER['endpoint']}/{SERVER['bucket']}/{key}", 60,
                               access_key_id=SERVER["key_id"], secret_access_key=SERVER["secret"])
        with urllib.request.urlopen(url, timeout=10) as res:
            self.assertEqual(res.read(), b"hello")

    def test_bad_input_is_invalid_input(self):
        with self.assertRaises(ComponentError) as caught:
            HOST.sign_request("GET", "ftp://x/y", access_key_id="k", secret_access_key="s")
        self.assertEqual(caught.exception.code, "invalid-input")
        with self.assertRaises(ComponentError) as caught:
            HOST.presign_url("GET", "https://x/y", 0, access_key_id="k", secret_access_key="s")
        self.assertEqual(caught.exception.code, "invalid-input")


class Proxy(unittest.TestCase):
    """examples/component-proxy under `wasmtime serve`, run as the README says."""

    def test_answers_cells_like_the_workers_quick_start(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = dict(S3_ENDPOINT=SERVER["endpoint"], S3_BUCKET=SERVER["bucket"], AWS_ACCESS_KEY_ID=SERVER["key_id"],
                   AWS_SECRET_ACCESS_KEY=SERVER["secret"], CELLD_PREFIX=f"t-proxy-{unique()}/")
        args = ["wasmtime", "serve", "-S", "cli", "--addr", f"127.0.0.1:{port}"]
        for name, value in env.items():
            args += ["--env", f"{name}={value}"]
        serve = subprocess.Popen(args + [PROXY], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            for _ in range(300):
                self.assertIsNone(serve.poll(), "wasmtime serve exited")
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.1)

            def get(path):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as res:
                        return res.status, json.loads(res.read())
                except urllib.error.HTTPError as e:
                    return e.code, json.loads(e.read())

            c = f"proxy:{unique()}"
            self.assertEqual(get(f"/cells/{urllib.parse.quote(c)}"), (200, {"outcome": "applied", "epoch": 1, "tookOver": False, "prior": None}))
            # The next request is another instance, so another node: the first one's claim is live.
            status, owner = get(f"/cells/{urllib.parse.quote(c)}")
            self.assertEqual(status, 200)
            self.assertEqual([owner["epoch"], owner["live"], owner["held"], owner["node"].startswith("edge-")], [1, True, False, True])
            self.assertEqual(get("/elsewhere")[0], 404)
            status, error = get("/cells/a%2Fb")
            self.assertEqual([status, error["error"]], [400, "invalid-input"])
        finally:
            serve.kill()
            serve.wait()
            serve.stderr.close()


class World(unittest.TestCase):
    def test_imports_wasi_only(self):
        wit = subprocess.run(["wasm-tools", "component", "wit", COMPONENT], check=True, capture_output=True, text=True).stdout
        imports = sorted({line.split()[1].rstrip(";").split("@")[0] for line in wit.splitlines() if line.strip().startswith("import ")})
        exports = sorted({line.split()[1].rstrip(";") for line in wit.splitlines() if line.strip().startswith("export ")})
        self.assertEqual(exports, ["celld:edge/ownership@0.1.0", "celld:edge/signing@0.1.0", "celld:edge/types@0.1.0"])
        allowed = {"wasi:http/outgoing-handler", "wasi:http/types", "wasi:clocks/monotonic-clock", "wasi:clocks/wall-clock",
                   "wasi:random/random", "wasi:random/insecure-seed", "wasi:io/poll", "wasi:io/error", "wasi:io/streams"}
        # Rust's std links wasi:cli (environment, exit, stdio, terminals); never sockets or the filesystem.
        std = {i for i in imports if i.startswith("wasi:cli/")}
        self.assertEqual(sorted(set(imports) - allowed - std), [])
        self.assertFalse([i for i in imports if i.startswith(("wasi:sockets", "wasi:filesystem"))])
        self.assertIn("wasi:http/outgoing-handler", imports)


if __name__ == "__main__":
    unittest.main(verbosity=2)
