#!/usr/bin/env bash
# How torch.compile uses TORCHINDUCTOR_CACHE_DIR (issue 24): a small
# program (inductor_run.py) cold, then warm three times, each a fresh
# process, its cache on a plain dir under strace (every file call on the
# cache, -f), then the same through a tcfs mount, with tcfs stats after
# each run; then Inductor's cache on a plain dir and TRITON_CACHE_DIR alone
# on a mount.  Writes under OUT: trace-cold.txt, trace-warm.txt (the calls
# on the cache dir, the dir written $CACHE), tree-*.txt (the cache's
# layout after each run), runs.jsonl and stats-*.txt.
#   tests/gpu/inductor_trace.sh [BUNDLE_DIR] [OUT_DIR]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$(cd "${1:-$top/.device-bundle}" && pwd) || exit 2
out=${2:-${OUT:-/tmp/tcfs-gpu-inductor}}
export LD_LIBRARY_PATH=$bundle PATH=$bundle:$PATH PYTHONUNBUFFERED=1
mkdir -p "$out"
work=$(mktemp -d)
trap 'fusermount3 -uz "$work/mnt" 2>/dev/null; rm -rf "$work"' EXIT
prog=$top/tests/gpu/inductor_run.py
st=$(command -v strace || true)
echo "strace: ${st:-none}; python: $(python3 -c 'import torch; print(torch.__version__)')"

# run LABEL CACHEDIR [strace-out]
run() {
	local label=$1 dir=$2 tr=${3:-}
	if [ -n "$tr" ]; then
		# Python's audit hooks (tests/gpu/audit/sitecustomize.py): the
		# GPU machine has no strace.
		PYTHONPATH=$top/tests/gpu/audit TCFS_AUDIT_DIR=$dir \
			TCFS_AUDIT_LOG=$out/$tr TORCHINDUCTOR_CACHE_DIR=$dir \
			python3 "$prog" "$label" >>"$out/runs.jsonl" 2>>"$out/err.txt"
	else
		TORCHINDUCTOR_CACHE_DIR=$dir python3 "$prog" "$label" >>"$out/runs.jsonl" 2>>"$out/err.txt"
	fi
	# Not through the mount: a walk there is probes too.
	[ "$dir" = "$work/mnt" ] ||
		{ echo "== $label"; (cd "$dir" && find . -printf '%y %s %p\n' | sort -k3); } \
			>>"$out/trees.txt" 2>/dev/null
}
mkdir -p "$work/plain" "$work/mnt"
run plain-cold "$work/plain" trace-cold.txt
run plain-warm1 "$work/plain" trace-warm.txt
tcfs mount --store "$work/store" "$work/mnt" || exit 1
run tcfs-cold "$work/mnt" trace-tcfs-cold.txt
tcfs stats --store "$work/store" >"$out/stats-cold.txt" 2>&1
for i in 1 2 3; do
	run "tcfs-warm$i" "$work/mnt"
done
tcfs stats --store "$work/store" >"$out/stats-warm.txt" 2>&1
tcfs stats --json --store "$work/store" >"$out/stats-warm.json" 2>&1
tcfs log --json --store "$work/store" >"$out/log.jsonl" 2>&1
tcfs list --json --store "$work/store" >"$out/list.json" 2>&1
tcfs umount "$work/mnt"
# Then Triton's cache alone on the mount (TRITON_CACHE_DIR), Inductor's
# on a plain dir: Triton's probes, cold then warm.
mkdir -p "$work/mnt2" "$work/plain2"
tcfs mount --store "$work/store2" "$work/mnt2" || exit 1
TRITON_CACHE_DIR=$work/mnt2 run triton-only-cold "$work/plain2"
TRITON_CACHE_DIR=$work/mnt2 run triton-only-warm "$work/plain2"
tcfs stats --store "$work/store2" >"$out/stats-triton-only.txt" 2>&1
tcfs umount "$work/mnt2"
cat "$out/runs.jsonl"
tail -5 "$out/err.txt"
wc -l "$out"/trace-*.txt
