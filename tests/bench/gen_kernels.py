#!/usr/bin/env python3
"""Writes a synthetic Triton cache of N kernels: variants of a fixture
kernel, each a key dir with its metadata (NAME.json) and group file, as
Triton writes them.  The names are N / PER_NAME kernel names, the targets
cycle over four (cuda 90 and 80, hip gfx942 and gfx90a), warps and stages
vary, so that every name has PER_NAME kernels over the targets, as a big
autotuned cache does.

    gen_kernels.py [--full] FIXTURE_CACHE N DEST [PER_NAME]

--full gives each kernel every file Triton writes (8 in all: source, IR,
assembly and binary of the fixture kernel of its target), so a store of
100,000 kernels has 800,000 files.  The source is shared by the kernels of
one name, as autotuned variants share it; the other files carry the key,
so each is a blob of its own, as compiled variants are.  They are cut to
CAP bytes (1 KiB) so 100,000 kernels fit a VM's disk: the count of files,
not their bytes, is what grows with a store.
"""
import base64
import hashlib
import json
import os
import sys

TARGETS = [("cuda", 90, 32), ("cuda", 80, 32), ("hip", "gfx942", 64),
           ("hip", "gfx90a", 64)]
CAP = 1024


def kernels(src):
    """(metadata, {suffix: bytes}) of the fixture's kernels, by backend."""
    out = {}
    for key in sorted(os.listdir(src)):
        d = os.path.join(src, key)
        for f in sorted(os.listdir(d)):
            if not f.startswith("__grp__"):
                continue
            name = f[7:-5]
            meta = json.load(open(os.path.join(d, name + ".json")))
            backend = meta.get("target", {}).get("backend")
            if backend in out:
                continue
            files = {}
            for g in os.listdir(d):
                if g.startswith(name + ".") and g != name + ".json":
                    files[g[len(name):]] = open(os.path.join(d, g), "rb").read()
            out[backend] = (meta, files)
    if "cuda" not in out:
        sys.exit("no CUDA kernel in " + src)
    out.setdefault("hip", out["cuda"])
    return out


def main():
    args = sys.argv[1:]
    full = args[:1] == ["--full"]
    if full:
        args = args[1:]
    src, n, dest = args[0], int(args[1]), args[2]
    per_name = int(args[3]) if len(args) > 3 else 100
    base = kernels(src)
    os.makedirs(dest, exist_ok=True)
    for i in range(n):
        key = base64.b32encode(hashlib.sha256(b"%d" % i).digest()).decode()[:52]
        name = "kernel_%05d" % (i % max(1, n // per_name))
        backend, arch, warp = TARGETS[i % len(TARGETS)]
        meta, files = base["cuda"] if not full else base[backend]
        meta = dict(meta, name=name, hash=key, num_warps=1 << (i % 4),
                    num_stages=2 + i % 3, warp_size=warp,
                    target={"backend": backend, "arch": arch,
                            "warp_size": warp})
        d = os.path.join(dest, key)
        os.mkdir(d)
        children = {}
        if full:
            for suffix, data in sorted(files.items()):
                mark = (name if suffix == ".source" else key).encode()
                p = os.path.join(d, name + suffix)
                with open(p, "wb") as f:
                    f.write(mark + b"\n" + data[:CAP])
                children[name + suffix] = p
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(meta, f)
        children[name + ".json"] = os.path.join(d, name + ".json")
        with open(os.path.join(d, "__grp__%s.json" % name), "w") as f:
            json.dump({"child_paths": children}, f)


if __name__ == "__main__":
    main()
