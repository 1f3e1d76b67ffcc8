#!/usr/bin/env python3
"""Writes a synthetic Triton cache of N kernels: variants of a fixture
kernel, each a key dir with its metadata (NAME.json) and group file, as
Triton writes them.  The names are N / PER_NAME kernel names, the targets
cycle over four (cuda 90 and 80, hip gfx942 and gfx90a), warps and stages
vary, so that every name has PER_NAME kernels over the targets, as a big
autotuned cache does.

    gen_kernels.py FIXTURE_CACHE N DEST [PER_NAME]
"""
import base64
import hashlib
import json
import os
import sys

TARGETS = [("cuda", 90, 32), ("cuda", 80, 32), ("hip", "gfx942", 64),
           ("hip", "gfx90a", 64)]


def a_meta(src):
    """The metadata of the first CUDA kernel of the fixture."""
    for key in sorted(os.listdir(src)):
        for f in sorted(os.listdir(os.path.join(src, key))):
            if f.startswith("__grp__"):
                meta = json.load(open(os.path.join(src, key, f[7:])))
                if meta.get("target", {}).get("backend") == "cuda":
                    return meta
    sys.exit("no CUDA kernel in " + src)


def main():
    src, n, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    per_name = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    base = a_meta(src)
    os.makedirs(dest, exist_ok=True)
    for i in range(n):
        key = base64.b32encode(hashlib.sha256(b"%d" % i).digest()).decode()[:52]
        name = "kernel_%05d" % (i % max(1, n // per_name))
        backend, arch, warp = TARGETS[i % len(TARGETS)]
        meta = dict(base, name=name, hash=key, num_warps=1 << (i % 4),
                    num_stages=2 + i % 3, warp_size=warp,
                    target={"backend": backend, "arch": arch,
                            "warp_size": warp})
        d = os.path.join(dest, key)
        os.mkdir(d)
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(d, "__grp__%s.json" % name), "w") as f:
            json.dump({"child_paths": {name + ".json":
                                       os.path.join(dest, key, name + ".json")}}, f)


if __name__ == "__main__":
    main()
