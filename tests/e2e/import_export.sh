#!/bin/bash
# Import of real Triton caches, deduplication, export back to a plain
# cache (all of it and filtered), idempotence, and the round trip.
. "$(dirname "$0")/lib.sh"

BIG=$(fixture_top triton-3.6-multitarget.tgz big) &&
	BIG2=$(fixture_top triton-3.6-multitarget-fpfusion.tgz big2) || {
	echo "Bail out! cannot extract the multitarget fixtures"
	exit 1
}
S=$T_TMP/store

# Numbers from the fixtures' README.
FILES=2261
LOGICAL=25397861
KERNELS=282
MODULES=5
DISTINCT_ALL_BYTES=12913258	# distinct by content, group files included
GROUP_BYTES=217856		# all group files of both trees
DISTINCT_NONGROUP_BYTES=12695402

# --- import --------------------------------------------------------------------

tcfs import --json --store "$S" "$BIG" "$BIG2"
cp "$OUT" "$T_TMP/import1.json"
check_rc "import of big and big2 into a new store exits 0" 0
check_eq "import --json reports $FILES files, all new" "$FILES $FILES" \
	"$(json_get "$OUT" files) $(json_get "$OUT" new_files)"

INFO=$(info_json "$S")
RC=$?
check_rc "info --json exits 0" 0
check_eq "info: files == $FILES" "$FILES" "$(json_get "$INFO" files)"
check_eq "info: logical_bytes == $LOGICAL" "$LOGICAL" "$(json_get "$INFO" logical_bytes)"
check_eq "info: kernels == $KERNELS" "$KERNELS" "$(json_get "$INFO" kernels)"
check_eq "info: modules == $MODULES" "$MODULES" "$(json_get "$INFO" modules)"
STORED=$(json_get "$INFO" stored_bytes)
BLOBS=$(json_get "$INFO" blobs)
check_eq "info: blobs == files under STORE/objects" "$(blob_count "$S")" "$BLOBS"
check_eq "info: stored_bytes == the size of the files under STORE/objects" \
	"$(find "$S/objects" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')" \
	"$STORED"

# The distinct non-group content of both trees, by sha256 (independent of
# the hash tcfs uses), and by XXH3-128 (the blob names tcfs uses).
python3 - "$BIG" "$BIG2" >"$T_TMP/distinct.txt" <<'EOF'
import hashlib, os, sys
seen = {}
for top in sys.argv[1:]:
    for root, dirs, files in os.walk(top):
        for f in files:
            if f.startswith("__grp__") and f.endswith(".json"):
                continue
            b = open(os.path.join(root, f), "rb").read()
            seen.setdefault(hashlib.sha256(b).hexdigest(), len(b))
print(len(seen), sum(seen.values()))
EOF
read -r NDISTINCT DISTINCT_BYTES <"$T_TMP/distinct.txt"
check_eq "the distinct non-group content of the fixtures is $DISTINCT_NONGROUP_BYTES bytes" \
	"$DISTINCT_NONGROUP_BYTES" "$DISTINCT_BYTES"
check_num "stored_bytes ($STORED) >= distinct non-group bytes ($DISTINCT_BYTES)" \
	"$STORED" -ge "$DISTINCT_BYTES"
check_num "stored_bytes ($STORED) <= distinct bytes + all group files ($((DISTINCT_ALL_BYTES + GROUP_BYTES)))" \
	"$STORED" -le $((DISTINCT_ALL_BYTES + GROUP_BYTES))

find "$BIG" "$BIG2" -type f ! -name '__grp__*.json' -print0 |
	xargs -0 xxhsum -q -H2 | cut -d' ' -f1 | sort -u >"$T_TMP/nongroup.xxh"
check_eq "XXH3-128 and sha256 agree on the number of distinct non-group files ($NDISTINCT)" \
	"$NDISTINCT" "$(wc -l <"$T_TMP/nongroup.xxh")"
find "$S/objects" -type f -printf '%P\n' >"$T_TMP/objects.lst"
nblob_nongroup=$(awk -F/ '$1 == substr($2, 1, 2) {print $2}' "$T_TMP/objects.lst" |
	sort | comm -12 - "$T_TMP/nongroup.xxh" | wc -l)
check_eq "blobs holding non-group content == distinct non-group files ($NDISTINCT)" \
	"$NDISTINCT" "$nblob_nongroup"
nmissing=0
while read -r h; do
	[ -f "$S/objects/${h:0:2}/$h" ] || nmissing=$((nmissing + 1))
