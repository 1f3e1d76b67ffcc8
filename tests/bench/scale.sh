#!/usr/bin/env bash
# A store of N kernels (100,000: about 800,000 files) against one of 1,000,
# both made by gen_kernels.py --full (variants of the fixture's kernels,
# every file Triton writes).  For each size, in the same run, it measures:
#   mount      wall time of `tcfs mount` until it serves (median of 3)
#   rss        the daemon's resident memory after every kernel was probed
#   hit, miss  median latency of one probe (a stat of KEY/__grp__NAME.json):
#              the median of 5 rounds, each the median of 2,000
#   info, list, list --json, stats, prune --dry-run --unused-since 1d,
#   prune --dry-run --name '*'
#              (mounted; median of 3)
#   import     throughput against `cp -a` (+ sync) of the same tree
#   gc, fsck   time per file
#   ls         `ls` of the mount's root against `ls` of the same N key
#              dirs on plain disk (the cp -a copy): one run to warm up,
#              then the median of 5
# The probes and ls are timed with both sizes mounted, in rounds that
# take one size then the other.
# and prints each figure with its target and whether it is met.  As root
# the store and the copy each live on a fresh ext4 of their own (loop),
# as in import_scale.sh; else both under TMPDIR.
#
#   tests/bench/scale.sh [TCFS_BINARY] [N]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
big=${2:-100000}
fixtures=${FIXTURES:-$top/tests/fixtures}
[ -x "$tcfs" ] || { echo "no tcfs binary at $tcfs (build first)" >&2; exit 1; }
tcfs=$(cd "$(dirname "$tcfs")" && pwd)/$(basename "$tcfs")

