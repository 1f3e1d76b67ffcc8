#!/usr/bin/env python3
"""Writers racing for the last room on a nearly full disk, and the check
that none of them was lied to (tests/e2e/full_disk.sh).

    full_writers.py replace DIR KEY ROUND OUT.json   # 8 processes: write a
        file in KEY/tmp.pid_*, close it, os.replace it to KEY/w<ROUND>_<i>
    full_writers.py rewrite DIR KEY ROUND OUT.json   # 10 empty files
        KEY/e<ROUND>_<i> made first, then each rewritten with open('r+b')
    full_writers.py check DIR OUT.json...             # every name holds
        exactly what its writer was told was written

Each writer writes 900 KiB of its own bytes and records, for its file,
which step failed (write, close, replace) with what error, if one did.
check: a file whose every step succeeded holds exactly its bytes; one
whose replace did not succeed is not there; one rewritten in place holds
a prefix of its bytes (what the writes that succeeded wrote).  Prints
what is wrong; exit 1 if anything is.
"""
import json
import multiprocessing
import os
import random
import sys

SIZE = 900 * 1024
WRITERS = {"replace": 8, "rewrite": 10}


def data(seed):
    return random.Random(seed).randbytes(SIZE)


def steps(path, seed, tmp=None):
    """Writes seed's bytes to tmp (or path, in place), closes, replaces:
    the step that failed and why, or (None, None)."""
    step = "open"
    try:
        f = open(tmp or path, "wb" if tmp else "r+b")
        step = "write"
        try:
            f.write(data(seed))
            f.flush()
        except OSError:
            try:
                f.close()
            except OSError:
                pass
            raise
        step = "close"
        f.close()
        if tmp:
            step = "replace"
            os.replace(tmp, path)
        return None, None
    except OSError as e:
        return step, os.strerror(e.errno or 0)


def writer(args):
    mode, d, key, rnd, i = args
    seed = "%s-%s-%d" % (key, rnd, i)
    path = os.path.join(d, key, "%s%s_%d" % ("w" if mode == "replace" else "e", rnd, i))
    tmp = None
    if mode == "replace":
        tmpdir = os.path.join(d, key, "tmp.pid_%d_%d" % (os.getpid(), i))
        os.makedirs(tmpdir, exist_ok=True)
        tmp = os.path.join(tmpdir, os.path.basename(path))
    failed, err = steps(path, seed, tmp)
    if tmp:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        try:
            os.rmdir(os.path.dirname(tmp))
        except OSError:
            pass
    return {"mode": mode, "path": os.path.relpath(path, d), "seed": seed,
            "failed": failed, "error": err}


def run(mode, d, key, rnd, out):
    os.makedirs(os.path.join(d, key), exist_ok=True)
    n = WRITERS[mode]
    if mode == "rewrite":
        for i in range(n):
            open(os.path.join(d, key, "e%s_%d" % (rnd, i)), "wb").close()
    with multiprocessing.Pool(n) as p:
        res = p.map(writer, [(mode, d, key, rnd, i) for i in range(n)])
    json.dump(res, open(out, "w"))
    ok = sum(1 for r in res if not r["failed"])
    print("%s round %s: %d of %d writers succeeded; failures: %s" % (
        mode, rnd, ok, n,
        sorted(set("%s (%s)" % (r["failed"], r["error"]) for r in res if r["failed"]))))


def check(d, outs):
    bad = []
    for out in outs:
        for r in json.load(open(out)):
            p = os.path.join(d, r["path"])
            want = data(r["seed"])
            try:
                got = open(p, "rb").read()
            except FileNotFoundError:
                got = None
            except OSError as e:
                bad.append("%s: %s" % (r["path"], e))
                continue
            if not r["failed"]:
                if got != want:
                    bad.append("%s: acknowledged, but holds %s bytes that are not its own"
                               % (r["path"], "no" if got is None else len(got)))
            elif r["mode"] == "replace":
                if got is not None:
                    bad.append("%s: its %s failed, yet it is there" % (r["path"], r["failed"]))
            elif got is None or want[:len(got)] != got:
                bad.append("%s: its %s failed, and it holds bytes never written to it"
                           % (r["path"], r["failed"]))
    for b in bad[:20]:
        print(b)
    return 1 if bad else 0


def main():
    if sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3:]))
    run(*sys.argv[1:6])


if __name__ == "__main__":
    main()
