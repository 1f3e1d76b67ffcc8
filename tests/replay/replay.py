#!/usr/bin/env python3
"""Replays Triton's exact cache traffic on a directory, from a real cache.

The source is a Triton cache (a fixture).  Against the target directory
(TRITON_CACHE_DIR: a tcfs mount, or a plain directory to compare with),
each process does what Triton 3.6 does for every key dir of the source, in
order (doc/triton-cache.md):

  cold (a miss): makedirs(KEY, exist_ok); exists(__grp__NAME.json) is False;
      every artifact written with the put protocol (mkdir tmp.pid_<pid>_<uuid>,
      write, rename into KEY, os.removedirs of the temp dir, which must stop at
      KEY with ENOTEMPTY), the group file last, naming children under the
      target; a module (.so) is then opened and mapped PROT_EXEC as dlopen does.
  warm (a hit): makedirs(KEY, exist_ok); exists(group); json.load(group);
      exists(child) and a full read of every child; modules mapped PROT_EXEC.

--protocol 3.0 writes FILE.tmp.pid_<pid>_<rand> in place (Triton 3.0/3.1);
--protocol inductor writes a whole key dir as root/tmp.<uuid> and renames it
onto the empty KEY (PyTorch Inductor's bundler).  --opens 3.14 opens files
as CPython >= 3.14 does, without the isatty ioctl older versions send on
every open().  Every byte read is checked against
the source.  Prints one JSON line: what each process saw (hits, misses per
kind) and read back (read_bytes), the errors, and the elapsed seconds.
Exit 1 on any error.
"""
import argparse
import errno
import io
import json
import mmap
import os
import random
import subprocess
import sys
import time
import uuid

# How files are opened: as this Python does, or as CPython >= 3.14 does.
# Up to 3.13 every open() asks isatty() (a TCGETS ioctl), which FUSE always
# forwards to the daemon; 3.14 knows a regular file from open's own fstat.
OPENS = "native"
# Bytes this process read back from the cache (hits: group files, their
# children, modules), to compare views that list fewer files.
READ_BYTES = 0


def xopen(path, mode="r"):
    if OPENS == "3.14":
        # An explicit buffer size is what makes older versions skip isatty.
        return open(path, mode, buffering=io.DEFAULT_BUFFER_SIZE)
    return open(path, mode)


ORDER = [".source", ".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn", ".cubin",
         ".hsaco", ".json"]


def key_dirs(src):
    """(key, group name or None, files) for every key dir, sorted."""
    out = []
    for key in sorted(os.listdir(src)):
        files = sorted(os.listdir(os.path.join(src, key)))
        group = next((f for f in files if f.startswith("__grp__")), None)
        out.append((key, group, files))
    return out


def artifact_order(name):
    for i, ext in enumerate(ORDER):
        if name.endswith(ext):
            return i
    return len(ORDER)


def read_src(src, key, name):
    with xopen(os.path.join(src, key, name), "rb") as f:
        return f.read()


def group_bytes(root, key, children):
    """A group file exactly as Triton writes it."""
    paths = {c: os.path.join(root, key, c) for c in children}
    return json.dumps({"child_paths": paths}).encode()


LANDED = None  # --landed: an O_APPEND fd, one line per landing


def landed(path):
    """Notes a file that os.replace put in place (one write, so the lines
    of racing processes never mix)."""
    if LANDED is not None:
        os.write(LANDED, (path + "\n").encode())


def put(root, key, name, data, protocol):
    keydir = os.path.join(root, key)
    if protocol == "3.0":
        tmp = os.path.join(keydir, f"{name}.tmp.pid_{os.getpid()}_"
                           f"{random.randint(0, 1 << 30)}")
        with xopen(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(keydir, name))
        landed(os.path.join(key, name))
        return
    tmpdir = os.path.join(keydir, f"tmp.pid_{os.getpid()}_{uuid.uuid4()}")
    os.makedirs(tmpdir, exist_ok=True)
    tmp = os.path.join(tmpdir, name)
    with xopen(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(keydir, name))
    landed(os.path.join(key, name))
    try:
        os.removedirs(tmpdir)  # must stop at KEY: ENOTEMPTY
    except OSError as e:
        if e.errno != errno.ENOTEMPTY:
            raise


