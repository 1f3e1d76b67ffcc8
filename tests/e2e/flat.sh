#!/usr/bin/env bash
# AMD aiter's Triton metadata redirect, both ways: tcfs export --flat
# writes each kernel's NAME.json and binary as plain files (DEST/KEY/ for
# names that several kernels share), and tcfs mount -o redirect=NAME:DIR
# makes the group files of kernel NAME name DIR's copies of those two,
# when DIR has them, for any program, unchanged.
set -u
. "$(dirname "$0")/lib.sh"

SRC=$(fixture_top triton-3.6-multitarget.tgz big)
S=$T_TMP/store
KERNELS=154

# The fixture's kernels: "NAME KEY BACKEND ARCH BINARY" per line.
python3 - "$SRC" >"$T_TMP/kernels" <<'PY'
import json, os, sys
src = sys.argv[1]
for key in sorted(os.listdir(src)):
    for f in sorted(os.listdir(os.path.join(src, key))):
        if f.startswith("__grp__") and f.endswith(".json"):
            name = f[len("__grp__"):-len(".json")]
            t = json.load(open(os.path.join(src, key, name + ".json")))["target"]
            ext = "hsaco" if t["backend"] == "hip" else "cubin"
            print(name, key, t["backend"], t["arch"], name + "." + ext)
PY
check_eq "the fixture has its kernels" "$KERNELS" "$(wc -l <"$T_TMP/kernels")"
# A name of one kernel (CUDA), one that two kernels share, and an AMD
# kernel whose name many share.
NAME1=triton_per_fused_sum_3
KEY1=$(awk -v n=$NAME1 '$1 == n { print $2 }' "$T_TMP/kernels")
NAME2=triton_per_fused_sum_threshold_backward_0
KEY2=$(awk -v n=$NAME2 '$1 == n { print $2 }' "$T_TMP/kernels")
KEYA=$(awk '$1 == "add_kernel" && $4 == "gfx942" { print $2; exit }' "$T_TMP/kernels")
KEYC=$(awk '$1 == "add_kernel" && $3 == "cuda" { print $2; exit }' "$T_TMP/kernels")
KEYL=$(awk '$1 == "layernorm_kernel" { print $2; exit }' "$T_TMP/kernels")

# check_flat DESC DEST SRC [GLOB [BACKEND [ARCH]]]: DEST is exactly the
# flat export of the kernels of SRC that match: per kernel NAME.json and
# its binary, byte for byte with the source's mtime, at the top when no
# other matching kernel has its name, else under KEY/ (and then none at
# the top); nothing else, no temp file left.
check_flat() {
	local desc=$1 out
	shift
	if out=$(python3 - "$@" <<'PY' 2>&1
import collections, fnmatch, json, os, stat, sys
dest, src = sys.argv[1], sys.argv[2]
glob, backend, arch = (sys.argv[3:] + ["", "", ""])[:3]
ks = []
for key in sorted(os.listdir(src)):
    for f in os.listdir(os.path.join(src, key)):
        if f.startswith("__grp__") and f.endswith(".json"):
            name = f[len("__grp__"):-len(".json")]
            t = json.load(open(os.path.join(src, key, name + ".json")))["target"]
            if glob and not fnmatch.fnmatch(name, glob):
                continue
            if backend and t["backend"] != backend:
                continue
            if arch and str(t["arch"]) != arch:
                continue
            ks.append((name, key))
keys = collections.Counter(name for name, _ in ks)
want = {}
for name, key in ks:
    at = key + "/" if keys[name] > 1 else ""
    for f in os.listdir(os.path.join(src, key)):
        if f in (name + ".json", name + ".hsaco", name + ".cubin"):
            want[at + f] = os.path.join(src, key, f)
have = {}
for d, dirs, files in os.walk(dest):
    for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
        p = os.path.join(d, f)
        have[os.path.relpath(p, dest)] = p
bad = []
for rel in sorted(set(want) - set(have))[:5]:
    bad.append("missing: " + rel)
for rel in sorted(set(have) - set(want))[:5]:
    bad.append("not wanted: " + rel)
for rel in sorted(set(want) & set(have)):
    s, d = os.lstat(want[rel]), os.lstat(have[rel])
    if not stat.S_ISREG(d.st_mode):
        bad.append(rel + ": not a regular file")
    elif open(want[rel], "rb").read() != open(have[rel], "rb").read():
        bad.append(rel + ": bytes differ")
    elif s.st_mtime_ns != d.st_mtime_ns:
        bad.append(rel + ": mtime differs")
if not ks:
    bad.append("no kernel matched: the check checks nothing")
print("\n".join(bad[:20]))
sys.exit(1 if bad else 0)
PY
	); then
		ok "$desc"
	else
		not_ok "$desc"
		diag "$out"
	fi
}

