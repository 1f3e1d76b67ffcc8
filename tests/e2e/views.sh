#!/usr/bin/env bash
# The browsing views at the mount root: by-name/NAME/KEY and
# by-arch/TARGET/NAME/KEY are symlinks to the key dirs in .tcfs/kernels/,
# made from the kernels table as it is now (live: a kernel shows once its
# group file lands, and goes with it), read-only (EROFS), never counted as
# Triton's probes, counted once by du, tar and find, and hidden by -o
# noviews, with names no file may have escaped as %XX; and .tcfs/, reports
# made at read time, each read whole even while kernels land.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
SRC=$(fixture_top triton-3.6-multitarget.tgz big)
S=$T_TMP/store
M=$T_TMP/mnt
mkdir -p "$M"

tcfs import --store "$S" "$SRC"
check_rc "import the multitarget fixture" 0
at_exit "fusermount3 -uz '$M'"
tcfs mount --store "$S" "$M"
check_rc "mount it" 0

# What the views must show: each key dir's kernels (group files) with the
# target their metadata names.
python3 - "$SRC" >"$T_TMP/want" <<'PY'
import json, os, sys
src = sys.argv[1]
rows = []
for key in os.listdir(src):
    for f in os.listdir(os.path.join(src, key)):
        if f.startswith("__grp__") and f.endswith(".json"):
            name = f[len("__grp__"):-len(".json")]
            t = json.load(open(os.path.join(src, key, name + ".json")))["target"]
            rows.append("%s %s %s-%s" % (name, key, t["backend"], t["arch"]))
print("\n".join(sorted(rows)))
PY
check_num "the store has kernels to browse" "$(wc -l <"$T_TMP/want")" -eq 154

check_eq "the root lists by-name and by-arch beside the key dirs" \
	"by-arch by-name" "$(ls "$M" | grep -v '^[A-Z2-7]\{52\}$' | tr '\n' ' ' | sed 's/ $//')"
check "... and binary-only/, not listed, is there all the same" test -d "$M/binary-only"
check_eq "by-name lists every kernel name" \
	"$(cut -d' ' -f1 "$T_TMP/want" | sort -u)" "$(ls "$M/by-name")"
check_eq "by-arch lists every target as BACKEND-ARCH" \
	"cuda-80 cuda-90 hip-gfx90a hip-gfx942" "$(ls "$M/by-arch" | tr '\n' ' ' | sed 's/ $//')"

(cd "$M/by-name" && for n in *; do for k in "$n"/*; do
	echo "$n ${k#*/} $(readlink "$k")"
done; done) | sort >"$T_TMP/got-name"
check_eq "by-name/NAME/KEY: one link per kernel, to ../../.tcfs/kernels/KEY" \
	"$(awk '{ print $1, $2, "../../.tcfs/kernels/" $2 }' "$T_TMP/want")" "$(cat "$T_TMP/got-name")"
(cd "$M/by-arch" && for t in *; do for n in "$t"/*; do for k in "$n"/*; do
	echo "${n#*/} ${k##*/} $t $(readlink "$k")"
done; done; done) | sort >"$T_TMP/got-arch"
check_eq "by-arch/TARGET/NAME/KEY: one link per kernel, to ../../../.tcfs/kernels/KEY" \
	"$(awk '{ print $1, $2, $3, "../../../.tcfs/kernels/" $2 }' "$T_TMP/want")" "$(cat "$T_TMP/got-arch")"

read -r N K _ <"$T_TMP/want"
META=$(ls "$M/$K" | grep -v '^__grp__' | grep '\.json$' | head -1)
check "cat through a link reads the kernel's file" \
	cmp -s "$M/by-name/$N/$K/$META" "$SRC/$K/$META"
check "so does a path through by-arch" \
	eval "cmp -s '$M/by-arch/'*'/$N/$K/$META' '$SRC/$K/$META'"
run stat -c %F "$M/by-name/$N/$K"
check_eq "a view entry is a symbolic link" "symbolic link" "$(cat "$OUT")"
check_eq "find -L through by-name reaches each kernel's files once" \
	"$(cut -d' ' -f2 "$T_TMP/want" | sort -u | while read -r k; do ls "$SRC/$k"; done | wc -l)" \
	"$(find -L "$M/by-name" -type f | wc -l)"
