#!/usr/bin/env bash
# Inductor's entries through the fleet tier (issue 30), with a real
# redis-server and real mounts standing for nodes: FX graphs and
# AOTAutograd entries written as torch 2.11 writes them
# (tests/replay/inductor.py: a .PID.TID.tmp in the key dir, then a rename)
# are published in PyTorch's own format (checked byte for byte against
# what PyTorch's RedisRemoteCache writes: tests/e2e/pt2_redis.py), and a
# fresh node's lookups of fxgraph/XX/FKEY and aotautograd/AKEY find them,
# verified before a byte reaches the reader.  Flipped, poisoned, unsigned
# and stock PyTorch's entries under each remote_inductor level; none of it
# with the option off.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
require_cmds redis-server redis-cli
require_redis_py
P2="$(dirname "$0")/pt2_redis.py"
pt2() {
	"$PYR" "$P2" --port "$RPORT" "$@"
}
N=4
FX=fx-graph-v1
AOT=autograd-experimental
redis_start
URL="redis://127.0.0.1:$RPORT"
KEYF=$T_TMP/fleet.key
printf 'fleet-key\n' >"$KEYF"
chmod 0600 "$KEYF"
SIGNED="remote=$URL,remote_inductor=signed,remote_key_file=$KEYF"
ANY="remote=$URL,remote_inductor=any"

ind() {	# ind NAME ARGS...: the replay, its JSON in $T_TMP/NAME.json
	local name=$1
	shift
	python3 "$REPLAY/inductor.py" --n "$N" "$@" >"$T_TMP/$name.json" 2>&1
}
seen_ind() {	# seen_ind NAME KIND: "hits/misses"
	json_eval "$T_TMP/$1.json" "'%d/%d' % (d['seen']['$2']['hits'], d['seen']['$2']['misses'])"
}
# entries DIR SUB: "KEY/NAME" of every entry under DIR/SUB, sorted.
entries() {
	(cd "$1/$2" 2>/dev/null && find . -type f | sed 's|^\./||' | sort)
}
# pt2_keys [PATTERN]: how many of Redis's keys match PATTERN (pt2:*).
pt2_keys() {
	rcli --scan --pattern "${1:-pt2:*}" | wc -l
}
# calls: Redis commands served so far, but INFO's own.
calls() {
	rcli info commandstats | tr -d '\r' |
		awk -F'[=,:]' '/^cmdstat_/ && $1 != "cmdstat_info" { n += $3 } END { print n + 0 }'
}

# --- the option ---------------------------------------------------------------

mkdir -p "$T_TMP/nokey-mnt"
tcfs mount --store "$T_TMP/nokey" -o "remote=$URL,remote_inductor=signed" \
	"$T_TMP/nokey-mnt"
check "remote_inductor=signed without remote_key_file: refused" [ "$RC" != 0 ]
check_grep "and the message says why" "remote_inductor=signed: needs remote_key_file" "$ERR"
tcfs mount --store "$T_TMP/nokey" -o "remote=$URL,remote_inductor=maybe" \
	"$T_TMP/nokey-mnt"
check_grep "remote_inductor=maybe: refused, naming the values" "any, signed or off" "$ERR"

# --- node A publishes ---------------------------------------------------------

mount_node a "$SIGNED"
ind a_cold "$M_a"
check_eq "A, cold: every FX graph a miss" "0/$N" "$(seen_ind a_cold fxgraph)"
for _ in $(seq 100); do
	[ "$(pt2_keys)" -ge $((4 * N)) ] && break
	sleep 0.1
done
sleep 0.3
check_eq "A published every FX graph and AOTAutograd entry, each with its sidecar" \
	"$((2 * N)) $((2 * N))" "$(pt2_keys 'pt2:*:c1') $(pt2_keys 'pt2:*:c1:tcfs')"
check_eq "nothing else: compiled modules and autotune results stay local" \
	"$((4 * N))" "$(rcli dbsize)"