done <"$T_TMP/nongroup.xxh"
check_eq "every distinct non-group file is a blob STORE/objects/<2 hex>/<xxh128>" 0 "$nmissing"
ngroups=$(find "$BIG" "$BIG2" -type f -name '__grp__*.json' | wc -l)
check_num "the other $((BLOBS - NDISTINCT)) blobs are at most one per group file ($ngroups)" \
	$((BLOBS - NDISTINCT)) -le "$ngroups"
nwritable=$(find "$S/objects" -type f -perm /0222 | wc -l)
check_eq "no blob is writable (all mode 0444)" 0 "$nwritable"

tcfs fsck --store "$S"
check_rc "fsck of the fresh store exits 0" 0

# --- re-import is idempotent ---------------------------------------------------

BEFORE=$(info_numbers "$S")
tcfs import --json --store "$S" "$BIG" "$BIG2"
check_rc "re-import of the same sources exits 0" 0
check_eq "re-import reports new_files 0, new_blob_bytes 0, conflicts 0" "0 0 0" \
	"$(json_get "$OUT" new_files) $(json_get "$OUT" new_blob_bytes) $(json_get "$OUT" conflicts)"
check_eq "re-import leaves files, logical/stored bytes, blobs, kernels unchanged" \
	"$BEFORE" "$(info_numbers "$S")"

# --- a commit every few key dirs -------------------------------------------------

tcfs import --json --commit-every 7 --store "$T_TMP/every7" "$BIG" "$BIG2"
check_rc "import --commit-every 7 exits 0" 0
check_eq "... and holds what an import of one commit does" "$BEFORE" \
	"$(info_numbers "$T_TMP/every7")"
for n in 0 -3 x; do
	tcfs import --commit-every "$n" --store "$T_TMP/every0" "$BIG"
	check_rc "import --commit-every $n is a usage error" 2
	check_grep "... that says N is a count of at least 1" \
		"commit-every: '$n' is not a count of at least 1" "$ERR"
done
check "... and makes no store" test ! -e "$T_TMP/every0"

# --- export everything ----------------------------------------------------------

E=$T_TMP/export
tcfs export --json --store "$S" "$E"
check_rc "export of the whole store exits 0" 0
check_eq "export --json: $FILES files, $KERNELS kernels, 0 failed" "$FILES $KERNELS 0" \
	"$(json_get "$OUT" files) $(json_get "$OUT" kernels) $(json_get "$OUT" failed_key_dirs)"
check_export "export == fixtures: files byte-identical with mode and mtime, group files point into DEST" \
	"$E" "$BIG" "$BIG2"
check_eq "export leaves no temp files in DEST" "" \
	"$(find "$E" -name 'tmp.*' | head -3)"

# --- filters --------------------------------------------------------------------

# key dirs of the sources whose metadata matches, by Python: for checking
# the filters independently of tcfs's own index.
select_keys() {	# BACKEND ARCH NAMEGLOB (empty = any)
	python3 - "$1" "$2" "$3" "$BIG" "$BIG2" <<'EOF'
import fnmatch, json, os, sys
backend, arch, glob, tops = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
for top in tops:
    for key in sorted(os.listdir(top)):
        d = os.path.join(top, key)
        for f in sorted(os.listdir(d)):
            if not (f.startswith("__grp__") and f.endswith(".json")):
                continue
            name = f[len("__grp__"):-len(".json")]
            m = json.load(open(os.path.join(d, name + ".json")))
            t = m.get("target", {})
            if backend and t.get("backend") != backend:
                continue
            if arch and str(t.get("arch")) != arch:
                continue
            if glob and not fnmatch.fnmatchcase(name, glob):
                continue
            print(key)
            break
EOF
}
exported_keys() {
	find "$1" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort
}

ntarget=$(json_eval "$INFO" 'sum(t["kernels"] for t in d["targets"] if t["backend"] == "hip" and t["arch"] == "gfx942")')
tcfs export --store "$S" --backend hip --arch gfx942 "$T_TMP/hip942"
check_rc "export --backend hip --arch gfx942 exits 0" 0
check_eq "it exports as many kernel dirs as info's hip/gfx942 target counts ($ntarget)" \
	"$ntarget" "$(exported_keys "$T_TMP/hip942" | wc -l)"
check_eq "it exports exactly the key dirs whose metadata says hip gfx942" \
	"$(select_keys hip gfx942 '' | sort -u)" "$(exported_keys "$T_TMP/hip942")"