check_eq "a name no kernel has is not there" "" \
	"$(ls -d "$M/by-name/no_such_kernel" 2>/dev/null)"
check_eq "nor a target" "" "$(ls -d "$M/by-arch/cuda-12" "$M/by-arch/nodash" 2>/dev/null)"

# Writes: EROFS, never ENOENT.
erofs() {	# erofs DESC CMD...: the command fails with EROFS
	local desc=$1
	shift
	"$@" >/dev/null 2>"$T_TMP/erofs.err"
	if [ $? != 0 ] && grep -q "Read-only file system" "$T_TMP/erofs.err"; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "$(cat "$T_TMP/erofs.err")"
	fi
}
erofs "mkdir in by-name: EROFS" mkdir "$M/by-name/x"
erofs "a new file in a name dir: EROFS" touch "$M/by-name/$N/x"
erofs "rm of a link: EROFS" rm "$M/by-name/$N/$K"
erofs "rename of a link: EROFS" mv "$M/by-name/$N/$K" "$M/by-name/$N/y"
erofs "a key dir renamed onto by-name: EROFS" mv "$M/$K" "$M/by-name"
erofs "rmdir of by-arch: EROFS" rmdir "$M/by-arch"
run mkdir "$M/by-name"
check_grep "mkdir of the reserved name by-name: it exists" "File exists" "$ERR"
check "after all that the kernel is still there" test -d "$M/$K"

echo "# --- browsing is not probing: the views lead into .tcfs/kernels/"
# Someone browsing the cache must not change the figures of the workload
# it measures: the commands a user typed, after a replay.
probes() {	# probes: kernel hits, misses, module hits, misses
	tcfs stats --json --store "$S"
	json_eval "$OUT" "'%d %d %d %d' % (d['hits'], d['misses'], d['modules']['hits'], d['modules']['misses'])"
}
replay browse-replay "$SRC" "$M"
before=$(probes)
check_eq "the replay's kernel probes are counted, all hits" \
	"$(json_eval "$T_TMP/browse-replay.json" "sum(p['seen']['kernel']['hits'] for p in d['procs'])") 0" \
	"$(echo "$before" | cut -d' ' -f1-2)"
BK=$(awk '$1 == "add_kernel" { print $2; exit }' "$T_TMP/want")
BT=$(awk '$1 == "add_kernel" { print $3; exit }' "$T_TMP/want")
run ls -la "$M/by-name/add_kernel/$BK/"
check_grep "ls -la by-name/add_kernel/KEY/ lists its files" "__grp__add_kernel.json$" "$OUT"
run cat "$M/by-name/add_kernel/$BK/__grp__add_kernel.json"
check_grep "cat by-name/add_kernel/KEY/__grp__add_kernel.json reads the group file" \
	"child_paths" "$OUT"
check "cat by-arch/TARGET/add_kernel/KEY/add_kernel.json reads the metadata" \
	eval "cat '$M/by-arch/$BT/add_kernel/$BK/add_kernel.json' | cmp -s - '$SRC/$BK/add_kernel.json'"
run find "$M/by-name" "$M/by-arch"
check_rc "find by-name by-arch" 0
run find -L "$M/by-name" "$M/by-arch"
check_num "find -L by-name by-arch reaches the kernels' files" \
	"$(grep -c '/__grp__' "$OUT")" -eq $((2 * $(wc -l <"$T_TMP/want")))
check_eq "... and none of that counts as a hit or a miss" "$before" "$(probes)"
tcfs log --json --store "$S"
check_eq "... nor is logged as a probe" "" \
	"$(python3 -c 'import json, sys; print(" ".join(sorted({json.loads(l)["comm"] for l in open(sys.argv[1])} & {"ls", "cat", "cmp", "find"})))' "$OUT")"
