"""One component node of the mixed race (tests/component/race.test.mjs), as its own process so that the
test can kill and restart it: tests/race/process-racer.mjs's loop and log, with the node in the component
(wasmtime-py). It claims random cells until its stop file appears; for each claim won it holds the cell
and acts on it a few times (each act stamped before checking lease-valid, so a pause between the two can
only hide an act, never invent one), verifies and releases. Nothing renews between calls: the calls it
makes renew a due lease (SPEC 4.4). Every event is appended to its log file at once.
Usage: python racer.py '{"server":…,"prefix":…,"node":…,"cells":[…],"logFile":…,"stopFile":…,"leaseTtlMs":…,"maxClockSkewMs":…}'"""

import json
import os
import random
import sys
import time

from host import ComponentError, Host

o = json.loads(sys.argv[1])
s = o["server"]


def log(ev, **entry):
    with open(o["logFile"], "a") as f:
        f.write(json.dumps({"node": o["node"], "pid": os.getpid(), "t": int(time.time() * 1000), "ev": ev, **entry}) + "\n")


node = Host().open(endpoint=s["endpoint"], bucket=s["bucket"], access_key_id=s["accessKeyId"], secret_access_key=s["secretAccessKey"],
                   prefix=o["prefix"], node=o["node"], addr=f"{o['node']}:1", lease_ttl_ms=o["leaseTtlMs"], max_clock_skew_ms=o["maxClockSkewMs"])


def leased():
    """Until this node holds a lease: a restarted process waits out its predecessor's."""
    while True:
        try:
            node.acquire_lease()
            log("leased")
            return
        except ComponentError as e:
            if e.code != "not-leased":
                log("error", op="acquireLease", code=e.code, message=str(e))
            time.sleep(0.1)


log("started")
leased()
while not os.path.exists(o["stopFile"]):
    cell = random.choice(o["cells"])
    try:
        if not node.lease_valid():
            leased()
        r = node.claim(cell)
        if r.tag != "applied":
            continue
        epoch = r.payload.epoch
        log("won", cell=cell, epoch=epoch, tookOver=getattr(r.payload, "took-over"))
        for _ in range(3):
            time.sleep(0.1 + random.random() * 0.1)
            t = int(time.time() * 1000)
            if not node.lease_valid():
                log("lost", cell=cell, epoch=epoch)
                break
            log("act", cell=cell, epoch=epoch, t=t)
        log("verified", cell=cell, epoch=epoch, ok=node.verify(cell, epoch))
        log("released", cell=cell, epoch=epoch, outcome=node.release(cell))
    except ComponentError as e:
        log("error", op="claim", cell=cell, code=e.code, message=str(e))
try:
    node.close(False)
except ComponentError as e:
    log("error", op="close", code=e.code, message=str(e))
log("stopped")