bad=
for e in $(entries "$M_a" fxgraph); do
	key=${e#*/}
	key=${key%%/*}
	pt2 check "$FX" "$key" "$M_a/fxgraph/$e" >>"$T_TMP/check.out" || bad="$bad $key"
done
for e in $(entries "$M_a" aotautograd); do
	pt2 check "$AOT" "${e%%/*}" "$M_a/aotautograd/$e" >>"$T_TMP/check.out" || bad="$bad ${e%%/*}"
done
check_eq "every value is byte for byte what PyTorch's RedisRemoteCache writes" "" "$bad"
FKEYS=$(entries "$M_a" fxgraph | sed 's|^../||; s|/.*||')
AKEYS=$(entries "$M_a" aotautograd | sed 's|/.*||')
F0=$(echo "$FKEYS" | sed -n 1p)
F1=$(echo "$FKEYS" | sed -n 2p)
E0=$(entries "$M_a" fxgraph | sed -n 1p)
pt2 get "$FX" "$F0" "$T_TMP/stock" >/dev/null
check "stock PyTorch reads what tcfs published: the same entry, by the same name" \
	cmp -s "$T_TMP/stock/${E0##*/}" "$M_a/fxgraph/$E0"

# --- a fresh node B -----------------------------------------------------------

mount_node b "$SIGNED"
check "B is fresh: no fxgraph dir" [ ! -e "$S_b/fxgraph" ]
ind b_first --warm --only fxgraph,aotautograd "$M_b"
check_eq "B, first run: every FX graph a hit" "$N/0" "$(seen_ind b_first fxgraph)"
check_eq "B, first run: every AOTAutograd entry a hit" "$N/0" "$(seen_ind b_first aotautograd)"
# (Before anything else looks: a lookup by another process is a probe.)
check_eq "B: the remote's FX graph hits counted" "$N" "$(wait_fig "$S_b" fxgraph_hits "$N")"
check_eq "B: and its AOTAutograd hits" "$N" "$(fig "$S_b" aotautograd_hits)"
check_eq "B: every entry came with a valid signature: none refused" "0" "$(fig "$S_b" refused)"
tcfs stats --store "$S_b"
check_grep "stats: fx graphs, and how many came from the remote" \
	"^fx graphs  *$N hits, 0 misses .Inductor; $N from the remote.$" "$OUT"
cat "$M_b/.tcfs/metrics.prom" >"$T_TMP/b.prom"
check_grep "metrics.prom: the remote's FX graph hits" \
	"^tcfs_remote_hits_total{kind=\"fxgraph\"} $N$" "$T_TMP/b.prom"
check_eq "B holds A's FX graph entries, by the same names" \
	"$(entries "$M_a" fxgraph)" "$(entries "$M_b" fxgraph)"
check_eq "and A's AOTAutograd entries" \
	"$(entries "$M_a" aotautograd)" "$(entries "$M_b" aotautograd)"
check "byte for byte" diff -r "$M_a/fxgraph" "$M_b/fxgraph"
before=$(calls)
ind b_warm --warm --only fxgraph,aotautograd "$M_b"
check_eq "B, warm: every FX graph a hit" "$N/0" "$(seen_ind b_warm fxgraph)"
check_eq "B, warm: no Redis command at all" "$before" "$(calls)"
sleep 0.5
check_eq "B published nothing of what it fetched" "$((4 * N))" "$(rcli dbsize)"

# --- trust --------------------------------------------------------------------

# F0's value flipped; F1's replaced with another pickle and an unsigned
# sidecar that matches it (anyone who can SET can write one); FS, a key
# only stock PyTorch wrote (no sidecar at all).
pt2 flip "$FX" "$F0"
head -c 3000 /dev/urandom >"$T_TMP/poison"
pt2 put "$FX" "$F1" "$T_TMP/poison"
pt2 sidecar "$FX" "$F1" "$T_TMP/poison"
FS=f$(python3 -c 'import base64, hashlib; print(base64.b32encode(hashlib.sha256(b"stock").digest()).decode().lower()[:51])')
head -c 2000 /dev/urandom >"$T_TMP/stock.entry"
pt2 put "$FX" "$FS" "$T_TMP/stock.entry" --time 1234
STOCK_NAME=$(python3 -c 'import base64, hashlib, sys; print(base64.b32encode(hashlib.sha256(open(sys.argv[1], "rb").read()).digest())[:51].decode().lower())' "$T_TMP/stock.entry")

# probe MNT KEY: "hit NAME..." or "miss", as Inductor's lookup sees it.
probe() {
	local d=$1/fxgraph/${2:1:2}/$2
	if [ -e "$d" ]; then
		echo "hit $(ls "$d")"
	else
		echo miss
	fi
}

mount_node c "$SIGNED"
check_eq "signed: a flipped entry is refused" "miss" "$(probe "$M_c" "$F0")"
check_eq "signed: a poisoned entry with an unsigned sidecar is refused" "miss" "$(probe "$M_c" "$F1")"
check_eq "signed: what stock PyTorch wrote (no sidecar) is refused" "miss" "$(probe "$M_c" "$FS")"
E2=$(entries "$M_a" fxgraph | sed -n 3p)
F2=${E2#*/}
F2=${F2%%/*}
check_eq "signed: the others still served" "hit ${E2##*/}" "$(probe "$M_c" "$F2")"
check_eq "signed: three refusals counted" "3" "$(wait_fig "$S_c" refused 3)"
check "signed: nothing of them landed" [ ! -e "$M_c/fxgraph/${F0:1:2}/$F0" ]

mount_node d "$ANY"
check_eq "any: a flipped entry is still refused (its sidecar does not match)" "miss" "$(probe "$M_d" "$F0")"
check_eq "any: an entry whose unsigned sidecar matches is taken, as PyTorch would" \
	"hit $(python3 -c 'import base64, hashlib, sys; print(base64.b32encode(hashlib.sha256(open(sys.argv[1], "rb").read()).digest())[:51].decode().lower())' "$T_TMP/poison")" \
	"$(probe "$M_d" "$F1")"
check_eq "any: what stock PyTorch wrote is served, named as PyTorch names it" \
	"hit $STOCK_NAME" "$(probe "$M_d" "$FS")"
check "any: byte for byte" cmp -s "$T_TMP/stock.entry" "$M_d/fxgraph/${FS:1:2}/$FS/$STOCK_NAME"

mount_node dk "$ANY,remote_key_file=$KEYF"
check_eq "any with a key: an unsigned sidecar is refused (its writer has no key)" \
	"miss" "$(probe "$M_dk" "$F1")"
check_eq "any with a key: what stock PyTorch wrote (no sidecar) is served" \
	"hit $STOCK_NAME" "$(probe "$M_dk" "$FS")"

# --- vLLM's rank dirs ---------------------------------------------------------

VH=5d1b0f3c7a
# vllm_write MNT RANK: a rank dir's files as vLLM writes them: the
# artifact renamed into place, its index written in place (no rename).
vllm_write() {
	local d=$1/vllm/torch_compile_cache/$VH/rank_0_$2
	mkdir -p "$d/backbone" &&
		head -c 5000 /dev/urandom >"$d/backbone/.a.tmp" &&
		mv "$d/backbone/.a.tmp" "$d/backbone/artifact_compile_range_1_8192_subgraph_0" &&
		echo "{(1, 0, 'inductor'): ('r$2', 'x')}" >"$d/backbone/vllm_compile_cache.py" &&
		printf 'graph of rank %s\n' "$2" >"$d/computation_graph.py"
}
vllm_write "$M_a" 0
vllm_write "$M_a" 1
AOTD=$M_a/vllm/torch_compile_cache/torch_aot_compile/$VH/rank_0_0
mkdir -p "$AOTD" && head -c 3000 /dev/urandom >"$AOTD/model"
for _ in $(seq 100); do
	[ "$(pt2_keys 'tcfs:vllm:*:tcfs')" -ge 3 ] && break
	sleep 0.1
done
sleep 1
check_eq "A published each rank dir whole, as one value with its sidecar" \
	"3 3" "$(pt2_keys 'tcfs:vllm:*/rank_0_?') $(pt2_keys 'tcfs:vllm:*:tcfs')"
check_eq "under documented keys" \
	"tcfs:vllm:torch_aot_compile/$VH/rank_0_0 tcfs:vllm:torch_compile_cache/$VH/rank_0_0 tcfs:vllm:torch_compile_cache/$VH/rank_0_1" \
	"$(rcli --scan --pattern 'tcfs:vllm:*/rank_0_?' | sort | tr '\n' ' ' | sed 's/ $//')"
# tree MNT: every file below the vLLM root, with its checksum.
tree() {
	(cd "$1/vllm" 2>/dev/null && find . -type f -exec md5sum {} + | sort -k2)
}
VB=$M_b/vllm/torch_compile_cache/$VH
check "B has no vLLM dir of its own" [ ! -e "$S_b/vllm" ]
mkdir -p "$M_b/vllm"
check "B: the rank dir of rank 0 is there, fetched whole" [ -d "$VB/rank_0_0/backbone" ]
check "B: and rank 1's" [ -e "$VB/rank_0_1/backbone/vllm_compile_cache.py" ]
check "B: and the AOT path's" [ -e "$M_b/vllm/torch_compile_cache/torch_aot_compile/$VH/rank_0_0/model" ]
check_eq "B holds A's vLLM files, byte for byte" "$(tree "$M_a")" "$(tree "$M_b")"
check_eq "B: the remote's vLLM hits counted" "3" "$(wait_fig "$S_b" vllm_hits 3)"
check "B: a rank the remote has not: a plain miss" [ ! -e "$VB/rank_0_7" ]
mkdir "$VB/rank_0_7"
check "and vLLM makes it as usual" [ -d "$VB/rank_0_7" ]

# A's rank 1 pack flipped by one byte in Redis: refused under signed.
"$PYR" - "$RPORT" "tcfs:vllm:torch_compile_cache/$VH/rank_0_1" <<'PY'
import sys, redis
r = redis.Redis(port=int(sys.argv[1]))
v = bytearray(r.get(sys.argv[2]))
v[-10] ^= 1
r.set(sys.argv[2], bytes(v))
PY
mount_node v "$SIGNED"
mkdir -p "$M_v/vllm"
check "a flipped pack is refused: rank 1 not landed" [ ! -e "$M_v/vllm/torch_compile_cache/$VH/rank_0_1" ]
check "the other ranks still land" [ -e "$M_v/vllm/torch_compile_cache/$VH/rank_0_0/computation_graph.py" ]
check_eq "one refusal counted" "1" "$(wait_fig "$S_v" refused 1)"

# --- off ----------------------------------------------------------------------

keys=$(rcli dbsize)
before=$(calls)
mount_node e "remote=$URL"
check_eq "off: a fresh node's lookup of an FX graph misses" "miss" "$(probe "$M_e" "$F2")"
check_eq "off: and asks Redis nothing" "$before" "$(calls)"
ind e_cold --seed e "$M_e"
sleep 1
check_eq "off: its own entries are not published" "$keys" "$(rcli dbsize)"

