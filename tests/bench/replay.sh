#!/usr/bin/env bash
# The mount against plain disk under Triton's traffic: tests/replay/replay.py
# on the multitarget fixture (154 kernels, 5 modules), probe log on.
#   cold: the replay on an empty cache (every kernel written, put protocol)
#   warm: the same replay again (every kernel a hit, all bytes read back),
#         with files opened as this Python opens them, then as CPython
#         >= 3.14 does (see --opens in replay.py); then once more after a
#         remount, where the daemon checks every blob against its name
#         the first time it serves it; and warm with -o noviews, to
#         show what the views at the root cost Triton
#   race: 8 processes cold on the same keys (errors must be zero)
#   warm, per call: the hit path timed call by call (warm_ops.py), to show
#         which calls the mount's extra time is spent in
# Plain disk and the mount (by default, with --no-fsync, and with
# --busy-poll 0) run in the same loop, on the same file system; prints
# medians and the ratios.
#
#   tests/bench/replay.sh [TCFS_BINARY] [RUNS]
#
# With BENCH_FS=ext4 (root only) everything runs on a fresh ext4 made in
# a file and loop-mounted: a file system as Debian makes one, journal and
# all.  Without a journal (some VMs' disks) ext4 checks every inode it
# hands out against those freed in the last minutes, so on such a disk a
# cold replay slows with every store and tree the runs before it removed,
# plain and tcfs alike, and the cold ratio says more about that history
# than about tcfs.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
runs=${2:-7}
fixtures=${FIXTURES:-$top/tests/fixtures}
replay=$top/tests/replay/replay.py
[ -x "$tcfs" ] || { echo "no tcfs binary at $tcfs (build first)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench.XXXXXX")
work=$tmp
mnt=$work/mnt
cleanup() {
	fusermount3 -uz "$mnt" 2>/dev/null || true
	[ "$work" = "$tmp" ] || umount "$work" 2>/dev/null || true
	chmod -R u+w "$tmp" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
case ${BENCH_FS:-} in
'') fs_note="the file system of ${TMPDIR:-/var/tmp}" ;;
ext4)
	[ "$(id -u)" = 0 ] || { echo "BENCH_FS=ext4 needs root (mount -o loop)" >&2; exit 1; }
	truncate -s 4G "$tmp/fs.img"
	mkfs.ext4 -q -F "$tmp/fs.img"
	mkdir "$tmp/fs"
	mount -o loop "$tmp/fs.img" "$tmp/fs"
	work=$tmp/fs
	mnt=$work/mnt
	fs_note="a fresh ext4 with a journal, loop-mounted"
	;;
*) echo "BENCH_FS: unknown file system '$BENCH_FS' (ext4 or unset)" >&2; exit 1 ;;
esac
tar -xzf "$fixtures/triton-3.6-multitarget.tgz" -C "$work"
src=$work/big
mkdir -p "$mnt"

# elapsed SECONDS of one replay (its own clock), errors must be 0
run_replay() {
	python3 "$replay" "$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if d["errors"]:
    sys.exit("replay errors: %d" % d["errors"])
print(d["elapsed"])'
}
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# fresh_mount [OPTION...]: an empty store mounted at $mnt.
fresh_mount() {
	rm -rf "$work/store"
	"$tcfs" mount "$@" --store "$work/store" "$mnt"
}

# plain cold, warm, warm as 3.14 opens; the same on the mount; cold with
# --no-fsync; cold and warm with --busy-poll 0
pc=() pw=() p4=() mc=() mw=() m4=() mr=() mv=() nc=() bc=() bw=()
for ((i = 0; i < runs; i++)); do
	rm -rf "$work/plain"
	mkdir "$work/plain"
	pc+=("$(run_replay "$src" "$work/plain")")
	pw+=("$(run_replay "$src" "$work/plain")")
	p4+=("$(run_replay --opens 3.14 "$src" "$work/plain")")
	fresh_mount
	mc+=("$(run_replay "$src" "$mnt")")
	mw+=("$(run_replay "$src" "$mnt")")
	m4+=("$(run_replay --opens 3.14 "$src" "$mnt")")
	"$tcfs" umount "$mnt"
	"$tcfs" mount --store "$work/store" "$mnt"
	mr+=("$(run_replay "$src" "$mnt")")
	"$tcfs" umount "$mnt"
	"$tcfs" mount -o noviews --store "$work/store" "$mnt"
	run_replay "$src" "$mnt" >/dev/null	# blobs checked, as above
	mv+=("$(run_replay "$src" "$mnt")")
	"$tcfs" umount "$mnt"
	fresh_mount --no-fsync
	nc+=("$(run_replay "$src" "$mnt")")
	"$tcfs" umount "$mnt"
	fresh_mount --busy-poll 0
	bc+=("$(run_replay "$src" "$mnt")")
	bw+=("$(run_replay "$src" "$mnt")")
	"$tcfs" umount "$mnt"
