#!/usr/bin/env python3
"""Builds OCI images of Triton caches, valid and hostile, for the tests of
`tcfs pack` / `tcfs unpack`.

Why a generator of our own: the tests must not depend on buildah, docker or a
registry, and the hostile images (path escapes, bombs, bad digests) are ones
no honest tool will write.  Only the Python standard library is used, so the
script runs on a bare Debian 12 (/usr/bin/python3, 3.11); the zstd command is
used when present, for one kind.

    oci_gen.py cache SRC_CACHE_DIR OUT_LAYOUT [--variant mcv|compat]
                     [--docker-archive FILE] [--grp-paths rewrite|sanitize|keep]
        A valid OCI image layout (tag "latest", one tar+gzip layer) holding
        the cache, as the tools that make such images in the wild lay it out,
        so `tcfs unpack` is tested on what it will meet:
          mcv     (default) Red Hat's MCV (github.com/redhat-et/MCU, mcv/):
                  the cache under io.triton.cache/, MCV's kernel list in
                  io.triton.manifest/manifest.json, its labels in the config.
          compat  Triton Cache Vault's "compat" variant (tcv/spec-compat.md):
                  the cache's contents at the layer root, and the manifest
                  annotation cache.triton.image/variant=compat.
        --docker-archive FILE also writes the same image as `docker save`
        does (uncompressed layer.tar), the other form images travel in.
        --grp-paths: how __grp__*.json child_paths are written (mcv only):
          rewrite  (default) each path cut to start at ".triton/cache", or,
                   without one, made ".triton/cache/KEY/FILE": a cache whose
                   group files were made relative, what unpack must re-root.
          sanitize exactly MCV's older SanitizeGroupJSON: cut at
                   ".triton/cache" where present, else left as it was.
          keep     the bytes as in the source, as MCV's current builder
                   (prepareBuildContext) copies them: absolute foreign paths.
        OUT_LAYOUT must not exist, or be an empty directory.

    oci_gen.py hostile KIND SRC_CACHE_DIR OUT_LAYOUT
    oci_gen.py hostile --list
        An mcv image that is valid except for one hostile property (the
        KINDS table below): digests are right unless the kind is about them,
        so the only reason for unpack to refuse the image is that property.
        --list prints the kinds, one a line.

    oci_gen.py layered SRC_CACHE_DIR OUT_LAYOUT
        A valid mcv image of two layers whose second has OCI whiteouts
        (see layered()); prints the two key dirs they touch.

    oci_gen.py archive LAYOUT FILE
        Tars a layout into an oci-archive (the layout's files at the tar
        root), the one-file form `skopeo copy ... oci-archive:` reads.

All output is deterministic (mtime 0, uid/gid 0, sorted entries), so a test's
image is the same from run to run.
"""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
MT_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
REF_NAME = "org.opencontainers.image.ref.name"
EPOCH = "1970-01-01T00:00:00Z"

# MCV's layer folders (mcv/pkg/constants: MCVTritonCacheDir, MCVTritonManifestDir).
MCV_CACHE = "io.triton.cache/"
MCV_MANIFEST = "io.triton.manifest/manifest.json"

BOMB_SIZE = 2 << 30  # 2 GiB of zeros: past any sane per-file or per-image limit
SPARSE_SIZE = 1 << 40  # 1 TiB, all but a byte of it a hole


def fail(msg):
    sys.exit("oci_gen: " + msg)


# --- JSON as Go's encoding/json writes it ----------------------------------
# MCV's files are compared byte for byte with what MCV writes, so they are
# written the way Go writes: map keys sorted but struct fields in declaration
# order, no spaces (Marshal) or 2-space indent (MarshalIndent), UTF-8 as is,
# and <, >, &, U+2028, U+2029 escaped.

class Struct(dict):
    """A Go struct: its fields stay in the order given.  A plain dict is a
    Go map: its keys are sorted."""


def go_order(obj):
    if isinstance(obj, Struct):
        return {k: go_order(v) for k, v in obj.items()}
    if isinstance(obj, dict):
        return {k: go_order(obj[k]) for k in sorted(obj, key=os.fsencode)}
    if isinstance(obj, list):
        return [go_order(v) for v in obj]
    return obj


def go_json(obj, indent=False):
    obj = go_order(obj)
    if indent:
        s = json.dumps(obj, ensure_ascii=False, indent=2)
    else:
        s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    # These characters only occur inside strings, so replacing them in the
    # text is the same as Go's escaping of string contents.
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(ch, esc)
    return s


def sha256hex(data):
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()


# --- reading a Triton cache as MCV does --------------------------------------

def go_walk(root):
    """Relative paths under root in Go's filepath.Walk order (names sorted as
    bytes, files and directories mixed), which is the order of MCV's kernel
    list.  Returns [(relpath, is_dir)]."""
    def walk(rel):
        full = os.path.join(root, rel) if rel else root
        for name in sorted(os.listdir(full), key=os.fsencode):
            r = os.path.join(rel, name) if rel else name
            p = os.path.join(root, r)
            if os.path.isdir(p) and not os.path.islink(p):
                yield r, True
                yield from walk(r)
            elif os.path.isfile(p) and not os.path.islink(p):
                yield r, False
            else:
                # A valid image comes from a plain cache; odd files in the
                # source would make a "valid" image that is not.
                fail("%s: not a regular file or directory" % p)
    return list(walk(""))


