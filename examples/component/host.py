# celld-edge's component under wasmtime, from Python (`pip install wasmtime`): a node acquires its lease and
# claims a cell. The store and the component come from the environment: S3_ENDPOINT, S3_BUCKET,
# AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, S3_PREFIX (optional), CELLD_COMPONENT (the .wasm).
# A result comes back as its value, `ok` or `err`, not raised: check the tag.
import os

from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Record, Variant

engine = Engine()
linker = Linker(engine)
linker.add_wasip2()
linker.add_wasi_http()
store = Store(engine)
store.set_wasi(WasiConfig())
store.set_wasi_http()
instance = linker.instantiate(store, Component.from_file(engine, os.environ["CELLD_COMPONENT"]))
ownership = instance.get_export_index(store, "celld:edge/ownership@0.1.0")


def call(name, *args):
    f = instance.get_func(store, instance.get_export_index(store, name, ownership))
    result = f(store, *args)
    f.post_return(store)
    # A `result<T, error>` is T, or the error record (wasmtime-py tags it "ok"/"err" when T is a record too).
    if isinstance(result, Variant) and result.tag in ("ok", "err"):
        result = result.payload
    if isinstance(result, Record) and hasattr(result, "store-code"):
        raise RuntimeError(f"{name}: {getattr(result, 'code')}: {getattr(result, 'message')}")
    return result


config = Record()
for name, value in {"endpoint": os.environ["S3_ENDPOINT"], "bucket": os.environ["S3_BUCKET"], "region": None,
                    "access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
                    "secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"], "session-token": None,
                    "node": "py-1", "addr": None, "prefix": os.environ.get("S3_PREFIX"), "lease-ttl-ms": None, "max-clock-skew-ms": None,
                    "path-style": None, "request-timeout-ms": None, "probe": None, "ids": None,
                    "celld": None}.items():
    setattr(config, name, value)
node = call("[static]node.open", config)
call("[method]node.acquire-lease", node)
claim = call("[method]node.claim", node, "cell-1")  # a Variant: tag "applied" or "rejected"
print(f"cell-1: {claim.tag}")
