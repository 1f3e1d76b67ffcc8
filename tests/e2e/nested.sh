#!/usr/bin/env bash
# Triton caches below the mount root, as tcfs sees them mounted at
# TORCHINDUCTOR_CACHE_DIR (triton/DEVICE/KEY, and Inductor's bundler
# renaming whole key dirs into place) or at VLLM_CACHE_ROOT (one cache per
# rank, 8 ranks in parallel, beside files that are not Triton's): probes
# counted exactly, kernels listed with their cache root, views that lead
# to them, other files byte-exact after a remount, the ranks' copies
# stored once, and a fixture below the root indexed as at the top.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
SRC=$(fixture_top triton-3.6-h200-small.tgz cA)
KERNELS=26
MODULES=5
RANKS=8

# mount_at NAME: a new store and mount point; sets S and M.
mount_at() {
	S=$T_TMP/$1-store
	M=$T_TMP/$1-mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount --store "$S" "$M"
	check_rc "$1: tcfs mount" 0
}

# kernels_of: "name key target files" of every kernel of $S, sorted (its
# size counts its group file, which names the mount point).
kernels_of() {
	"$TCFS" list --json --store "$S" | python3 -c '
import json, sys
for k in sorted(json.load(sys.stdin), key=lambda k: (k["key"], k["name"])):
    print(k["name"], k["key"], k["target"], k["files"])'
}

echo "# --- the fixture at the top, to compare with"
mount_at top
replay top-cold "$SRC" "$M"
TOP_KERNELS=$(kernels_of)
TOP_INFO=$(info_numbers "$S" | cut -d' ' -f1,5,6)
fusermount3 -u "$M"

echo "# --- Inductor: TORCHINDUCTOR_CACHE_DIR, Triton's cache at triton/0"
mount_at inductor
mkdir -p "$M/triton/0" "$M/fxgraph/ab"
TC=$M/triton/0
# Two processes race through the bundler: each renames a populated
# tmp.<uuid> onto the empty KEY, and skips a KEY another has filled.
replay ind-cold "$SRC" "$TC" --protocol inductor --procs 2 --shuffle
check_eq "bundler, cold: each process probes every kernel once (a miss unless the other landed it)" \
	"$((2 * KERNELS))" "$(($(seen ind-cold kernel hits) + $(seen ind-cold kernel misses)))"
replay ind-warm "$SRC" "$TC"
check_eq "bundler, warm: every kernel probe is a hit" "$KERNELS 0" \
	"$(seen ind-warm kernel hits) $(seen ind-warm kernel misses)"
check_eq "bundler, warm: every module probe is a hit" "$MODULES 0" \
	"$(seen ind-warm module hits) $(seen ind-warm module misses)"
check_stats ind-cold ind-warm
tcfs stats --json --store "$S"
check_eq "stats: every kernel the bundler landed is a new kernel" "$KERNELS" \
	"$(json_eval "$OUT" 'len(set(d["new_kernels"]))')"
check_eq "no temp dir of the bundler is left" "" \
	"$(ls -a "$TC" | grep '^tmp\.')"
check_eq "kernels at triton/0 are indexed as at the top (name, key, target, files)" \
	"$TOP_KERNELS" "$(kernels_of)"
tcfs list --json --store "$S"
check_eq "list --json: every kernel's root is triton/0" "triton/0" \
	"$(json_eval "$OUT" '" ".join(sorted(set(k["root"] for k in d)))')"
tcfs list --store "$S"
check_eq "list: a ROOT column shows triton/0" "ROOT triton/0" \
	"$(awk 'NR == 1 { print $NF }' "$OUT") $(awk 'NR > 1 { print $NF }' "$OUT" | sort -u)"
check_eq "files, kernels and modules: as for the fixture at the top" \
	"$TOP_INFO" "$(info_numbers "$S" | cut -d' ' -f1,5,6)"

read -r N K _ <<<"$(kernels_of | sed -n 1p)"
check_eq "by-name/$N/KEY leads to the key dir below triton/0" \
	"../../.tcfs/kernels/triton/0/$K" "$(readlink "$M/by-name/$N/$K")"
T=$(tcfs list --json --store "$S"; json_eval "$OUT" "[k['target'] for k in d if k['key'] == '$K'][0]")
check_eq "by-arch/$T/$N/KEY leads there too" \
	"../../../.tcfs/kernels/triton/0/$K" "$(readlink "$M/by-arch/$T/$N/$K")"
check "a cubin read through by-name is byte-exact" \
	cmp "$SRC/$K/$N.cubin" "$M/by-name/$N/$K/$N.cubin"
check_eq "its group file names the key dir under triton/0" \
	"$TC/$K/$N.cubin" \
	"$(json_eval "$M/by-name/$N/$K/__grp__$N.json" "d['child_paths']['$N.cubin']")"

