#!/usr/bin/env bash
# Real Triton through tcfs on a GPU machine: the same program cold (every
# kernel compiled) then warm (every kernel loaded from the cache), on a
# plain directory and through a tcfs mount, each in a fresh process.  The
# mount must make every kernel a hit the second time, with correct results.
# Run from the project root on the GPU machine, after building here and
# bundling (../shared/device/README.md):
#   tests/gpu/run.sh [BUNDLE_DIR] [OUT_DIR]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${1:-$top/.device-bundle}
out=${2:-${OUT:-/tmp/tcfs-gpu}}
export LD_LIBRARY_PATH=$bundle PATH=$bundle:$PATH PYTHONUNBUFFERED=1
mkdir -p "$out"
work=$(mktemp -d)
mnt=$work/mnt
store=$work/store
plain=$work/plain
mkdir -p "$mnt" "$plain"
trap 'fusermount3 -uz "$mnt" 2>/dev/null; rm -rf "$work"' EXIT
fail=0

tcfs --version
tcfs mount --store "$store" "$mnt" || exit 1
results=$out/results.jsonl
: >"$results"
for run in cold warm; do
	for where in plain tcfs; do
		dir=$plain
		[ "$where" = tcfs ] && dir=$mnt
		start=$(date +%s.%N)
		TRITON_CACHE_DIR=$dir python3 "$top/tests/gpu/triton_run.py" \
			"$where-$run" >"$work/one.json" 2>"$out/$where-$run.err" || fail=1
		end=$(date +%s.%N)
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["process_seconds"]=float(sys.argv[3])-float(sys.argv[2]); print(json.dumps(d))' \
			"$work/one.json" "$start" "$end" | tee -a "$results"
	done
done
sleep 0.5
tcfs stats --json --store "$store" >"$out/stats.json"
tcfs info --json --store "$store" >"$out/info.json"
tcfs umount "$mnt" || fail=1
tcfs fsck --store "$store" >"$out/fsck.txt" || fail=1

python3 - "$results" "$out/stats.json" <<'PY' || fail=1
import json, sys
runs = {d["label"]: d for d in map(json.loads, open(sys.argv[1]))}
stats = json.load(open(sys.argv[2]))
procs = stats["per_process"]
print("correct everywhere:", all(d["correct"] for d in runs.values()))
for w in ("cold", "warm"):
    p, t = runs[f"plain-{w}"], runs[f"tcfs-{w}"]
    print(f"{w}: kernels {t['kernels']}, in-process plain {p['seconds']:.3f}s "
          f"tcfs {t['seconds']:.3f}s (x{t['seconds'] / p['seconds']:.2f}); "
          f"process plain {p['process_seconds']:.2f}s tcfs "
          f"{t['process_seconds']:.2f}s")
cold, warm = procs[0], procs[-1]
print(f"stats: kernel hits {stats['hits']}, misses {stats['misses']}; "
      f"cold process {cold['hits']}/{cold['misses']}, warm process "
      f"{warm['hits']}/{warm['misses']} (hits/misses, modules included)")
ok = all(d["correct"] for d in runs.values()) and len(procs) == 2 \
    and warm["misses"] == 0 and warm["hits"] > 0 and cold["misses"] > 0
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
exit $fail
