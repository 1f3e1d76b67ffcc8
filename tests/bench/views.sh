#!/usr/bin/env bash
# The binary-only view against the full one and against plain disk:
# tests/replay/replay.py warm on the multitarget fixture (154 kernels, 5
# modules), through MOUNT/ and through MOUNT/binary-only/ of one mount
# (filled by one cold replay), and on a plain directory, in the same loop.
# Prints medians, the time ratios and the bytes each warm replay read.
#
#   tests/bench/views.sh [TCFS_BINARY] [RUNS]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
runs=${2:-7}
fixtures=${FIXTURES:-$top/tests/fixtures}
replay=$top/tests/replay/replay.py
[ -x "$tcfs" ] || { echo "no tcfs binary at $tcfs (build first)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench.XXXXXX")
mnt=$work/mnt
trap 'fusermount3 -uz "$mnt" 2>/dev/null || true; chmod -R u+w "$work"; rm -rf "$work"' EXIT
tar -xzf "$fixtures/triton-3.6-multitarget.tgz" -C "$work"
src=$work/big
mkdir -p "$mnt" "$work/plain"

# run DIR: "ELAPSED READ_BYTES" of one warm replay, errors must be 0
run() {
	python3 "$replay" "$src" "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if d["errors"]:
    sys.exit("replay errors: %d" % d["errors"])
print(d["elapsed"], sum(p["read_bytes"] for p in d["procs"]))'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

"$tcfs" mount --store "$work/store" "$mnt"
run "$work/plain" >/dev/null
run "$mnt" >/dev/null	# cold: fills the store
pt=() ft=() bt=()
for ((i = 0; i < runs; i++)); do
	read -r t pbytes < <(run "$work/plain")
	pt+=("$t")
	read -r t fbytes < <(run "$mnt")
	ft+=("$t")
	read -r t bbytes < <(run "$mnt/binary-only")
	bt+=("$t")
done
"$tcfs" umount "$mnt"
p=$(median "${pt[@]}") f=$(median "${ft[@]}") b=$(median "${bt[@]}")
printf 'views benchmark: warm replays of 154 kernels + 5 modules, median of %d runs\n' "$runs"
printf '  %-30s %8s %12s\n' "" seconds "bytes read"
printf '  %-30s %8.3f %12d\n' "plain directory" "$p" "$pbytes"
printf '  %-30s %8.3f %12d\n' "tcfs, the full view" "$f" "$fbytes"
printf '  %-30s %8.3f %12d\n' "tcfs, binary-only/" "$b" "$bbytes"
printf '  binary-only / full view: time %s, bytes %s\n' "$(div "$b" "$f")" \
	"$(div "$bbytes" "$fbytes")"
printf '  binary-only / plain directory (full): time %s\n' "$(div "$b" "$p")"
