#!/usr/bin/env bash
# Real Triton through tcfs on a GPU machine: the same program cold (every
# kernel compiled) then warm (every kernel loaded from the cache), on a
# plain directory and through a tcfs mount, each in a fresh process.  The
# mount must make every kernel a hit the second time, with correct results.
# Then twice more through tcfs alone: after a remount (a fresh daemon,
# which checks every blob the first time it serves it: all hits still),
# and after one cubin's blob had a byte flipped behind the store's back
# (never served: its kernel misses, is compiled again, and every result is
# still right).  Last, a fresh store through MOUNT/binary-only, cold then
# warm: no IR shows, every kernel hits warm, results right.
# Run from the project root on the GPU machine, after building here and
# bundling (tests/gpu/bundle.sh; doc/testing.md, "Real Triton on a GPU
# machine"):
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
# run_in LABEL DIR: the program once more, its cache at DIR.
run_in() {
	local start end
	start=$(date +%s.%N)
	TRITON_CACHE_DIR=$2 python3 "$top/tests/gpu/triton_run.py" "$1" \
		>"$work/one.json" 2>"$out/$1.err" || fail=1
	end=$(date +%s.%N)
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["process_seconds"]=float(sys.argv[3])-float(sys.argv[2]); print(json.dumps(d))' \
		"$work/one.json" "$start" "$end" | tee -a "$results"
}
# run_tcfs LABEL: the program once more through the mount.
run_tcfs() {
	run_in "$1" "$mnt"
}
tcfs umount "$mnt" || fail=1
tcfs mount --store "$store" "$mnt" || exit 1
run_tcfs tcfs-remount
tcfs umount "$mnt" || fail=1
python3 - "$store" <<'PY' || fail=1
import os, sqlite3, sys
store = sys.argv[1]
blob = sqlite3.connect(os.path.join(store, "index.db")).execute(
    "SELECT blob FROM nodes WHERE name GLOB '*.cubin' ORDER BY ino LIMIT 1").fetchone()[0]
path = os.path.join(store, "objects", blob[:2], blob)
os.chmod(path, 0o644)
with open(path, "r+b") as f:
    f.seek(100)
    b = f.read(1)
    f.seek(100)
    f.write(bytes([b[0] ^ 0xFF]))
os.chmod(path, 0o444)
print("flipped a byte of blob", blob)
PY
tcfs mount --store "$store" "$mnt" || exit 1
run_tcfs tcfs-damaged
sleep 0.5
ls "$store/quarantine" >"$out/quarantine.txt" 2>/dev/null
tcfs stats --json --store "$store" >"$out/stats.json"
tcfs info --json --store "$store" >"$out/info.json"
tcfs umount "$mnt" || fail=1
tcfs fsck --store "$store" >"$out/fsck.txt" || fail=1

# binary-only/: a fresh store, the program cold then warm with its cache
# at MOUNT/binary-only: no IR shows there, every kernel hits warm.
tcfs mount --store "$work/store2" "$mnt" || exit 1
run_in bin-cold "$mnt/binary-only"
run_in bin-warm "$mnt/binary-only"
find "$mnt/binary-only/" \( -name '*.ttir' -o -name '*.ttgir' -o -name '*.llir' \
	-o -name '*.ptx' -o -name '*.amdgcn' \) | wc -l >"$out/bin-ir.txt"
tcfs stats --json --store "$work/store2" >"$out/bin-stats.json"
tcfs umount "$mnt" || fail=1

python3 - "$results" "$out/stats.json" "$out/quarantine.txt" \
	"$out/bin-stats.json" "$out/bin-ir.txt" <<'PY' || fail=1
import json, sys
runs = {d["label"]: d for d in map(json.loads, open(sys.argv[1]))}
stats = json.load(open(sys.argv[2]))
quarantined = open(sys.argv[3]).read().split()
bin_procs = json.load(open(sys.argv[4]))["per_process"]
bin_ir = int(open(sys.argv[5]).read())
procs = stats["per_process"]
print("correct everywhere:", all(d["correct"] for d in runs.values()))
for w in ("cold", "warm"):
    p, t = runs[f"plain-{w}"], runs[f"tcfs-{w}"]
    print(f"{w}: kernels {t['kernels']}, in-process plain {p['seconds']:.3f}s "
          f"tcfs {t['seconds']:.3f}s (x{t['seconds'] / p['seconds']:.2f}); "
          f"process plain {p['process_seconds']:.2f}s tcfs "
          f"{t['process_seconds']:.2f}s")
cold, warm, remount, damaged = (procs + [None] * 4)[:4]
for name, p in (("cold", cold), ("warm", warm), ("after a remount", remount),
                ("with a damaged blob", damaged)):
    print(f"{name}: {p['hits']} hits, {p['misses']} misses" if p else
          f"{name}: no process in stats")
r = runs.get("tcfs-remount")
if r:
    print(f"after a remount, every blob checked as it is first served: "
          f"in-process {r['seconds']:.3f}s, process {r['process_seconds']:.2f}s")
print(f"quarantined blobs: {len(quarantined)}")
bcold, bwarm = (bin_procs + [None] * 2)[:2]
b, pw = runs.get("bin-warm"), runs["plain-warm"]
print(f"binary-only/: cold {bcold and bcold['misses']} misses, warm "
      f"{bwarm and bwarm['hits']} hits {bwarm and bwarm['misses']} misses, "
      f"{bin_ir} IR files shown")
if b:
    print(f"binary-only/ warm: in-process {b['seconds']:.3f}s, plain full warm "
          f"{pw['seconds']:.3f}s (x{b['seconds'] / pw['seconds']:.2f}); "
          f"process {b['process_seconds']:.2f}s vs {pw['process_seconds']:.2f}s")
bin_ok = bool(bcold and bwarm) and bcold["misses"] > 0 \
    and bwarm["misses"] == 0 and bwarm["hits"] == warm["hits"] and bin_ir == 0
ok = all(d["correct"] for d in runs.values()) and len(procs) == 4 \
    and warm["misses"] == 0 and warm["hits"] > 0 and cold["misses"] > 0 \
    and remount["misses"] == 0 and remount["hits"] == warm["hits"] \
    and damaged["misses"] > 0 and len(quarantined) == 1 and bin_ok
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
exit $fail
