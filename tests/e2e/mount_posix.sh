#!/bin/bash
# The POSIX behaviour Triton, PyTorch Inductor and vLLM rely on, checked on
# a tcfs mount: doc/triton-cache.md, "What the filesystem must
# guarantee".  Each group of checks runs in a fresh store and mount,
# mostly as small python3 snippets (see pycheck below).
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	echo "1..0 # SKIP no /dev/fuse"
	exit 0
fi
. "$(dirname "$0")/lib.sh"

REPLAY=${REPLAY:-$(cd "$(dirname "$0")/../replay" && pwd)}
SMALL=$(fixture_top triton-3.6-h200-small.tgz cA) || {
	echo "Bail out! cannot extract triton-3.6-h200-small.tgz"
	exit 1
}
export SMALL T_TMP

# --- mounts ---------------------------------------------------------------

# mount_fresh NAME: a new store and an empty mount point under $T_TMP/NAME,
# mounted; sets and exports S and M.  Reports a failure (only) as a check.
# These checks compare the tree with a plain directory's, so the mounts
# here show no views (-o noviews; views.sh checks those).
mount_fresh() {
	S=$T_TMP/$1/store
	M=$T_TMP/$1/mnt
	export S M
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount -o noviews --store "$S" "$M"
	if [ "$RC" != 0 ] || ! mountpoint -q "$M"; then
		not_ok "$1: tcfs mount of a new store serves"
		show_run
		return 1
	fi
}

# unmount_checked NAME: the mount still answers (the daemon did not die
# during the checks), then tcfs umount; reports failures only.
unmount_checked() {
	if ! stat "$M/." >/dev/null 2>"$ERR"; then
		not_ok "$1: the mount still answers after the checks (daemon alive)"
		diag "$(cat "$ERR")"
	fi
	tcfs umount "$M"
	if [ "$RC" != 0 ] || mountpoint -q "$M"; then
		not_ok "$1: tcfs umount"
		show_run
		fusermount3 -uz "$M" 2>/dev/null
	fi
}

# check_replay DESC: the last run (a replay.py) exited 0; on failure shows
# its error count and first errors (its stdout line can be huge).
check_replay() {
	if [ "$RC" = 0 ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "exit status $RC, errors: $(json_get "$OUT" errors 2>/dev/null)"
		sed -n '1,3p' "$ERR" | cut -c1-400 | sed 's/^/#   /'
	fi
}

# --- python checks --------------------------------------------------------

# The prelude of every snippet.  check()/check_errno() print one result per
# line ("ok|not ok <US> todo <US> description", "# <US> detail", US the
# ASCII unit separator, not white space, so that an empty todo stays) that
# pycheck turns into TAP; todo names a known tcfs bug (TAP_TODO).  skip()
# reports a check that cannot run here.
read -r -d '' PY_PRELUDE <<'EOF'
import base64, errno, hashlib, json, mmap, os, random, stat, sys, time, uuid
M = os.environ.get("M", "")
def _emit(good, desc, detail, todo):
    print("%s\x1f%s\x1f%s" % ("ok" if good else "not ok", todo, desc), flush=True)
    if not good and detail:
        for line in str(detail).splitlines()[:20]:
            print("#\x1f" + line, flush=True)
def skip(desc, reason):
    print("skip\x1f%s\x1f%s" % (reason, desc), flush=True)
def check(desc, cond, detail="", todo=""):
    _emit(bool(cond), desc, detail, todo)
    return bool(cond)
def errname(e):
    return "success" if e == 0 else errno.errorcode.get(e, str(e))
def errno_of(f, *a, **k):
    try:
        f(*a, **k)
        return 0
    except OSError as e:
        return e.errno
def check_errno(desc, want, f, *a, todo=""):
    got = errno_of(f, *a)
    return check(desc, got == want, "expected %s, got %s" % (errname(want), errname(got)), todo)
def key(i):
    """A Triton 3.3+ key dir name: base32 without padding, 52 chars."""
    return base64.b32encode(hashlib.sha256(b"key%d" % i).digest()).decode().rstrip("=")
def pbytes(n, seed):
    return random.Random(seed).randbytes(n)
def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
def read(path):
    with open(path, "rb") as f:
        return f.read()
def put(keydir, name, data):
    """Triton's put protocol (3.2+)."""
    os.makedirs(keydir, exist_ok=True)
    tmpdir = os.path.join(keydir, "tmp.pid_%d_%s" % (os.getpid(), uuid.uuid4()))
    os.makedirs(tmpdir, exist_ok=True)
    write(os.path.join(tmpdir, name), data)
    os.replace(os.path.join(tmpdir, name), os.path.join(keydir, name))
    try:
        os.removedirs(tmpdir)
    except OSError as e:
        if e.errno != errno.ENOTEMPTY:
            raise
EOF

# pycheck TITLE [TIMEOUT]: runs the python snippet on stdin (after the
# prelude) and reports each check it prints.  A snippet that dies is one
# more failed check, with its traceback.
pycheck() {
	local title=$1 limit=${2:-90} script kind todo desc rc
	script=$(cat)
	timeout "$limit" python3 -c "$PY_PRELUDE"$'\n'"$script" >"$T_TMP/.py.out" 2>"$T_TMP/.py.err" </dev/null
	rc=$?
	while IFS=$'\x1f' read -r kind todo desc; do
		case $kind in
		ok) TAP_TODO=$todo ok "$desc" ;;
		"not ok") TAP_TODO=$todo not_ok "$desc" ;;
		skip) skip "$desc" "$todo" ;;
		"#") diag "  $todo" ;;
		*) diag "$kind $todo $desc" ;;
		esac
	done <"$T_TMP/.py.out"
	TAP_TODO=
	if [ "$rc" != 0 ]; then
		not_ok "$title: the checks ran to the end"
		diag "exit status $rc$([ "$rc" = 124 ] && echo " (timed out after ${limit}s)")"
		sed -n '1,30p' "$T_TMP/.py.err" | sed 's/^/#   /'
	fi
}

# --- tcfs mount: returns once the mount serves ----------------------------

mount_fresh serves && {
	pycheck "serves" <<'EOF'
st, parent = os.stat(M), os.stat(os.path.dirname(M))
check("tcfs mount returns with the mount serving (own st_dev, empty root)",
      st.st_dev != parent.st_dev and os.listdir(M) == [], "listdir: %s" % os.listdir(M))
EOF
	unmount_checked serves
}

# --- atomic rename of files -----------------------------------------------

mount_fresh rename && {
	pycheck "rename" <<'EOF'
k = os.path.join(M, key(1))
os.mkdir(k)
write(k + "/a.cubin", b"old bytes")
write(k + "/b.tmp", b"new bytes")
os.rename(k + "/b.tmp", k + "/a.cubin")
check("rename over an existing file replaces it",
      read(k + "/a.cubin") == b"new bytes" and sorted(os.listdir(k)) == ["a.cubin"],
      "listdir %s" % os.listdir(k))
check_errno("the renamed-away name is gone (ENOENT)", errno.ENOENT, os.stat, k + "/b.tmp")

# A reader (another process) opens and reads the target while a writer
# replaces it 300 times with write-tmp + os.replace (Triton 3.0's protocol).
def version(i):
    return (b"%06d|" % i) * (500 + (i % 7) * 6000)
target = k + "/x.ptx"
write(target, version(0))
rd, wr = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(wr)
    os.set_blocking(rd, False)
    res = {"reads": 0, "enoent": 0, "errors": [], "torn": 0, "back": 0, "versions": set()}
    last = -1
    t0 = time.monotonic()
    while True:
        try:
            done = os.read(rd, 1) == b""  # EOF: the writer is done
        except BlockingIOError:
            done = time.monotonic() - t0 > 60
        try:
            with open(target, "rb") as f:
                data = f.read()
            os.stat(k)
        except FileNotFoundError:
            res["enoent"] += 1
            data = None
        except OSError as e:
            res["errors"].append(errname(e.errno))
            data = None
        if data is not None:
            res["reads"] += 1
            try:
                i = int(data[:6])
            except ValueError:
                i = -1
            if i < 0 or data != version(i):
                res["torn"] += 1
            else:
                res["versions"].add(i)
                if i < last:
                    res["back"] += 1
                last = max(last, i)
        if done:
            break
    res["versions"] = len(res["versions"])
    res["errors"] = res["errors"][:5]
    write(os.environ["T_TMP"] + "/reader.json", json.dumps(res).encode())
    os._exit(0)
os.close(rd)
werr = []
time.sleep(0.05)
for i in range(1, 301):
    tmp = "%s.tmp.pid_%d_%d" % (target, os.getpid(), i)
    try:
        write(tmp, version(i))
        os.replace(tmp, target)
    except OSError as e:
        werr.append("%d: %s" % (i, e))
os.close(wr)
os.waitpid(pid, 0)
r = json.loads(read(os.environ["T_TMP"] + "/reader.json"))
print("#\x1freader: %s" % r)
check("the writer replaced the file 300 times without an error", not werr, werr[:5])
check("a concurrent reader never gets ENOENT for the replaced name (%d reads)" % r["reads"],
      r["enoent"] == 0 and r["reads"] >= 50, r)
check("a concurrent reader gets no other error (ESTALE, EACCES, ...)", not r["errors"], r)
check("a concurrent reader always reads one whole version", r["torn"] == 0, r)
check("a concurrent reader never goes back to an older version", r["back"] == 0, r)
check("after the storm the name holds the last version, and no temp file is left",
      read(target) == version(300) and sorted(os.listdir(k)) == ["a.cubin", "x.ptx"],
      sorted(os.listdir(k))[:10])
EOF
	unmount_checked rename
}

