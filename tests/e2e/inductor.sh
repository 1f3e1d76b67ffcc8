#!/usr/bin/env bash
# Inductor's caches above Triton's (issue 24): the FX graph cache,
# AOTAutograd's, compiled modules and autotune results, laid out as torch
# 2.11 writes them (tests/replay/inductor.py, after the trace kept in
# tests/fixtures/inductor-2.11-trace.txt), logged as probes of their own
# kinds: cold every one a miss, warm every one a hit, counted exactly in
# tcfs stats (a line each), its JSON, .tcfs/metrics.prom and tcfs log.
# When the warm runs probe no Triton kernel (their kernels came with the
# FX graphs), stats says so instead of a hit rate of misses alone.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
S=$T_TMP/store
M=$T_TMP/mnt
N=5
mkdir -p "$M"
tcfs mount --store "$S" "$M"
check_rc "mount" 0
at_exit "fusermount3 -uz '$M' 2>/dev/null"
IND=$T_TMP/ind
mkdir -p "$IND"

ind() {	# ind NAME ARGS...: the replay, its JSON in $T_TMP/NAME.json
	local name=$1
	shift
	python3 "$REPLAY/inductor.py" --n "$N" "$@" >"$T_TMP/$name.json" 2>&1
	check "$name: no error" [ $? = 0 ]
}
seen_ind() {	# seen_ind NAME KIND: "hits/misses"
	json_eval "$T_TMP/$1.json" "'%d/%d' % (d['seen']['$2']['hits'], d['seen']['$2']['misses'])"
}

ind cold "$IND"
ind warm1 --warm "$IND"
ind warm2 --warm "$IND"
for k in fxgraph aotautograd pycode best_config; do
	check_eq "cold: every $k a miss" "0/$N" "$(seen_ind cold "$k")"
	check_eq "warm: every $k a hit" "$N/0" "$(seen_ind warm1 "$k")"
done
(cd "$M" && mkdir -p ind) 
ind mcold "$M/ind"
ind mwarm --warm "$M/ind"
sleep 0.3
tcfs stats --json --store "$S"
for k in fxgraph aotautograd pycode best_config; do
	check_eq "stats --json: $k counted exactly ($N hits, $N misses)" \
		"$N/$N" "$(json_eval "$OUT" "'%d/%d' % (d['inductor']['$k']['hits'], d['inductor']['$k']['misses'])")"
done
check_eq "stats --json: no Triton kernel probed" "0 0" \
	"$(json_eval "$OUT" "'%d %d' % (d['hits'], d['misses'])")"
tcfs stats --store "$S"
check_grep "stats: the FX graphs on a line of their own" \
	"^fx graphs  *$N hits, $N misses" "$OUT"
check_grep "stats: no hit rate of nothing: the kernels came with the FX graphs" \
	"^kernel probes *none: the kernels came with the FX graph hits" "$OUT"
cat "$M/.tcfs/metrics.prom" >"$T_TMP/metrics.prom"
check_grep "metrics.prom: the FX graph hits" \
	"^tcfs_probes_total{kind=\"fxgraph\",result=\"hit\"} $N$" "$T_TMP/metrics.prom"
tcfs log --json --store "$S"
check_eq "log: every probe with its kind" \
	"aotautograd:$((2 * N)) best_config:$((2 * N)) fxgraph:$((2 * N)) pycode:$((2 * N))" \
	"$(python3 -c 'import json,sys,collections; c=collections.Counter(json.loads(l)["kind"] for l in open(sys.argv[1])); print(" ".join("%s:%d" % kv for kv in sorted(c.items())))' "$OUT")"
check_eq "a second warm process: counted again" "$N/0" "$(ind mwarm2 --warm "$M/ind" >/dev/null; seen_ind mwarm2 fxgraph)"
