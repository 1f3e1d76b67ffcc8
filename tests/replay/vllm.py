#!/usr/bin/env python3
"""Replays vLLM's per-rank compile cache on a directory (VLLM_CACHE_ROOT).

vLLM gives each rank its own caches under
VLLM_CACHE_ROOT/torch_compile_cache/HASH/rank_0_R/: Triton's
(triton_cache/, its TRITON_CACHE_DIR), Inductor's (inductor_cache/, with
FX graph entries) and its own compile artifacts.  Every rank compiles the
same kernels, so every rank writes the same bytes.

Each of --ranks processes, in parallel, replays the Triton traffic of the
source cache (replay.py, Triton 3.6's put protocol) on its triton_cache/,
and writes (cold) or reads back and checks (warm) the other files, each
written as Inductor and vLLM do: to a temp name beside it, then renamed.
Prints one JSON line as replay.py does, plus each rank's root and the
other files it wrote or checked.  Exit 1 on any error.
"""
import argparse
import json
import multiprocessing
import os
import random
import sys
import time

import replay

HASH = "5d1b0f3c7a"


def rank_dir(cache, rank):
    return os.path.join(cache, "torch_compile_cache", HASH, f"rank_0_{rank}")


def other_files():
    """(path below the rank dir, bytes): the same on every rank."""
    rng = random.Random(7)
    fx = bytes(rng.getrandbits(8) for _ in range(48 * 1024))
    graph = "".join(f"t{i} = torch.ops.aten.add(x, {i})\n"
                    for i in range(800)).encode()
    artifact = bytes(rng.getrandbits(8) for _ in range(96 * 1024))
    return [
        ("inductor_cache/fxgraph/ab/fabcdefghijklmnopqrstuvwxyz234567abcdef"
         "ghijklmnopqrs/0", fx),
        ("computation_graph.py", graph),
        ("backbone/artifact_compile_range_1_8192_subgraph_0", artifact),
    ]


def write_atomic(path, data):
    """Inductor's write_atomic: a temp file beside it, renamed over it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def rank(args):
    src, cache, r, warm = args
    base = rank_dir(cache, r)
    root = os.path.join(base, "triton_cache")
    if not warm:
        os.makedirs(root, exist_ok=True)
    out = replay.worker((src, root, "3.6", False, "native", None))
    for rel, data in other_files():
        path = os.path.join(base, rel)
        try:
            if warm:
                with open(path, "rb") as f:
                    if f.read() != data:
                        out["errors"].append(f"{path}: bytes differ")
            else:
                write_atomic(path, data)
        except OSError as e:
            out["errors"].append(f"{path}: {e}")
    out["root"] = os.path.relpath(root, cache)
    out["other_files"] = len(other_files())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", help="a Triton cache to replay (read-only)")
    ap.add_argument("cache", help="VLLM_CACHE_ROOT to replay it on")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--warm", action="store_true",
                    help="read the other files back rather than write them")
    a = ap.parse_args()
    cache = os.path.abspath(a.cache)
    t0 = time.perf_counter()
    jobs = [(a.source, cache, r, a.warm) for r in range(a.ranks)]
    # One process per rank, as vLLM runs them: a worker never takes two.
    with multiprocessing.Pool(a.ranks, maxtasksperchild=1) as pool:
        results = pool.map(rank, jobs, chunksize=1)
    errors = [e for r in results for e in r["errors"]]
    print(json.dumps({"elapsed": time.perf_counter() - t0, "procs": results,
                      "errors": len(errors)}))
    for e in errors[:20]:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
