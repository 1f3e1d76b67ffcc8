#!/usr/bin/env bash
# Import throughput against plain disk: `tcfs import` of the multitarget and
# fpfusion fixtures (2,261 files, 24.2 MiB) against `cp -a` of the same two
# trees, on the same file system, in the same run, page cache warm for
# both.  Also times a re-import (nothing new) and an export.
#
#   tests/bench/import.sh [TCFS_BINARY] [RUNS]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
runs=${2:-7}
fixtures=${FIXTURES:-$top/tests/fixtures}
[ -x "$tcfs" ] || { echo "no tcfs binary at $tcfs (build first)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench.XXXXXX")
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
tar -xzf "$fixtures/triton-3.6-multitarget.tgz" -C "$work"
tar -xzf "$fixtures/triton-3.6-multitarget-fpfusion.tgz" -C "$work"
bytes=$(find "$work/big" "$work/big2" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
files=$(find "$work/big" "$work/big2" -type f | wc -l)
cat "$work"/big*/*/* >/dev/null	# warm the page cache for both sides

now() { date +%s.%N; }
# calc EXPR [FORMAT]: floating-point arithmetic (awk: bc is not everywhere)
calc() { awk "BEGIN { printf \"${2:-%.6f}\", $1 }"; }
# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

cp_t=() imp_t=() re_t=() exp_t=()
for ((i = 0; i < runs; i++)); do
	rm -rf "$work/cp" "$work/store" "$work/export"
	mkdir "$work/cp"
	t0=$(now); cp -a "$work/big" "$work/big2" "$work/cp/"; sync -f "$work/cp"; t1=$(now)
	cp_t+=("$(calc "$t1 - $t0")")
	t0=$(now); "$tcfs" import --quiet --store "$work/store" "$work/big" "$work/big2"; t1=$(now)
	imp_t+=("$(calc "$t1 - $t0")")
	t0=$(now); "$tcfs" import --quiet --store "$work/store" "$work/big" "$work/big2"; t1=$(now)
	re_t+=("$(calc "$t1 - $t0")")
	t0=$(now); "$tcfs" export --quiet --store "$work/store" "$work/export"; t1=$(now)
	exp_t+=("$(calc "$t1 - $t0")")
done
cp_m=$(median "${cp_t[@]}"); imp_m=$(median "${imp_t[@]}")
re_m=$(median "${re_t[@]}"); exp_m=$(median "${exp_t[@]}")
mib() { calc "$bytes / 1048576 / $1" %.1f; }
stored=$("$tcfs" info --json --store "$work/store" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stored_bytes"])')

printf 'import benchmark: %d files, %d bytes, median of %d runs\n' "$files" "$bytes" "$runs"
printf '  cp -a (+ sync)      %6.3f s  %7s MiB/s\n' "$cp_m" "$(mib "$cp_m")"
printf '  tcfs import         %6.3f s  %7s MiB/s   ratio to cp -a: %.2f\n' "$imp_m" "$(mib "$imp_m")" "$(calc "$imp_m / $cp_m")"
printf '  tcfs import again   %6.3f s  %7s MiB/s   ratio to cp -a: %.2f\n' "$re_m" "$(mib "$re_m")" "$(calc "$re_m / $cp_m")"
printf '  tcfs export         %6.3f s  %7s MiB/s   ratio to cp -a: %.2f\n' "$exp_m" "$(mib "$exp_m")" "$(calc "$exp_m / $cp_m")"
printf '  stored %d of %d bytes (%.1f%% saved by dedup)\n' "$stored" "$bytes" "$(calc "100 * ($bytes - $stored) / $bytes")"