def load_module(path, want):
    """What dlopen does with a cached extension: a private executable map."""
    global READ_BYTES
    with xopen(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        READ_BYTES += size
        m = mmap.mmap(f.fileno(), size, flags=mmap.MAP_PRIVATE,
                      prot=mmap.PROT_READ | mmap.PROT_EXEC)
        try:
            return m[:] == want
        finally:
            m.close()


def write_kernel(src, root, key, group, files, protocol):
    children = sorted((f for f in files if f != group), key=artifact_order)
    if protocol == "inductor":
        tmp = os.path.join(root, f"tmp.{uuid.uuid4().hex}")
        os.mkdir(tmp)
        for c in children + [group]:
            data = (group_bytes(root, key, children) if c == group
                    else read_src(src, key, c))
            with xopen(os.path.join(tmp, c), "wb") as f:
                f.write(data)
        try:
            os.replace(tmp, os.path.join(root, key))
            for c in children + [group]:
                landed(os.path.join(key, c))
        except OSError as e:  # another process landed it first
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            for c in children + [group]:
                os.unlink(os.path.join(tmp, c))
            os.rmdir(tmp)
        return
    for c in children:
        put(root, key, c, read_src(src, key, c), protocol)
    put(root, key, group, group_bytes(root, key, children), protocol)


def read_kernel(src, root, key, group):
    """The hit path; returns a list of errors."""
    global READ_BYTES
    errors = []
    with xopen(os.path.join(root, key, group), "rb") as f:
        raw = f.read()
    READ_BYTES += len(raw)
    paths = json.loads(raw)["child_paths"]
    for name, path in paths.items():
        if not path.startswith(os.path.join(root, key) + "/"):
            errors.append(f"{key}/{group}: child {path} not under the cache")
        if not os.path.exists(path):
            errors.append(f"{path}: listed but missing")
            continue
        with xopen(path, "rb") as f:
            data = f.read()
        READ_BYTES += len(data)
        if data != read_src(src, key, name):
            errors.append(f"{path}: bytes differ from the source")
    return errors


def one_key(src, root, key, group, files, protocol, seen):
    keydir = os.path.join(root, key)
    # Triton's FileCacheManager makes the key dir on every lookup; this is
    # why Inductor's bundler renames onto an empty directory.
    os.makedirs(keydir, exist_ok=True)
    if group is None:  # a module dir: cuda_utils / launcher .so
        errors = []
        for name in files:
            path = os.path.join(keydir, name)
            hit = os.path.exists(path)
            seen["module"]["hits" if hit else "misses"] += 1
            if not hit:
                put(root, key, name, read_src(src, key, name),
                    "3.0" if protocol == "3.0" else "3.6")
            if not load_module(path, read_src(src, key, name)):
                errors.append(f"{path}: mapped bytes differ")
        return errors
    hit = os.path.exists(os.path.join(keydir, group))
    seen["kernel"]["hits" if hit else "misses"] += 1
    if not hit:
        write_kernel(src, root, key, group, files, protocol)
    return read_kernel(src, root, key, group)


def worker(args):
    global OPENS, LANDED
    src, root, protocol, shuffle, OPENS, landed_log = args
    if landed_log:
        LANDED = os.open(landed_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                         0o644)
    seen = {"kernel": {"hits": 0, "misses": 0},
            "module": {"hits": 0, "misses": 0}}
    errors = []
    dirs = key_dirs(src)
    if shuffle:
        random.Random(os.getpid()).shuffle(dirs)
    for key, group, files in dirs:
        try:
            errors += one_key(src, root, key, group, files, protocol, seen)
        except OSError as e:
            errors.append(f"{key}: {e}")
    return {"pid": os.getpid(), "seen": seen, "errors": errors,
            "read_bytes": READ_BYTES}


def run_procs(job, n):
    """n workers, each a process of its own that prints its result.  Not
    multiprocessing's pool: its semaphores need a /dev/shm that this user
    may write, and a chroot's may be 0755 (a replay runs as other uids)."""
    argv = [sys.executable, os.path.abspath(__file__), "--worker",
            "--protocol", job[2], "--opens", job[4]]
    argv += ["--shuffle"] if job[3] else []
    argv += ["--landed", job[5]] if job[5] else []
    procs = [subprocess.Popen(argv + [job[0], job[1]],
                              stdout=subprocess.PIPE) for _ in range(n)]
    results = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"a worker exited {p.returncode}")
        results.append(json.loads(out))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", help="a Triton cache to replay (read-only)")
    ap.add_argument("cache", help="TRITON_CACHE_DIR to replay it on")
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--protocol", choices=["3.6", "3.0", "inductor"],
                    default="3.6")
    ap.add_argument("--opens", choices=["native", "3.14"], default="native",
                    help="open files as this Python does, or as CPython "
                    ">= 3.14 does (no isatty ioctl per open)")
    ap.add_argument("--shuffle", action="store_true",
                    help="each process takes the key dirs in its own order")
    ap.add_argument("--landed", metavar="FILE",
                    help="append KEY/NAME of every file as soon as its "
                    "os.replace returns (what a crash must not lose)")
    ap.add_argument("--worker", action="store_true",
                    help=argparse.SUPPRESS)  # one of --procs' processes
    a = ap.parse_args()
    root = os.path.abspath(a.cache)
    t0 = time.perf_counter()
    jobs = [(a.source, root, a.protocol, a.shuffle, a.opens,
             a.landed)] * a.procs
    if a.worker:
        print(json.dumps(worker(jobs[0])))
        return 0
    if a.procs == 1:
        results = [worker(jobs[0])]
    else:
        results = run_procs(jobs[0], a.procs)
    elapsed = time.perf_counter() - t0
    errors = [e for r in results for e in r["errors"]]
    print(json.dumps({"elapsed": elapsed, "procs": results,
                      "errors": len(errors)}))
    for e in errors[:20]:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