# A key dir moved out of the cache root (into an FX graph dir, whose
# lowercase name is no key) is still a kernel there.
printf 'graph' >"$M/fxgraph/ab/fabcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrs"
check "an FX graph entry is a plain file" \
	cmp -s <(printf 'graph') "$M/fxgraph/ab/fabcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrs"
mkdir "$M/$K" "$M/$K/$K"
test -e "$M/$K/$K/__grp__$N.json"
tcfs stats --json --store "$S"
check_eq "no probe in a key-named dir inside a key dir" \
	"$(json_eval "$T_TMP/stats.json" 'd["misses"]')" "$(json_get "$OUT" misses)"
rmdir "$M/$K/$K" "$M/$K"
fusermount3 -u "$M"
tcfs mount --store "$S" "$M"
check_rc "inductor: mounts again" 0
check "after a remount, the cubin read through by-name is byte-exact" \
	cmp "$SRC/$K/$N.cubin" "$M/by-name/$N/$K/$N.cubin"
check "after a remount, the FX graph entry is byte-exact" \
	cmp -s <(printf 'graph') "$M/fxgraph/ab/fabcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrs"
fusermount3 -u "$M"

echo "# --- vLLM: VLLM_CACHE_ROOT, $RANKS ranks in parallel"
mount_at vllm
REPLAY_TOOL=vllm.py replay vllm-cold "$SRC" "$M" --ranks "$RANKS"
check_eq "vLLM, cold: every rank misses every kernel" "0 $((RANKS * KERNELS))" \
	"$(seen vllm-cold kernel hits) $(seen vllm-cold kernel misses)"
REPLAY_TOOL=vllm.py replay vllm-warm "$SRC" "$M" --ranks "$RANKS" --warm
check_eq "vLLM, warm: every rank hits every kernel" "$((RANKS * KERNELS)) 0" \
	"$(seen vllm-warm kernel hits) $(seen vllm-warm kernel misses)"
check_eq "vLLM, warm: every rank hits every module" "$((RANKS * MODULES)) 0" \
	"$(seen vllm-warm module hits) $(seen vllm-warm module misses)"
check_stats vllm-cold vllm-warm
tcfs stats --json --store "$S"
check_eq "vLLM's artifacts: probes of their own, a miss per rank cold, a hit warm" \
	"$RANKS/$RANKS" "$(json_eval "$OUT" "'%d/%d' % (d['vllm']['hits'], d['vllm']['misses'])")"
tcfs list --json --store "$S"
check_eq "list: every kernel of every rank, with its rank's root" \
	"$((RANKS * KERNELS)) $RANKS" \
	"$(json_eval "$OUT" '"%d %d" % (len(d), len(set(k["root"] for k in d)))')"
check_eq "list: the roots are the ranks' triton_cache dirs" \
	"$(json_eval "$T_TMP/vllm-cold.json" '" ".join(sorted(p["root"] for p in d["procs"]))')" \
	"$(json_eval "$OUT" '" ".join(sorted(set(k["root"] for k in d)))')"
check_eq "by-name/$N/: KEY for the first rank's copy, KEY@2 to KEY@$RANKS for the others" \
	"$K $(seq -f "$K@%g" 2 "$RANKS" | tr '\n' ' ' | sed 's/ $//')" \
	"$(ls "$M/by-name/$N" | grep "^$K" | sort -t@ -k2n | tr '\n' ' ' | sed 's/ $//')"
bad=0
for e in "$M/by-name/$N/$K" "$M/by-name/$N/$K"@*; do
	cmp -s "$SRC/$K/$N.cubin" "$e/$N.cubin" || bad=$((bad + 1))
done
check_eq "each of the $RANKS entries resolves to a whole copy" 0 "$bad"
tcfs info --json --store "$S"
LOGICAL=$(json_get "$OUT" logical_bytes)
STORED=$(json_get "$OUT" stored_bytes)
diag "vLLM: $RANKS ranks, logical $LOGICAL bytes, stored $STORED bytes"
check "info: the ranks' identical files are stored once (stored <= logical / $RANKS + 2%)" \
	test "$((STORED * RANKS * 100))" -le "$((LOGICAL * 102))"
fusermount3 -u "$M"
tcfs mount --store "$S" "$M"
check_rc "vllm: mounts again" 0
REPLAY_TOOL=vllm.py replay vllm-remount "$SRC" "$M" --ranks "$RANKS" --warm
check_eq "after a remount, every rank hits every kernel (and the other files are byte-exact)" \
	"$((RANKS * KERNELS)) 0" \
	"$(seen vllm-remount kernel hits) $(seen vllm-remount kernel misses)"
