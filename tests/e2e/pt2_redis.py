#!/usr/bin/env python3
"""Writes and reads Redis exactly as PyTorch's own remote caches do, and as
an attacker who can SET would.

torch 2.11's RedisRemoteCache (torch/_inductor/remote_cache.py) keeps one
string per cache key: "pt2:{cache_id}::{key}:c1" (version 1), whose value
RemoteCacheJsonSerde writes as json.dumps(...).encode("ascii") of
{"data": base64(entry), "time_taken_ms": N}; the FX graph and AOTAutograd
caches (codecache.py, autograd_cache.py) decode data and write it locally
as {key}/{sha256_hash(entry)}.  tcfs keeps a sidecar beside it, at the
same key with ":tcfs" appended (index/remote/pt2.h, wire.h), which PyTorch
never reads.  This is that code, so the tests can check tcfs's values byte
for byte against PyTorch's and forge the values a hostile writer would.

  put ID KEY FILE [--time MS]  SET the value of FILE as PyTorch does
  get ID KEY OUTDIR            GET it as PyTorch does; write OUTDIR/NAME
                               (exit 1 when absent)
  render FILE [--time MS]     print the value PyTorch would SET for FILE
  check ID KEY FILE            exit 0 when Redis holds, byte for byte, the
                               value PyTorch would SET for FILE
  flip ID KEY                  the value with one byte of its entry flipped
                               (its sidecar left alone)
  sidecar ID KEY FILE [--hmac KEYFILE]
                               SET a sidecar for FILE, as tcfs writes one,
                               signed with KEYFILE's key when given
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import sys

import redis


def sha256_hash(b):
    return base64.b32encode(hashlib.sha256(b).digest())[:51].decode().lower()


def rkey(cache_id, key):
    return f"pt2:{cache_id}::{key}:c1"


def render(entry, ms=0):
    return json.dumps({"data": base64.b64encode(entry).decode("ascii"),
                       "time_taken_ms": ms}).encode("ascii")


def signed_text(key, name, files):
    def s(x):
        b = x.encode()
        return f"{len(b)}:".encode() + b
    t = b"tcfs-sidecar-v1\nkey " + s(key) + b"\nname " + s(name) + \
        b"\nkind file\n" + f"files {len(files)}\n".encode()
    for f in sorted(files, key=lambda f: f["name"].encode()):
        t += s(f["name"]) + f" {f['size']} {f['sha256']}\n".encode()
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("op")
    ap.add_argument("args", nargs="*")
    ap.add_argument("--time", type=int, default=0)
    ap.add_argument("--hmac")
    a = ap.parse_args()
    if a.op == "render":
        with open(a.args[0], "rb") as f:
            sys.stdout.buffer.write(render(f.read(), a.time))
        return 0
    r = redis.Redis(host="127.0.0.1", port=a.port, socket_timeout=10)
    if a.op == "put":
        cid, key, path = a.args
        with open(path, "rb") as f:
            r.set(rkey(cid, key), render(f.read(), a.time))
    elif a.op == "check":
        cid, key, path = a.args
        with open(path, "rb") as f:
            want = render(f.read(), a.time)
        got = r.get(rkey(cid, key))
        if got != want:
            print(f"{rkey(cid, key)}: {got[:80] if got else None!r} ...")
            return 1
    elif a.op == "get":
        cid, key, out = a.args
        v = r.get(rkey(cid, key))
        if v is None:
            return 1
        entry = base64.b64decode(json.loads(v)["data"])
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, sha256_hash(entry)), "wb") as f:
            f.write(entry)
        print(sha256_hash(entry))
    elif a.op == "flip":
        cid, key = a.args
        d = json.loads(r.get(rkey(cid, key)))
        entry = bytearray(base64.b64decode(d["data"]))
        entry[len(entry) // 2] ^= 0x01
        d["data"] = base64.b64encode(bytes(entry)).decode("ascii")
        r.set(rkey(cid, key), json.dumps(d).encode("ascii"))
    elif a.op == "sidecar":
        cid, key, path = a.args
        with open(path, "rb") as f:
            entry = f.read()
        name = sha256_hash(entry)
        files = [{"name": name, "size": len(entry),
                  "sha256": hashlib.sha256(entry).hexdigest()}]
        sc = {"tcfs": 1, "key": key, "name": name, "kind": "file",
              "files": files}
        if a.hmac:
            with open(a.hmac, "rb") as f:
                k = f.read().rstrip(b"\n")
            sc["hmac"] = hmac.new(k, signed_text(key, name, files),
                                  hashlib.sha256).hexdigest()
        r.set(rkey(cid, key) + ":tcfs", json.dumps(sc).encode())
    else:
        ap.error(f"unknown op {a.op}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