check_export "the hip gfx942 export is byte-exact against the fixtures" \
	--subset "$T_TMP/hip942" "$BIG" "$BIG2"

n90=$(json_eval "$INFO" 'sum(t["kernels"] for t in d["targets"] if t["backend"] == "cuda" and t["arch"] == "90")')
for a in 90 sm90 sm_90; do
	tcfs export --store "$S" --arch "$a" "$T_TMP/arch-$a"
	check_rc "export --arch $a exits 0" 0
done
check_eq "--arch 90 exports the $n90 cuda arch-90 kernel dirs" \
	"$(select_keys '' 90 '' | sort -u)" "$(exported_keys "$T_TMP/arch-90")"
check_eq "--arch sm90 exports the same key dirs as --arch 90" \
	"$(exported_keys "$T_TMP/arch-90")" "$(exported_keys "$T_TMP/arch-sm90")"
check_eq "--arch sm_90 exports the same key dirs as --arch 90" \
	"$(exported_keys "$T_TMP/arch-90")" "$(exported_keys "$T_TMP/arch-sm_90")"
check_export "the --arch sm90 export is byte-exact against the fixtures" \
	--subset "$T_TMP/arch-sm90" "$BIG" "$BIG2"

tcfs export --store "$S" --name 'softmax*' "$T_TMP/softmax"
check_rc "export --name 'softmax*' exits 0" 0
want=$(select_keys '' '' 'softmax*' | sort -u)
check_num "the fixtures have softmax kernels to select" "$(echo "$want" | grep -c .)" -gt 0
check_eq "--name 'softmax*' exports exactly the softmax kernel dirs" \
	"$want" "$(exported_keys "$T_TMP/softmax")"
nother=$(find "$T_TMP/softmax" -name '__grp__*.json' ! -name '__grp__softmax*' | wc -l)
check_eq "no group file of another kernel in the softmax export" 0 "$nother"
check_export "the softmax export is byte-exact against the fixtures" \
	--subset "$T_TMP/softmax" "$BIG" "$BIG2"

tcfs export --store "$S" --backend cuda --arch gfx942 "$T_TMP/none"
if [ "$RC" = 0 ] && [ -z "$(ls -A "$T_TMP/none")" ]; then
	ok "filters that match nothing export nothing and exit 0"
else
	not_ok "filters that match nothing export nothing and exit 0"
	show_run
fi

# --- the same key dir in two sources --------------------------------------------

DUP=$T_TMP/dup-src
mkdir -p "$DUP"
KEY=$(select_keys cuda 90 'add*' | sed -n 1p)
cp -a "$BIG/$KEY" "$DUP/"
tcfs import --json --store "$T_TMP/store-dup" "$BIG" "$DUP"
check_rc "import of big plus a second source holding a copy of key dir $KEY exits 0" 0
nbig=$(find "$BIG" -type f | wc -l)
check_eq "the duplicated key dir counts once: files == $nbig, no conflicts" "$nbig 0" \
	"$(info_field "$T_TMP/store-dup" files) $(json_get "$OUT" conflicts)"
check_eq "the duplicated key dir counts once: kernels == 154" 154 \
	"$(info_field "$T_TMP/store-dup" kernels)"

# --- export twice into the same DEST ---------------------------------------------

# Damage the first export: a later export must put every file back.
f=$(find "$E/$KEY" -name '*.cubin' | head -1)
ino_before=$(stat -c %i "$E/$KEY/__grp__add_kernel.json")
chmod u+w "$f" && printf 'garbage' >"$f"
tcfs export --store "$S" "$E"
check_rc "a second export into the same DEST exits 0" 0
check_export "after the second export DEST again equals the fixtures" "$E" "$BIG" "$BIG2"
ino_after=$(stat -c %i "$E/$KEY/__grp__add_kernel.json")
if [ "$ino_before" != "$ino_after" ]; then
	ok "files already in DEST are replaced by rename (new inode), not rewritten in place"
else
	not_ok "files already in DEST are replaced by rename (new inode), not rewritten in place"
fi
check_eq "the second export leaves no temp files in DEST" "" \
	"$(find "$E" -name 'tmp.*' | head -3)"

# --- round trip: the exported cache imported into a fresh store -------------------

tcfs import --json --store "$T_TMP/store-rt" "$E"
check_rc "import of the exported cache into a fresh store exits 0" 0
RT=$(info_json "$T_TMP/store-rt")
for k in files stored_bytes blobs kernels modules dirs; do
	check_eq "round trip: info $k identical" "$(json_get "$INFO" "$k")" "$(json_get "$RT" "$k")"
