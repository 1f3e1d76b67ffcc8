#!/usr/bin/env bash
# Import against `cp -a` + sync at several sizes, and import's cost per
# file, which should stay flat as the tree grows.  For each N, a tree of N
# kernels from gen_kernels.py --full (9 files each), page cache warm for
# the source on both sides; each side writes to a fresh ext4 of its own on
# a loop device, so neither pays for the other's inodes freed a moment
# before (ext4's allocator scans recently deleted inodes: an rm -rf of
# 180,000 files just before a run doubles its time).  Needs root.
#
# Several builds (TCFS_BINARY,OLD_BINARY,...) are each timed on the same
# tree, in the same run.  "main" is the share of the wall time that
# import's own thread was on a CPU: near 100% it is what bounds the
# import, and the threads that store files wait on it.
#
#   tests/bench/import_scale.sh [TCFS_BINARY[,TCFS_BINARY...]] [N...]
#   (N: 1000 20000)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
IFS=, read -r -a bins <<< "${1:-$top/build-release/tools/tcfs}"
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 20000)
fixtures=${FIXTURES:-$top/tests/fixtures}
for b in "${bins[@]}"; do
	[ -x "$b" ] || { echo "no tcfs binary at $b (build first)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (loop mounts)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench.XXXXXX")
trap 'umount "$work/fs" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/fs"
tar -xzf "$fixtures/triton-3.6-multitarget.tgz" -C "$work"

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"${2:-%.6f}\", $1 }"; }
# fresh N: a new ext4 mounted at $work/fs, room for the tree twice over
fresh() {
	umount "$work/fs" 2>/dev/null || true
	rm -f "$work/img"
	truncate -s $(($1 * 64 * 1024 + (1 << 30))) "$work/img"
	mkfs.ext4 -q -F -N $(($1 * 20 + 20000)) "$work/img"
	mount -o loop "$work/img" "$work/fs"
}
# timed CMD...: wall seconds of CMD then a sync of $work/fs
timed() {
	local a b
	a=$(now); "$@" >/dev/null; sync -f "$work/fs"; b=$(now)
	calc "$b - $a"
}

# cputime PID: the CPU seconds of PID's first thread so far
cputime() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' \
		"/proc/$1/task/$1/stat" 2>/dev/null
}
# imported BIN SRC: "WALL MAINCPU" of an import of SRC then a sync
imported() {
	local a b pid cpu=0 c
	a=$(now)
	"$1" import -q --store "$work/fs/store" "$2" & pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		c=$(cputime "$pid") && [ -n "$c" ] && cpu=$c
		sleep 0.05
	done
	wait "$pid"
	sync -f "$work/fs"; b=$(now)
	echo "$(calc "$b - $a") $cpu"
}

printf 'import against cp -a + sync, each on a fresh ext4 (loop), source warm\n'
for i in "${!bins[@]}"; do printf '  build %d: %s\n' "$i" "${bins[$i]}"; done
printf '  %8s %8s %5s %9s %9s %7s %12s %12s %6s\n' kernels files build "cp (s)" \
	"imp (s)" imp/cp "cp us/file" "imp us/file" main
for n in "${sizes[@]}"; do
	src=$work/src-$n
	python3 "$top/tests/bench/gen_kernels.py" --full "$work/big" "$n" "$src"
	files=$(find "$src" -type f | wc -l)
	find "$src" -type f -exec cat {} + >/dev/null	# warm for both sides
	fresh "$n"
	cp_s=$(timed cp -a "$src" "$work/fs/copy")
	for i in "${!bins[@]}"; do
		fresh "$n"
		read -r imp_s cpu < <(imported "${bins[$i]}" "$src")
		printf '  %8d %8d %5d %9.2f %9.2f %7.2f %12.1f %12.1f %5.0f%%\n' "$n" "$files" \
			"$i" "$cp_s" "$imp_s" "$(calc "$imp_s / $cp_s")" \
			"$(calc "$cp_s / $files * 1e6")" "$(calc "$imp_s / $files * 1e6")" \
			"$(calc "$cpu / $imp_s * 100")"
	done
	rm -rf "$src"
done
