"""celld-edge's component (celld:edge world) driven as a library by wasmtime-py: one engine, store and
instance per `Host`, a `Node` per `node` resource. The world's results come back from wasmtime-py as
values (an `err` is not raised): `call` raises `ComponentError` for one, with the world's error record.
Used by test_wasmtime.py and racer.py; the component is built by scripts/build-component."""

import os
import urllib.request

from wasmtime import Config, Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Record, Variant

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPONENT = os.environ.get("CELLD_COMPONENT", os.path.join(ROOT, "target/component/celld_edge.wasm"))
# The component and examples/component-proxy, where scripts/build-component puts them.
PROXY = os.environ.get("CELLD_COMPONENT_PROXY", os.path.join(ROOT, "target/component/celld-edge-proxy.wasm"))
OWNERSHIP = "celld:edge/ownership@0.1.0"
SIGNING = "celld:edge/signing@0.1.0"


class ComponentError(Exception):
    """An `error` record of the world: `code` is the JS API's error code."""

    def __init__(self, record):
        self.code = getattr(record, "code")
        self.key = getattr(record, "key")
        self.status = getattr(record, "status")
        self.store_code = getattr(record, "store-code")
        super().__init__(f"{self.code}: {getattr(record, 'message')}")


def record(**fields):
    """A WIT record from keyword arguments (`_` in a name is `-` in WIT)."""
    r = Record()
    for name, value in fields.items():
        setattr(r, name.replace("_", "-"), value)
    return r


def unwrap(value):
    """A `result<T, error>` as wasmtime-py gives it: `T`, or `ComponentError` raised."""
    if isinstance(value, Variant) and value.tag in ("ok", "err"):
        if value.tag == "err":
            raise ComponentError(value.payload)
        return value.payload
    if isinstance(value, Record) and hasattr(value, "store-code"):
        raise ComponentError(value)
    return value


_engine = None
_component = None


def _compiled():
    global _engine, _component
    if _component is None:
        _engine = Engine(Config())
        _component = Component.from_file(_engine, COMPONENT)
    return _engine, _component


class Host:
    """One instance of the component."""

    def __init__(self):
        engine, component = _compiled()
        linker = Linker(engine)
        linker.add_wasip2()
        linker.add_wasi_http()
        self.store = Store(engine)
        self.store.set_wasi(WasiConfig())
        self.store.set_wasi_http()
        self.instance = linker.instantiate(self.store, component)
        self._funcs = {}

    def func(self, interface, name):
        key = (interface, name)
        if key not in self._funcs:
            iface = self.instance.get_export_index(self.store, interface)
            index = self.instance.get_export_index(self.store, name, iface)
            if index is None:
                raise KeyError(f"{interface} exports no {name}")
            self._funcs[key] = self.instance.get_func(self.store, index)
        return self._funcs[key]

    def call(self, interface, name, *args):
        f = self.func(interface, name)
        try:
            return unwrap(f(self.store, *args))
        finally:
            f.post_return(self.store)

    def open(self, **config):
        """A `node` from a config record; options left out take the world's defaults."""
        fields = dict(region=None, session_token=None, node=None, addr=None, prefix=None, lease_ttl_ms=None,
                      max_clock_skew_ms=None, path_style=None, request_timeout_ms=None, probe=None, ids=None, celld=None)
        fields.update(config)
        return Node(self, self.call(OWNERSHIP, "[static]node.open", record(**fields)))

    def sign_request(self, method, url, headers=(), body=b"", unsigned_payload=False, region="us-east-1", service=None,
                     access_key_id="", secret_access_key="", session_token=None, datetime=None):
        signed = self.call(SIGNING, "sign-request", record(
            method=method, url=url, headers=list(headers), body=bytes(body), unsigned_payload=unsigned_payload,
            region=region, service=service, datetime=datetime,
            credentials=record(access_key_id=access_key_id, secret_access_key=secret_access_key, session_token=session_token)))
        return getattr(signed, "url"), dict(getattr(signed, "headers"))

    def presign_url(self, method, url, expires_in, region="us-east-1", service=None, access_key_id="", secret_access_key="",
                    session_token=None, datetime=None, signed_headers=()):
        return self.call(SIGNING, "presign-url", record(
            method=method, url=url, region=region, service=service, datetime=datetime, expires_in=expires_in,
            signed_headers=list(signed_headers),
            credentials=record(access_key_id=access_key_id, secret_access_key=secret_access_key, session_token=session_token)))


class Node:
    """A `node` resource: each method is the world's method of the same name."""

    def __init__(self, host, handle):
        self.host = host
        self.handle = handle

    def __getattr__(self, name):
        method = f"[method]node.{name.replace('_', '-')}"
        return lambda *args: self.host.call(OWNERSHIP, method, self.handle, *args)

    def drop(self):
        self.handle.drop(self.host.store)


def s3_request(host, server, method, key, body=b""):
    """A signed request to `server` (signed by the component), by urllib: to plant or read raw records."""
    url = f"{server['endpoint']}/{server['bucket']}/{urllib.request.quote(key)}"
    url, headers = host.sign_request(method, url, body=body, access_key_id=server["key_id"], secret_access_key=server["secret"])
    req = urllib.request.Request(url, data=body if method == "PUT" else None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def real_server():
    """versitygw's coordinates, as scripts/lib/servers.sh exports them."""
    pick = lambda name: os.environ.get(f"CELLD_TEST_REAL_{name}") or (_ for _ in ()).throw(
        RuntimeError(f"CELLD_TEST_REAL_{name} is not set: run through scripts/test"))
    return dict(endpoint=pick("ENDPOINT"), bucket=pick("BUCKET"), key_id=pick("KEY_ID"), secret=pick("SECRET"))
