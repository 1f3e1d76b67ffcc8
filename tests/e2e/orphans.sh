#!/usr/bin/env bash
# Blobs that no row names: the mount collects them in the background
# (those a kill -9 between an eviction's commit and its frees leaves),
# never one put within the put grace, and its size limit never counts
# them; a file rewritten in place through the mount leaves no old
# versions behind.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip "the mount's orphan collection" "no /dev/fuse or fusermount3"
	exit 0
fi

LIVE=$(fixture_top triton-3.6-multitarget.tgz big)
DEAD=$(fixture_top triton-3.6-multitarget-fpfusion.tgz big2)
DEAD2=$(fixture_top triton-3.6-h200-small.tgz cA)
S=$T_TMP/store
M=$T_TMP/mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
T0=$(date +%s)

# present FILE: how many of the paths listed in FILE exist.
present() {
	local n=0 p
	while read -r p; do [ -e "$p" ] && n=$((n + 1)); done <"$1"
	echo "$n"
}
# make_orphan TEXT: a well-formed blob of TEXT that no file references;
# prints its path.
make_orphan() {
	local f=$T_TMP/orphan.src h
	printf '%s' "$1" >"$f"
	h=$(xxh128 "$f" | cut -d' ' -f1)
	mkdir -p "$S/objects/${h:0:2}"
	cp "$f" "$S/objects/${h:0:2}/$h" && chmod 0444 "$S/objects/${h:0:2}/$h"
	echo "$S/objects/${h:0:2}/$h"
}

# --- orphans as a crash leaves them ------------------------------------------
# The rows of later imports go and their blobs stay: the state a kill -9
# between an eviction's commit and its frees leaves, made deterministic.
tcfs import -q --store "$S" "$LIVE"
check_rc "import the live kernels" 0
ALL=$(info_field "$S" kernels)
LIVE_BYTES=$(info_field "$S" stored_bytes)
find "$S/objects" -type f | sort >"$T_TMP/live.list"
mkdir "$T_TMP/db" && cp -a "$S"/index.db* "$T_TMP/db/"
tcfs import -q --store "$S" "$DEAD" "$DEAD2"
check_rc "import more kernels" 0
rm -f "$S"/index.db* && cp -a "$T_TMP/db"/index.db* "$S/"
find "$S/objects" -type f | sort >"$T_TMP/all.list"
comm -13 "$T_TMP/live.list" "$T_TMP/all.list" >"$T_TMP/orphans.list"
NORPH=$(wc -l <"$T_TMP/orphans.list")
OBYTES=$(xargs stat -c %s <"$T_TMP/orphans.list" | awk '{ s += $1 } END { print s + 0 }')
check_eq "the later import's rows are gone" "$ALL" "$(info_field "$S" kernels)"
check_num "its blobs are orphans" "$NORPH" -gt 100
tcfs gc --dry-run --json --store "$S"
check_eq "  gc would remove exactly those" "$NORPH $OBYTES" \
	"$(json_get "$OUT" removed) $(json_get "$OUT" freed_bytes)"
# Written long before the mount, as a crashed eviction's are; and one
# written just now, within the put grace.
xargs touch -m -d '-10 min' <"$T_TMP/orphans.list"
FRESH=$(make_orphan "an orphan put just now, by tests/e2e/orphans.sh")

# --- the mount collects them, and its limit never counts them ----------------
# The live kernels fit the limit; with the orphans they would not.
LIMIT=$((LIVE_BYTES + OBYTES / 2))
tcfs mount --store "$S" -o max_size=$LIMIT "$M"
check_rc "mount with -o max_size=$LIMIT: the live kernels fit, with the orphans they would not" 0
for _ in $(seq 1 60); do
	[ "$(present "$T_TMP/orphans.list")" = 0 ] && break
	sleep 1
done
check_eq "the mount collects every orphan older than the put grace" 0 \
	"$(present "$T_TMP/orphans.list")"