# --- rename of directories ------------------------------------------------

mount_fresh dirrename && {
	pycheck "dirrename" <<'EOF'
os.chdir(M)
# PyTorch Inductor's bundler: a whole dir root/tmp.<uuid> renamed onto KEY.
tmp = "tmp." + uuid.uuid4().hex
os.mkdir(tmp)
write(tmp + "/k.cubin", b"cubin")
write(tmp + "/__grp__k.json", b"{}")
k1 = key(1)
check_errno("rename of a directory onto a missing name succeeds", 0, os.rename, tmp, k1)
check("the renamed directory keeps its entries, the old name is gone",
      sorted(os.listdir(k1)) == ["__grp__k.json", "k.cubin"] and read(k1 + "/k.cubin") == b"cubin"
      and not os.path.exists(tmp), os.listdir("."))
k2 = key(2)
os.mkdir(k2)
tmp = "tmp." + uuid.uuid4().hex
os.mkdir(tmp)
write(tmp + "/k.json", b"json")
check_errno("rename of a directory onto an empty directory succeeds", 0, os.replace, tmp, k2)
check("the empty target is replaced by the renamed directory",
      os.listdir(k2) == ["k.json"] and read(k2 + "/k.json") == b"json" and not os.path.exists(tmp),
      os.listdir("."))
tmp = "tmp." + uuid.uuid4().hex
os.mkdir(tmp)
write(tmp + "/k.ttir", b"ttir")
check_errno("rename of a directory onto a non-empty directory fails with ENOTEMPTY",
            errno.ENOTEMPTY, os.replace, tmp, k1)
check("after the failed rename both directories are unchanged",
      os.listdir(tmp) == ["k.ttir"] and sorted(os.listdir(k1)) == ["__grp__k.json", "k.cubin"])
write("file", b"f")
check_errno("rename of a file onto a directory fails with EISDIR", errno.EISDIR, os.rename, "file", tmp)
check_errno("rename of a directory onto a file fails with ENOTDIR", errno.ENOTDIR, os.rename, tmp, "file")
os.makedirs(tmp + "/sub/deeper")
check_errno("rename of a directory into its own subdirectory fails with EINVAL",
            errno.EINVAL, os.rename, tmp, tmp + "/sub/deeper/x")
check("after the failed renames nothing moved",
      read("file") == b"f" and sorted(os.listdir(tmp)) == ["k.ttir", "sub"]
      and os.listdir(tmp + "/sub") == ["deeper"])
# A directory moved to another parent keeps working below its new name.
os.rename(tmp, k1 + "/moved")
check("a directory moved under another one is reachable there with its tree",
      read(k1 + "/moved/k.ttir") == b"ttir" and os.path.isdir(k1 + "/moved/sub/deeper"))
EOF
	unmount_checked dirrename
}

# --- rmdir, mkdir, ENOENT -------------------------------------------------

mount_fresh dirs && {
	pycheck "dirs" <<'EOF'
k = os.path.join(M, key(1))
os.mkdir(k)
os.mkdir(k + "/empty")
check_errno("rmdir of an empty directory succeeds", 0, os.rmdir, k + "/empty")
check("the removed directory is gone", not os.path.exists(k + "/empty") and os.listdir(k) == [])
write(k + "/a.json", b"{}")
check_errno("rmdir of a non-empty directory fails with ENOTEMPTY", errno.ENOTEMPTY, os.rmdir, k)
tmpdir = k + "/tmp.pid_%d_%s" % (os.getpid(), uuid.uuid4())
os.mkdir(tmpdir)
write(tmpdir + "/b.cubin", b"cubin")
os.replace(tmpdir + "/b.cubin", k + "/b.cubin")
e = errno_of(os.removedirs, tmpdir)
check("os.removedirs(KEY/tmpdir) of the emptied temp dir does not fail", e == 0, errname(e))
check("os.removedirs removed the temp dir and stopped at KEY (ENOTEMPTY)",
      not os.path.exists(tmpdir) and sorted(os.listdir(k)) == ["a.json", "b.cubin"]
      and os.listdir(M) == [key(1)], "%s %s" % (os.listdir(M), os.listdir(k)))
check_errno("rmdir of a file fails with ENOTDIR", errno.ENOTDIR, os.rmdir, k + "/a.json")

check_errno("mkdir of an existing directory fails with EEXIST", errno.EEXIST, os.mkdir, k)
check_errno("mkdir over an existing file fails with EEXIST", errno.EEXIST, os.mkdir, k + "/a.json")
check_errno("os.makedirs(exist_ok=True) of an existing directory succeeds", 0, os.makedirs, k, 0o777, True)
check_errno("os.makedirs(exist_ok=True) of new nested directories succeeds", 0,
            os.makedirs, M + "/n1/n2/n3", 0o777, True)
check("os.makedirs made every level", os.path.isdir(M + "/n1/n2/n3"))

miss = k + "/missing.cubin"
check_errno("stat of a missing file fails with ENOENT", errno.ENOENT, os.stat, miss)
check_errno("open of a missing file fails with ENOENT", errno.ENOENT, open, miss, "rb")
check_errno("unlink of a missing file fails with ENOENT", errno.ENOENT, os.unlink, miss)
check_errno("rmdir of a missing directory fails with ENOENT", errno.ENOENT, os.rmdir, M + "/" + key(9))
check_errno("rename of a missing file fails with ENOENT", errno.ENOENT, os.rename, miss, k + "/x")
check_errno("creating a file in a missing directory fails with ENOENT", errno.ENOENT,
            open, M + "/" + key(9) + "/x.json", "wb")
check_errno("stat below a file fails with ENOTDIR", errno.ENOTDIR, os.stat, k + "/a.json/x")
os.unlink(k + "/a.json")
check_errno("stat of an unlinked file fails with ENOENT", errno.ENOENT, os.stat, k + "/a.json")
check("stat of the same missing path stays ENOENT (20 times)",
      all(errno_of(os.stat, miss) == errno.ENOENT for _ in range(20)))
EOF
	unmount_checked dirs
}

# --- inode numbers --------------------------------------------------------

