#!/usr/bin/env python3
"""Writes and reads Redis exactly as Triton's RemoteCacheManager does.

Triton 3.6's RemoteCacheManager with RedisRemoteCacheBackend
(python/triton/runtime/cache.py) keeps one Redis string per file, under
TRITON_REDIS_KEY_FORMAT (default "triton:{key}:{filename}", filled with
Python's str.format), where key is the base32 cache key:

  put(data, filename)        SET triton:KEY:FILENAME data
  put_group(NAME.json, grp)  SET triton:KEY:__grp__NAME.json
                                 json.dumps({"child_paths": sorted(names)})
  get_file(filename)         MGET [triton:KEY:FILENAME]
  get_group(NAME.json)       get_file(__grp__NAME.json), json.load it, then
                             MGET of every name in child_paths

This is that code, with the materialising FileCacheManager replaced by an
output directory, so that the tests can publish a real cache the way stock
Triton would and read back what tcfs published the way stock Triton would,
byte for byte.  (Unlike Triton, every call has a socket timeout: a test
must not hang on a stopped server.)

  put DIR [--key K]...        publish every key dir of the Triton cache DIR
                              (kernels: children, then the group; key dirs
                              without a group, such as launcher modules:
                              each file); prints {"kernels", "files",
                              "bytes"} as JSON
  get KEY NAME OUTDIR         get_group: writes every child Redis has, and
                              the group value as stored, to OUTDIR; prints
                              {"group", "children", "missing"}; exit 1 when
                              there is no group, 3 when a child is missing
  getfile KEY FILE OUT        get_file: exit 1 when absent
  set KEY FILE SRC            put of SRC's bytes as FILE ("-": stdin)
  corrupt KEY FILE truncate|flip
                              the value cut to half its length, or its
                              first byte inverted (same length)
"""
import argparse
import json
import os
import sys

import redis

DEFAULT_KEY_FORMAT = "triton:{key}:{filename}"


class RedisBackend:
    """Triton's RedisRemoteCacheBackend, one cache key per instance."""

    def __init__(self, client, key, key_format):
        self._redis = client
        self._key = key
        self._key_fmt = key_format

    def _get_key(self, filename):
        return self._key_fmt.format(key=self._key, filename=filename)

    def get(self, filenames):
        results = self._redis.mget([self._get_key(f) for f in filenames])
        return {f: r for f, r in zip(filenames, results) if r is not None}

    def put(self, filename, data):
        self._redis.set(self._get_key(filename), data)


def put_file(backend, data, filename):
    """RemoteCacheManager.put: text is sent as its UTF-8 bytes."""
    if not isinstance(data, bytes):
        data = str(data).encode("utf-8")
    backend.put(filename, data)
    return len(data)


def put_group(backend, filename, group):
    """RemoteCacheManager.put_group: names, sorted, not paths."""
    grp_contents = json.dumps({"child_paths": sorted(list(group.keys()))})
    return put_file(backend, grp_contents, f"__grp__{filename}")


def publish_dir(client, key_format, src, key):
    """What Triton's compile does on a miss, for one key dir of src:
    every artifact put, then the group; a module is one put."""
    backend = RedisBackend(client, key, key_format)
    keydir = os.path.join(src, key)
    files = sorted(os.listdir(keydir))
    groups = [f for f in files if f.startswith("__grp__")]
    nbytes = 0
    grouped = set()
    for g in groups:
        with open(os.path.join(keydir, g), "rb") as f:
            # A file cache's group maps names to paths; only the names go.
            children = json.load(f)["child_paths"]
        grouped.update(children)
        paths = {}
        for c in children:
            with open(os.path.join(keydir, c), "rb") as f:
                nbytes += put_file(backend, f.read(), c)
            paths[c] = c
        nbytes += put_group(backend, g[len("__grp__"):], paths)
    for f in files:
        if f in grouped or f in groups:
            continue
        with open(os.path.join(keydir, f), "rb") as fh:
            nbytes += put_file(backend, fh.read(), f)
    return len(groups), len(files), nbytes