check "  but not one put within the grace" test -e "$FRESH"
# Past the grace of kernels just imported, a limit that counted the
# orphans would have evicted by now.
while [ "$(date +%s)" -lt $((T0 + 13)) ]; do sleep 1; done
sleep 2
check_eq "no live kernel is evicted" "$ALL" "$(info_field "$S" kernels)"
tcfs stats --store "$S" --json
check_eq "  stats counts no eviction" 0 "$(json_eval "$OUT" 'd["eviction"]["evictions"]')"

# --- a file rewritten in place ------------------------------------------------
# Every version is a blob of its own, not counted by the limit once
# replaced (together they exceed what it leaves over); once the put
# grace is over, only the last one is left.
mkdir -p "$M/rewrites" "$T_TMP/versions"
cat >"$T_TMP/rewrite.py" <<'PY'
import os, sys
for i in range(60):
    data = os.urandom(1 << 14)
    with open(sys.argv[1], "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    with open(os.path.join(sys.argv[2], "%02d" % i), "wb") as v:
        v.write(data)
PY
run python3 "$T_TMP/rewrite.py" "$M/rewrites/f.bin" "$T_TMP/versions"
check_rc "rewrite a file through the mount 60 times (open O_TRUNC, write, fsync)" 0
check_num "  its versions together exceed what the limit leaves over" \
	$((60 * 16384)) -gt $((LIMIT - LIVE_BYTES))
for v in "$T_TMP"/versions/*; do blob_path "$S" "$v"; done >"$T_TMP/versions.list"
check_num "  each version was a blob" "$(present "$T_TMP/versions.list")" -ge 30
for _ in $(seq 1 120); do
	[ "$(present "$T_TMP/versions.list")" -le 1 ] && [ ! -e "$FRESH" ] && break
	sleep 1
done
check_eq "  after the put grace only the last version's blob is left" 1 \
	"$(present "$T_TMP/versions.list")"
check "  and the file reads as last written" cmp -s "$M/rewrites/f.bin" "$T_TMP/versions/59"
check "an orphan put within the grace goes once past it" test ! -e "$FRESH"
check_eq "no live kernel was evicted meanwhile" "$ALL" "$(info_field "$S" kernels)"

tcfs umount "$M"
check_rc "unmount" 0
tcfs fsck --store "$S"
check_rc "fsck finds the store clean" 0
# (The empty blob, which the mount keeps for every file it creates,
# may be left.)
tcfs gc --dry-run --json --store "$S"
check_eq "gc finds no bytes left to collect" 0 "$(json_get "$OUT" freed_bytes)"

# --- a removal's blobs go only once it is committed ---------------------------
# The mount commits its changes in batches (index/store/db.h).  Blobs freed
# before the batch that unnamed them is committed would be missing when
# that batch is lost: here every index commit fails (tests/e2e/fail_wal.c)
# from just before a prune through the mount, and the mount stops.
if [ -n "${FAIL_WAL:-}" ] && [ -f "$FAIL_WAL" ]; then
	S5=$T_TMP/store5
	tcfs import -q --store "$S5" "$LIVE"
	LD_PRELOAD=$FAIL_WAL TCFS_FAIL_WAL=$T_TMP/fail-now \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		LSAN_OPTIONS=suppressions=$(dirname "$0")/lsan-dead-mount.supp \
		"$TCFS" mount -f --store "$S5" "$M" 2>"$T_TMP/lost.err" &
	DAEMON=$!
	for _ in $(seq 100); do grep -q " $M " /proc/self/mountinfo && break; sleep 0.05; done
	touch "$T_TMP/fail-now"
	tcfs prune --store "$S5" --name 'add*'
	for _ in $(seq 300); do [ -r "/proc/$DAEMON/stat" ] || break; sleep 0.1; done
	wait "$DAEMON"
	check_eq "a prune whose commit is lost: the mount stops" 1 $?
	fusermount3 -u "$M"
	rm -f "$T_TMP/fail-now"
	tcfs fsck --store "$S5"
	check_rc "  and every blob its kernels name is still there (fsck clean)" 0
else
	skip "a removal's blobs go only once it is committed" "no fail_wal shim (FAIL_WAL)"
fi
