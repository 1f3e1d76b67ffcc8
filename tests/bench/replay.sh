#!/usr/bin/env bash
# The mount against plain disk under Triton's traffic: tests/replay/replay.py
# on the multitarget fixture (154 kernels, 5 modules), probe log on.
#   cold: the replay on an empty cache (every kernel written, put protocol)
#   warm: the same replay again (every kernel a hit, all bytes read back)
#   race: 8 processes cold on the same keys (errors must be zero)
# Plain disk and the mount (by default, and with --no-fsync) run in the
# same loop, on the same file system; prints medians and the ratios.
#
#   tests/bench/replay.sh [TCFS_BINARY] [RUNS]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
runs=${2:-7}
fixtures=${FIXTURES:-$top/../shared/fixtures}
replay=$top/tests/replay/replay.py
[ -x "$tcfs" ] || { echo "no tcfs binary at $tcfs (build first)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench.XXXXXX")
mnt=$work/mnt
cleanup() {
	fusermount3 -uz "$mnt" 2>/dev/null || true
	chmod -R u+w "$work" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
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
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

pc=() pw=() mc=() mw=() nc=() nw=()
for ((i = 0; i < runs; i++)); do
	rm -rf "$work/plain" "$work/store"
	mkdir "$work/plain"
	pc+=("$(run_replay "$src" "$work/plain")")
	pw+=("$(run_replay "$src" "$work/plain")")
	"$tcfs" mount --store "$work/store" "$mnt"
	mc+=("$(run_replay "$src" "$mnt")")
	mw+=("$(run_replay "$src" "$mnt")")
	"$tcfs" umount "$mnt"
	rm -rf "$work/store"
	"$tcfs" mount --no-fsync --store "$work/store" "$mnt"
	nc+=("$(run_replay "$src" "$mnt")")
	nw+=("$(run_replay "$src" "$mnt")")
	"$tcfs" umount "$mnt"
done
rm -rf "$work/store" "$work/plain"
mkdir "$work/plain"
"$tcfs" mount --store "$work/store" "$mnt"
race_plain=$(run_replay --procs 8 --shuffle "$src" "$work/plain")
race_mnt=$(run_replay --procs 8 --shuffle "$src" "$mnt")
"$tcfs" umount "$mnt"	# flushes the probe log
probes=$("$tcfs" stats --json --store "$work/store" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["hits"] + d["misses"])')

p_c=$(median "${pc[@]}") p_w=$(median "${pw[@]}")
m_c=$(median "${mc[@]}") m_w=$(median "${mw[@]}")
n_c=$(median "${nc[@]}") n_w=$(median "${nw[@]}")
printf 'replay benchmark: 154 kernels + 5 modules, median of %d runs\n' "$runs"
printf '  %-6s %10s %10s %8s %12s %8s\n' "" plain tcfs ratio "--no-fsync" ratio
printf '  %-6s %9.3fs %9.3fs %7.2fx %11.3fs %7.2fx\n' cold "$p_c" "$m_c" \
	"$(echo "$m_c / $p_c" | bc -l)" "$n_c" "$(echo "$n_c / $p_c" | bc -l)"
printf '  %-6s %9.3fs %9.3fs %7.2fx %11.3fs %7.2fx\n' warm "$p_w" "$m_w" \
	"$(echo "$m_w / $p_w" | bc -l)" "$n_w" "$(echo "$n_w / $p_w" | bc -l)"
printf '  8 processes racing, cold: plain %.3fs, tcfs %.3fs (%.2fx), 0 errors, %d kernel probes logged\n' \
	"$race_plain" "$race_mnt" "$(echo "$race_mnt / $race_plain" | bc -l)" "$probes"