tcfs import --store "$S" "$SRC"
check_rc "import the multitarget fixture (CUDA and AMD kernels)" 0

echo "# --- tcfs export --flat"
D=$T_TMP/flat
tcfs export --flat --json --store "$S" "$D"
check_rc "export --flat of the whole store" 0
cp "$OUT" "$T_TMP/flat.json"
check_flat "... NAME.json and NAME.cubin/.hsaco of every kernel, byte-exact; shared names under KEY/" \
	"$D" "$SRC"
SHARED=$(awk '{ print $1 }' "$T_TMP/kernels" | sort | uniq -c | awk '$1 > 1 { n += $1 } END { print n }')
check_eq "--json: kernels, in_key_dirs, files, failed_kernels" \
	"$KERNELS $SHARED $((2 * KERNELS)) 0" \
	"$(json_eval "$T_TMP/flat.json" '"%d %d %d %d" % (d["kernels"], d["in_key_dirs"], d["files"], d["failed_kernels"])')"
check_eq "... bytes: the sum of what was written" \
	"$(find "$D" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')" \
	"$(json_get "$T_TMP/flat.json" bytes)"
check_eq "... dest: the directory made absolute" "$D" "$(json_get "$T_TMP/flat.json" dest)"
check "a name of one kernel is at the top: $NAME1.json, $NAME1.cubin" \
	test -f "$D/$NAME1.json" -a -f "$D/$NAME1.cubin" -a ! -e "$D/$KEY1"
check "the AMD kernels of a shared name are under KEY/: add_kernel.hsaco" \
	cmp -s "$D/$KEYA/add_kernel.hsaco" "$SRC/$KEYA/add_kernel.hsaco"
check "... and none is at the top" test ! -e "$D/add_kernel.json"
tcfs export --flat --store "$S" "$D"
check_rc "export --flat again onto the same DEST (files replaced)" 0
check_grep "... the summary says how many and where" \
	"^exported $KERNELS kernels flat \($SHARED in KEY dirs.*to $D\$" "$OUT"
check_flat "... and DEST is the same" "$D" "$SRC"

echo "# --- filters"
tcfs export --flat --name 'softmax*' --backend hip --arch gfx942 --store "$S" "$T_TMP/f1"
check_rc "export --flat --name GLOB --backend hip --arch gfx942" 0
check_flat "... only those kernels, their .hsaco, under KEY/" \
	"$T_TMP/f1" "$SRC" 'softmax*' hip gfx942
tcfs export --flat --name "$NAME1" --store "$S" "$T_TMP/f2"
check_flat "export --flat --name of one kernel: at the top" "$T_TMP/f2" "$SRC" "$NAME1"
tcfs export --flat -n 'triton_poi*' -b cuda -a 90 --store "$S" "$T_TMP/f3"
check_flat "short options -n -b -a; a name two kernels share: both under KEY/" \
	"$T_TMP/f3" "$SRC" 'triton_poi*' cuda 90
tcfs export --flat --json --name nothing-like-it --store "$S" "$T_TMP/f4"
check_eq "a filter matching nothing: exit 0, 0 kernels, an empty DEST" "0 0 " \
	"$RC $(json_get "$OUT" kernels) $(ls -A "$T_TMP/f4")"