check_eq ".tcfs/kernels/KEY is the root's key dir, file for file" \
	"$(ls -l "$M/$BK" | sed 1d | awk '{ print $5, $9 }')" \
	"$(ls -l "$M/.tcfs/kernels/$BK" | sed 1d | awk '{ print $5, $9 }')"
check "... read-only, a file of it as its own inode" \
	test "$(stat -c %i "$M/.tcfs/kernels/$BK/add_kernel.json")" != "$(stat -c %i "$M/$BK/add_kernel.json")"
before=$(probes)	# (ls -l of the root's key dir probed its group file)
cat "$M/$BK/__grp__add_kernel.json" >/dev/null
check_eq "Triton's probe of the root's own key dir still counts: one hit more" \
	"$(echo "$before" | awk '{ print $1 + 1, $2, $3, $4 }')" "$(probes)"
erofs "rm through a by-name link: EROFS" rm "$M/by-name/add_kernel/$BK/add_kernel.json"
erofs "a new file in .tcfs/kernels/KEY: EROFS" touch "$M/.tcfs/kernels/$BK/x"
check "... and the kernel's file is still there" test -s "$M/$BK/add_kernel.json"

# A file held open through by-name/ is in use, as one held through the
# root is: the size limit evicts every kernel but its.
S6=$T_TMP/held-store
M6=$T_TMP/held-mnt
mkdir -p "$M6"
tcfs import -q --store "$S6" "$SRC"
at_exit "fusermount3 -uz '$M6'"
tcfs mount -o max_size=1 --store "$S6" "$M6"
check_rc "a copy of the store, mounted with a limit of 1 byte" 0
exec 8<"$M6/by-name/add_kernel/$BK/add_kernel.json"
for _ in $(seq 1 60); do
	[ "$(info_field "$S6" kernels)" -le 1 ] && break
	sleep 1
done
check_eq "the limit evicted every kernel but the one held through by-name/" \
	"1 add_kernel" "$(info_field "$S6" kernels) $(ls "$M6/by-name")"
check "... whose group file is still there" test -e "$M6/.tcfs/kernels/$BK/__grp__add_kernel.json"
exec 8<&-
tcfs umount "$M6"
check_rc "unmount" 0

# du, tar and rsync, which do not follow links, see each file once: in
# the root's key dirs.  The views hold dirs and links only, and neither
# .tcfs/kernels/ nor binary-only/ is listed.
KEYS=$(cd "$M" && ls | grep '^[A-Z2-7]\{52\}$')
key_bytes=$(cd "$M" && du -sbc $KEYS | tail -1 | cut -f1)
view_bytes=$(find "$M/by-name" "$M/by-arch" -printf '%s\n' | awk '{ n += $1 } END { print n }')
check_eq "the views hold no file of their own" "" "$(find "$M/by-name" "$M/by-arch" -type f)"
check_eq "du -sb of the mount counts each kernel's bytes once" \
	"$((key_bytes + view_bytes + $(stat -c %s "$M")))" \
	"$(du -sb --exclude=.tcfs "$M" | cut -f1)"
(cd "$M" && find $KEYS -type f -printf './%p %s\n') | sort >"$T_TMP/tar-want"
printf './.tcfs/%s\n' metrics.prom stats stats.json sync >"$T_TMP/tar-tcfs"
tar -C "$M" -cf - . 2>"$T_TMP/tar.err" | tar -tvf - | awk '$1 ~ /^-/ { print $6, $3 }' | sort >"$T_TMP/tar-got"
check_eq "tar of the mount holds each kernel's files once, and .tcfs/'s four" \
	"$(cat "$T_TMP/tar-want"; cut -d' ' -f1 "$T_TMP/tar-tcfs")" \
	"$(grep -v '^\./\.tcfs/' "$T_TMP/tar-got"; grep '^\./\.tcfs/' "$T_TMP/tar-got" | cut -d' ' -f1)"
diag "$(head -3 "$T_TMP/tar.err")"

echo "# --- binary-only/: the cache without its IR"
check_eq "binary-only/ lists every key dir" "$(ls "$SRC" | wc -l)" "$(ls "$M/binary-only" | wc -l)"
check_eq "no IR file shows in binary-only/" "" \
	"$(find "$M/binary-only/" -name '*.ttir' -o -name '*.ttgir' -o -name '*.llir' -o -name '*.ptx' -o -name '*.amdgcn' | head -3)"