done
# Group files hold absolute paths, so their logical size depends on where
# the cache lives: the round trip's logical size is the export's size on
# disk, and differs from the original only by the group files.
esize=$(find "$E" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
check_eq "round trip: logical_bytes == the exported files' total size" \
	"$esize" "$(json_get "$RT" logical_bytes)"
gsrc=$(find "$BIG" "$BIG2" -name '__grp__*.json' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
gexp=$(find "$E" -name '__grp__*.json' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
check_eq "round trip: logical_bytes differs from the original only by the group files' paths" \
	$((LOGICAL - gsrc + gexp)) "$(json_get "$RT" logical_bytes)"
tcfs export --store "$T_TMP/store-rt" "$T_TMP/export-rt"
check_rc "export of the round-tripped store exits 0" 0
check_export "the round-tripped export equals the fixtures" "$T_TMP/export-rt" "$BIG" "$BIG2"

# --- a store on a file system without O_TMPFILE ---------------------------------

# New blobs are made unnamed (O_TMPFILE) where the file system can, and by
# name under STORE/staging where it cannot: FUSE file systems, this one's
# own mount among them, answer EOPNOTSUPP.  The store there must come out
# the same.
notmp_store() {
	local M=$T_TMP/notmp-mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount --store "$T_TMP/notmp-under" "$M"
	check_rc "O_TMPFILE-less: a tcfs mount to hold the store" 0
	mkdir "$M/x"
	if python3 -c 'import os, sys; os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR)' "$M/x" \
		2>/dev/null; then
		skip "O_TMPFILE-less: blobs staged by name" "this kernel's FUSE makes O_TMPFILE files"
		tcfs umount "$M"
		return
	fi
	tcfs import --json --store "$M/x/store" "$BIG" "$BIG2"
	check_eq "O_TMPFILE-less: import exits 0 with $FILES files, all new" "0 $FILES $FILES" \
		"$RC $(json_get "$OUT" files) $(json_get "$OUT" new_files)"
	tcfs fsck --store "$M/x/store"
	check_rc "O_TMPFILE-less: fsck of that store exits 0" 0
	tcfs export --store "$M/x/store" "$T_TMP/export-notmp"
	check_export "O_TMPFILE-less: its export equals the fixtures" "$T_TMP/export-notmp" \
		"$BIG" "$BIG2"
	check_eq "O_TMPFILE-less: nothing left in STORE/staging" "" "$(ls -A "$M/x/store/staging")"
	tcfs umount "$M"
}
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	notmp_store
else
	skip "O_TMPFILE-less: blobs staged by name" "no /dev/fuse or fusermount3"
fi

# NAME.json is read, stored and parsed by import's storing threads
# (tools/putq.c): a good one gives the kernel's row its target, one that
# is not JSON none, and one past 4 MiB (no Triton's) is stored as it is
# and never parsed.  Each lands byte for byte.
META=$T_TMP/meta-src
for k in A B C; do
	key=${k}U5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA
	mkdir -p "$META/$key"
	printf '{"child_paths": {"k%s.json": "/c/%s/k%s.json"}}' "$k" "$key" "$k" \
		>"$META/$key/__grp__k$k.json"
done
printf '{"num_warps": 4, "target": {"backend": "cuda", "arch": 90}}' \
	>"$META/AU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA/kA.json"
printf '{"num_warps": ' >"$META/BU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA/kB.json"
python3 -c 'import sys; sys.stdout.write("{\"target\": {\"backend\": \"hip\"}, \"pad\": \"" + "x" * (4 << 20) + "\"}")' \
	>"$META/CU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA/kC.json"
tcfs import -q --store "$T_TMP/meta-store" "$META"
check_rc "import of NAME.json good, broken and past 4 MiB exits 0" 0
tcfs list --json --store "$T_TMP/meta-store"
check_eq "their kernels' targets: parsed, none, none" "kA cuda-90 4|kB - -1|kC - -1" \
	"$(json_eval "$OUT" '"|".join("%s %s %s" % (k["name"], k["target"], k["num_warps"]) for k in sorted(d, key=lambda k: k["name"]))')"
tcfs export -q --store "$T_TMP/meta-store" "$T_TMP/meta-export"
check_export "and all three export byte for byte" "$T_TMP/meta-export" "$META"