work=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench.XXXXXX")
cleanup() {
	for m in "$work"/mnt-*; do fusermount3 -uz "$m" 2>/dev/null || true; done
	for d in "$work"/fs-*; do umount "$d" 2>/dev/null || true; done
	chmod -R u+w "$work"
	rm -rf "$work"
}
trap cleanup EXIT
tar -xzf "$fixtures/triton-3.6-multitarget.tgz" -C "$work"

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"${2:-%.6f}\", $1 }"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# secs RUNS CMD...: the median wall time of CMD, its output dropped
secs() {
	local runs=$1 t=() a b
	shift
	for ((i = 0; i < runs; i++)); do
		a=$(now); "$@" >/dev/null; b=$(now)
		t+=("$(calc "$b - $a")")
	done
	median "${t[@]}"
}
# fresh NAME N: a new ext4 for N kernels at $work/fs-NAME (as root), or a
# plain dir; prints its path
fresh() {
	local d=$work/fs-$1
	umount "$d" 2>/dev/null || true
	rm -rf "$d" "$d.img"
	mkdir "$d"
	if [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null; then
		truncate -s $(($2 * 64 * 1024 + (1 << 30))) "$d.img"
		mkfs.ext4 -q -F -N $(($2 * 20 + 20000)) "$d.img"
		mount -o loop "$d.img" "$d"
	fi
	echo "$d"
}
# The daemon: the holder of the store's writer lock (/proc/locks).
daemon_pid() {
	local ino
	ino=$(stat -c %i "$1/lock")
	awk -v ino="$ino" '$2 == "FLOCK" { n = split($6, f, ":"); if (f[n] == ino) print $5 }' /proc/locks | head -1
}
prune_ok=0
"$tcfs" prune --help >/dev/null 2>&1 && prune_ok=1

declare -A T
# Each size is built, imported and mounted; then the probes and ls are
# timed in rounds that take the sizes in turn, so that a change of the
# machine's pace in the run moves both sides of each ratio alike.
for n in 1000 "$big"; do
	src=$work/src-$n m=$work/mnt-$n
	plain=$(fresh "plain-$n" "$n")/copy store=$(fresh "store-$n" "$n")/store
	echo "scale: $n kernels ..." >&2
	python3 "$top/tests/bench/gen_kernels.py" --full "$work/big" "$n" "$src"
	T[$n,files]=$(find "$src" -type f | wc -l)
	a=$(now); cp -a "$src" "$plain"; sync -f "$plain"; b=$(now)
	T[$n,cp]=$(calc "$b - $a")
	a=$(now); "$tcfs" import -q --store "$store" "$src"; b=$(now)
	T[$n,import]=$(calc "$b - $a")
	T[$n,import_r]=$(calc "${T[$n,cp]} / ${T[$n,import]}" %.2f)
	rm -rf "$src"
	T[$n,gc]=$(calc "$(secs 1 "$tcfs" gc --store "$store") / ${T[$n,files]} * 1e6" %.2f)
	T[$n,fsck]=$(calc "$(secs 1 "$tcfs" fsck --store "$store") / ${T[$n,files]} * 1e6" %.2f)
	mkdir -p "$m"
	t=()
	for ((i = 0; i < 3; i++)); do
		a=$(now); "$tcfs" mount --store "$store" "$m"; b=$(now)
		t+=("$(calc "$b - $a")")
		[ $i = 2 ] || "$tcfs" umount "$m"
	done
	T[$n,mount]=$(median "${t[@]}")
	python3 "$top/tests/bench/probe_scale.py" all "$m" "$plain"
	pid=$(daemon_pid "$store")
	T[$n,rss]=$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
	ls "$plain" >/dev/null
	ls "$m" >/dev/null
done
# Five rounds after the warm-up above; the figure is each one's median.
declare -A R
for round in 1 2 3 4 5; do
	for n in 1000 "$big"; do
		plain=$work/fs-plain-$n/copy m=$work/mnt-$n
		read -r h mi < <(python3 "$top/tests/bench/probe_scale.py" time "$m" "$plain" 2000 "$round")
		R[$n,hit]+=" $h" R[$n,miss]+=" $mi"
		R[$n,plain_ls]+=" $(secs 1 ls "$plain")"
		R[$n,ls]+=" $(secs 1 ls "$m")"
	done
done
for n in 1000 "$big"; do
	store=$work/fs-store-$n/store m=$work/mnt-$n
	for f in hit miss plain_ls ls; do
		# shellcheck disable=SC2086  # the rounds, one word each
		T[$n,$f]=$(median ${R[$n,$f]})
	done
	T[$n,ls_r]=$(calc "${T[$n,ls]} / ${T[$n,plain_ls]}" %.2f)
	T[$n,info]=$(secs 3 "$tcfs" info --store "$store")
	T[$n,list]=$(secs 3 "$tcfs" list --store "$store")
	T[$n,list_json]=$(secs 3 "$tcfs" list --json --store "$store")
	T[$n,stats]=$(secs 3 "$tcfs" stats --store "$store")
	if [ $prune_ok = 1 ]; then
		T[$n,prune]=$(secs 3 "$tcfs" prune --dry-run --unused-since 1d --store "$store")
		T[$n,prune_all]=$(secs 3 "$tcfs" prune --dry-run --name '*' --store "$store")
	fi
	"$tcfs" umount "$m"
done

printf 'scale: %d kernels (%d files) against 1000 (%d files)\n' "$big" "${T[$big,files]}" "${T[1000,files]}"
printf '  %-26s %11s %11s %8s  %-22s %s\n' "" 1000 "$big" ratio target met
# row LABEL FIELD UNIT TARGET_TEXT AWK_TEST: AWK_TEST sees a (1k) and b (N)
row() {
	local a=${T[1000,$2]} b=${T[$big,$2]} ok
	ok=$(awk -v a="$a" -v b="$b" "BEGIN { print (($5) ? \"yes\" : \"NO\") }")
	printf '  %-26s %10s%-1s %10s%-1s %7.2fx  %-22s %s\n' "$1" "$a" "$3" "$b" "$3" \
		"$(calc "$b / $a")" "$4" "$ok"
}
row "mount" mount s "<= 1 s" "b <= 1"
row "daemon RSS, all probed" rss M "<= 256 MB" "b <= 256"
row "probe, hit (us)" hit "" "<= 1.3x of 1000" "b <= 1.3 * a"
row "probe, miss (us)" miss "" "<= 1.3x of 1000" "b <= 1.3 * a"
row "tcfs info" info s "<= 1 s" "b <= 1"
row "tcfs list" list s "<= 2 s" "b <= 2"
row "tcfs list --json" list_json s "<= 1 s" "b <= 1"
row "tcfs stats" stats s "<= 1 s" "b <= 1"
if [ $prune_ok = 1 ]; then
	row "tcfs prune --dry-run" prune s "<= 1 s" "b <= 1"
	row "prune --dry-run --name '*'" prune_all s "<= 1 s" "b <= 1"
else
	echo "  prune: n/a"
fi
row "import / cp -a >= 1.0" import_r "" ">= 1.0" "b >= 1"
row "gc (us per file)" gc "" "<= 1.5x of 1000" "b <= 1.5 * a"
row "fsck (us per file)" fsck "" "<= 1.5x of 1000" "b <= 1.5 * a"
row "ls / (tcfs over ext4)" ls_r "" "<= 1.5x plain ls" "b <= 1.5"
printf '  (import %ss and cp -a %ss at %d; ls of the root %ss, plain %ss)\n' \
	"${T[$big,import]}" "${T[$big,cp]}" "$big" "${T[$big,ls]}" "${T[$big,plain_ls]}"