tcfs export --flat -q --name "$NAME1" --store "$S" "$T_TMP/f5"
check_eq "-q: nothing printed" "0 " "$RC $(cat "$OUT")"

# An AMD kernel alone of its name: a cache of one hip key dir.
mkdir -p "$T_TMP/amd-src"
cp -a "$SRC/$KEYA" "$T_TMP/amd-src/"
tcfs import --store "$T_TMP/amd-store" "$T_TMP/amd-src"
DA=$T_TMP/amd-flat
tcfs export --flat --store "$T_TMP/amd-store" "$DA"
check_rc "export --flat of a store with one AMD kernel" 0
check_flat "... add_kernel.json and add_kernel.hsaco at the top, byte-exact" "$DA" "$T_TMP/amd-src"

echo "# --- symlinks under DEST are never written through"
DS=$T_TMP/flat-sym
mkdir -p "$DS" "$T_TMP/victim-dir"
echo victim >"$T_TMP/victim"
ln -s "$T_TMP/victim" "$DS/$NAME1.json"
ln -s "$T_TMP/victim-dir" "$DS/$KEYL"
tcfs export --flat --store "$S" "$DS"
check_rc "export --flat with symlinks planted in DEST: exit 1" 1
check_grep_fixed "... naming the file link" "$DS/$NAME1.json: is a symlink; not written through" "$ERR"
check_grep_fixed "... and the KEY dir link" "$DS/$KEYL: is a symlink; not written through" "$ERR"
check_eq "... the file it points to is untouched" victim "$(cat "$T_TMP/victim")"
check_eq "... the dir it points to is empty" "" "$(ls -A "$T_TMP/victim-dir")"
check "... the links are still links" test -L "$DS/$NAME1.json" -a -L "$DS/$KEYL"
check "... that kernel is left out whole: no $NAME1.cubin beside the link" \
	test ! -e "$DS/$NAME1.cubin"
check "... the other kernels are exported" \
	cmp -s "$DS/$NAME2.json" "$SRC/$KEY2/$NAME2.json"
check_grep "... and the summary counts 2 kernels not exported" "^2 kernels not" "$OUT"
rm "$DS/$KEYL"
touch "$DS/$KEYL"
tcfs export --flat --name layernorm_kernel --store "$S" "$DS"
check_rc "a file where a KEY dir goes: exit 1" 1
check_grep_fixed "... naming it and the cause" "$DS/$KEYL: Not a directory" "$ERR"

echo "# --- bad arguments"
tcfs export --flat --store "$S"
check_rc "export --flat without DEST: usage error (2)" 2
tcfs export --flat --store "$S" "$T_TMP/a" "$T_TMP/b"
check_rc "export --flat with two DESTs: usage error (2)" 2
tcfs export --flat --binary-only --store "$S" "$T_TMP/bo"
check_rc "export --flat --binary-only: usage error (2)" 2
check_grep_fixed "... saying to leave --binary-only out" "leave --binary-only out" "$ERR"
check "... and DEST not made" test ! -e "$T_TMP/bo"
tcfs export --flat --no-such-option --store "$S" "$T_TMP/bo"
check_rc "export --flat with an unknown option: usage error (2)" 2
touch "$T_TMP/a-file"
tcfs export --flat --store "$S" "$T_TMP/a-file/sub"
check_rc "export --flat to a DEST under a file: exit 1" 1
check_grep_fixed "... naming it and the cause" "$T_TMP/a-file/sub: Not a directory" "$ERR"
tcfs export --flat --store "$T_TMP/no-store" "$T_TMP/ns"
check_rc "export --flat of a store that is not there: exit 1" 1

