#!/usr/bin/env python3
"""A hostile Redis for remote_drip.sh: speaks enough RESP for the mount's
fetches (PING, INFO, AUTH, SELECT, TYPE, STRLEN, MGET), on 127.0.0.1 on a
free port, which it writes to PORT_FILE once it listens.

It holds kernels in tcfs's Redis format (the default key format
triton:{key}:{filename}): each a group of three children, NAME.cubin,
NAME.json and NAME.ptx.

  --honest KEY:NAME    small children, and a sidecar whose sizes and
                       SHA-256 match them: a hit under any remote_trust
  --hostile KEY:NAME   children whose STRLEN says --claim bytes each (64
                       MiB: 3 of them stay under remote_kernel_max) and
                       whose MGET reply, once asked, comes --drip seconds
                       a byte, for as long as the client reads it; with a
                       sidecar that states those sizes (remote_trust=
                       checked looks no further before asking for them)
  --bare KEY:NAME      the same with no sidecar (remote_trust=any)
"""
import argparse
import hashlib
import json
import os
import socket
import sys
import threading
import time

FMT = "triton:{key}:{filename}"


class Drip:
    """A value that STRLEN claims is size bytes, and MGET drips."""

    def __init__(self, size):
        self.size = size


def kernel(db, key, name, claim, sidecar):
    """Puts kernel key/name into db; claim: each child's claimed size, or 0
    for small real children."""
    kids = sorted([name + ".cubin", name + ".json", name + ".ptx"])
    vals = {k: (Drip(claim) if claim else ("bytes of " + k).encode())
            for k in kids}
    grp = "__grp__%s.json" % name
    vals[grp] = json.dumps({"child_paths": kids}).encode()
    for f, v in vals.items():
        db[FMT.format(key=key, filename=f)] = v
    if not sidecar:
        return
    files = []
    for f in sorted(vals):
        v = vals[f]
        size = v.size if isinstance(v, Drip) else len(v)
        # A claimed value's hash can be anything: its bytes never come.
        sha = hashlib.sha256(b"" if isinstance(v, Drip) else v).hexdigest()
        files.append({"name": f, "size": size, "sha256": sha})
    sc = {"tcfs": 1, "key": key, "name": name, "kind": "group",
          "files": files}
    db[FMT.format(key=key, filename="__tcfs__%s.json" % name)] = \
        json.dumps(sc).encode()


def bulk(v):
    return b"$-1\r\n" if v is None else b"$%d\r\n%s\r\n" % (len(v), v)


def commands(f):
    """Yields each command (a list of bytes) read from the file f."""
    while True:
        line = f.readline()
        if not line:
            return
        if not line.startswith(b"*"):
            continue
        argv = []
        for _ in range(int(line[1:])):
            n = int(f.readline()[1:])
            argv.append(f.read(n + 2)[:-2])
        yield argv


def drip(c, n, vals, every):
    """MGET's reply: its header and values up to the first claimed one,
    then that one a byte at a time (never ending: the client gives up)."""
    out = b"*%d\r\n" % n
    for v in vals:
        if isinstance(v, Drip):
            c.sendall(out + b"$%d\r\n" % v.size)
            end = time.monotonic() + 300
            while time.monotonic() < end:
                time.sleep(every)
                c.sendall(b"x")
            return
        out += bulk(v)
    c.sendall(out)


def reply(c, db, argv, every):
    cmd = argv[0].upper()
    if cmd == b"PING":
        return b"+PONG\r\n"
    if cmd == b"INFO":
        return bulk(b"redis_version:7.0.0-drip\r\nrole:master\r\n")
    if cmd in (b"AUTH", b"SELECT"):
        return b"+OK\r\n"
    if cmd == b"TYPE":
        return b"+string\r\n" if argv[1].decode() in db else b"+none\r\n"
    if cmd == b"STRLEN":
        v = db.get(argv[1].decode())
        return b":%d\r\n" % (0 if v is None else
                              v.size if isinstance(v, Drip) else len(v))
    if cmd == b"MGET":
        vals = [db.get(k.decode()) for k in argv[1:]]
        if any(isinstance(v, Drip) for v in vals):
            drip(c, len(vals), vals, every)
            return None
        return b"*%d\r\n" % len(vals) + b"".join(bulk(v) for v in vals)
    return b"-ERR unknown command\r\n"


def serve(c, db, every):
    try:
        with c, c.makefile("rb") as f:
            for argv in commands(f):
                out = reply(c, db, argv, every)
                if out is None:
                    return
                c.sendall(out)
    except (OSError, ValueError):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port_file")
    ap.add_argument("--honest", action="append", default=[])
    ap.add_argument("--hostile", action="append", default=[])
    ap.add_argument("--bare", action="append", default=[])
    ap.add_argument("--claim", type=int, default=64 << 20)
    ap.add_argument("--drip", type=float, default=0.05)
    a = ap.parse_args()
    db = {}
    for kn in a.honest:
        kernel(db, *kn.split(":"), 0, True)
    for kn in a.hostile:
        kernel(db, *kn.split(":"), a.claim, True)
    for kn in a.bare:
        kernel(db, *kn.split(":"), a.claim, False)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(a.port_file + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    # Renamed into place: the test never reads half a number.
    os.rename(a.port_file + ".tmp", a.port_file)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, db, a.drip),
                         daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
