#!/usr/bin/env python3
"""A stand-in for inductor_run.py where there is no torch or GPU, so that
inductor_remote.sh's Redis, mount, interop and report plumbing can be
checked anywhere (INDUCTOR_RUN=tests/gpu/inductor_standin.py, PYTHONPATH
with python3-redis).  Inductor's file traffic is tests/replay/inductor.py's
(4 FX graphs, 4 AOTAutograd entries, modules, autotune results); with
TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE=1 it also gets and puts the entries in
Redis as PyTorch's RedisRemoteCache does.  Prints inductor_run.py's line;
its seconds are not a measure of anything."""
import base64
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "replay"))
import inductor as replay  # noqa: E402


def entries():
    """(cache_id, sub dir, key) of each entry the replay makes."""
    for i in range(4):
        fk = replay.key("f", "s", i, "fx")
        yield "fx-graph-v1", os.path.join("fxgraph", fk[1:3]), fk
        yield ("autograd-experimental", "aotautograd",
               replay.key("a", "s", i, "aot"))


def main():
    d = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    r = None
    if os.environ.get("TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE") == "1":
        import redis
        r = redis.Redis(host="127.0.0.1",
                        port=int(os.environ["TORCHINDUCTOR_REDIS_PORT"]))
        for cid, sub, k in entries():
            v, p = r.get(f"pt2:{cid}::{k}:c1"), os.path.join(d, sub, k)
            if v and not os.path.exists(p):
                data = base64.b64decode(json.loads(v)["data"])
                os.makedirs(p)
                replay.put(os.path.join(p, replay.sha256_hash(data)), data)
    run = subprocess.run([sys.executable, replay.__file__, d],
                         capture_output=True, text=True)
    seen = json.loads(run.stdout)
    for cid, sub, k in entries() if r else ():
        p = os.path.join(d, sub, k)
        for name in os.listdir(p):
            data = open(os.path.join(p, name), "rb").read()
            r.set(f"pt2:{cid}::{k}:c1", json.dumps(
                {"data": base64.b64encode(data).decode(),
                 "time_taken_ms": 0}))
    s = seen["seen"]
    print(json.dumps({"label": sys.argv[1], "correct": not seen["errors"],
                      "compile_and_run_seconds": 0.0, "counters": {
                          "fxgraph_cache_hit": s["fxgraph"]["hits"],
                          "fxgraph_cache_miss": s["fxgraph"]["misses"],
                          "autograd_cache_hit": s["aotautograd"]["hits"],
                          "autograd_cache_miss": s["aotautograd"]["misses"]}}))


if __name__ == "__main__":
    main()