echo "# --- what the store cannot give"
# A copy of the store with NAME1's binary blob damaged, and two more
# kernels of its name: one without NAME.json, one without a binary.
SD=$T_TMP/store-damaged
cp -a "$S" "$SD"
python3 - "$SRC/$KEY1" "$T_TMP/odd-src" "$NAME1" "NOMETA${KEY1:6}" "NOBINA${KEY1:6}" <<'PY'
import json, os, shutil, sys
src, dst, name, nometa, nobin = sys.argv[1:]
for key, gone in ((nometa, name + ".json"), (nobin, name + ".cubin")):
    shutil.copytree(src, os.path.join(dst, key))
    os.unlink(os.path.join(dst, key, gone))
    g = os.path.join(dst, key, "__grp__" + name + ".json")
    kids = [c for c in json.load(open(g))["child_paths"] if c != gone]
    json.dump({"child_paths": {c: os.path.join(dst, key, c) for c in kids}},
              open(g, "w"))
PY
tcfs import --store "$SD" "$T_TMP/odd-src"
check_rc "import a kernel without NAME.json and one without a binary" 0
flip_byte "$(blob_path "$SD" "$SRC/$KEY1/$NAME1.cubin")" 100
tcfs export --flat --json --name "$NAME1" --store "$SD" "$T_TMP/fd"
check_rc "export --flat of kernels it cannot write: exit 1" 1
check_grep "a damaged blob: named, with its file in the store" \
	"$KEY1/$NAME1.cubin: .*damaged" "$ERR"
check "... its kernel gets no file" test ! -e "$T_TMP/fd/$KEY1"
check_grep_fixed "no NAME.json: said so" "NOMETA${KEY1:6}: no $NAME1.json; kernel $NAME1 not exported" "$ERR"
check_grep_fixed "no binary: said so" "NOBINA${KEY1:6}: no $NAME1.hsaco or $NAME1.cubin" "$ERR"
check_eq "--json counts the three as failed, none exported" "3 0" \
	"$(json_eval "$OUT" '"%d %d" % (d["failed_kernels"], d["kernels"])')"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip "tcfs mount -o redirect" "no /dev/fuse or fusermount3"
	exit 0
fi

echo "# --- tcfs mount -o redirect=NAME:DIR"
M=$T_TMP/mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
# DIRs: NAME1's flat export (given relative, from $T_TMP), NAME2's
# metadata alone, and the AMD add_kernel's flat export.
tcfs export --flat --name "$NAME1" --store "$S" "$T_TMP/rd"
RJ=$T_TMP/rd-json-only
mkdir -p "$RJ"
cp -p "$SRC/$KEY2/$NAME2.json" "$RJ/"
cd "$T_TMP" || exit 1
tcfs mount --store "$S" -o "redirect=$NAME1:rd" \
	-o "redirect=$NAME2:$RJ,redirect=add_kernel:$DA" "$M"
check_rc "mount with three -o redirect (one DIR relative, two in one -o)" 0
cd / || exit 1

# group_lines FILE: "CHILD PATH" per child of a group file, in order.
group_lines() {
	python3 -c 'import json, sys
for c, p in json.load(open(sys.argv[1]))["child_paths"].items(): print(c, p)' "$1"
}
# want_lines KEY ROOT DIR MOVED...: what KEY's group file must list: its
# children in the source's order, each in DIR if it is one of MOVED,
# else under ROOT/KEY.
want_lines() {
	local key=$1 root=$2 dir=$3
	shift 3
	python3 - "$SRC/$key" "$root/$key" "$dir" "$@" <<'PY'
import json, os, sys
src, under, dir_, moved = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
g = [f for f in os.listdir(src) if f.startswith("__grp__")][0]
for c in json.load(open(os.path.join(src, g)))["child_paths"]:
    print(c, os.path.join(dir_ if c in moved else under, c))
PY
}

check_eq "$NAME1: NAME.json and NAME.cubin named in DIR (made absolute), the rest in the mount" \
	"$(want_lines "$KEY1" "$M" "$T_TMP/rd" "$NAME1.json" "$NAME1.cubin")" \
	"$(group_lines "$M/$KEY1/__grp__$NAME1.json")"
