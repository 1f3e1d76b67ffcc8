#!/bin/bash
# kill -9 of tcfs import at 20 points, chosen by count: the Nth write,
# blob landing or sync the import makes (tests/e2e/kill_at.c), from its
# first blobs to its last commit, over more key dirs than one commit
# takes (--commit-every 1000).  After each kill fsck finds the
# store consistent (no row names a blob that is not on disk), and the
# same import run again ends equal to a clean one: the same kernels,
# files and bytes (list --json, info), and every fifth store exported is
# the source, each file with its bytes, mode and mtime (an export of each
# would take the test past its time limit under ASan).
. "$(dirname "$0")/lib.sh"

if [ ! -f "${KILL_AT:-}" ]; then
	echo "1..0 # SKIP no kill_at shim (KILL_AT)"
	exit 0
fi

SRC=$T_TMP/src
python3 "$(dirname "$0")/../bench/gen_kernels.py" \
	"$(fixture_top triton-3.6-multitarget.tgz big)" 4500 "$SRC"
# Real key dirs too, with every file Triton writes.
cp -a "$(fixture_top triton-3.6-multitarget.tgz big)"/. "$SRC"/
NKEYS=$(find "$SRC" -mindepth 1 -maxdepth 1 -type d | wc -l)
NFILES=$(find "$SRC" -type f | wc -l)
diag "source: $NKEYS key dirs, $NFILES files"

# killed_import STORE N: tcfs import of SRC into STORE, killed at the Nth
# call (with N 0: counted into $T_TMP/count).  Its exit status.
killed_import() {
	local at=()
	[ "$2" -gt 0 ] && at=(TCFS_KILL_AT="$2")
	env LD_PRELOAD="$KILL_AT" "${at[@]}" TCFS_KILL_COUNT="$T_TMP/count" \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		"$TCFS" import -q --commit-every 1000 --store "$1" "$SRC" \
		2>>"$T_TMP/import.err"
}

# The clean import, counting its calls.
killed_import "$T_TMP/clean" 0
check_rc "a clean import exits 0" 0
TOTAL=$(cat "$T_TMP/count" 2>/dev/null || echo 0)
check "the clean import made more than 40 writes, landings and syncs" \
	test "$TOTAL" -gt 40
diag "a clean import makes $TOTAL writes, landings and syncs"
# counts STORE: what the store holds, but for blobs a killed import left
# unnamed (tcfs gc's, once older than the put grace)
counts() {
	local f
	f=$(info_json "$1") || { echo "info-failed"; return 1; }
	json_eval "$f" '" ".join(str(d[k]) for k in ("files", "logical_bytes", "kernels", "modules"))'
}
CLEAN=$(counts "$T_TMP/clean")
# kernels STORE: list --json without what a probe or the clock changes
kernels() {
	"$TCFS" list --json --store "$1" 2>/dev/null |
		python3 -c 'import json, sys
for k in sorted(json.load(sys.stdin), key=lambda k: (k["key"], k["name"])):
    print(k["key"], k["name"], k["target"], k["size"], k["files"], k["created"])'
}
kernels "$T_TMP/clean" >"$T_TMP/clean.kernels"
check "the clean store lists its kernels" test -s "$T_TMP/clean.kernels"

killed=0 fsck_ok=0 again_ok=0 listed=0 equal=0 same=0
for i in $(seq 20); do
	# Points 1/22 to 20/22 of the way: the last stays short of the end,
	# whose count varies a little with which thread lands a shared blob.
	n=$((TOTAL * i / 22))
	S=$T_TMP/store-$i
	killed_import "$S" "$n"
	[ $? = 137 ] && killed=$((killed + 1))
	tcfs fsck -q --store "$S" >"$T_TMP/fsck-$i.out" 2>&1 && fsck_ok=$((fsck_ok + 1)) ||
		diag "kill at $n: fsck: $(tail -3 "$T_TMP/fsck-$i.out")"
	tcfs import -q --store "$S" "$SRC" 2>>"$T_TMP/import.err" &&
		again_ok=$((again_ok + 1)) || diag "kill at $n: the import again failed"
	kernels "$S" | cmp -s - "$T_TMP/clean.kernels" && listed=$((listed + 1)) ||
		diag "kill at $n: list --json differs from the clean import's"
	if [ $((i % 5)) = 0 ]; then
		rm -rf "$T_TMP/export"
		tcfs export -q --store "$S" "$T_TMP/export" >/dev/null 2>&1
		if out=$(compare_export "$T_TMP/export" "$SRC" 2>&1); then
			equal=$((equal + 1))
		else
			diag "kill at $n: $out"
		fi
	fi
	[ "$(counts "$S")" = "$CLEAN" ] && same=$((same + 1)) ||
		diag "kill at $n: $(counts "$S") against $CLEAN"
	rm -rf "$S"
done
check_eq "20 imports killed by SIGKILL" 20 "$killed"
check_eq "after each kill fsck finds the store consistent" 20 "$fsck_ok"
check_eq "after each kill the import again exits 0" 20 "$again_ok"
check_eq "after each, the store lists the kernels of a clean import" 20 "$listed"
check_eq "every fifth store exports the source exactly" 4 "$equal"
check_eq "after each, the store counts what a clean import does" 20 "$same"