# The fields of MCV's TritonCacheData (mcv/pkg/cache/tritonTypes.go) and the
# Go types they decode into.  Go's json.Unmarshal fails on a type mismatch in
# any of them, and MCV then skips the file: so a metadata file is an entry
# only if Go would decode it.  Other keys are ignored, as Go ignores them.
ANY = object()
TRITON_CACHE_DATA = {
    "hash": str, "name": str, "num_warps": int, "num_ctas": int,
    "num_stages": int, "cluster_dims": [int], "enable_fp_fusion": bool,
    "supported_fp8_dtypes": [str], "deprecated_fp8_dtypes": [str],
    "default_dot_input_precision": str, "allowed_dot_input_precisions": [str],
    "max_num_imprecise_acc_default": int, "extern_libs": [[str]],
    "debug": bool, "backend_name": str, "sanitize_overflow": bool,
    "shared": int, "arch": str, "warp_size": int, "ptx_version": int,
    "maxnreg": int, "waves_per_eu": int, "launch_cooperative_grid": bool,
    "matrix_instr_nonkdim": int, "kpack": int, "allow_flush_denorm": bool,
    "instruction_sched_variant": str,
    "target": {"backend": str, "arch": ANY, "warp_size": int},
}


def go_decode(value, typ):
    """value (from json) as Go would decode it into typ, or raise ValueError."""
    if value is None:
        # null decodes without error to Go's zero value, nil for the pointer
        # fields (ptx_version): kept as None, read through field() below.
        return None
    if typ is ANY:
        return value
    if isinstance(typ, list):
        if not isinstance(value, list):
            raise ValueError
        return [go_decode(v, typ[0]) for v in value]
    if isinstance(typ, dict):
        if not isinstance(value, dict):
            raise ValueError
        out = {}
        for k, v in value.items():
            # Go matches field names exactly, else case-insensitively.
            f = k if k in typ else next(
                (f for f in typ if f.lower() == k.lower()), None)
            if f is not None:
                out[f] = go_decode(v, typ[f])
        return out
    if typ is int:
        if type(value) is not int or not -2**63 <= value < 2**63:
            raise ValueError
        return value
    if type(value) is not typ:
        raise ValueError
    return value


def read_kernel_metadata(path):
    """MCV's GetTritonCacheJSONData: the decoded file, or None to skip it."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")

    def no_constants(c):  # Go has no NaN or Infinity in JSON
        raise ValueError(c)
    try:
        data = go_decode(json.loads(text, parse_constant=no_constants),
                         TRITON_CACHE_DATA)
    except ValueError:
        return None
    if not data or not data.get("hash"):
        return None
    return data


def field(d, name, zero):
    """A decoded field, or Go's zero value when absent or null."""
    v = d.get(name)
    return zero if v is None else v


def arch_string(arch):
    """MCV's ConvertArchToString: a JSON number is a Go float64, "%.0f"."""
    if isinstance(arch, str):
        return arch
    if isinstance(arch, (int, float)) and not isinstance(arch, bool):
        return "%.0f" % arch
    return ""


def dummy_key(d):
    """MCV's ComputeDummyTritonKey (mcv/pkg/cache/dummytritonkey.go) on a
    machine without triton: the key is fixed by the kernel's target and
    options alone, so a test can predict it."""
    t = d.get("target") or {}
    backend = "%s-%s-%d" % (field(t, "backend", ""), arch_string(t.get("arch")),
                            field(t, "warp_size", 0))
    # A Go map: go_json sorts it to debug, num_stages, num_warps, ptx.
    options = go_json({"num_warps": field(d, "num_warps", 0),
                       "num_stages": field(d, "num_stages", 0),
                       "debug": field(d, "debug", False),
                       "ptx": field(d, "ptx_version", 0)})
    return sha256hex("-".join([
        "unknown-triton-key",                      # triton_key()
        sha256hex("dummy_source_content"),         # source
        sha256hex(backend),                        # backend
        sha256hex(options),                        # options
        sha256hex("{}"),                           # cache-invalidating env
    ]))


def mcv_manifest_entries(src, paths):
    """One entry per kernel metadata file, as MCV's TritonCacheMetadata
    (mcv/pkg/cache/triton.go).  Field order is that struct's declaration
    order, which is what json.MarshalIndent writes; omitempty fields are left
    out when zero (ptx_version is a pointer: left out only when null)."""
    entries = []
    for rel, is_dir in paths:
        if is_dir or not rel.endswith(".json"):
            continue
        d = read_kernel_metadata(os.path.join(src, rel))
        if d is None:
            continue
        t = d.get("target") or {}
        e = Struct(hash=d["hash"],
                   backend=field(t, "backend", ""),
                   arch=arch_string(t.get("arch")),
                   warp_size=field(t, "warp_size", 0))
        if d.get("ptx_version") is not None:
            e["ptx_version"] = d["ptx_version"]
        for k in ("num_stages", "num_warps", "debug"):
            if d.get(k):
                e[k] = d[k]
        e["dummy_key"] = dummy_key(d)
        entries.append(e)
    return entries