mount_fresh inodes && {
	pycheck "inodes" <<'EOF'
inos = {}
for d in range(10):
    kd = os.path.join(M, key(d))
    os.mkdir(kd)
    inos[kd] = os.stat(kd).st_ino
    for i in range(20):
        p = "%s/f%02d.ttgir" % (kd, i)
        write(p, b"%d %d" % (d, i) if i % 2 else b"same bytes")  # half share one blob
        inos[p] = os.stat(p).st_ino
files = [p for p in inos if not os.path.isdir(p)]
check("200 files (half with identical bytes) and 10 dirs have 210 distinct st_ino",
      len(files) == 200 and len(set(inos.values())) == 210 and 0 not in inos.values(),
      "%d distinct" % len(set(inos.values())))
check("st_ino is stable: a second stat of every file gives the same number",
      all(os.stat(p).st_ino == n for p, n in inos.items()))
check("readdir's d_ino agrees with stat's st_ino",
      all(e.inode() == inos[e.path] for e in os.scandir(os.path.join(M, key(3)))))
seen = set(inos.values())
p = os.path.join(M, key(0), "f00.ttgir")
old = os.stat(p).st_ino
tmp = p + ".tmp"
write(tmp, b"replacement")
tino = os.stat(tmp).st_ino
os.replace(tmp, p)
new = os.stat(p).st_ino
check("a file replaced by os.replace gets a new st_ino (the renamed file's own)",
      new != old and new == tino and new not in seen, "old %d tmp %d new %d" % (old, tino, new))
seen.add(new)
fresh = []
for d in range(10):
    kd = os.path.join(M, key(d))
    for i in range(0, 20, 4):
        q = "%s/f%02d.ttgir" % (kd, i)
        os.unlink(q)
        write(q, b"again")  # the same name again
        fresh.append(os.stat(q).st_ino)
        r = "%s/g%02d.ttgir" % (kd, i)
        write(r, b"other")  # and a new name
        fresh.append(os.stat(r).st_ino)
check("inode numbers are not reused after unlink + create (100 new files)",
      not (set(fresh) & seen) and len(set(fresh)) == len(fresh),
      "reused: %s" % sorted(set(fresh) & seen)[:10])
EOF
	unmount_checked inodes
}

# --- open files keep their bytes ------------------------------------------

mount_fresh openkeep && {
	pycheck "openkeep" <<'EOF'
k = os.path.join(M, key(1))
os.mkdir(k)
p = k + "/big.cubin"
old, new = pbytes(3 << 20, 1), pbytes(1 << 20, 2)
write(p, old)

f = open(p, "rb")
tmp = k + "/big.tmp"
write(tmp, new)
os.replace(tmp, p)
got = f.read()
check("an fd opened before os.replace reads the old bytes completely", got == old,
      "read %d bytes, want %d; equal prefix %s" % (len(got), len(old), got[:1000] == old[:1000]))
st = os.fstat(f.fileno())
check("fstat on it still works and gives the old size", st.st_size == len(old), st)
f.close()
check("the name reads the new bytes", read(p) == new)

f = open(p, "rb")
head = f.read(4096)
os.unlink(p)
rest = f.read()
check("an fd opened (and partly read) before unlink reads the rest of the old bytes",
      head + rest == new, "read %d bytes, want %d" % (len(head + rest), len(new)))
e = errno_of(os.fstat, f.fileno())
check("fstat on an unlinked open file works", e == 0, errname(e))
write(p, b"recreated")
f.seek(0)
check("after the name is created again the old fd still reads the old bytes",
      f.read() == new and read(p) == b"recreated")
f.close()

# Replaced while a second process holds it open: it keeps reading its file.
write(p, old)
rd, wr = os.pipe()
rd2, wr2 = os.pipe()
pid = os.fork()
if pid == 0:
    g = open(p, "rb")
    os.write(wr, b"1")
    os.read(rd2, 1)
    ok = g.read() == old
    os._exit(0 if ok else 1)
os.read(rd, 1)
write(tmp, new)
os.replace(tmp, p)
os.write(wr2, b"1")
_, status = os.waitpid(pid, 0)
check("another process's fd opened before os.replace reads the old bytes",
      os.waitstatus_to_exitcode(status) == 0)
EOF
	unmount_checked openkeep
}

# --- mmap PROT_EXEC of MAP_PRIVATE, dlopen --------------------------------

mount_fresh mmap && {
	pycheck "mmap" <<'EOF'
import ctypes, glob, importlib.util, subprocess, sysconfig
small = os.environ["SMALL"]
so_src = sorted(glob.glob(small + "/*/cuda_utils*.so"))[0]
launcher_src = sorted(glob.glob(small + "/*/__triton_launcher*.so"))[0]
so_bytes, launcher_bytes = read(so_src), read(launcher_src)
k = os.path.join(M, os.path.basename(os.path.dirname(so_src)))
so = os.path.join(k, os.path.basename(so_src))
put(k, os.path.basename(so), so_bytes)
check("the put protocol leaves exactly the .so in its key dir", os.listdir(k) == [os.path.basename(so)],
      os.listdir(k))

def xmap(path):
    f = open(path, "rb")
    m = mmap.mmap(f.fileno(), os.fstat(f.fileno()).st_size, flags=mmap.MAP_PRIVATE,
                  prot=mmap.PROT_READ | mmap.PROT_EXEC)
    return f, m
try:
    f, m = xmap(so)
    check("mmap of a .so with PROT_READ|PROT_EXEC, MAP_PRIVATE works and maps its bytes",
          m[:] == so_bytes)
    m.close(); f.close()
except OSError as e:
    check("mmap of a .so with PROT_READ|PROT_EXEC, MAP_PRIVATE works and maps its bytes", False, e)

# Mapped, not yet touched, then replaced (and then unlinked): the mapping
# keeps the old bytes.
f, m = xmap(so)
put(k, os.path.basename(so), launcher_bytes)
check("a mapping taken before the file was replaced keeps the old bytes",
      m[:] == so_bytes and read(so) == launcher_bytes)
m.close(); f.close()
f, m = xmap(so)
os.unlink(so)
check("a mapping taken before the file was unlinked keeps its bytes", m[:] == launcher_bytes)
m.close(); f.close()

# dlopen from the mount, as importlib does for Triton's compiled modules.
dyn = os.path.join(sysconfig.get_path("platstdlib"), "lib-dynload")
mods = []
for path in sorted(glob.glob(dyn + "/*.so")):
    name = os.path.basename(path).split(".")[0]
    if name in sys.modules or name.startswith("_test") or name.startswith("_ctypes"):
        continue
    r = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", path],
                       capture_output=True)
    if r.returncode == 0:
        mods.append((name, path))
    if len(mods) == 2:
        break
if len(mods) < 2:
    for d in ("importlib loads an extension module from the mount",
              "dlopen of a new .so while an unlinked one is still mapped loads the new one"):
        skip(d, "fewer than 2 extension modules in %s load with ctypes" % dyn)
else:
    (n1, p1), (n2, p2) = mods
    k2 = os.path.join(M, key(2))
    put(k2, os.path.basename(p1), read(p1))
    target = os.path.join(k2, os.path.basename(p1))
    spec = importlib.util.spec_from_file_location(n1, target)
    try:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        check("importlib loads an extension module (%s) from the mount" % n1,
              mod.__file__ == target)
    except Exception as e:
        check("importlib loads an extension module (%s) from the mount" % n1, False, repr(e))
    # glibc takes a library with the (st_dev, st_ino) of one it has loaded
    # for that one: a new file must never get the number of a file that is
    # gone but still mapped.
    h1 = ctypes.CDLL(target)
    os.unlink(target)
    k3 = os.path.join(M, key(3))
    put(k3, os.path.basename(p2), read(p2))
    other = os.path.join(k3, os.path.basename(p2))
    h2 = ctypes.CDLL(other)
    check("dlopen of a new .so while an unlinked one is still mapped loads the new one",
          hasattr(h2, "PyInit_" + n2) and not hasattr(h2, "PyInit_" + n1),
          "PyInit_%s found: %s" % (n2, hasattr(h2, "PyInit_" + n2)))

# Bonus: Triton's own cuda_utils .so (needs libcuda: only where it loads from disk).
plain = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", so_src],
                       capture_output=True, text=True)
if plain.returncode != 0:
    skip("ctypes.CDLL loads Triton's cuda_utils .so from the mount",
         "it does not load from plain disk either: %s" % plain.stderr.strip().splitlines()[-1][:100])
else:
    put(k, os.path.basename(so), so_bytes)
    r = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", so],
                       capture_output=True, text=True)
    check("ctypes.CDLL loads Triton's cuda_utils .so from the mount", r.returncode == 0, r.stderr)
EOF
	unmount_checked mmap
}

# --- truncate, append, offsets --------------------------------------------

