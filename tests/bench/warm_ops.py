#!/usr/bin/env python3
"""Where a warm start's time goes: replay.py's hit path, timed per call.

Does what tests/replay/replay.py does on a hit (makedirs of the key dir,
exists and json.load of the group file, exists and a full read of every
child, modules opened and mapped PROT_EXEC), without checking the bytes,
and prints one JSON object: milliseconds spent in each kind of call, and
in all.  tests/bench/replay.sh runs it on plain disk and on the mount.

    warm_ops.py SOURCE CACHE
"""
import json
import mmap
import os
import sys
import time


def key_dirs(src):
    for key in sorted(os.listdir(src)):
        files = sorted(os.listdir(os.path.join(src, key)))
        yield key, next((f for f in files if f.startswith("__grp__")), None), files


def main():
    src, root = sys.argv[1], sys.argv[2]
    spent = {}
    clock = time.perf_counter

    def timed(what, fn, *args, **kw):
        t0 = clock()
        out = fn(*args, **kw)
        spent[what] = spent.get(what, 0.0) + clock() - t0
        return out

    def load_module(path):
        f = timed("open", open, path, "rb")
        size = timed("fstat", os.fstat, f.fileno()).st_size
        m = timed("mmap", mmap.mmap, f.fileno(), size, flags=mmap.MAP_PRIVATE,
                  prot=mmap.PROT_READ | mmap.PROT_EXEC)
        timed("read", m.__getitem__, slice(None))
        m.close()
        timed("close", f.close)

    dirs = list(key_dirs(src))
    start = clock()
    for key, group, files in dirs:
        keydir = os.path.join(root, key)
        timed("makedirs KEY", os.makedirs, keydir, exist_ok=True)
        if group is None:
            for name in files:
                timed("exists", os.path.exists, os.path.join(keydir, name))
                load_module(os.path.join(keydir, name))
            continue
        gpath = os.path.join(keydir, group)
        timed("exists group", os.path.exists, gpath)
        f = timed("open group", open, gpath)
        paths = timed("read", json.load, f)["child_paths"]
        timed("close", f.close)
        for path in paths.values():
            timed("exists", os.path.exists, path)
            f = timed("open", open, path, "rb")
            timed("read", f.read)
            timed("close", f.close)
    spent["all"] = clock() - start
    print(json.dumps({k: round(v * 1e3, 3) for k, v in spent.items()}))


if __name__ == "__main__":
    main()