check_eq "$NAME2, whose DIR lacks the binary: NAME.json in DIR, the cubin from the cache" \
	"$(want_lines "$KEY2" "$M" "$RJ" "$NAME2.json")" \
	"$(group_lines "$M/$KEY2/__grp__$NAME2.json")"
check_eq "add_kernel (AMD): add_kernel.json and add_kernel.hsaco in DIR" \
	"$(want_lines "$KEYA" "$M" "$DA" add_kernel.json add_kernel.hsaco)" \
	"$(group_lines "$M/$KEYA/__grp__add_kernel.json")"
check_eq "add_kernel under another key (CUDA): names only, as aiter: its json in DIR, its cubin (not in DIR) from the cache" \
	"$(want_lines "$KEYC" "$M" "$DA" add_kernel.json)" \
	"$(group_lines "$M/$KEYC/__grp__add_kernel.json")"
check_eq "a kernel not redirected: every child in the mount" \
	"$(want_lines "$KEYL" "$M" "" )" \
	"$(group_lines "$M/$KEYL/__grp__layernorm_kernel.json")"
BIN_WANT=$(want_lines "$KEY1" "$M/binary-only" "$T_TMP/rd" "$NAME1.json" "$NAME1.cubin" |
	grep -vE '\.(ttir|ttgir|llir|ptx|amdgcn) ')
check_eq "binary-only/: redirected as well, and no IR" \
	"$BIN_WANT" "$(group_lines "$M/binary-only/$KEY1/__grp__$NAME1.json")"
check_eq "the group file's size is that of what is read" \
	"$(wc -c <"$M/$KEY1/__grp__$NAME1.json")" "$(stat -c %s "$M/$KEY1/__grp__$NAME1.json")"
# A hit as Triton loads it: every child path read, byte for byte.
check "every child path of the redirected group file reads as the kernel's file" \
	python3 - "$M/$KEY1/__grp__$NAME1.json" "$SRC/$KEY1" <<'PY'
import json, os, sys
kids = json.load(open(sys.argv[1]))["child_paths"]
sys.exit(any(open(p, "rb").read() != open(os.path.join(sys.argv[2], c), "rb").read()
             for c, p in kids.items()))
PY

echo "# --- the probe is still logged"
hits_of() {
	tcfs stats --json --store "$S"
	json_eval "$OUT" "'%d %d' % (d['hits'], d['per_kernel']['$1']['hits'])"
}
read -r H0 K0 <<<"$(hits_of "$NAME1")"
cat "$M/$KEY1/__grp__$NAME1.json" >/dev/null
check_eq "a read of a redirected group file is one hit, in total and for its kernel" \
	"$((H0 + 1)) $((K0 + 1))" "$(hits_of "$NAME1")"
tcfs log --json --store "$S"
check_eq "... and in the log, with its key" true \
	"$(python3 -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(str(any(e.get("key") == sys.argv[2] and e.get("hit") for e in ev)).lower())' "$OUT" "$KEY1")"

echo "# --- DIR is asked at every probe"
# The kernel keeps a file's pages while its size and mtime stay: a
# rendering that changes must change the mtime shown.
mtime_ns() { python3 -c 'import os, sys; print(os.stat(sys.argv[1]).st_mtime_ns)' "$1"; }
T2=$(mtime_ns "$M/$KEY2/__grp__$NAME2.json")
cp -p "$SRC/$KEY2/$NAME2.cubin" "$RJ/"
check_eq "a binary copied into DIR later is named there at the next read" \
	"$(want_lines "$KEY2" "$M" "$RJ" "$NAME2.json" "$NAME2.cubin")" \
	"$(group_lines "$M/$KEY2/__grp__$NAME2.json")"
check_eq "... the size shown follows" \
	"$(wc -c <"$M/$KEY2/__grp__$NAME2.json")" "$(stat -c %s "$M/$KEY2/__grp__$NAME2.json")"
