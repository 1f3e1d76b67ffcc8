#!/usr/bin/env python3
"""Probes a mounted cache the way Triton does (a stat of KEY/__grp__NAME.json)
for tests/bench/scale.sh.

    probe_scale.py all MOUNT PLAIN       every kernel once, hits only
    probe_scale.py time MOUNT PLAIN K [SEED]
                                         K hits and K misses, timed one by
                                         one: prints the median of each in
                                         microseconds; each SEED (1 if
                                         none) picks other kernels, and
                                         misses never probed before

The kernels' keys and names come from PLAIN, the same cache on plain disk.
A miss is a new key, as a kernel Triton has not compiled yet; each is
looked up once, since the kernel then caches it as a negative entry.
"""
import os
import random
import statistics
import sys
import time


def grps(plain):
    out = []
    for key in os.listdir(plain):
        for f in os.listdir(os.path.join(plain, key)):
            if f.startswith("__grp__"):
                out.append(key + "/" + f)
    return out


def main():
    mode, mnt, plain = sys.argv[1], sys.argv[2], sys.argv[3]
    paths = grps(plain)
    if mode == "all":
        for p in paths:
            os.stat(os.path.join(mnt, p))
        return
    k = int(sys.argv[4])
    rnd = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    hits, misses = [], []
    for p in rnd.choices(paths, k=k):
        full = os.path.join(mnt, p)
        a = time.perf_counter()
        os.stat(full)
        hits.append(time.perf_counter() - a)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    for _ in range(k):
        key = "".join(rnd.choice(alphabet) for _ in range(52))
        full = os.path.join(mnt, key, "__grp__kernel_00000.json")
        a = time.perf_counter()
        try:
            os.stat(full)
        except FileNotFoundError:
            pass
        misses.append(time.perf_counter() - a)
    print("%.1f %.1f" % (statistics.median(hits) * 1e6,
                         statistics.median(misses) * 1e6))


if __name__ == "__main__":
    main()