check_eq "... nor resolves" "" "$(ls "$M/binary-only/$K/$N.ttir" 2>/dev/null)"
check "... while the root still has it" test -s "$M/$K/$N.ttir"
python3 - "$SRC" "$M" >"$T_TMP/bin-groups.out" <<'PY'
import json, os, sys
src, mnt = sys.argv[1:]
IR = (".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn")
bad = 0
for key in sorted(os.listdir(src)):
    for g in os.listdir(os.path.join(src, key)):
        if not g.startswith("__grp__"):
            continue
        kids = json.load(open(os.path.join(src, key, g)))["child_paths"]
        want = json.dumps({"child_paths": {
            c: os.path.join(mnt, "binary-only", key, c)
            for c in kids if not c.endswith(IR)}}).encode()
        got = open(os.path.join(mnt, "binary-only", key, g), "rb").read()
        if got != want:
            bad += 1
            print("%s/%s: %r" % (key, g, got[:200]))
print("%d group files differ" % bad)
PY
check_grep "binary-only group files are exactly json.dumps of the files left, under binary-only/" \
	"^0 group files differ" "$T_TMP/bin-groups.out"
diag "$(head -3 "$T_TMP/bin-groups.out")"

# Real Triton's traffic through binary-only/ on an empty cache, cold then
# warm: every byte read back, every kernel a hit the second time.
bin_replays() {	# bin_replays NAME CACHE_DIR
	local name=$1 dir=$2 f=$T_TMP/bin-replay-$RANDOM
	python3 "$REPLAY/replay.py" "$SRC" "$dir" >"$f-cold.json" 2>&1
	check "$name: a cold replay has no error" [ $? = 0 ]
	python3 "$REPLAY/replay.py" "$SRC" "$dir" >"$f-warm.json" 2>&1
	check "$name: a warm replay has no error" [ $? = 0 ]
	check_eq "$name: warm, every kernel a hit" "154 0" \
		"$(json_eval "$f-warm.json" "'%d %d' % (sum(p['seen']['kernel']['hits'] for p in d['procs']), sum(p['seen']['kernel']['misses'] for p in d['procs']))")"
	check_eq "$name: no IR file shows" "" \
		"$(find "$dir/" -name '*.ttir' -o -name '*.ptx' -o -name '*.amdgcn' | head -3)"
}
S2=$T_TMP/bin-store
M2=$T_TMP/bin-mnt
mkdir -p "$M2"
at_exit "fusermount3 -uz '$M2'"
tcfs mount --store "$S2" "$M2"
check_rc "a fresh store for binary-only/" 0
bin_replays "through binary-only/" "$M2/binary-only"
tcfs log --json --store "$S2"
check_eq "its probes are logged, each marked with the view" "binary-only" \
	"$(python3 -c 'import json, sys; print(" ".join(sorted({json.loads(l)["view"] for l in open(sys.argv[1])})))' "$OUT")"
check_num "its IR files were stored all the same (the root shows them)" \
	"$(find "$M2/" -maxdepth 2 -name '*.ttir' | wc -l)" -eq 154
tcfs umount "$M2"
rm -rf "$S2"
tcfs mount -o binary_only --store "$S2" "$M2"
check_rc "a fresh store, mounted -o binary_only" 0
bin_replays "-o binary_only" "$M2"
tcfs umount "$M2"
check_rc "unmount" 0