def mcv_labels(entries, cache_bytes):
    """MCV's TritonCache.Labels().  Go builds the target list from a map, so
    MCV's order varies from run to run; here it is first seen, for
    reproducible images."""
    targets, seen = [], set()
    for e in entries:
        key = "%s-%s-%d" % (e["backend"], e["arch"], e["warp_size"])
        if key not in seen:
            seen.add(key)
            targets.append(Struct(backend=e["backend"], arch=e["arch"],
                                  warp_size=e["warp_size"]))
    return {"cache.triton.image/entry-count": str(len(entries)),
            "cache.triton.image/summary": go_json(Struct(targets=targets)),
            "cache.triton.image/cache-size-bytes": str(cache_bytes)}


def group_json(raw, rel, mode):
    """A __grp__*.json as it goes into an mcv layer (see --grp-paths)."""
    if mode == "keep":
        return raw
    try:
        parsed = json.loads(raw)
        # Go decodes into map[string]map[string]string; anything else fails
        # and MCV leaves the file alone.
        ok = isinstance(parsed, dict) and all(
            isinstance(v, dict) and all(isinstance(s, str) for s in v.values())
            for v in parsed.values())
    except ValueError:
        ok = False
    if not ok:
        return raw
    paths = parsed.get("child_paths") or {}
    for name, val in paths.items():
        i = val.find(".triton/cache")
        if i != -1:
            paths[name] = val[i:]
        elif mode == "rewrite":
            parts = [p for p in val.split("/") if p]
            if len(parts) < 2:  # no KEY in the value: the group file's own
                parts = [os.path.basename(os.path.dirname(rel)),
                         parts[-1] if parts else name]
            paths[name] = ".triton/cache/%s/%s" % (parts[-2], parts[-1])
    if "child_paths" in parsed:
        parsed["child_paths"] = paths
    return go_json(parsed, indent=True).encode()


# --- layer entries -----------------------------------------------------------
# An entry is (TarInfo, opener): opener() gives a file object with the data,
# or is None for entries without data.  Data is read only when the tar is
# written, so large caches and the bomb never sit in memory.

def tarinfo(name, type_=tarfile.REGTYPE, size=0, mode=0o644, linkname=""):
    ti = tarfile.TarInfo(name)  # uid/gid 0, mtime 0, no user/group names
    ti.type, ti.size, ti.mode, ti.linkname = type_, size, mode, linkname
    return ti


def dir_entry(name):
    return (tarinfo(name, tarfile.DIRTYPE, mode=0o755), None)


def bytes_entry(name, data):
    return (tarinfo(name, size=len(data)), lambda: io.BytesIO(data))


def path_entry(name, path):
    return (tarinfo(name, size=os.path.getsize(path)), lambda: open(path, "rb"))


def sort_entries(entries):
    """Directories, then everything else, each sorted by name (stable, so a
    duplicate keeps its place after the original)."""
    dirs = [e for e in entries if e[0].type == tarfile.DIRTYPE]
    rest = [e for e in entries if e[0].type != tarfile.DIRTYPE]
    key = lambda e: os.fsencode(e[0].name)
    return sorted(dirs, key=key) + sorted(rest, key=key)


class Zeros:
    """A file object reading as `size` zero bytes: the bomb's data."""
    def __init__(self, size):
        self.left = size

    def read(self, n=-1):
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return bytes(n)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        pass


class HashWriter:
    """Passes writes on to f (or drops them, f None), hashing and counting
    them: the digest and size of a stream without a second pass."""
    def __init__(self, f=None):
        self.f, self.h, self.n = f, hashlib.sha256(), 0

    def write(self, b):
        self.h.update(b)
        self.n += len(b)
        if self.f is not None:
            self.f.write(b)
        return len(b)

    def tell(self):  # tarfile asks where it starts
        return self.n

    def flush(self):
        pass

    def digest(self):
        return "sha256:" + self.h.hexdigest()


def write_tar(entries, fileobj):
    with tarfile.open(fileobj=fileobj, mode="w") as tar:  # Python's default format
        tar.copybufsize = 1 << 20  # fewer, larger writes for the bomb
        for ti, opener in entries:
            if opener is None:
                tar.addfile(ti)
            else:
                with opener() as f:
                    tar.addfile(ti, f)


def tar_bytes(entries):
    b = io.BytesIO()
    write_tar(entries, b)
    return b.getvalue()


# --- the image -----------------------------------------------------------------

def blob_path(out, digest):
    return os.path.join(out, "blobs", "sha256", digest.split(":", 1)[1])


def put_blob(out, data, media_type):
    desc = {"mediaType": media_type, "digest": "sha256:" + sha256hex(data),
            "size": len(data)}
    with open(blob_path(out, desc["digest"]), "wb") as f:
        f.write(data)
    return desc