done
# The plain tree holds the last warm replay's files; the mount gets its own.
fresh_mount
run_replay "$src" "$mnt" >/dev/null
run_replay "$src" "$mnt" >/dev/null
for ((i = 0; i < runs; i++)); do
	python3 "$top/tests/bench/warm_ops.py" "$src" "$work/plain" >>"$tmp/ops.plain"
	python3 "$top/tests/bench/warm_ops.py" "$src" "$mnt" >>"$tmp/ops.tcfs"
done
"$tcfs" umount "$mnt"
rm -rf "$work/plain"
mkdir "$work/plain"
fresh_mount
race_plain=$(run_replay --procs 8 --shuffle "$src" "$work/plain")
race_mnt=$(run_replay --procs 8 --shuffle "$src" "$mnt")
"$tcfs" umount "$mnt"	# flushes the probe log
probes=$("$tcfs" stats --json --store "$work/store" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["hits"] + d["misses"])')

row() {	# LABEL PLAIN_MEDIAN TCFS_MEDIAN
	printf '  %-34s %8.3fs %8.3fs %7.2fx\n' "$1" "$2" "$3" "$(div "$3" "$2")"
}
p_c=$(median "${pc[@]}")
printf 'replay benchmark: 154 kernels + 5 modules, median of %d runs, on %s\n' \
	"$runs" "$fs_note"
printf '  %-34s %9s %9s %8s\n' "" plain tcfs ratio
row "cold (every kernel written)" "$p_c" "$(median "${mc[@]}")"
row "cold, tcfs mount --no-fsync" "$p_c" "$(median "${nc[@]}")"
row "cold, tcfs mount --busy-poll 0" "$p_c" "$(median "${bc[@]}")"
row "warm (every kernel read back)" "$(median "${pw[@]}")" "$(median "${mw[@]}")"
row "warm, tcfs mount --busy-poll 0" "$(median "${pw[@]}")" "$(median "${bw[@]}")"
row "warm, opens as CPython >= 3.14" "$(median "${p4[@]}")" "$(median "${m4[@]}")"
row "warm after a remount (blobs checked)" "$(median "${pw[@]}")" "$(median "${mr[@]}")"
row "warm, tcfs mount -o noviews" "$(median "${pw[@]}")" "$(median "${mv[@]}")"
printf '  views cost Triton: warm with views / warm with -o noviews = %.3f\n' \
	"$(div "$(median "${mw[@]}")" "$(median "${mv[@]}")")"
printf '  (up to 3.13, each open() also sends a TCGETS ioctl for isatty, which FUSE\n'
printf '   always forwards to the daemon: %d round trips in the warm replay)\n' \
	"$(find "$src" -type f | wc -l)"
printf '  8 processes racing, cold: plain %.3fs, tcfs %.3fs (%.2fx), 0 errors, %d kernel probes logged\n' \
	"$race_plain" "$race_mnt" "$(div "$race_mnt" "$race_plain")" "$probes"
printf '  warm, per call (median ms of %d runs; warm_ops.py):\n' "$runs"
python3 - "$tmp/ops.plain" "$tmp/ops.tcfs" <<'PY'
import json, statistics, sys
runs = [[json.loads(l) for l in open(f)] for f in sys.argv[1:]]
med = [{k: statistics.median(r[k] for r in rs) for k in rs[0]} for rs in runs]
print("    %-14s %8s %8s %8s" % ("call", "plain", "tcfs", "extra"))
for k in sorted(med[0], key=lambda k: (k == "all", -(med[1][k] - med[0][k]))):
    print("    %-14s %8.2f %8.2f %+8.2f" % (k, med[0][k], med[1][k], med[1][k] - med[0][k]))
PY
printf '    (the requests each sends to the daemon: open, a TCGETS ioctl; open group,\n'
printf '     a lookup and the ioctl; makedirs KEY and exists group, a lookup each)\n'
