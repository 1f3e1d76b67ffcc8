#!/usr/bin/env bash
# Shipping a job's kernels with real Triton: a store that already holds
# other kernels (a fixture) is mounted, the job runs cold through it, and
# tcfs pack --used-since packs exactly what the job probed into an
# oci-archive.  That unpacks into a fresh store on a fresh mount, where
# the GPU check must pass (nvidia-smi), and the job's second run there is
# all hits with correct results.
# Run from the project root on the GPU machine, after building here and
# bundling (tests/gpu/bundle.sh; doc/testing.md, "Real Triton on a GPU
# machine"):
#   tests/gpu/pack.sh [BUNDLE_DIR] [OUT_DIR]
# FIXTURES names the fixture tarballs' directory (default tests/fixtures).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${1:-$top/.device-bundle}
out=${2:-${OUT:-/tmp/tcfs-gpu}}
fixtures=${FIXTURES:-$top/tests/fixtures}
export LD_LIBRARY_PATH=$bundle PATH=$bundle:$PATH PYTHONUNBUFFERED=1
mkdir -p "$out"
work=$(mktemp -d)
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR" "$work/m1" "$work/m2" "$work/fx"
trap 'fusermount3 -uz "$work/m1" 2>/dev/null; fusermount3 -uz "$work/m2" 2>/dev/null; rm -rf "$work"' EXIT
fail=0

tar xzf "$fixtures/triton-3.6-h200-small.tgz" -C "$work/fx" || exit 1
tcfs import -q --store "$work/a" "$work/fx/cA" || exit 1
tcfs info --json --store "$work/a" >"$out/pack-before.json"
start=$(date +%s)
sleep 1
tcfs mount --store "$work/a" "$work/m1" || exit 1
TRITON_CACHE_DIR=$work/m1 python3 "$top/tests/gpu/triton_run.py" job-cold \
	>"$out/pack-job-cold.json" 2>"$out/pack-job-cold.err" || fail=1
tcfs umount "$work/m1" || fail=1
tcfs info --json --store "$work/a" >"$out/pack-after-job.json"
tcfs pack --store "$work/a" --used-since "@$start" --json \
	"oci-archive:$work/job.tar" >"$out/pack.json" 2>"$out/pack.err" || fail=1
tcfs pack --store "$work/a" --json "oci-archive:$work/all.tar" \
	>"$out/pack-all.json" 2>>"$out/pack.err" || fail=1
tcfs unpack --store "$work/b" --json "oci-archive:$work/job.tar" \
	>"$out/unpack.json" 2>"$out/unpack.err" || fail=1
tcfs mount --store "$work/b" "$work/m2" || exit 1
TRITON_CACHE_DIR=$work/m2 python3 "$top/tests/gpu/triton_run.py" job-warm \
	>"$out/pack-job-warm.json" 2>"$out/pack-job-warm.err" || fail=1
tcfs umount "$work/m2" || fail=1
tcfs stats --json --store "$work/b" >"$out/pack-stats-b.json"
tcfs stats --json --store "$work/a" >"$out/pack-stats-a.json"

python3 - "$out" <<'PY' || fail=1
import json, os, sys
o = sys.argv[1]
j = lambda n: json.load(open(os.path.join(o, n)))
before, after = j("pack-before.json"), j("pack-after-job.json")
pack, whole, unpack = j("pack.json"), j("pack-all.json"), j("unpack.json")
cold, warm = j("pack-job-cold.json"), j("pack-job-warm.json")
a_procs = j("pack-stats-a.json")["per_process"]
b_procs = j("pack-stats-b.json")["per_process"]
job_kernels = after["kernels"] - before["kernels"]
print(f"store a: {before['kernels']} fixture kernels, {job_kernels} compiled by the job")
print(f"working set: {pack['kernels']} kernels, {pack['files']} files, layer "
      f"{pack['layer_bytes']} bytes; whole store: {whole['kernels']} kernels, "
      f"layer {whole['layer_bytes']} bytes "
      f"({100.0 * pack['layer_bytes'] / whole['layer_bytes']:.1f}%)")
print(f"unpack: {unpack['kernels']} kernels, fit {unpack['fit']} of "
      f"{unpack['image_kernels']} on {unpack['gpus']}")
cold_p = a_procs[-1] if a_procs else None
warm_p = b_procs[-1] if b_procs else None
print(f"job cold in store a: {cold_p and cold_p['misses']} misses; "
      f"second run in store b: {warm_p and warm_p['hits']} hits, "
      f"{warm_p and warm_p['misses']} misses")
print(f"results correct: cold {cold['correct']}, warm {warm['correct']}; "
      f"warm start {warm['seconds']:.3f}s vs cold {cold['seconds']:.3f}s")
ok = cold["correct"] and warm["correct"] and warm_p and warm_p["misses"] == 0 \
    and warm_p["hits"] > 0 and 0 < pack["kernels"] <= whole["kernels"] \
    and unpack["fit"] == unpack["image_kernels"] and unpack["fit"] > 0
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
exit $fail