def oci_json(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


class Image:
    """A one-layer image of a cache: entries, labels and annotations first,
    then write() lays it out; the hostile kinds change it before or after."""

    def __init__(self, src, variant="mcv", grp_paths="rewrite"):
        if not os.path.isdir(src):
            fail("%s: not a directory" % src)
        paths = go_walk(src)
        self.cache_bytes = sum(os.path.getsize(os.path.join(src, r))
                               for r, d in paths if not d)
        self.key = next((r for r, d in paths if d and "/" not in r), None)
        if self.key is None:
            fail("%s: no kernel directory in the cache" % src)
        self.labels, self.annotations = {}, {}
        self.upper = []  # entries of the layers above the first
        prefix = MCV_CACHE if variant == "mcv" else ""
        self.entries = [dir_entry(prefix)] if prefix else []
        for rel, is_dir in paths:
            name = prefix + rel
            if is_dir:
                self.entries.append(dir_entry(name))
            elif variant == "mcv" and os.path.basename(rel).startswith(
                    "__grp__") and rel.endswith(".json"):
                with open(os.path.join(src, rel), "rb") as f:
                    self.entries.append(
                        bytes_entry(name, group_json(f.read(), rel, grp_paths)))
            else:
                self.entries.append(path_entry(name, os.path.join(src, rel)))
        if variant == "mcv":
            kernels = mcv_manifest_entries(src, paths)
            if not kernels:  # MCV refuses: "failed to detect cache type"
                fail("%s: no kernel metadata (KEY/NAME.json with a hash)" % src)
            manifest = go_json({"triton": kernels}, indent=True).encode()
            self.entries += [dir_entry(MCV_MANIFEST.split("/")[0]),
                             bytes_entry(MCV_MANIFEST, manifest)]
            self.labels = mcv_labels(kernels, self.cache_bytes)
        else:
            self.annotations = {"cache.triton.image/variant": "compat"}

    def add(self, entry):
        self.entries.append(entry)

    def add_layer(self, entries):
        """A layer above the first, written in the order given."""
        self.upper.append(entries)

    def layer_entries(self):
        return sort_entries(self.entries)

    def write(self, out):
        """Writes the layout: layer (streamed through gzip into its blob
        file), config, manifest, index.json, oci-layout."""
        if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
            fail("%s: exists and is not an empty directory" % out)
        self.out = out
        os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
        self.layer, self.diff_id = self.write_layer(self.layer_entries())
        self.uppers = [self.write_layer(e) for e in self.upper]
        config = {"created": EPOCH, "architecture": "amd64", "os": "linux",
                  "config": {"Labels": self.labels} if self.labels else {},
                  "rootfs": {"type": "layers", "diff_ids": [self.diff_id] + [
                      d for _, d in self.uppers]},
                  "history": [{"created": EPOCH,
                               "created_by": "tests/e2e/oci_gen.py"}]}
        self.config_bytes = oci_json(config)
        self.config = put_blob(out, self.config_bytes, MT_CONFIG)
        self.write_manifest()
        with open(os.path.join(out, "oci-layout"), "wb") as f:
            f.write(oci_json({"imageLayoutVersion": "1.0.0"}))

    def write_layer(self, entries):
        """A tar+gzip layer blob of entries: (descriptor, diff_id)."""
        tmp = os.path.join(self.out, "blobs", "sha256", ".layer.tmp")
        with open(tmp, "wb") as f:
            packed = HashWriter(f)
            # mtime 0 and no file name in the gzip header: reproducible bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=packed,
                               mtime=0) as gz:
                plain = HashWriter(gz)
                write_tar(entries, plain)
        desc = {"mediaType": MT_LAYER_GZIP, "digest": packed.digest(),
                "size": packed.n}
        os.rename(tmp, blob_path(self.out, desc["digest"]))
        return desc, plain.digest()

    def write_manifest(self, data=None):
        """(Re)writes the manifest blob and index.json; data replaces the
        manifest's bytes (the manifest-not-json kind)."""
        old = getattr(self, "manifest", None)
        if data is None:
            m = {"schemaVersion": 2, "mediaType": MT_MANIFEST,
                 "config": self.config,
                 "layers": [self.layer] + [l for l, _ in self.uppers]}
            if self.annotations:
                m["annotations"] = self.annotations
            data = oci_json(m)
        self.manifest = put_blob(self.out, data, MT_MANIFEST)
        if old and old["digest"] != self.manifest["digest"]:
            os.remove(blob_path(self.out, old["digest"]))
        desc = dict(self.manifest, annotations={REF_NAME: "latest"})
        index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": [desc]}
        with open(os.path.join(self.out, "index.json"), "wb") as f:
            f.write(oci_json(index))

    def replace_layer(self, data, media_type=MT_LAYER_GZIP):
        """Swaps the layer blob for other bytes, named by their own digest:
        the config's diff_id still names the valid tar."""
        os.remove(blob_path(self.out, self.layer["digest"]))
        self.layer = put_blob(self.out, data, media_type)
        self.write_manifest()

    def layer_bytes(self):
        with open(blob_path(self.out, self.layer["digest"]), "rb") as f:
            return f.read()

    def write_docker_archive(self, path):
        """The image as `docker save` writes it (legacy format, which skopeo's
        docker-archive: reads): manifest.json, repositories, the config as
        <hex>.json, and the layer uncompressed as <hex>/layer.tar."""
        layer_dir = self.diff_id.split(":", 1)[1]
        config_name = self.config["digest"].split(":", 1)[1] + ".json"
        tmp = path + ".layer.tmp"
        with open(tmp, "wb") as f:
            write_tar(self.layer_entries(), f)
        manifest = [{"Config": config_name, "RepoTags": ["tcfs-test:latest"],
                     "Layers": [layer_dir + "/layer.tar"]}]
        repos = {"tcfs-test": {"latest": layer_dir}}
        try:
            with open(path, "wb") as f:
                write_tar([bytes_entry(config_name, self.config_bytes),
                           dir_entry(layer_dir),
                           path_entry(layer_dir + "/layer.tar", tmp),
                           bytes_entry("manifest.json", oci_json(manifest)),
                           bytes_entry("repositories", oci_json(repos))], f)
        finally:
            os.remove(tmp)


