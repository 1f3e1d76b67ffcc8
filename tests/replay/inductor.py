#!/usr/bin/env python3
"""Replays Inductor's use of TORCHINDUCTOR_CACHE_DIR, as torch 2.11 does it
(tests/fixtures/inductor-2.11-trace.txt), on a directory: N FX graphs, N
AOTAutograd entries, N compiled modules and N autotune results.

  cold: each FX graph and AOTAutograd entry: exists(dir) is False, makedirs,
        the entry written to a temp file (.PID.TID.tmp) and renamed into the
        dir, named by its bytes' hash as Inductor names it; each
        module: exists(XX/CKEY.py) is False, written to XX/.tmp, renamed,
        read; each autotune result: exists is False, written, renamed.
  warm: each FX graph and AOTAutograd entry: exists(dir), listdir, the entry
        read; each module and autotune result: exists, read.

    inductor.py [--warm] [--n N] [--seed S] [--only KIND,...] CACHE_DIR

Prints one JSON line: {"seen": {KIND: {"hits", "misses"}}, "errors": [...]}
with KIND fxgraph, aotautograd, pycode, best_config; a hit is a lookup that
found its entry.  Exit 1 on any error.
"""
import argparse
import base64
import hashlib
import json
import os
import sys
import threading


def key(letter, seed, i, what):
    digest = hashlib.sha256(f"{seed}/{what}/{i}".encode()).digest()
    return letter + base64.b32encode(digest).decode().lower()[:51]


def sha256_hash(data):
    """How Inductor names an entry: by its bytes (codecache.sha256_hash)."""
    return base64.b32encode(hashlib.sha256(data).digest())[:51].decode().lower()


def put(path, data):
    """write_atomic: a temp file in the same dir, then a rename."""
    tmp = os.path.join(os.path.dirname(path),
                       f".{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


def entry(root, sub, k, warm, seen, kind):
    """An FX graph or AOTAutograd entry: the dir KEY, one entry in it."""
    d = os.path.join(root, sub, k)
    if os.path.exists(d):
        seen[kind]["hits"] += 1
        for name in os.listdir(d):
            with open(os.path.join(d, name), "rb") as f:
                f.read()
        return
    seen[kind]["misses"] += 1
    if warm:
        raise RuntimeError(f"{kind} {k}: missing on a warm run")
    os.makedirs(d, exist_ok=True)
    data = os.urandom(4096)
    put(os.path.join(d, sha256_hash(data)), data)


def flat(root, name, warm, seen, kind):
    """A compiled module or an autotune result: XX/NAME."""
    p = os.path.join(root, name)
    if os.path.exists(p):
        seen[kind]["hits"] += 1
    else:
        seen[kind]["misses"] += 1
        if warm:
            raise RuntimeError(f"{kind} {name}: missing on a warm run")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        put(p, os.urandom(2048))
    with open(p, "rb") as f:
        f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--seed", default="s")
    ap.add_argument("--only", default="fxgraph,aotautograd,pycode,best_config",
                    help="the kinds to replay, comma-separated")
    ap.add_argument("root")
    a = ap.parse_args()
    kinds = ("fxgraph", "aotautograd", "pycode", "best_config")
    only = set(a.only.split(","))
    seen = {k: {"hits": 0, "misses": 0} for k in kinds}
    errors = []
    for i in range(a.n):
        try:
            fk = key("f", a.seed, i, "fx")
            if "fxgraph" in only:
                entry(a.root, os.path.join("fxgraph", fk[1:3]), fk, a.warm,
                      seen, "fxgraph")
            if "aotautograd" in only:
                entry(a.root, "aotautograd", key("a", a.seed, i, "aot"),
                      a.warm, seen, "aotautograd")
            ck = key("c", a.seed, i, "py")
            if "pycode" in only:
                flat(a.root, os.path.join(ck[1:3], ck + ".py"), a.warm, seen,
                     "pycode")
            h = hashlib.sha256(f"{a.seed}/bc/{i}".encode()).hexdigest()
            if "best_config" in only:
                flat(a.root, os.path.join(ck[1:3], h + ".best_config"),
                     a.warm, seen, "best_config")
        except (OSError, RuntimeError) as e:
            errors.append(str(e))
    print(json.dumps({"pid": os.getpid(), "seen": seen, "errors": errors}))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