mount_fresh rw && {
	pycheck "rw" <<'EOF'
k = os.path.join(M, key(1))
os.mkdir(k)
p = k + "/t.llir"
data = pbytes(10000, 1)
write(p, data)
os.truncate(p, 4000)
check("os.truncate shrinks a file", os.stat(p).st_size == 4000 and read(p) == data[:4000])
os.truncate(p, 9000)
check("os.truncate extends a file with zeros", read(p) == data[:4000] + bytes(5000))
with open(p, "r+b") as f:
    os.ftruncate(f.fileno(), 100)
    check("ftruncate shrinks an open file (fstat sees it)", os.fstat(f.fileno()).st_size == 100)
    os.ftruncate(f.fileno(), 300)
    f.seek(0)
    check("ftruncate extends an open file, reading it back gives zeros",
          f.read() == data[:100] + bytes(200))
check("the truncated file reads back exact after close", read(p) == data[:100] + bytes(200))
os.truncate(p, 0)
check("os.truncate to 0 empties it", os.stat(p).st_size == 0 and read(p) == b"")
with open(p, "wb") as f:
    f.write(b"abc")
with open(p, "r+b") as f:
    f.truncate(0)
    f.write(b"xy")
check("truncate then write through the same fd", read(p) == b"xy")

a = k + "/a.json"
with open(a, "ab") as f:
    f.write(b"one,")
with open(a, "ab") as f:
    f.write(b"two,")
fd = os.open(a, os.O_WRONLY | os.O_APPEND)
os.lseek(fd, 0, os.SEEK_SET)
os.write(fd, b"three")
os.close(fd)
check("O_APPEND writes append (even after a seek to 0)", read(a) == b"one,two,three", read(a))
log = k + "/log.txt"
write(log, b"header\n")
pids = []
for w in range(4):
    pid = os.fork()
    if pid == 0:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        for i in range(150):
            os.write(fd, b"%d %03d %s\n" % (w, i, b"x" * 60))
        os.close(fd)
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
lines = read(log).splitlines()
want = sorted([b"header"] + [b"%d %03d %s" % (w, i, b"x" * 60) for w in range(4) for i in range(150)])
check("4 processes appending 150 lines each with O_APPEND: all 600 lines land whole",
      sorted(lines) == want, "%d lines, %d distinct, %d as written" % (
      len(lines), len(set(lines)), len(set(lines) & set(want))))

# An empty file created through the mount, then written through a new fd
# (after the kernel went no-open: the opens above did that).
e = k + "/empty-then-written.txt"
write(e, b"")
fd = os.open(e, os.O_WRONLY)
os.write(fd, b"hello")
os.close(fd)
check("a write to an existing empty file is kept (stat and read see it)",
      os.stat(e).st_size == 5 and read(e) == b"hello",
      "size %d, read %r" % (os.stat(e).st_size, read(e)))
e2 = k + "/empty-then-appended.txt"
write(e2, b"")
with open(e2, "ab") as f:
    f.write(b"line\n")
check("O_APPEND to an existing empty file is kept", read(e2) == b"line\n", repr(read(e2)))

o = k + "/o.cubin"
model = bytearray()
fd = os.open(o, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
rng = random.Random(7)
for i in range(300):
    op = rng.random()
    if op < 0.8:
        off = rng.randrange(0, 300000)
        chunk = pbytes(rng.randrange(1, 70000), i)
        os.pwrite(fd, chunk, off)
        if len(model) < off:
            model.extend(bytes(off - len(model)))
        model[off:off + len(chunk)] = chunk
    else:
        n = rng.randrange(0, 300000)
        os.ftruncate(fd, n)
        del model[n:]
        model.extend(bytes(n - len(model)))
    if i % 50 == 49:
        got = os.pread(fd, len(model) + 10, 0)
        if got != model:
            break
check("300 random pwrite/ftruncate at offsets read back exact through the fd",
      os.pread(fd, len(model) + 10, 0) == model and os.fstat(fd).st_size == len(model))
os.close(fd)
check("... and exact after close, by a new open", read(o) == model)
with open(o, "r+b") as f:
    f.seek(1 << 20)
    f.write(b"end")
check("a write past the end leaves a hole of zeros", read(o) == bytes(model) + bytes((1 << 20) - len(model)) + b"end")
EOF
	unmount_checked rw
}

# --- chmod, utime, fsync --------------------------------------------------

mount_fresh attrs && {
	pycheck "attrs" <<'EOF'
k = os.path.join(M, key(1))
os.mkdir(k)
p = k + "/m.json"
write(p, b"{}")
os.chmod(p, 0o600)
check("chmod 0600 changes the mode (stat shows it)", stat.S_IMODE(os.stat(p).st_mode) == 0o600,
      oct(os.stat(p).st_mode))
os.chmod(p, 0o755)
check("chmod 0755 changes it again", stat.S_IMODE(os.stat(p).st_mode) == 0o755, oct(os.stat(p).st_mode))
os.chmod(k, 0o700)
check("chmod of a directory", stat.S_IMODE(os.stat(k).st_mode) == 0o700)
os.chmod(k, 0o755)
os.close(os.open(k + "/c.bin", os.O_CREAT | os.O_WRONLY, 0o640))
check("a file created with mode 0640 (umask 022) has it", stat.S_IMODE(os.stat(k + "/c.bin").st_mode) == 0o640,
      oct(os.stat(k + "/c.bin").st_mode))
mt = 1700000000_123456789
os.utime(p, ns=(1600000000_000000001, mt))
st = os.stat(p)
check("os.utime sets mtime to the ns (within 1 us)", abs(st.st_mtime_ns - mt) < 1000,
      "got %d want %d" % (st.st_mtime_ns, mt))
os.utime(k, ns=(mt, mt))
check("os.utime of a directory", abs(os.stat(k).st_mtime_ns - mt) < 1000)
before = time.time_ns()
os.utime(p)
st = os.stat(p)
check("os.utime(path) sets mtime to now", before - 2_000_000_000 <= st.st_mtime_ns <= time.time_ns() + 2_000_000_000,
      "%d vs now %d" % (st.st_mtime_ns, before))
t0 = os.stat(p).st_mtime_ns
time.sleep(0.02)
write(p, b"{\"x\": 1}")
check("writing a file moves its mtime forward", os.stat(p).st_mtime_ns > t0)

q = k + "/s.cubin"
one, two = pbytes(200000, 1), pbytes(300000, 2)
fd1 = os.open(q, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd1, one)
e = errno_of(os.fsync, fd1)
check("fsync of a written file succeeds", e == 0, errname(e))
with open(q, "rb") as f2:
    check("after fsync the bytes are visible through a second fd (writer still open)", f2.read() == one)
fd2 = os.open(q, os.O_RDONLY)
os.pwrite(fd1, two, 0)
e = errno_of(os.fdatasync, fd1)
check("fdatasync succeeds", e == 0, errname(e))
got = os.pread(fd2, len(two) + 10, 0)
check("a second fd opened before a rewrite reads the new bytes after it", got == two,
      "read %d bytes, equal to old %s" % (len(got), got == one))
check("stat of the path sees the new size while the writer is open", os.stat(q).st_size == len(two))
os.close(fd1)
os.close(fd2)
check("after close the file reads back exact", read(q) == two)
fd = os.open(k, os.O_RDONLY | os.O_DIRECTORY)
e = errno_of(os.fsync, fd)
os.close(fd)
check("fsync of a directory succeeds", e == 0, errname(e))
EOF
	unmount_checked attrs
}

# --- atime apart from mtime (utimensat) -----------------------------------

# A snippet's utimensat(2): python's os.utime has no UTIME_OMIT.
read -r -d '' PY_UTIMENSAT <<'EOF'
import ctypes
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
class _ts(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
_libc = ctypes.CDLL(None, use_errno=True)
def utimensat(path, a, m):
    """a, m: ns since the epoch, or UTIME_NOW / UTIME_OMIT."""
    def one(t):
        return _ts(0, t) if t in (UTIME_NOW, UTIME_OMIT) else _ts(t // 10**9, t % 10**9)
    if _libc.utimensat(-100, os.fsencode(path), (_ts * 2)(one(a), one(m)), 0) != 0:
        raise OSError(ctypes.get_errno(), "utimensat")
def times(path):
    st = os.stat(path)
    return (st.st_atime_ns, st.st_mtime_ns)
EOF

mount_fresh times && {
	pycheck "times" <<EOF
$PY_UTIMENSAT
p = os.path.join(M, "t")
write(p, b"x")
os.utime(p, (1900000000, 1950000000))
check("os.utime(atime, mtime) keeps them apart", times(p) == (1900000000 * 10**9, 1950000000 * 10**9), times(p))
A, B = 1500000000_123456789, 1550000000_987654321
utimensat(p, A, B)
check("utimensat sets atime and mtime apart, to the ns", times(p) == (A, B), times(p))
utimensat(p, B, A)
check("... mtime below atime too", times(p) == (B, A), times(p))
C = 1400000000_000000007
c0 = os.stat(p).st_ctime_ns
utimensat(p, C, UTIME_OMIT)
check("atime alone (mtime UTIME_OMIT) leaves mtime", times(p) == (C, A), times(p))
check("... and moves ctime to now", os.stat(p).st_ctime_ns > c0, (c0, os.stat(p).st_ctime_ns))
utimensat(p, UTIME_OMIT, B)
check("mtime alone (atime UTIME_OMIT) leaves atime", times(p) == (C, B), times(p))
before = time.time_ns()
utimensat(p, UTIME_NOW, UTIME_OMIT)
a, m = times(p)
check("atime UTIME_NOW sets atime to now, mtime stays", a >= before - 2 * 10**9 and m == B, (a, m, before))
utimensat(p, C, UTIME_NOW)
a, m = times(p)
check("mtime UTIME_NOW sets mtime to now, atime given stays", a == C and m >= before - 2 * 10**9, (a, m, before))
q = os.path.join(M, "fresh")
write(q, b"y")
# Committed first: a commit (at release, which comes later) sets mtime,
# and so the atime that follows it.
fd = os.open(q, os.O_RDWR)
os.fsync(fd)
os.close(fd)
st = os.stat(q)
utimensat(q, UTIME_OMIT, A)
check("mtime set on a file whose atime was never set keeps the atime it showed",
      times(q) == (st.st_atime_ns, A), (st.st_atime_ns, times(q)))
d = os.path.join(M, "d")
os.mkdir(d)
utimensat(d, A, B)
check("utimensat of a directory keeps atime and mtime apart", times(d) == (A, B), times(d))
read(p)
check("a read leaves atime (noatime)", times(p)[0] == C, times(p))
write(os.environ["T_TMP"] + "/times.json", json.dumps(times(p)).encode())
EOF
	T=$M/tm
	touch "$T"
	touch -a -d @1600000000 "$T"
	touch -m -d @1650000000 "$T"
	check_eq "touch -a then touch -m: each sets its own time" \
		"1600000000 1650000000" "$(stat -c '%X %Y' "$T")"
	touch -a -d @1610000000 "$T"
	check_eq "touch -a leaves mtime" "1610000000 1650000000" \
		"$(stat -c '%X %Y' "$T")"
	unmount_checked times
	tcfs mount -o noviews --store "$S" "$M"
	check_rc "the store mounts again" 0
	pycheck "times-remount" <<'EOF'
p = os.path.join(M, "t")
st = os.stat(p)
want = json.loads(read(os.environ["T_TMP"] + "/times.json"))
check("atime and mtime stay apart across a remount", [st.st_atime_ns, st.st_mtime_ns] == want,
      ([st.st_atime_ns, st.st_mtime_ns], want))
EOF
	unmount_checked times-remount
}

# --- set-id bits cleared by another user's write ----------------------------

# A file of mode 04777 (or 02777) is anyone's to write, and a write by a
# user other than root clears the set-id bits (ext4; pjdfstest chmod/12):
# the kernel asks for the clearing on behalf of the writer, who does not
# own the file.  Checked with allow_other alone (which brings
# default_permissions, fs.c) and with default_permissions said too.
setid_checks() {
	local opts=$1 f
	S=$T_TMP/setid-$opts/store
	M=$T_TMP/setid-$opts/mnt
	mkdir -p "$M"
	chmod 755 "$T_TMP/setid-$opts"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount -o "noviews,$opts" --store "$S" "$M"
	check_rc "$opts: mount" 0
	mountpoint -q "$M" || return
	chmod 1777 "$M"
	for mode in 4777 2777 6777; do
		f=$M/f$mode
		printf a >"$f"
		chmod "$mode" "$f"
		run setpriv --reuid=65534 --regid=65534 --clear-groups \
			sh -c "printf b >>'$f'"
		check_rc "$opts: another uid appends to a $mode file" 0
		check_eq "... which has its bytes and loses its set-id bits" \
			"ab 777" "$(cat "$f") $(stat -c %a "$f")"
	done
	f=$M/keep
	printf a >"$f"
	chmod 4777 "$f"
	check "$opts: another uid may not chmod it (only the kernel's clearing)" \
		eval "! setpriv --reuid=65534 --regid=65534 --clear-groups chmod 777 '$f' 2>/dev/null"
	chmod 4775 "$f"
	check "... nor write a 04775 file, that it may not write" \
		eval "! setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \"printf b >>'$f'\" 2>/dev/null"
	check_eq "... which keeps its mode" "4775" "$(stat -c %a "$f")"
	printf c >>"$f"
	check_eq "a write by root keeps the bits" "4775" "$(stat -c %a "$f")"
	unmount_checked "setid-$opts"
}

if ! is_root || ! command -v setpriv >/dev/null; then
	skip "set-id bits cleared by another user's write" "needs root and setpriv"
else
	chmod o+x "$T_TMP"	# for uid 65534, to reach the mount points
	setid_checks allow_other
	setid_checks allow_other,default_permissions
fi

# --- statfs, name lengths -------------------------------------------------

mount_fresh statfs && {
	pycheck "statfs" <<'EOF'
try:
    sv = os.statvfs(M)
    check("statvfs works; f_namemax is 255", sv.f_namemax == 255 and sv.f_bsize > 0, sv)
except OSError as e:
    check("statvfs works; f_namemax is 255", False, e)
k = os.path.join(M, key(1))
os.mkdir(k)
check_errno("a 256-byte file name fails with ENAMETOOLONG", errno.ENAMETOOLONG, open, k + "/" + "n" * 256, "wb")
check_errno("a 256-byte dir name fails with ENAMETOOLONG", errno.ENAMETOOLONG, os.mkdir, M + "/" + "d" * 256)
check_errno("stat of a 256-byte name fails with ENAMETOOLONG", errno.ENAMETOOLONG, os.stat, k + "/" + "n" * 256)
n255 = "x" * 250 + ".json"
e = errno_of(write, k + "/" + n255, b"255")
check("a 255-byte name works: created, listed, read back",
      e == 0 and os.listdir(k) == [n255] and read(k + "/" + n255) == b"255", errname(e))
e = errno_of(os.mkdir, M + "/" + "d" * 255)
check("a 255-byte directory name works", e == 0 and os.path.isdir(M + "/" + "d" * 255), errname(e))
EOF
	unmount_checked statfs
}

# --- readdir --------------------------------------------------------------

mount_fresh readdir && {
	pycheck "readdir" <<'EOF'
k = os.path.join(M, key(1))
os.mkdir(k)
names = {"f%04d_%s.ttgir" % (i, "x" * (i % 40)) for i in range(1000)}
for n in names:
    write(os.path.join(k, n), n.encode())
lst = os.listdir(k)
check("readdir lists exactly the 1000 created names, without duplicates",
      len(lst) == 1000 and set(lst) == names,
      "%d entries, %d distinct, missing %s, extra %s" % (len(lst), len(set(lst)),
      sorted(names - set(lst))[:3], sorted(set(lst) - names)[:3]))
rng = random.Random(3)
model = set(names)
bad = []
for r in range(8):
    for n in rng.sample(sorted(model), 100):
        os.unlink(os.path.join(k, n))
        model.discard(n)
    for i in range(120):
        n = "r%d_%03d.ptx" % (r, i)
        write(os.path.join(k, n), b"")
        model.add(n)
    lst = os.listdir(k)
    if len(lst) != len(model) or set(lst) != model:
        bad.append("round %d: %d entries (%d distinct), want %d" % (r, len(lst), len(set(lst)), len(model)))
check("readdir between rounds of adds and removes lists exactly the live names (8 rounds)", not bad, bad)
check("the root lists exactly the key dir", os.listdir(M) == [key(1)], os.listdir(M))

# Entries removed while a listing is in progress: every entry that was
# neither added nor removed is returned exactly once.
it = os.scandir(k)
first = [next(it).name for _ in range(300)]
before = set(os.listdir(k))
gone = set(first[:200])  # only entries already returned
for n in gone:
    os.unlink(os.path.join(k, n))
for i in range(50):
    write(os.path.join(k, "late_%02d" % i), b"")
rest = [e.name for e in it]
it.close()
seen = first + rest
stable = before - gone
counts = {}
for n in seen:
    counts[n] = counts.get(n, 0) + 1
missing = sorted(n for n in stable if counts.get(n, 0) == 0)
dup = sorted(n for n in stable if counts.get(n, 0) > 1)
check("a listing in progress returns every unchanged entry exactly once while others are removed/added",
      not missing and not dup, "%d unchanged entries missing %s, %d duplicated %s" % (
      len(missing), missing[:3], len(dup), dup[:3]))
EOF
	unmount_checked readdir
}

# --- no extra files in key dirs, group files ------------------------------

mount_fresh keydir && {
	pycheck "keydir" <<'EOF'
small = os.environ["SMALL"]
kernels = sorted(d for d in os.listdir(small) if any(n.startswith("__grp__") for n in os.listdir(os.path.join(small, d))))
src_key = kernels[0]
files = sorted(os.listdir(os.path.join(small, src_key)))
group = [n for n in files if n.startswith("__grp__")][0]
children = [n for n in files if n != group]
kd = os.path.join(M, src_key)
os.makedirs(kd, exist_ok=True)
check("a probe of the missing group file is a miss", not os.path.exists(os.path.join(kd, group)))
for n in children:
    put(kd, n, read(os.path.join(small, src_key, n)))
gbytes = json.dumps({"child_paths": {n: os.path.join(kd, n) for n in children}}).encode()
put(kd, group, gbytes)
check("after Triton's put protocol the key dir holds exactly the artifacts (no temp leftovers)",
      sorted(os.listdir(kd)) == files, "got %s" % sorted(os.listdir(kd)))
check("the root holds exactly the key dir", os.listdir(M) == [src_key], os.listdir(M))
check("every artifact reads back byte-exact",
      all(read(os.path.join(kd, n)) == read(os.path.join(small, src_key, n)) for n in children))
g = json.loads(read(os.path.join(kd, group)))["child_paths"]
check("the group file's child paths resolve under the mount and exist",
      list(g) == children and all(g[n] == os.path.join(kd, n) and os.path.exists(g[n]) for n in children), g)

# Four processes put the same kernel concurrently, 15 times each (Triton's
# compile race): no error, the result converges, no temp entry remains.
src2 = kernels[1]
files2 = sorted(os.listdir(os.path.join(small, src2)))
g2 = [n for n in files2 if n.startswith("__grp__")][0]
kd2 = os.path.join(M, src2)
blobs = {n: read(os.path.join(small, src2, n)) for n in files2 if n != g2}
blobs[g2] = json.dumps({"child_paths": {n: os.path.join(kd2, n) for n in files2 if n != g2}}).encode()
pids = []
for w in range(4):
    pid = os.fork()
    if pid == 0:
        try:
            for it in range(15):
                for n in [n for n in files2 if n != g2] + [g2]:
                    put(kd2, n, blobs[n])
            os._exit(0)
        except BaseException as e:
            sys.stderr.write("worker %d: %r\n" % (w, e))
            os._exit(1)
    pids.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
check("4 processes racing the put protocol on one key all succeed (rmdir of their temp dirs never fails)",
      codes == [0, 0, 0, 0], codes)
check("the raced key dir holds exactly the artifacts, byte-exact",
      sorted(os.listdir(kd2)) == files2 and all(read(os.path.join(kd2, n)) == b for n, b in blobs.items()),
      sorted(os.listdir(kd2)))
check("no temp entry is left at the top either", sorted(os.listdir(M)) == sorted([src_key, src2]), os.listdir(M))
EOF
	unmount_checked keydir
}

# --- writes survive unmount + remount -------------------------------------

mount_fresh remount && {
	run timeout 120 python3 "$REPLAY/replay.py" "$SMALL" "$M"
	check_replay "a cold replay of the small fixture onto the mount has no error"
	pycheck "remount-before" <<'EOF'
k = os.path.join(M, key(1))
os.mkdir(k)
write(k + "/empty.json", b"")
write(k + "/big.cubin", pbytes(5 << 20, 5))
write(k + "/mode.so", b"so")
os.chmod(k + "/mode.so", 0o700)
os.utime(k + "/big.cubin", ns=(1600000000_000000000, 1650000000_987654321))
inos = {}
for root, dirs, files in os.walk(M):
    for n in dirs + files:
        p = os.path.join(root, n)
        st = os.stat(p)
        inos[os.path.relpath(p, M)] = [st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns]
write(os.environ["T_TMP"] + "/before.json", json.dumps(inos).encode())
print("#\x1f%d entries before the remount" % len(inos))
EOF
	unmount_checked remount
	tcfs mount -o noviews --store "$S" "$M"
	check_rc "the store mounts again" 0
	pycheck "remount-after" <<'EOF'
small = os.environ["SMALL"]
before = json.loads(read(os.environ["T_TMP"] + "/before.json"))
after = {}
for root, dirs, files in os.walk(M):
    for n in dirs + files:
        p = os.path.join(root, n)
        st = os.stat(p)
        after[os.path.relpath(p, M)] = [st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns]
check("after the remount the tree has exactly the same entries (%d)" % len(before),
      sorted(after) == sorted(before), "missing %s extra %s" % (sorted(set(before) - set(after))[:3],
      sorted(set(after) - set(before))[:3]))
diff = [p for p in before if p in after and before[p][1:] != after[p][1:]]
check("every entry keeps its mode, size and mtime", not diff,
      ["%s %s -> %s" % (p, before[p], after[p]) for p in diff[:5]])
bad = []
for kdir in os.listdir(small):
    for n in os.listdir(os.path.join(small, kdir)):
        if n.startswith("__grp__"):
            continue
        if read(os.path.join(M, kdir, n)) != read(os.path.join(small, kdir, n)):
            bad.append(kdir + "/" + n)
check("every file written before reads back byte-exact after the remount", not bad, bad[:5])
k = os.path.join(M, key(1))
check("the empty, the 5 MiB and the mode 0700 files are exact too",
      read(k + "/empty.json") == b"" and read(k + "/big.cubin") == pbytes(5 << 20, 5)
      and read(k + "/mode.so") == b"so" and stat.S_IMODE(os.stat(k + "/mode.so").st_mode) == 0o700)
new = k + "/after.json"
write(new, b"x")
seen = {v[0] for v in before.values()}
check("a file created after the remount gets an inode number never used before",
      os.stat(new).st_ino not in seen, os.stat(new).st_ino)
EOF
	unmount_checked remount
	M2=$T_TMP/remount/elsewhere
	mkdir -p "$M2"
	at_exit "fusermount3 -uz '$M2'"
	tcfs mount -o noviews --store "$S" "$M2"
	check_rc "the store mounts at another mount point" 0
	run timeout 120 python3 "$REPLAY/replay.py" "$SMALL" "$M2"
	check_replay "a warm replay at the other mount point reads every kernel back (group paths follow the mount)"
	check_eq "... and every kernel is a hit there" "0" \
		"$(json_eval "$OUT" 'sum(p["seen"]["kernel"]["misses"] + p["seen"]["module"]["misses"] for p in d["procs"])' 2>&1)"
	M=$M2 unmount_checked remount-elsewhere
}

# --- the daemon holds nothing per closed file -----------------------------

# Under the usual soft limit of 1024 open files (the daemon inherits it):
# a cold replay of the multitarget fixture (1237 files, as a cache fills
# up), then 1500 files created, written and closed.
BIG=$(fixture_top triton-3.6-multitarget.tgz big) || {
	echo "Bail out! cannot extract triton-3.6-multitarget.tgz"
	exit 1
}

# mount_limited NAME: mount_fresh with the daemon under ulimit -n 1024.
mount_limited() {
	S=$T_TMP/$1/store
	M=$T_TMP/$1/mnt
	export S M
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	run bash -c 'ulimit -n 1024 && exec "$0" mount --store "$1" "$2"' "$TCFS" "$S" "$M"
	if [ "$RC" != 0 ]; then
		not_ok "$1: tcfs mount with ulimit -n 1024"
		show_run
		return 1
	fi
}

mount_limited limited-replay && {
	run timeout 120 python3 "$REPLAY/replay.py" "$BIG" "$M"
	check_replay "a cold replay of the multitarget fixture (1237 files) under a daemon limit of 1024 fds has no error"
	unmount_checked limited-replay
}

mount_limited handles && {
	DPID=$(daemon_pid "$S") pycheck "handles" <<'EOF'
pid = int(os.environ["DPID"])
def fds():
    return len(os.listdir("/proc/%d/fd" % pid))
k = os.path.join(M, key(1))
os.mkdir(k)
write(k + "/first.json", b"{}")
read(k + "/first.json")  # an open of an existing file: the kernel goes no-open
before = fds()
errs = []
for i in range(1500):
    try:
        write("%s/f%04d.ttir" % (k, i), b"ir %d\n" % i)
    except OSError as e:
        errs.append("f%04d: %s" % (i, errname(e.errno)))
time.sleep(0.5)
after = fds()
check("1500 files created and closed under a daemon limit of 1024 fds: no error",
      not errs, "%d errors, first %s" % (len(errs), errs[:3]))
check("the daemon's open fds do not grow with closed files (%d before, %d after)" % (before, after),
      after - before < 100)
bad = [i for i in range(0, 1500, 50) if errno_of(read, "%s/f%04d.ttir" % (k, i)) or read("%s/f%04d.ttir" % (k, i)) != b"ir %d\n" % i]
check("the files read back", not bad, bad[:5])
EOF
	unmount_checked handles
}

# --- group files follow the mount, whatever protocol wrote them -----------

# A store written at one mount point and mounted at another: every group
# file names its children under the new one.  Triton 3.2+ (replayed
# above), Triton 3.0/3.1 (FILE.tmp.pid_* renamed in place) and PyTorch
# Inductor's bundler (a whole tmp.<uuid> dir renamed onto KEY).
for proto in 3.0 inductor; do
	mount_fresh "proto-$proto" && {
		run timeout 120 python3 "$REPLAY/replay.py" --protocol "$proto" "$SMALL" "$M"
		check_replay "protocol $proto: a cold replay of the small fixture has no error"
		run ls -A "$M"
		check_eq "protocol $proto: no temp entry is left at the top" \
			"$(ls -A "$SMALL")" "$(cat "$OUT")"
		run find "$M" -name '*tmp*'
		check_eq "protocol $proto: no temp entry is left in the key dirs" "" "$(cat "$OUT")"
		unmount_checked "proto-$proto"
		M=$T_TMP/proto-$proto/elsewhere
		mkdir -p "$M"
		at_exit "fusermount3 -uz '$M'"
		tcfs mount -o noviews --store "$S" "$M"
		check_rc "protocol $proto: the store mounts at another mount point" 0
		run timeout 120 python3 "$REPLAY/replay.py" "$SMALL" "$M"
		check_replay "protocol $proto: at another mount point every group file names its children there"
		unmount_checked "proto-$proto-elsewhere"
	}
done

# A group file of 1 to 16 MiB (in Triton's format, if not of its size) is
# made key-relative however it arrives, written in place or renamed in
# with its key dir (index/model/group.h): at another mount point both name their
# children there.
mount_fresh biggroup && {
	pycheck "biggroup" <<'EOF'
import json
def big(root, k):
    kids = {"f%05d.cubin" % i: "%s/%s/f%05d.cubin" % (root, k, i) for i in range(25000)}
    return json.dumps({"child_paths": kids}).encode()
k1, k2 = key(1), key(2)
os.mkdir(os.path.join(M, k1))
write(os.path.join(M, k1, "__grp__k.json"), big(M, k1))
tmp = os.path.join(M, "tmp." + uuid.uuid4().hex)
os.mkdir(tmp)
write(tmp + "/__grp__k.json", big(M, k2))
os.rename(tmp, os.path.join(M, k2))
check("two group files of %d bytes, one written in place, one renamed in" % len(big(M, k1)),
      1 << 20 < len(big(M, k1)) < 16 << 20 and
      read(os.path.join(M, k2, "__grp__k.json")) == big(M, k2))
EOF
	unmount_checked biggroup
	M=$T_TMP/biggroup/elsewhere
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount -o noviews --store "$S" "$M" && pycheck "biggroup-elsewhere" <<'EOF'
import json
for i in (1, 2):
    k = key(i)
    kids = json.loads(read(os.path.join(M, k, "__grp__k.json")))["child_paths"]
    check("at another mount point, group file %d names its children there" % i,
          all(v == "%s/%s/%s" % (M, k, f) for f, v in kids.items()) and len(kids) == 25000)
EOF
	unmount_checked biggroup-elsewhere
}

# --- a plain file system for the caches beside Triton's -----------------
# Inductor's and vLLM's caches live in the same root: symlinks, hard links,
# ctime and nlink as on ext4; owners, devices, fifos and sockets refused.

mount_fresh plain && {
	pycheck "plain-before" <<'EOF'
import socket
d = os.path.join(M, "inductor")
os.mkdir(d)
os.symlink("../target/x", d + "/ln")
check("symlink: readlink gives the target", os.readlink(d + "/ln") == "../target/x")
st = os.lstat(d + "/ln")
check("lstat: S_IFLNK, size = the target's length",
      stat.S_ISLNK(st.st_mode) and st.st_size == len("../target/x"), st)
check("ls shows it as a symlink (DT_LNK)",
      [e.is_symlink() for e in os.scandir(d) if e.name == "ln"] == [True])
os.symlink("real", d + "/rl")
write(d + "/real", b"via link")
check("a relative symlink is followed", read(d + "/rl") == b"via link")
os.rename(d + "/rl", d + "/rl2")
check("rename a symlink", os.readlink(d + "/rl2") == "real" and not os.path.lexists(d + "/rl"))
os.unlink(d + "/rl2")
check("unlink a symlink leaves its target",
      not os.path.lexists(d + "/rl2") and read(d + "/real") == b"via link")
check_errno("readlink of a file: EINVAL", errno.EINVAL, os.readlink, d + "/real")

write(d + "/a", b"one")
os.link(d + "/a", d + "/b")
a, b = os.stat(d + "/a"), os.stat(d + "/b")
check("hard link: both names have one st_ino and st_nlink 2",
      a.st_ino == b.st_ino and a.st_nlink == 2 and b.st_nlink == 2, (a, b))
with open(d + "/b", "r+b") as f:
    f.write(b"TWO")
check("a write through one name is seen through the other", read(d + "/a") == b"TWO")
os.mkdir(d + "/sub")
check_errno("a hard link of a directory: EPERM", errno.EPERM, os.link, d + "/sub", d + "/sub2")
os.link(d + "/a", d + "/c")
os.unlink(d + "/a")
c = os.stat(d + "/c")
check("unlink of one name leaves the others, same inode, nlink 2",
      c.st_ino == a.st_ino and c.st_nlink == 2 and read(d + "/c") == b"TWO", c)

f = d + "/real"
t0 = os.stat(f).st_ctime_ns
time.sleep(0.02)
os.chmod(f, 0o600)
t1 = os.stat(f).st_ctime_ns
check("chmod changes st_ctime", t1 > t0, (t0, t1))
time.sleep(0.02)
os.rename(f, d + "/real2")
t2 = os.stat(d + "/real2").st_ctime_ns
check("rename changes st_ctime", t2 > t1, (t1, t2))
time.sleep(0.02)
with open(d + "/real2", "ab") as w:
    w.write(b"!")
t3 = os.stat(d + "/real2").st_ctime_ns
check("a write changes st_ctime", t3 > t2, (t2, t3))
time.sleep(0.02)
os.link(d + "/real2", d + "/real3")
t4 = os.stat(d + "/real2").st_ctime_ns
check("link changes st_ctime", t4 > t3, (t3, t4))
time.sleep(0.02)
os.unlink(d + "/real3")
t5 = os.stat(d + "/real2").st_ctime_ns
check("unlink of another name changes st_ctime", t5 > t4, (t4, t5))

write(d + "/gone", b"open")
with open(d + "/gone", "rb") as g:
    os.unlink(d + "/gone")
    st = os.fstat(g.fileno())
    check("fstat of an unlinked open file: st_nlink 0", st.st_nlink == 0, st)
    check("... and it still reads", g.read() == b"open")

n0 = os.stat(d).st_nlink
os.mkdir(d + "/sub2")
check("a dir's st_nlink is 2 + its subdirs", n0 == 3 and os.stat(d).st_nlink == 4,
      (n0, os.stat(d).st_nlink))
os.rmdir(d + "/sub2")
check("... and follows an rmdir", os.stat(d).st_nlink == 3)
check("the root's counts its dirs", os.stat(M).st_nlink == 3, os.stat(M).st_nlink)

check_errno("mkfifo: EPERM", errno.EPERM, os.mkfifo, d + "/fifo")
check_errno("mknod of a char device: EPERM", errno.EPERM, os.mknod, d + "/null",
            0o600 | stat.S_IFCHR, os.makedev(1, 3))
check_errno("mknod of a block device: EPERM", errno.EPERM, os.mknod, d + "/blk",
            0o600 | stat.S_IFBLK, os.makedev(7, 0))
os.mknod(d + "/reg", 0o644 | stat.S_IFREG)
check("mknod of a regular file makes one", stat.S_ISREG(os.stat(d + "/reg").st_mode))
# Owners are kept (owners.sh has the rules for other users): root gives
# a file away, anyone else may not.
if os.getuid() == 0:
    check_errno("chown by root to another uid and gid works", 0, os.chown,
                d + "/reg", 12345, 12346)
    st = os.stat(d + "/reg")
    check("... and stat shows them", (st.st_uid, st.st_gid) == (12345, 12346),
          (st.st_uid, st.st_gid))
else:
    check_errno("chown to another uid: EPERM", errno.EPERM, os.chown, d + "/reg", 12345, -1)
    check_errno("chown to another gid: EPERM", errno.EPERM, os.chown, d + "/reg", -1, 12345)
check_errno("chown to the creator works", 0, os.chown, d + "/reg",
            os.getuid(), os.getgid())
so = socket.socket(socket.AF_UNIX)
check_errno("bind of a unix socket: EPERM", errno.EPERM, so.bind, d + "/sock")
so.close()
check("nothing refused was made",
      not any(os.path.lexists(d + "/" + n) for n in ("fifo", "null", "blk", "sock")))
EOF
	unmount_checked plain
	tcfs mount -o noviews --store "$S" "$M"
	check_rc "plain: the store mounts again" 0
	pycheck "plain-after" <<'EOF'
d = os.path.join(M, "inductor")
check("after a remount the symlink is there", os.readlink(d + "/ln") == "../target/x")
b, c = os.stat(d + "/b"), os.stat(d + "/c")
check("and the hard links: one inode, nlink 2, the same bytes",
      b.st_ino == c.st_ino and b.st_nlink == 2 and read(d + "/b") == b"TWO", (b, c))
check("and the dir's nlink", os.stat(d).st_nlink == 3, os.stat(d).st_nlink)
EOF
	tcfs fsck --store "$S"
	check_rc "plain: tcfs fsck of a store with symlinks and hard links is clean" 0
	tcfs export --store "$S" "$T_TMP/plain/out"
	check_rc "plain: tcfs export exits 0" 0
	check_eq "... and writes the symlink as a symlink" "../target/x" \
		"$(readlink "$T_TMP/plain/out/inductor/ln")"
	check_eq "... and each hard link's bytes" "TWO" "$(cat "$T_TMP/plain/out/inductor/c")"
	unmount_checked plain
}

# --- tcfs mount: errors ---------------------------------------------------

E=$T_TMP/errors
mkdir -p "$E"
S=$E/store

tcfs mount --store "$S" "$E/missing"
check_rc "tcfs mount of a missing mount point exits 1" 1
check_grep_fixed "... and stderr names it" "$E/missing" "$ERR"

mkdir -p "$E/full"
touch "$E/full/x"
at_exit "fusermount3 -uz '$E/full'"
tcfs mount --store "$S" "$E/full"
check_rc "tcfs mount of a non-empty mount point exits 1" 1
check_grep "... and stderr says it is not empty" "not empty" "$ERR"
check "... and nothing is mounted there" eval "! mountpoint -q '$E/full'"

touch "$E/file"
at_exit "fusermount3 -uz '$E/file'"
tcfs mount --store "$S" "$E/file"
check_rc "tcfs mount on a regular file exits 1" 1
check_grep_fixed "... and stderr names it" "$E/file" "$ERR"

# Group files name children by path, in JSON: a mount point that is not
# UTF-8 could make every group lookup fail (EILSEQ).
BADNAME=$E/$'caf\xe9'
mkdir -p "$BADNAME"
at_exit "fusermount3 -uz '$BADNAME'"
tcfs mount --store "$S" "$BADNAME"
check_rc "tcfs mount at a path that is not valid UTF-8 exits 1" 1
check_grep "... and stderr says so" "not valid UTF-8" "$ERR"
check "... and nothing is mounted there" eval "! mountpoint -q \"\$BADNAME\""

# A store inside its own mount point would be hidden by the mount and
# written into through it.
mkdir -p "$E/self"
at_exit "fusermount3 -uz '$E/self'"
tcfs mount --store "$E/self/store" "$E/self"
check_rc "tcfs mount with the store inside the mount point exits 1" 1
check_grep "... and stderr says the store lies inside it" "lies inside the mount point" "$ERR"
check "... and nothing is mounted there, nor a store made" \
	eval "! mountpoint -q '$E/self' && [ ! -e '$E/self/store' ]"

mkdir -p "$E/m1" "$E/m2"
at_exit "fusermount3 -uz '$E/m1'"
at_exit "fusermount3 -uz '$E/m2'"
tcfs mount --store "$S" "$E/m1"
check_rc "a first mount of the store works" 0
first_pid=$(daemon_pid "$S")
tcfs mount --wait 1 --store "$S" "$E/m2"
check_rc "a second mount of a store already mounted exits 1" 1
check_grep_fixed "... and stderr says where the store is mounted" \
	"store $S is already mounted at $E/m1" "$ERR"
diag "second mount said: $(head -c 300 "$ERR")"
check "... and nothing is mounted at the second mount point" eval "! mountpoint -q '$E/m2'"
check "... and the first mount still serves" eval "mountpoint -q '$E/m1' && ls '$E/m1' >/dev/null"
check_eq "... by the same daemon, holding the store's lock" "$first_pid" "$(daemon_pid "$S")"
tcfs umount "$E/m1"
check_rc "tcfs umount of the first mount exits 0" 0
# Exited: gone, or a zombie that init has not reaped yet.
check "... and its daemon has exited" eval "[ -n '$first_pid' ] && { ! kill -0 '$first_pid' 2>/dev/null || grep -q ') [ZX] ' /proc/$first_pid/stat 2>/dev/null; }"
tcfs umount "$E/m1"
check_rc "tcfs umount of what is no longer a mount exits 1" 1

# A store on a read-only file system.
if ! is_root; then
	skip "tcfs mount of a read-only store exits 1" "not root"
elif ! mkdir -p "$E/ro" || ! mount -t tmpfs -o size=64m tcfs-e2e-ro "$E/ro" 2>/dev/null; then
	skip "tcfs mount of a read-only store exits 1" "cannot mount a tmpfs"
else
	at_exit "umount -l '$E/ro'"
	tcfs import --quiet --store "$E/ro/store" "$SMALL"
	check_rc "import into a store on a tmpfs exits 0" 0
	mount -o remount,ro "$E/ro"
	mkdir -p "$E/rom"
	at_exit "fusermount3 -uz '$E/rom'"
	tcfs mount --store "$E/ro/store" "$E/rom"
	check_rc "tcfs mount of a store on a read-only file system exits 1" 1
	check_grep "... with a message saying it is read-only" "[Rr]ead-only" "$ERR"
	diag "read-only store said: $(head -c 300 "$ERR")"
	check "... and nothing is mounted" eval "! mountpoint -q '$E/rom'"
	check_eq "... and no daemon is left holding the store" "" "$(daemon_pid "$E/ro/store")"
fi