# --- hostile kinds -------------------------------------------------------------
# Each takes a valid mcv Image and the output path, and leaves one hostile
# property in an otherwise valid layout.

def in_key(img, name):
    return MCV_CACHE + img.key + "/" + name


def first_file(img):
    """A kernel artifact that is not JSON, to duplicate."""
    return next(e for e in sort_entries(img.entries)
                if e[0].isreg() and e[0].name.startswith(MCV_CACHE)
                and not e[0].name.endswith(".json"))


def k_dotdot(img, out):
    img.add(bytes_entry(MCV_CACHE + "../../escape", b"escaped the layer\n"))
    img.write(out)


def k_absolute(img, out):
    img.add(bytes_entry("/etc/tcfs-escape", b"escaped the layer\n"))
    img.write(out)


def k_symlink_escape(img, out):
    img.add((tarinfo(in_key(img, "passwd"), tarfile.SYMTYPE, mode=0o777,
                     linkname="/etc/passwd"), None))
    img.write(out)


def k_symlink_dotdot(img, out):
    img.add((tarinfo(in_key(img, "outside"), tarfile.SYMTYPE, mode=0o777,
                     linkname="../../../../outside"), None))
    img.write(out)


def k_hardlink_escape(img, out):
    img.add((tarinfo(in_key(img, "outside"), tarfile.LNKTYPE,
                     linkname="../../outside"), None))
    img.write(out)


def k_device(img, out):
    ti = tarinfo(in_key(img, "null"), tarfile.CHRTYPE)
    ti.devmajor, ti.devminor = 1, 3  # /dev/null's numbers
    img.add((ti, None))
    img.write(out)


def k_fifo(img, out):
    img.add((tarinfo(in_key(img, "fifo"), tarfile.FIFOTYPE), None))
    img.write(out)


def k_digest(img, out):
    img.write(out)
    # Flip the gzip header's OS byte: the stream still decompresses to the
    # same tar, so the digest mismatch is the only fault.
    with open(blob_path(out, img.layer["digest"]), "r+b") as f:
        f.seek(9)
        b = f.read(1)[0]
        f.seek(9)
        f.write(bytes([b ^ 0x01]))


