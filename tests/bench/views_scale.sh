#!/usr/bin/env bash
# The browsing views at scale: a synthetic store of 100,000 kernels
# (gen_kernels.py: variants of a fixture kernel, 100 per name over four
# targets) against one of 1,000 made the same way.  Prints, for each, the
# median wall time of `ls by-name`, `ls by-name/NAME`, `ls
# by-arch/TARGET/NAME` and `readlink by-name/NAME/KEY` (views are never
# cached by the kernel: each is served anew), and the ratios.
#
#   tests/bench/views_scale.sh [TCFS_BINARY] [RUNS] [BIG]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
runs=${2:-7}
big=${3:-100000}
fixtures=${FIXTURES:-$top/tests/fixtures}
[ -x "$tcfs" ] || { echo "no tcfs binary at $tcfs (build first)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench.XXXXXX")
trap 'for m in "$work"/mnt-*; do fusermount3 -uz "$m" 2>/dev/null || true; done; chmod -R u+w "$work"; rm -rf "$work"' EXIT
tar -xzf "$fixtures/triton-3.6-multitarget.tgz" -C "$work"

# secs CMD...: the median wall time of CMD over $runs runs.
secs() {
	local t=()
	for ((i = 0; i < runs; i++)); do
		local a b
		a=$(date +%s.%N)
		"$@" >/dev/null
		b=$(date +%s.%N)
		t+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.6f", b - a }')")
	done
	printf '%s\n' "${t[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

declare -A T
for n in 1000 "$big"; do
	python3 "$top/tests/bench/gen_kernels.py" "$work/big" "$n" "$work/src-$n"
	a=$(date +%s.%N)
	"$tcfs" import -q --store "$work/store-$n" "$work/src-$n"
	b=$(date +%s.%N)
	rm -rf "$work/src-$n"
	m=$work/mnt-$n
	mkdir -p "$m"
	"$tcfs" mount --store "$work/store-$n" "$m"
	name=kernel_00000
	key=$(ls "$m/by-arch/cuda-90/$name" | head -1)
	T[$n,import]=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", b - a }')
	T[$n,names]=$(ls "$m/by-name" | wc -l)
	T[$n,keys]=$(ls "$m/by-name/$name" | wc -l)
	T[$n,ls]=$(secs ls "$m/by-name")
	T[$n,lsname]=$(secs ls "$m/by-name/$name")
	T[$n,lsarch]=$(secs ls "$m/by-arch/cuda-90/$name")
	T[$n,readlink]=$(secs readlink "$m/by-name/$name/$key")
	"$tcfs" umount "$m"
done
printf 'views at scale: median of %d runs; %d kernels against 1000\n' "$runs" "$big"
printf '  %-34s %12s %12s %8s\n' "" "1000" "$big" "ratio"
row() {
	printf '  %-34s %11.4fs %11.4fs %7.2fx\n' "$1" "${T[1000,$2]}" "${T[$big,$2]}" \
		"$(awk -v a="${T[1000,$2]}" -v b="${T[$big,$2]}" 'BEGIN { print b / a }')"
}
row "ls by-name (${T[1000,names]} / ${T[$big,names]} names)" ls
row "ls by-name/NAME (${T[$big,keys]} keys)" lsname
row "ls by-arch/cuda-90/NAME" lsarch
row "readlink by-name/NAME/KEY" readlink
printf '  (import: %ss for 1000 kernels, %ss for %d)\n' "${T[1000,import]}" "${T[$big,import]}" "$big"