check "... and the mtime shown changed" test "$(mtime_ns "$M/$KEY2/__grp__$NAME2.json")" != "$T2"
T1=$(mtime_ns "$M/$KEY1/__grp__$NAME1.json")
rm "$T_TMP/rd/$NAME1.json" "$T_TMP/rd/$NAME1.cubin"
check_eq "files removed from DIR: the cache again, for every child" \
	"$(want_lines "$KEY1" "$M" "")" "$(group_lines "$M/$KEY1/__grp__$NAME1.json")"
check_eq "... with the group file's own mtime again" \
	"$(mtime_ns "$SRC/$KEY1/__grp__$NAME1.json") changed" \
	"$(mtime_ns "$M/$KEY1/__grp__$NAME1.json") $([ "$(mtime_ns "$M/$KEY1/__grp__$NAME1.json")" != "$T1" ] && echo changed)"
tcfs umount "$M"
check_rc "umount" 0

echo "# --- the fstab form takes it too"
tcfs export --flat --name "$NAME1" --store "$S" "$T_TMP/rd2"
run "$TCFS" "$S" "$M" -o "rw,defaults,redirect=$NAME1:$T_TMP/rd2"
check_rc "tcfs STORE MOUNTPOINT -o ...,redirect=NAME:DIR (as mount(8) runs it)" 0
check_eq "... and the group file names DIR" \
	"$(want_lines "$KEY1" "$M" "$T_TMP/rd2" "$NAME1.json" "$NAME1.cubin")" \
	"$(group_lines "$M/$KEY1/__grp__$NAME1.json")"
tcfs umount "$M"
run "$TCFS" "$S" "$M" -o "rw,redirect=$NAME1"
check_rc "... a malformed one: usage error (2)" 2

echo "# --- a redirect that cannot be fails the mount"
S2=$T_TMP/store2
touch "$T_TMP/not-a-dir"
mkdir -p "$T_TMP/mnt2/inside"
# bad_mount DESC OPTION MESSAGE [MOUNTPOINT]
bad_mount() {
	tcfs mount --store "$S2" -o "$2" "${4:-$M}"
	if [ "$RC" = 2 ] && grep -qF -- "$3" "$ERR"; then
		ok "$1: usage error (2), saying '$3'"
	else
		not_ok "$1: usage error (2), saying '$3'"
		show_run
	fi
}
bad_mount "a DIR that does not exist" "redirect=$NAME1:$T_TMP/nowhere" \
	"-o redirect=$NAME1:$T_TMP/nowhere: $T_TMP/nowhere: No such file or directory"
check "... not mounted, and the store not even made" \
	sh -c "! grep -q ' $M ' /proc/self/mountinfo && test ! -e '$S2'"
bad_mount "no DIR" "redirect=$NAME1" "give NAME:DIR"
bad_mount "no value at all" "redirect" "give NAME:DIR"
bad_mount "an empty DIR" "redirect=$NAME1:" "give NAME:DIR"
bad_mount "an empty NAME" "redirect=:$T_TMP/rd2" "give NAME:DIR"
bad_mount "a NAME with a slash" "redirect=a/b:$T_TMP/rd2" "'a/b' cannot be a kernel name"
bad_mount "a DIR that is a file" "redirect=$NAME1:$T_TMP/not-a-dir" "$T_TMP/not-a-dir is not a directory"
bad_mount "one NAME twice" "redirect=$NAME1:$T_TMP/rd2,redirect=$NAME1:$T_TMP/rd" "kernel $NAME1 is redirected twice"
mkdir -p "$T_TMP/bad-"$'\xff'
bad_mount "a DIR whose path is not UTF-8" "redirect=$NAME1:$T_TMP/bad-"$'\xff' \
	"is not valid UTF-8, so group files could not name it"
bad_mount "a DIR inside the mount point" "nonempty,redirect=$NAME1:$T_TMP/mnt2/inside" \
	"lies inside the mount point" "$T_TMP/mnt2"