def k_truncated_gzip(img, out):
    img.write(out)
    data = img.layer_bytes()
    img.replace_layer(data[:len(data) // 2])


def k_corrupt_gzip(img, out):
    img.write(out)
    data = bytearray(img.layer_bytes())
    mid = len(data) // 2
    data[mid:mid + 512] = b"\xff" * 512  # not a valid run of deflate codes
    img.replace_layer(bytes(data))


def k_bomb(img, out):
    img.add((tarinfo(in_key(img, "zeros.bin"), size=BOMB_SIZE),
             lambda: Zeros(BOMB_SIZE)))
    img.write(out)


def k_sparse(img, out):
    # A PAX sparse file (format 1.0): one byte stored, 1 TiB once written
    # out.  The size counts against the budget, not the bytes stored.
    name = in_key(img, "sparse.bin")
    data = b"1\n0\n1\n".ljust(512, b"\0") + b"x"
    ti = tarinfo(name, size=len(data))
    ti.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                      "GNU.sparse.name": name,
                      "GNU.sparse.realsize": str(SPARSE_SIZE)}
    img.add((ti, lambda: io.BytesIO(data)))
    img.write(out)


def k_duplicate(img, out):
    ti, opener = first_file(img)
    with opener() as f:
        data = f.read() + b"\n# the second copy differs\n"
    img.add(bytes_entry(ti.name, data))
    img.write(out)


def k_longname(img, out):
    name = "a" * 296 + ".ptx"  # 300 bytes: past NAME_MAX (255)
    img.add(bytes_entry(in_key(img, name), b"// long name\n"))
    img.write(out)


def k_manifest_not_json(img, out):
    img.write(out)
    img.write_manifest(b"{not json")


def k_index_not_json(img, out):
    img.write(out)
    with open(os.path.join(out, "index.json"), "wb") as f:
        f.write(b"{not json")


def k_missing_blob(img, out):
    img.write(out)
    os.remove(blob_path(out, img.layer["digest"]))


def k_zstd_corrupt(img, out):
    img.write(out)
    plain = tar_bytes(img.layer_entries())
    try:
        # A real zstd frame (with its checksum, the zstd default), then
        # corrupted in the middle: a reader gets past the magic number.
        data = bytearray(subprocess.run(
            ["zstd", "-q", "-c", "-"], input=plain, stdout=subprocess.PIPE,
            check=True).stdout)
        mid = len(data) // 2
        data[mid:mid + 512] = b"\xff" * 512
    except (OSError, subprocess.CalledProcessError):
        # No zstd here: bytes that are not a zstd frame at all, derived from
        # a hash so the image stays reproducible.
        data = bytearray()
        seed = b"tcfs-not-zstd"
        while len(data) < 4096:
            seed = hashlib.sha256(seed).digest()
            data += seed
    img.replace_layer(bytes(data), MT_LAYER_ZSTD)


def k_mcv_manifest_not_json(img, out):
    img.entries = [e for e in img.entries if e[0].name != MCV_MANIFEST]
    img.add(bytes_entry(MCV_MANIFEST, b"{oops"))
    img.write(out)


# Issue 20's kinds: links that chain out of the image, and group files
# that name what is not theirs.  Victims are files beside OUT (made when
# missing) that must survive.

CHAIN = 12  # deeper than any temp dir the image is unpacked under


def victims(out):
    base = os.path.dirname(os.path.abspath(out))
    v, vd = os.path.join(base, "victim"), os.path.join(base, "victimdir")
    os.makedirs(v, exist_ok=True)
    os.makedirs(vd, exist_ok=True)
    for path in (os.path.join(v, "file"), os.path.join(vd, "a")):
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write("must survive\n")
    return v, vd


def chain(prefix=""):
    """Entries making prefix+"x" lead to the host's root through a link
    chain whose every link stays inside by its text: d1/../dN/y -> N ".."
    (the image's root), x -> d1/../dN/y/ + N+1 "..".  Returns (entries,
    path of x)."""
    dirs = [prefix + "/".join("d%d" % (i + 1) for i in range(n + 1))
            for n in range(CHAIN)]
    y = dirs[-1] + "/y"
    up = prefix.count("/")
    ents = [dir_entry(d) for d in dirs]
    ents.append((tarinfo(y, tarfile.SYMTYPE, mode=0o777,
                         linkname="/".join([".."] * (CHAIN + up))), None))
    ents.append((tarinfo(prefix + "x", tarfile.SYMTYPE, mode=0o777,
                         linkname=y[len(prefix):] + "/" +
                         "/".join([".."] * (CHAIN + 1))), None))
    return ents, prefix + "x"


def k_whiteout_chain(img, out):
    v, vd = victims(out)
    ents, x = chain()
    for e in ents:
        img.add(e)
    img.add(bytes_entry(x + v + "/.wh.file", b""))
    img.add(bytes_entry(x + vd + "/.wh..wh..opq", b""))
    img.write(out)


def k_whiteout_chain_upper(img, out):
    # The chain in the first layer, the whiteouts in the second.
    v, vd = victims(out)
    ents, x = chain()
    for e in ents:
        img.add(e)
    img.add_layer([bytes_entry(x + v + "/.wh.file", b""),
                   bytes_entry(x + vd + "/.wh..wh..opq", b"")])
    img.write(out)


def k_whiteout_through_link(img, out):
    # A link that points down (allowed), then a whiteout through it.
    img.add(dir_entry(in_key(img, "sub")))
    img.add(bytes_entry(in_key(img, "sub/f"), b"f\n"))
    img.add((tarinfo(in_key(img, "lnk"), tarfile.SYMTYPE, mode=0o777,
                     linkname="sub"), None))
    img.add_layer([bytes_entry(in_key(img, "lnk/.wh.f"), b"")])
    img.write(out)


def k_link_chain_in_cache(img, out):
    # The chain inside the cache dir, and a kernel file that is a link
    # through it to a host file (what a mounted unpack copied verbatim).
    ents, x = chain(MCV_CACHE)
    for e in ents:
        img.add(e)
    img.add((tarinfo(in_key(img, "x.cubin"), tarfile.SYMTYPE, mode=0o777,
                     linkname="../x/etc/passwd"), None))
    img.write(out)


def group_with(img, out, paths):
    name = next(e[0].name for e in img.entries
                if os.path.basename(e[0].name).startswith("__grp__"))
    img.entries = [e for e in img.entries if e[0].name != name]
    img.add(bytes_entry(name, go_json({"child_paths": paths},
                                      indent=True).encode()))
    img.write(out)


def some_child(img):
    return next(os.path.basename(e[0].name) for e in sort_entries(img.entries)
                if e[0].isreg() and e[0].name.startswith(MCV_CACHE + img.key)
                and not os.path.basename(e[0].name).startswith("__grp__"))


def k_group_absolute(img, out):
    group_with(img, out, {"x.cubin": "/etc/shadow"})


def k_group_dotdot(img, out):
    group_with(img, out, {"x.cubin": "../../../../etc/passwd"})


def k_group_other_key(img, out):
    c = some_child(img)
    group_with(img, out, {c: ".triton/cache/%s/%s" % ("A" * 52, c)})


def k_group_mixed(img, out):
    c = some_child(img)
    group_with(img, out, {c: ".triton/cache/%s/%s" % (img.key, c),
                          "y.cubin": "/etc/shadow"})


def k_group_symlink(img, out):
    name = next(e[0].name for e in img.entries
                if os.path.basename(e[0].name).startswith("__grp__"))
    img.entries = [e for e in img.entries if e[0].name != name]
    img.add(bytes_entry(in_key(img, "evil.json"), go_json(
        {"child_paths": {"x.cubin": "/etc/shadow"}}).encode()))
    img.add((tarinfo(name, tarfile.SYMTYPE, mode=0o777,
                     linkname="evil.json"), None))
    img.write(out)


def k_blob_symlink(img, out):
    # The layer blob of a layout is a link to /dev/zero: read forever.
    img.write(out)
    path = blob_path(out, img.layer["digest"])
    os.remove(path)
    os.symlink("/dev/zero", path)


def outer_chain(entries, target):
    """An archive's entries plus a chain x, and a link at target's place
    (a path in the archive) to x/dev/zero."""
    ents, x = chain()
    up = "/".join([".."] * target.count("/"))
    return entries + ents + [(tarinfo(target, tarfile.SYMTYPE, mode=0o777,
                                      linkname=(up + "/" if up else "") +
                                      x + "/dev/zero"), None)]


def k_ociarchive_blob_chain(img, out):
    # An oci-archive whose layer blob is a link chain to /dev/zero.
    lay = out + ".layout"
    img.write(lay)
    layer = os.path.relpath(blob_path(lay, img.layer["digest"]), lay)
    entries = [dir_entry(rel) if d else path_entry(rel, os.path.join(lay, rel))
               for rel, d in go_walk(lay) if rel != layer]
    with open(out, "wb") as f:
        write_tar(outer_chain(entries, layer), f)


def k_docker_layer_chain(img, out):
    # A docker-archive whose layer path goes through a link chain to a
    # tar on the host (a valid layer: only the path is hostile).
    v, _ = victims(out)
    host = os.path.join(v, "outside.tar")
    with open(host, "wb") as f:
        write_tar(img.layer_entries(), f)
    with open(host, "rb") as f:
        diff_id = "sha256:" + sha256hex(f.read())
    ents, x = chain()
    config = oci_json({"architecture": "amd64", "os": "linux",
                       "config": {"Labels": img.labels},
                       "rootfs": {"type": "layers", "diff_ids": [diff_id]}})
    manifest = [{"Config": "config.json", "RepoTags": ["tcfs-test:latest"],
                 "Layers": [x + host]}]
    with open(out, "wb") as f:
        write_tar([bytes_entry("config.json", config)] + ents +
                  [bytes_entry("manifest.json", oci_json(manifest))], f)


def k_bomb_upper(img, out):
    # The bomb in a second layer: read once for its whiteouts, then again.
    img.add_layer([(tarinfo(in_key(img, "zeros.bin"), size=BOMB_SIZE),
                    lambda: Zeros(BOMB_SIZE))])
    img.write(out)


def k_deep(img, out):
    # A file 80 dirs down: past any cache's depth, and past what a
    # recursive removal of the staging dir may be allowed.
    path = MCV_CACHE + "/".join(["d"] * 80)
    img.add(bytes_entry(path + "/f", b"deep\n"))
    img.write(out)


def k_fifo_blob(img, out):
    # The layout's config blob is a FIFO: opening it would block.
    img.write(out)
    path = blob_path(out, img.config["digest"])
    os.remove(path)
    os.mkfifo(path)


def k_group_at_root(img, out):
    img.add(bytes_entry(MCV_CACHE + "__grp__x.json", go_json(
        {"child_paths": {"x.cubin": "/etc/shadow"}}).encode()))
    img.write(out)


KINDS = {
    "dotdot": (k_dotdot, "an entry io.triton.cache/../../escape"),
    "absolute": (k_absolute, "an entry /etc/tcfs-escape"),
    "symlink-escape": (k_symlink_escape, "KEY/passwd -> /etc/passwd"),
    "symlink-dotdot": (k_symlink_dotdot, "KEY/outside -> ../../../../outside"),
    "hardlink-escape": (k_hardlink_escape,
                        "KEY/outside, a hard link to ../../outside"),
    "device": (k_device, "KEY/null, a character device 1,3"),
    "fifo": (k_fifo, "KEY/fifo, a FIFO"),
    "digest": (k_digest, "the layer blob's bytes differ from its digest"),
    "truncated-gzip": (k_truncated_gzip, "the layer's gzip cut in half"),
    "corrupt-gzip": (k_corrupt_gzip, "512 bytes mid-deflate overwritten"),
    "bomb": (k_bomb, "KEY/zeros.bin: 2 GiB of zeros in a ~2 MB gzip"),
    "sparse": (k_sparse, "KEY/sparse.bin: a 1 TiB sparse file, 1 byte stored"),
    "duplicate": (k_duplicate, "one file path twice, different bytes"),
    "longname": (k_longname, "a file name of 300 bytes"),
    "manifest-not-json": (k_manifest_not_json, "the manifest blob is {not json"),
    "index-not-json": (k_index_not_json, "index.json is {not json"),
    "missing-blob": (k_missing_blob, "the layer blob is absent"),
    "zstd-corrupt": (k_zstd_corrupt, "a tar+zstd layer that is no zstd stream"),
    "mcv-manifest-not-json": (k_mcv_manifest_not_json,
                              "io.triton.manifest/manifest.json is {oops"),
    "whiteout-chain": (k_whiteout_chain,
                       "links chained out of the image, whiteouts through "
                       "them at a victim"),
    "whiteout-chain-upper": (k_whiteout_chain_upper,
                             "the same, the whiteouts in a second layer"),
    "whiteout-through-link": (k_whiteout_through_link,
                              "a second layer's whiteout through a link"),
    "link-chain-in-cache": (k_link_chain_in_cache,
                            "KEY/x.cubin, a link through a chain to "
                            "/etc/passwd"),
    "group-absolute": (k_group_absolute, "a group child /etc/shadow"),
    "group-dotdot": (k_group_dotdot,
                     "a group child ../../../../etc/passwd"),
    "group-other-key": (k_group_other_key,
                        "a group child in another key dir"),
    "group-mixed": (k_group_mixed,
                    "a group file with one child in place, one not"),
    "group-symlink": (k_group_symlink,
                      "a group file that is a link to a hostile one"),
    "blob-symlink": (k_blob_symlink,
                     "the layout's layer blob is a link to /dev/zero"),
    "ociarchive-blob-chain": (k_ociarchive_blob_chain,
                              "an oci-archive's layer blob chains to "
                              "/dev/zero"),
    "docker-layer-chain": (k_docker_layer_chain,
                           "a docker-archive layer path through a link "
                           "chain to a host tar"),
    "bomb-upper": (k_bomb_upper, "the bomb in a second layer"),
    "deep": (k_deep, "a file 80 directories deep"),
    "fifo-blob": (k_fifo_blob, "the layout's config blob is a FIFO"),
    "group-at-root": (k_group_at_root,
                      "a group file at the cache's root naming /etc/shadow"),
}


# --- a valid image of two layers, with whiteouts ------------------------------

def layered(src, out):
    """Layer 1: the cache, plus KEY/stale.bin and KEY2/junk.bin.  Layer 2:
    KEY/.wh.stale.bin (removes layer 1's file), KEY/.wh.new.bin beside
    KEY/new.bin (a whiteout never removes its own layer's entry), and
    KEY2/.wh..wh..opq with KEY2's files again (junk.bin goes, they stay)."""
    img = Image(src)
    keys = sorted({e[0].name[len(MCV_CACHE):].split("/")[0]
                   for e in img.entries if e[0].name.startswith(MCV_CACHE)
                   and e[0].name != MCV_CACHE} - {""})
    key, key2 = keys[0], keys[1]
    img.add(bytes_entry(MCV_CACHE + key + "/stale.bin", b"stale\n"))
    img.add(bytes_entry(MCV_CACHE + key2 + "/junk.bin", b"junk\n"))
    again = [e for e in sort_entries(img.entries)
             if e[0].name.startswith(MCV_CACHE + key2 + "/")
             and e[0].name != MCV_CACHE + key2 + "/junk.bin"]
    # Whiteouts after entries of their own layer that they would cover.
    half = len(again) // 2
    img.add_layer([bytes_entry(MCV_CACHE + key + "/.wh.stale.bin", b""),
                   bytes_entry(MCV_CACHE + key + "/new.bin", b"new\n"),
                   bytes_entry(MCV_CACHE + key + "/.wh.new.bin", b"")] +
                  again[:half] +
                  [bytes_entry(MCV_CACHE + key2 + "/.wh..wh..opq", b"")] +
                  again[half:])
    img.write(out)
    print(key, key2)


# --- oci-archive -------------------------------------------------------------

def archive(layout, path):
    if not os.path.isfile(os.path.join(layout, "oci-layout")):
        fail("%s: not an OCI layout (no oci-layout file)" % layout)
    entries = []
    for rel, is_dir in go_walk(layout):
        p = os.path.join(layout, rel)
        entries.append(dir_entry(rel) if is_dir else path_entry(rel, p))
    with open(path, "wb") as f:
        write_tar(sort_entries(entries), f)


# --- command line --------------------------------------------------------------

USAGE = """usage:
  oci_gen.py cache SRC_CACHE_DIR OUT_LAYOUT [--variant mcv|compat]
                   [--docker-archive FILE] [--grp-paths rewrite|sanitize|keep]
  oci_gen.py hostile KIND SRC_CACHE_DIR OUT_LAYOUT
  oci_gen.py hostile --list
  oci_gen.py layered SRC_CACHE_DIR OUT_LAYOUT
  oci_gen.py archive LAYOUT FILE"""


def options(args, allowed):
    """Splits args into positionals and --name VALUE options."""
    pos, opts = [], {}
    while args:
        a = args.pop(0)
        if a.startswith("--"):
            if a not in allowed or not args:
                fail("bad option %s\n%s" % (a, USAGE))
            opts[a] = args.pop(0)
        else:
            pos.append(a)
    return pos, opts


def main(argv):
    if not argv:
        fail(USAGE)
    if argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    cmd, args = argv[0], argv[1:]
    if cmd == "cache":
        pos, opts = options(args, ("--variant", "--docker-archive",
                                   "--grp-paths"))
        variant = opts.get("--variant", "mcv")
        grp = opts.get("--grp-paths", "rewrite")
        if len(pos) != 2 or variant not in ("mcv", "compat") or grp not in (
                "rewrite", "sanitize", "keep"):
            fail(USAGE)
        img = Image(pos[0], variant, grp)
        img.write(pos[1])
        if "--docker-archive" in opts:
            img.write_docker_archive(opts["--docker-archive"])
    elif cmd == "hostile":
        if args == ["--list"]:
            print("\n".join(KINDS))
            return
        if len(args) != 3 or args[0] not in KINDS:
            fail("%s\nkinds: %s" % (USAGE, " ".join(KINDS)))
        KINDS[args[0]][0](Image(args[1]), args[2])
    elif cmd == "layered":
        if len(args) != 2:
            fail(USAGE)
        layered(args[0], args[1])
    elif cmd == "archive":
        if len(args) != 2:
            fail(USAGE)
        archive(args[0], args[1])
    else:
        fail(USAGE)


if __name__ == "__main__":
    main(sys.argv[1:])