def cmd_put(client, a):
    keys = a.key or sorted(os.listdir(a.dir))
    total = [0, 0, 0]
    for key in keys:
        for i, n in enumerate(publish_dir(client, a.key_format, a.dir, key)):
            total[i] += n
    print(json.dumps(dict(zip(("kernels", "files", "bytes"), total))))
    return 0


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def cmd_get(client, a):
    """RemoteCacheManager.get_group(NAME.json) into OUTDIR."""
    backend = RedisBackend(client, a.key, a.key_format)
    name = a.name if a.name.endswith(".json") else a.name + ".json"
    grp = f"__grp__{name}"
    got = backend.get([grp])
    if not got:
        print(json.dumps({"group": False, "children": [], "missing": []}))
        return 1
    raw = got[grp]
    os.makedirs(a.outdir, exist_ok=True)
    write(os.path.join(a.outdir, grp), raw)
    child_paths = json.loads(raw).get("child_paths", None)
    children = backend.get(child_paths) if child_paths is not None else {}
    for child, data in children.items():
        # Triton's FileCacheManager would write os.path.join(dir, child):
        # a name that is not plain must not be written outside OUTDIR here.
        if os.path.basename(child) != child or child in (".", ".."):
            print(f"refusing to write child {child!r}", file=sys.stderr)
            return 4
        write(os.path.join(a.outdir, child), data)
    missing = sorted(set(child_paths or []) - set(children))
    print(json.dumps({"group": True, "children": sorted(children),
                      "missing": missing}))
    return 3 if missing else 0


def cmd_getfile(client, a):
    got = RedisBackend(client, a.key, a.key_format).get([a.file])
    if not got:
        return 1
    write(a.out, got[a.file])
    return 0


def cmd_set(client, a):
    if a.src == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(a.src, "rb") as f:
            data = f.read()
    put_file(RedisBackend(client, a.key, a.key_format), data, a.file)
    return 0


def cmd_corrupt(client, a):
    rkey = a.key_format.format(key=a.key, filename=a.file)
    data = client.get(rkey)
    if data is None:
        print(f"{rkey}: not in Redis", file=sys.stderr)
        return 1
    if a.how == "truncate":
        data = data[:len(data) // 2]
    else:
        data = bytes([data[0] ^ 0xFF]) + data[1:]
    client.set(rkey, data)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--db", type=int, default=0)
    ap.add_argument("--password-file",
                    help="AUTH with this file's content (no newline)")
    ap.add_argument("--key-format",
                    default=os.environ.get("TRITON_REDIS_KEY_FORMAT",
                                           DEFAULT_KEY_FORMAT))
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="socket timeout in seconds (Triton has none)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("put")
    p.add_argument("dir")
    p.add_argument("--key", action="append",
                   help="only this key dir (repeatable)")
    p = sub.add_parser("get")
    p.add_argument("key")
    p.add_argument("name", help="kernel NAME (or its NAME.json)")
    p.add_argument("outdir")
    p = sub.add_parser("getfile")
    p.add_argument("key")
    p.add_argument("file")
    p.add_argument("out")
    p = sub.add_parser("set")
    p.add_argument("key")
    p.add_argument("file")
    p.add_argument("src")
    p = sub.add_parser("corrupt")
    p.add_argument("key")
    p.add_argument("file")
    p.add_argument("how", choices=["truncate", "flip"])
    a = ap.parse_args()
    password = None
    if a.password_file:
        with open(a.password_file) as f:
            password = f.read().rstrip("\n")
    client = redis.Redis(host=a.host, port=a.port, db=a.db,
                         password=password, socket_timeout=a.timeout,
                         socket_connect_timeout=a.timeout)
    cmds = {"put": cmd_put, "get": cmd_get, "getfile": cmd_getfile,
            "set": cmd_set, "corrupt": cmd_corrupt}
    try:
        return cmds[a.cmd](client, a)
    except redis.RedisError as e:
        print(f"redis: {e}", file=sys.stderr)
        return 5


if __name__ == "__main__":
    sys.exit(main())