echo "# --- stores without IR: -o store_binary_only, import and export --binary-only"
# no_ir_blobs STORE: none of the fixture's IR files is a blob there.
no_ir_blobs() {
	local h n=0
	while read -r h _; do
		[ -e "$1/objects/${h:0:2}/$h" ] && n=$((n + 1))
	done < <(find "$SRC" \( -name '*.ttir' -o -name '*.ttgir' -o -name '*.llir' \
		-o -name '*.ptx' -o -name '*.amdgcn' \) -exec xxhsum -q -H2 {} +)
	[ "$n" = 0 ]
}
# ir_free DIR: no IR file under DIR, and its group files list none.
ir_free() {
	[ -z "$(find "$1/" \( -name '*.ttir' -o -name '*.ttgir' -o -name '*.llir' \
		-o -name '*.ptx' -o -name '*.amdgcn' \) | head -1)" ] &&
		! grep -q -E '\.(ttir|ttgir|llir|ptx|amdgcn)"' "$1"/*/__grp__*.json
}
S3=$T_TMP/sbo-store
M3=$T_TMP/sbo-mnt
mkdir -p "$M3"
at_exit "fusermount3 -uz '$M3'"
tcfs mount -o store_binary_only --store "$S3" "$M3"
check_rc "a fresh store, mounted -o store_binary_only" 0
bin_replays "-o store_binary_only" "$M3"
check "... its group files list no IR" ir_free "$M3"
tcfs umount "$M3"
check "... and no IR file was stored as a blob" no_ir_blobs "$S3"

tcfs import --binary-only --store "$T_TMP/bo-import" "$SRC"
check_rc "tcfs import --binary-only" 0
check "... stores no IR blob" no_ir_blobs "$T_TMP/bo-import"
tcfs export --store "$T_TMP/bo-import" "$T_TMP/bo-export-1"
check_rc "... whose export works" 0
check "... and holds no IR, nor lists any" ir_free "$T_TMP/bo-export-1"
tcfs export --binary-only --store "$S" "$T_TMP/bo-export-2"
check_rc "tcfs export --binary-only of a full store" 0
check "... writes no IR, and group files that list none" ir_free "$T_TMP/bo-export-2"
python3 "$REPLAY/replay.py" "$SRC" "$T_TMP/bo-export-2" >"$T_TMP/bo-export.json" 2>&1
check_eq "... which a warm replay reads back whole, every kernel a hit" true \
	"$(json_eval "$T_TMP/bo-export.json" \
		"d['errors'] == 0 and sum(p['seen']['kernel']['misses'] for p in d['procs']) == 0")"

# Live: a kernel leaves the views with its group file, and comes back
# with it.
GRP=$(cd "$M/$K" && ls __grp__*.json)
cp "$M/$K/$GRP" "$T_TMP/grp"
rm "$M/$K/$GRP"
check "a kernel whose group file is removed leaves by-name at once" \
	test ! -e "$M/by-name/$N/$K"
check "... and by-arch" eval "! ls -d '$M/by-arch/'*'/$N/$K' 2>/dev/null"
mkdir "$M/$K/tmp.pid_1_1"
cp "$T_TMP/grp" "$M/$K/tmp.pid_1_1/$GRP"
mv "$M/$K/tmp.pid_1_1/$GRP" "$M/$K/$GRP"
rmdir "$M/$K/tmp.pid_1_1"
check "once its group file is renamed back in, it is there again" \
	test "$(readlink "$M/by-name/$N/$K")" = "../../.tcfs/kernels/$K"
N2=$(ls "$M/by-name" | wc -l)
rm -r "${M:?}/$K"
check "a removed key dir leaves no dangling link" \
	test ! -e "$M/by-name/$N/$K" -a ! -L "$M/by-name/$N/$K"
check_num "the names of the other kernels stay" "$(ls "$M/by-name" | wc -l)" -ge $((N2 - 1))

echo "# --- .tcfs/: reports made at read time"
check_eq ".tcfs lists its four files" "metrics.prom stats stats.json sync" \
	"$(ls "$M/.tcfs" | tr '\n' ' ' | sed 's/ $//')"
# (ls and cat above probed group files too: count from here.)
before=$(json_eval "$M/.tcfs/stats.json" "d['hits']")
python3 "$REPLAY/replay.py" "$SRC" "$M" >"$T_TMP/replay.json" 2>"$T_TMP/replay.err"
check_rc_of() { [ "$1" = 0 ]; }
check "a warm replay through the mount (its probes are counted next)" check_rc_of $?
# Read at once, with no wait: what the mount holds in memory counts.
cp "$M/.tcfs/stats.json" "$T_TMP/live.json"
cp "$M/.tcfs/metrics.prom" "$T_TMP/live.prom"
check_eq ".tcfs/stats.json counts the replay's kernel probes at once" \
	"$(json_eval "$T_TMP/replay.json" "sum(p['seen']['kernel']['hits'] for p in d['procs'])")" \
	"$(json_eval "$T_TMP/live.json" "d['hits'] - $before")"
check_eq "... and names the mount as the cache directory" "$M" \
	"$(json_eval "$T_TMP/live.json" "d['cache_dir']")"
check_grep ".tcfs/stats is tcfs stats' text" "^kernel probes " "$M/.tcfs/stats"
tcfs stats --json --store "$S"
check_eq "tcfs stats --json says the same as .tcfs/stats.json" \
	"$(json_eval "$T_TMP/live.json" "d['hits'], d['misses'], d['modules']")" \
	"$(json_eval "$OUT" "d['hits'], d['misses'], d['modules']")"
# A real parser: python3-prometheus-client (Debian's, for its python3).
/usr/bin/python3 - "$T_TMP/live.prom" "$T_TMP/live.json" >"$T_TMP/prom.out" 2>&1 <<'PY'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
st = json.load(open(sys.argv[2]))
def val(name, **labels):
    f = fams[name]
    return [s.value for s in f.samples
            if all(s.labels.get(k) == v for k, v in labels.items())][0]
bad = []
want = {("kernel", "hit"): st["hits"], ("kernel", "miss"): st["misses"],
        ("module", "hit"): st["modules"]["hits"],
        ("module", "miss"): st["modules"]["misses"]}
for (kind, result), v in want.items():
    if val("tcfs_probes", kind=kind, result=result) != v:
        bad.append("probes %s %s" % (kind, result))
if fams["tcfs_probes"].type != "counter" or fams["tcfs_requests"].type != "counter":
    bad.append("probes and requests must be counters")
if val("tcfs_kernels") != 154 or val("tcfs_modules") != 5:
    bad.append("kernels or modules")
if sum(s.value for s in fams["tcfs_kernels_by_target"].samples) != 154:
    bad.append("kernels by target do not sum to 154")
if val("tcfs_kernels_by_target", target="hip-gfx942") <= 0:
    bad.append("no hip-gfx942 kernels")
if not 0 < val("tcfs_stored_bytes") <= val("tcfs_logical_bytes"):
    bad.append("stored bytes")
if val("tcfs_requests") <= 1000 or val("tcfs_start_time_seconds") <= 1.7e9:
    bad.append("requests or start time")
print("\n".join(bad) or "all good")
sys.exit(1 if bad else 0)
PY
check "metrics.prom parses with prometheus_client, every value right" \
	check_rc_of $?
diag "$(cat "$T_TMP/prom.out")"
erofs "a write to .tcfs/stats: EROFS" eval "echo x >'$M/.tcfs/stats'"
erofs "a new file in .tcfs: EROFS" touch "$M/.tcfs/new"
tcfs stats --prometheus --store "$S"
check_grep "tcfs stats --prometheus prints the metrics offline" \
	'^tcfs_kernels 154$' "$OUT"

echo "# --- names no file may have: escaped as %XX"
# Kernels whose metadata names a target with '/' or '-' in it, or whose
# name is ".", ".." or holds '%': each is one entry that names it alone,
# and the listings work for every user.
python3 - "$SRC/$K" "$M" >"$T_TMP/odd.keys" <<'PY'
import base64, json, os, sys
src, m = sys.argv[1:]
grp = [f for f in os.listdir(src) if f.startswith("__grp__")][0]
name = grp[len("__grp__"):-len(".json")]
odd = [("x/y", "9/0", name), ("a-b", "c", name), ("cuda", "90", "."),
       ("cuda", "90", ".."), ("cuda", "90", "50%2F"), ("%", ".", name)]
def put(path, data):  # as Triton does: the group file last
    with open(path + ".tmp.pid_1_1", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp.pid_1_1", path)
for i, (backend, arch, kname) in enumerate(odd):
    key = base64.b32encode(bytes([0xf0 + i]) * 32).decode()[:52]
    d = os.path.join(m, key)
    os.mkdir(d)
    kids = {}
    for f in sorted(os.listdir(src)):
        if f == grp:
            continue
        new = kname + f[len(name):]
        data = open(os.path.join(src, f), "rb").read()
        if new == kname + ".json":
            meta = json.loads(data)
            meta["target"].update(backend=backend, arch=arch)
            data = json.dumps(meta).encode()
        put(os.path.join(d, new), data)
        kids[new] = os.path.join(d, new)
    put(os.path.join(d, "__grp__%s.json" % kname),
        json.dumps({"child_paths": kids}).encode())
    print(key)
PY
check "six kernels with odd names and targets land" test "$(wc -l <"$T_TMP/odd.keys")" = 6
mapfile -t ODD <"$T_TMP/odd.keys"
run ls -R "$M/by-arch"
check_rc "ls -R by-arch works (a '/' in a target is no I/O error)" 0
check_eq "by-arch lists the odd targets escaped, beside the others" \
	"$(printf '%s\n' %25-%2E a%2Db-c cuda-80 cuda-90 hip-gfx90a hip-gfx942 x%2Fy-9%2F0 | sort | tr '\n' ' ')" \
	"$(ls "$M/by-arch" | tr '\n' ' ')"
check_eq "x/y-9/0: its kernel is under the escaped name" "../../../.tcfs/kernels/${ODD[0]}" \
	"$(readlink "$M/by-arch/x%2Fy-9%2F0/$N/${ODD[0]}")"
check_eq "a '-' in a backend is escaped, so the target splits right" "../../../.tcfs/kernels/${ODD[1]}" \
	"$(readlink "$M/by-arch/a%2Db-c/$N/${ODD[1]}")"
check_eq "a '%' in a backend too, and an arch '.'" "../../../.tcfs/kernels/${ODD[5]}" \
	"$(readlink "$M/by-arch/%25-%2E/$N/${ODD[5]}")"
run ls "$M/by-name"
check_rc "ls by-name works" 0
check_eq "by-name lists '.', '..' and '50%2F' escaped, and every other name" \
	"$( (cut -d' ' -f1 "$T_TMP/want"; printf '%s\n' %2E %2E%2E 50%252F) | sort -u | tr '\n' ' ')" \
	"$(tr '\n' ' ' <"$OUT")"
check_eq "... and one '.' and one '..'" "1 1" \
	"$(ls -a "$M/by-name" | grep -cx '\.') $(ls -a "$M/by-name" | grep -cx '\.\.')"
check_eq "by-name/%2E is the kernel named '.'" "../../.tcfs/kernels/${ODD[2]}" \
	"$(readlink "$M/by-name/%2E/${ODD[2]}")"
check "by-name/%2E%2E/KEY/...json is the metadata of the kernel named '..'" \
	cmp -s "$M/by-name/%2E%2E/${ODD[3]}/...json" "$M/${ODD[3]}/...json"
check_eq "by-name/50%252F is the kernel named '50%2F'" "../../.tcfs/kernels/${ODD[4]}" \
	"$(readlink "$M/by-name/50%252F/${ODD[4]}")"
check_eq "by-arch/cuda-90 lists the odd names escaped too" "%2E %2E%2E 50%252F" \
	"$(ls "$M/by-arch/cuda-90" | grep -e '%' | tr '\n' ' ' | sed 's/ $//')"
check_eq "a name no listing gives is not there (lowercase, or not escaped)" "" \
	"$(ls -d "$M/by-arch/x%2fy-9%2f0" "$M/by-name/50%2F" "$M/by-name/%61dd_kernel" 2>/dev/null)"

tcfs umount "$M"
check_rc "unmount" 0
tcfs mount -o noviews --store "$S" "$M"
check_rc "mount -o noviews" 0
check_eq "with -o noviews the root lists only key dirs" "" \
	"$(ls -A "$M" | grep -v '^[A-Z2-7]\{52\}$')"
check "... yet .tcfs/ answers (tcfs stats asks it)" test -s "$M/.tcfs/stats"
check "... and by-name is not there" test ! -e "$M/by-name"
run mkdir "$M/by-name"
check_rc "... so the name is free for a directory of the cache's own" 0
tcfs umount "$M"
check_rc "unmount" 0

echo "# --- the browse tree on a mount many users share"
if is_root && command -v setpriv >/dev/null; then
	chmod 755 "$T_TMP"
	tcfs mount -o allow_other --store "$S" "$M"
	check_rc "mount -o allow_other" 0
	chmod 1777 "$M"
	KB=$(ls "$M" | grep '^[A-Z2-7]\{52\}$' | head -1)
	run as_uid 2101 mkdir "$M/.tcfs/kernels/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRST"
	check_grep "another user's mkdir of a key in .tcfs/kernels/: EROFS" \
		"Read-only file system" "$ERR"
	run as_uid 2101 ls "$M/.tcfs/kernels/$KB/"
	check_grep "... who browses it all the same" "^__grp__" "$OUT"
	tcfs umount "$M"
	tcfs mount --store "$S" "$M"
	check_eq "... and the refused mkdir made no own dir for that user" "" \
		"$(ls -a "$M" | grep -e '-private-')"
	tcfs umount "$M"
	check_rc "unmount" 0
else
	skip "the browse tree on a mount many users share" "needs root and setpriv"
fi
tcfs fsck --store "$S"
check_rc "tcfs fsck never sees the views: clean" 0

echo "# --- .tcfs/ read whole while kernels land"
# Each read of a .tcfs/ file is one rendering, the size the kernel was
# given and the bytes alike, however many renderings are made meanwhile:
# eight processes land kernels (a cold replay each, then warm ones until
# the reader is done) while another reads the reports 60 times.
S5=$T_TMP/busy-store
M5=$T_TMP/busy-mnt
mkdir -p "$M5"
at_exit "fusermount3 -uz '$M5'"
tcfs mount --store "$S5" "$M5"
check_rc "a fresh store for writers" 0
pids=()
touch "$T_TMP/busy.run"
for i in 1 2 3 4 5 6 7 8; do
	(while [ -e "$T_TMP/busy.run" ]; do
		python3 "$REPLAY/replay.py" --shuffle "$SRC" "$M5" || exit 1
	done) >/dev/null 2>&1 &
	pids+=($!)
	at_exit "kill ${pids[-1]}"
done
python3 - "$M5" "$T_TMP/busy.run" "${pids[@]}" >"$T_TMP/busy.out" <<'PY'
import json, os, re, sys
m, run, pids = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]
line = re.compile(rb"^(#.*|[a-z_]+(\{[^}\n]*\})? \S+)$")
def state(pid):  # None once reaped, "Z" once exited
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
def alive():
    return any(state(p) not in (None, "Z") for p in pids)
reads = busy = bad_json = bad_prom = 0
while reads < 60:
    on = alive()
    try:
        json.load(open(os.path.join(m, ".tcfs/stats.json")))
    except ValueError:
        bad_json += 1
    b = open(os.path.join(m, ".tcfs/metrics.prom"), "rb").read()
    if not b.endswith(b"\n") or not all(line.match(l)
                                        for l in b[:-1].split(b"\n")):
        bad_prom += 1
    reads += 1
    busy += on
os.unlink(run)
print("reads %d busy %d bad_json %d bad_prom %d"
      % (reads, busy, bad_json, bad_prom))
PY
diag "$(cat "$T_TMP/busy.out")"
read -r _ reads _ busy _ bad_json _ bad_prom <"$T_TMP/busy.out"
check_num "the reports were read while the writers ran" "${busy:-0}" -ge 50
check_eq "every read of stats.json is valid JSON" "0 of $reads" "${bad_json:-x} of $reads"
check_eq "every read of metrics.prom is whole lines" "0 of $reads" "${bad_prom:-x} of $reads"
failed=0
for p in "${pids[@]}"; do
	wait "$p" || failed=$((failed + 1))
done
check_eq "every writer's replays complete (exit 0)" 0 "$failed"
tcfs umount "$M5"
check_rc "unmount" 0
