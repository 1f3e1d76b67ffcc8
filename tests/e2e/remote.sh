#!/usr/bin/env bash
# The fleet tier (issue 22) with real redis-servers and real mounts: a
# kernel compiled on node A is a hit on node B, byte for byte, fetched once
# however many processes race for it, and counted as a remote hit; Triton's
# own RemoteCacheManager format read and written both ways
# (triton_redis.py); and Redis killed, stopped, restarted empty, holding
# bad bytes, huge values or hostile names, answering garbage or asking for
# another password: local misses, never an error or a hang, while the mount
# keeps serving its local hits.  Then tcfs remote status, push and pull.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
require_cmds redis-server redis-cli
require_redis_py
TR="$(dirname "$0")/triton_redis.py"

SRC=$(fixture_top triton-3.6-h200-small.tgz cA)
KERNELS=26
MODULES=5
IR='\.(ttir|ttgir|llir|ptx|amdgcn)$'

# --- Redis ------------------------------------------------------------------

redis_kill() {
	kill -CONT "$RPID" 2>/dev/null
	kill -9 "$RPID" 2>/dev/null
	wait "$RPID" 2>/dev/null
}


# tr_redis ARGS...: triton_redis.py against the current Redis.
tr_redis() {
	"$PYR" "$TR" --port "$RPORT" "$@"
}

URL() {
	echo "redis://127.0.0.1:$RPORT"
}

# --- mounts and figures -----------------------------------------------------


# seen_of NAME: "kernel hits/misses module hits/misses" of a replay.
seen_of() {
	echo "$(seen "$1" kernel hits)/$(seen "$1" kernel misses)" \
		"$(seen "$1" module hits)/$(seen "$1" module misses)"
}

# compare_tree MNT MODE [KEY...]: MNT's key dirs (those of $SRC, or the
# KEYs) hold exactly what $SRC's do (MODE all) or that without the IR
# (binary), byte for byte, with group files naming those children under
# MNT.  Prints what differs.
compare_tree() {
	python3 - "$SRC" "$@" <<'EOF'
import json, os, re, sys
src, mnt, mode, keys = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
ir = re.compile(r"\.(ttir|ttgir|llir|ptx|amdgcn)$")
bad = []
for key in keys or sorted(os.listdir(src)):
    names = sorted(os.listdir(os.path.join(src, key)))
    grps = [n for n in names if n.startswith("__grp__")]
    if grps and mode == "binary":
        names = [n for n in names if not ir.search(n)]
    try:
        have = sorted(os.listdir(os.path.join(mnt, key)))
    except OSError as e:
        bad.append(f"{key}: {e}")
        continue
    if have != names:
        bad.append(f"{key}: has {sorted(set(have) - set(names))[:4]}, "
                   f"lacks {sorted(set(names) - set(have))[:4]}")
    for n in set(have) & set(names):
        got = open(os.path.join(mnt, key, n), "rb").read()
        if n in grps:
            kids = [c for c in names if c not in grps]
            want = {c: os.path.join(mnt, key, c) for c in kids}
            if json.loads(got)["child_paths"] != want:
                bad.append(f"{key}/{n}: children {sorted(json.loads(got)['child_paths'])}")
        elif got != open(os.path.join(src, key, n), "rb").read():
            bad.append(f"{key}/{n}: bytes differ")
print("\n".join(bad[:15]))
sys.exit(1 if bad else 0)
EOF
}

check_tree() {	# check_tree DESC MNT MODE [KEY...]
	local desc=$1 out
	shift
	if out=$(compare_tree "$@"); then
		ok "$desc"
	else
		not_ok "$desc"
		diag "$out"
	fi
}

# probe_ms MNT KEY NAME: makes MNT/KEY as Triton does and times a lookup of
# its group file __grp__NAME.json; prints "MS RESULT" (RESULT: hit or
# miss, or the error).
probe_ms() {
	mkdir -p "$1/$2"
	python3 - "$1/$2/__grp__$3.json" <<'EOF'
import os, sys, time
t = time.monotonic()
try:
    os.stat(sys.argv[1])
    r = "hit"
except FileNotFoundError:
    r = "miss"
except OSError as e:
    r = e.strerror.replace(" ", "_")
print("%d %s" % ((time.monotonic() - t) * 1000, r))
EOF
}

# The fixture's kernels: KEYS[i] and NAMES[i] (K1, N1 the first).
KEYS=() NAMES=()
for g in $(cd "$SRC" && ls -d */__grp__*.json | sort); do
	KEYS+=("${g%%/*}")
	g=${g#*/__grp__}
	NAMES+=("${g%.json}")
done
K1=${KEYS[0]} N1=${NAMES[0]}

# warm_local NAME: a warm replay on $M: every kernel and module a local hit,
# every byte right, and in sane time whatever the remote does.
warm_local() {
	replay "$1" "$SRC" "$M"
	check_eq "$1: every kernel and module is a hit" "$KERNELS/0 $MODULES/0" "$(seen_of "$1")"
	local t
	t=$(json_get "$T_TMP/$1.json" elapsed)
	check "$1: took ${t%.*} s: under 30 s (a sanity bound, not a benchmark)" \
		python3 -c "import sys; sys.exit(not $t < 30)"
}

redis_start

echo "# --- two nodes, one Redis: compiled on A, a hit on B"
mount_node A "remote=$(URL),remote_modules=on"
replay A-cold "$SRC" "$M_A"
check_eq "A cold: every kernel and module a miss" "0/$KERNELS 0/$MODULES" "$(seen_of A-cold)"
v=$(wait_fig "$S_A" published $((KERNELS + MODULES)))
check_eq "A published each kernel and module once" $((KERNELS + MODULES)) "$v"
check_eq "Redis holds a group for each kernel" "$KERNELS" \
	"$(rcli --scan --pattern 'triton:*:__grp__*' | wc -l)"
check_eq "... and a sidecar for each kernel and module" $((KERNELS + MODULES)) \
	"$(rcli --scan --pattern 'triton:*:__tcfs__*' | wc -l)"
check_eq "... and no IR (binary-only by default)" "" \
	"$(rcli --scan --pattern 'triton:*' | grep -E "$IR" | head -3)"

mount_node B "remote=$(URL),remote_modules=on"
replay B-first "$SRC" "$M_B"
check_eq "B's first run: every kernel and module a hit" "$KERNELS/0 $MODULES/0" "$(seen_of B-first)"
S=$S_B check_stats B-first
check_tree "B's key dirs: the kernels' binaries, byte for byte, and the modules" "$M_B" binary
check_eq "stats on B: remote.kernel_hits counts each kernel once" "$KERNELS" "$(settled "$S_B" kernel_hits)"
check_eq "stats on B: remote.module_hits counts each module once" "$MODULES" "$(fig "$S_B" module_hits)"
check_eq "stats on B: no remote miss, error nor refusal" "0 0 0" \
	"$(fig "$S_B" misses) $(fig "$S_B" errors) $(fig "$S_B" refused)"
check_num "stats on B: bytes_fetched counted" "$(fig "$S_B" bytes_fetched)" -gt 100000
check_eq "B published nothing again (what came from the remote stays there)" 0 "$(fig "$S_B" published)"
check_eq ".tcfs/stats.json on B has the same figure" "$KERNELS" \
	"$(json_get "$M_B/.tcfs/stats.json" remote.kernel_hits)"
check_grep ".tcfs/metrics.prom on B: tcfs_remote_kernel_hits_total" \
	"^tcfs_remote_kernel_hits_total(\{[^}]*\})? $KERNELS\$" "$M_B/.tcfs/metrics.prom"
tcfs stats --store "$S_B"
check_grep "tcfs stats on B: a remote line with the kernel hits" "^remote .*$KERNELS kernel hits" "$OUT"
tcfs list --json --store "$S_B"
check_eq "list on B: every kernel's origin is remote" "$KERNELS remote" \
	"$(json_eval "$OUT" '"%d %s" % (len(d), ",".join(sorted(set(str(k.get("origin")) for k in d))))')"
tcfs list --json --store "$S_A"
check_eq "list on A: every kernel's origin is here" "here" \
	"$(json_eval "$OUT" '",".join(sorted(set(str(k.get("origin")) for k in d)))')"
tcfs log --json --store "$S_B"
check_eq "log on B: every probe of the first run a hit the remote served" \
	"$((KERNELS + MODULES)) $((KERNELS + MODULES))" \
	"$(python3 -c 'import json, sys
e = [x for x in map(json.loads, open(sys.argv[1])) if x["pid"] == int(sys.argv[2])]
print(len(e), sum(x["hit"] and x["remote"] is True for x in e))' "$OUT" \
		"$(json_get "$T_TMP/B-first.json" procs.0.pid)")"
c0=$(rcli info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p')
replay B-warm "$SRC" "$M_B"
c1=$(rcli info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p')
check_eq "B warm: all hits" "$KERNELS/0 $MODULES/0" "$(seen_of B-warm)"
check_num "B warm: no command reached Redis (only our INFO)" $((c1 - c0)) -le 1
check_eq "B warm: nothing more fetched" "$KERNELS" "$(settled "$S_B" kernel_hits)"

echo "# --- eight processes racing on a fresh node C"
# Eight processes, each taking the kernels in its own order, through the
# default 4 connections: a probe that finds them all busy waits its turn.
mount_node C "remote=$(URL)"
replay C-race --procs 8 --shuffle "$SRC" "$M_C"
check_eq "C race: every kernel probe of every process a hit" "$((8 * KERNELS))/0" \
	"$(seen C-race kernel hits)/$(seen C-race kernel misses)"
S=$S_C check_stats C-race
check_eq "C race: each kernel fetched once" "$KERNELS" "$(settled "$S_C" kernel_hits)"
check_eq "C race: modules are not fetched by default (code)" 0 "$(fig "$S_C" module_hits)"
check_tree "C: binaries byte for byte" "$M_C" binary


echo "# --- interop: Triton's RemoteCacheManager reads what tcfs published"
bad=
for i in "${!KEYS[@]}"; do
	k=${KEYS[i]} n=${NAMES[i]}
	rm -rf "$T_TMP/get"
	if ! tr_redis get "$k" "$n" "$T_TMP/get" >"$T_TMP/get.out" 2>&1; then
		bad="$bad $k/$n:$(cat "$T_TMP/get.out")"
		continue
	fi
	want=$(cd "$SRC/$k" && ls | grep -v '^__grp__' | grep -Ev "$IR")
	[ "$(cd "$T_TMP/get" && ls | grep -v '^__grp__')" = "$want" ] ||
		bad="$bad $k/$n:children"
	for f in $want; do
		cmp -s "$T_TMP/get/$f" "$SRC/$k/$f" || bad="$bad $k/$f"
	done
	# shellcheck disable=SC2086
	python3 -c 'import json, sys
sys.exit(open(sys.argv[1], "rb").read() != json.dumps({"child_paths": sys.argv[2:]}).encode())' \
		"$T_TMP/get/__grp__$n.json" $want || bad="$bad $k/$n:group-bytes"
done
check_eq "get_group reads every kernel A published: its binaries byte for byte, the group json.dumps of their sorted names" "" "$bad"
bad=
for so in $(cd "$SRC" && ls -d */*.so); do
	{ tr_redis getfile "${so%%/*}" "${so#*/}" "$T_TMP/so" && cmp -s "$T_TMP/so" "$SRC/$so"; } ||
		bad="$bad $so"
done
check_eq "get_file reads every module A published byte for byte" "" "$bad"

echo "# --- bytes changed in Redis: refused, never served"
K2=${KEYS[1]} N2=${NAMES[1]} K3=${KEYS[2]} N3=${NAMES[2]} K4=${KEYS[3]} N4=${NAMES[3]}
tr_redis corrupt "$K2" "$N2.cubin" flip
tr_redis corrupt "$K3" "$N3.cubin" truncate
mount_node H "remote=$(URL),remote_publish=off"
read -r ms res < <(probe_ms "$M_H" "$K2" "$N2")
check_eq "a child flipped in Redis: the probe misses" miss "$res"
read -r ms res < <(probe_ms "$M_H" "$K3" "$N3")
check_eq "a child truncated in Redis: the probe misses" miss "$res"
read -r ms res < <(probe_ms "$M_H" "$K4" "$N4")
check_eq "an intact one beside them: a hit" hit "$res"
check_eq "both refused and counted; one kernel fetched" "2 1" \
	"$(settled "$S_H" refused) $(fig "$S_H" kernel_hits)"
check_eq "nothing of the refused ones is in the key dirs" "" "$(find "$M_H/$K2" "$M_H/$K3" -mindepth 1)"
read -r ms res < <(probe_ms "$M_H" "$K2" "$N2")
check_eq "asked again, still a miss" miss "$res"

echo "# --- hostile entries (trust any: no sidecar needed to be looked at)"
NK() {	# NK N: a key (52 letters of base32) no kernel has
	printf 'ZZZZ%048d' "$1" | tr 0-9 A-J
}
rcli set "triton:$(NK 1):__grp__up.json" '{"child_paths": ["../x"]}' >/dev/null
rcli set "triton:$(NK 1):../x" boom >/dev/null
rcli set "triton:$(NK 2):__grp__abs.json" "{\"child_paths\": [\"$T_TMP/abs\"]}" >/dev/null
rcli set "triton:$(NK 2):$T_TMP/abs" boom >/dev/null
rcli set "triton:$(NK 3):__grp__dict.json" '{"child_paths": {"../../y": "/y"}}' >/dev/null
rcli set "triton:$(NK 3):../../y" boom >/dev/null
rcli set "triton:$(NK 4):big.json" '{}' >/dev/null
rcli setrange "triton:$(NK 4):big.cubin" 536870911 x >/dev/null
rcli set "triton:$(NK 4):__grp__big.json" '{"child_paths": ["big.cubin", "big.json"]}' >/dev/null
net0=$(rcli info stats | sed -n 's/^total_net_output_bytes:\([0-9]*\).*/\1/p')
mount_node X "remote=$(URL),remote_trust=any,remote_publish=off"
res=
for n in 1:up 2:abs 3:dict 4:big; do
	read -r ms r < <(probe_ms "$M_X" "$(NK "${n%%:*}")" "${n#*:}")
	res="$res ${n#*:}:$r"
done
# A group whose child is not there: a miss, not part of a kernel.
rcli set "triton:$(NK 5):__grp__part.json" '{"child_paths": ["part.cubin", "part.json"]}' >/dev/null
rcli set "triton:$(NK 5):part.json" '{}' >/dev/null
m0=$(settled "$S_X" misses)
read -r ms r < <(probe_ms "$M_X" "$(NK 5)" part)
check_eq "a group one of whose children is gone: a miss" miss "$r"
check_eq "... counted as one" $((m0 + 1)) "$(settled "$S_X" misses)"
check_eq "... nothing of it landed" "" "$(find "$M_X/$(NK 5)" -mindepth 1)"
# A group whose child is another kernel's group file: landed, it would
# be that kernel's, with the paths its writer chose.
rcli set "triton:$(NK 6):__grp__g.json" '{"child_paths": ["g.cubin", "__grp__evil.json"]}' >/dev/null
rcli set "triton:$(NK 6):g.cubin" x >/dev/null
rcli set "triton:$(NK 6):__grp__evil.json" "{\"child_paths\": {\"evil.cubin\": \"$T_TMP/evil.cubin\"}}" >/dev/null
r0=$(settled "$S_X" refused)
read -r ms r < <(probe_ms "$M_X" "$(NK 6)" g)
check_eq "a group whose child is another group file: a miss" miss "$r"
check_eq "... refused, counted" $((r0 + 1)) "$(settled "$S_X" refused)"
check_eq "... nothing of it landed" "" "$(find "$M_X/$(NK 6)" -mindepth 1)"
net1=$(rcli info stats | sed -n 's/^total_net_output_bytes:\([0-9]*\).*/\1/p')
check_eq "groups naming ../x, an absolute path, ../../y (dict form), a 512 MiB child: all miss" \
	" up:miss abs:miss dict:miss big:miss" "$res"
check_eq "... each refused, counted" 5 "$(settled "$S_X" refused)"
check_eq "... nothing written outside the key dirs" "" \
	"$(ls -d "$T_TMP/x" "$T_TMP/y" "$T_TMP/abs" "$T_TMP/X-mnt/x" /y 2>/dev/null)"
check_eq "... nor in them" "" "$(find "$M_X/$(NK 1)" "$M_X/$(NK 4)" -mindepth 1)"
check_num "the 512 MiB value was refused by its size, not fetched: Redis sent $((net1 - net0)) bytes" \
	$((net1 - net0)) -lt 1048576
rcli del "triton:$(NK 4):big.cubin" >/dev/null

echo "# --- remote_publish=all"
rcli flushall >/dev/null
mount_node P "remote=$(URL),remote_publish=all"
replay P-cold "$SRC" "$M_P"
check_eq "publish=all: each kernel and module published" $((KERNELS + MODULES)) \
	"$(wait_fig "$S_P" published $((KERNELS + MODULES)))"
rm -rf "$T_TMP/get"
tr_redis get "$K1" "$N1" "$T_TMP/get" >"$T_TMP/get.out"
check_eq "publish=all: get_group has every file of the kernel" \
	"$(ls "$SRC/$K1")" "$(ls "$T_TMP/get" 2>&1)"
check_eq "... byte for byte" "" \
	"$(for f in $(ls "$SRC/$K1" | grep -v __grp__); do cmp -s "$SRC/$K1/$f" "$T_TMP/get/$f" || echo "$f"; done)"

echo "# --- interop: tcfs serves what Triton's RemoteCacheManager wrote"
rcli flushall >/dev/null
run tr_redis put "$SRC"
check_rc "triton_redis.py put publishes the fixture as stock Triton does" 0
check_eq "... no sidecar in it" 0 "$(rcli --scan --pattern 'triton:*:__tcfs__*' | wc -l)"
mount_node I "remote=$(URL),remote_trust=any,remote_publish=off"
replay I-first "$SRC" "$M_I"
check_eq "remote_trust=any: Triton's own kernels are hits (modules are not asked for)" \
	"$KERNELS/0 0/$MODULES" "$(seen_of I-first)"
check_tree "... every file, IR too, byte for byte" "$M_I" all
check_eq "... each kernel fetched once, nothing refused" "$KERNELS 0" \
	"$(settled "$S_I" kernel_hits) $(fig "$S_I" refused)"
mount_node J "remote=$(URL),remote_publish=off"
replay J-first "$SRC" "$M_J"
check_eq "default remote_trust=checked: Triton's own kernels (no sidecar) miss" \
	"0/$KERNELS" "$(seen J-first kernel hits)/$(seen J-first kernel misses)"
check_eq "... each refused, counted; none fetched" "$KERNELS 0" \
	"$(settled "$S_J" refused) $(fig "$S_J" kernel_hits)"

echo "# --- remote_publish=off: a read-only node"
rcli flushall >/dev/null
mount_node O "remote=$(URL),remote_publish=off"
replay O-cold "$SRC" "$M_O"
sleep 1
check_eq "publish=off: a cold replay wrote nothing to Redis" 0 "$(rcli dbsize)"
check_eq "... published nothing, dropped nothing" "0 0" \
	"$(fig "$S_O" published) $(fig "$S_O" queue_drops)"

echo "# --- remote_trust=signed: A signs with a key, B checks with it"
rcli flushall >/dev/null
printf 'fleet-key-one\n' >"$T_TMP/key1"
printf 'fleet-key-two\n' >"$T_TMP/key2"
chmod 0600 "$T_TMP/key1" "$T_TMP/key2"
mount_node SA "remote=$(URL),remote_key_file=$T_TMP/key1,remote_modules=on"
replay SA-cold "$SRC" "$M_SA"
check_eq "A with a key: each kernel and module published" $((KERNELS + MODULES)) \
	"$(wait_fig "$S_SA" published $((KERNELS + MODULES)))"
check_eq "... each sidecar carries an HMAC" $((KERNELS + MODULES)) \
	"$(rcli --scan --pattern 'triton:*:__tcfs__*' | while read -r k; do
		rcli get "$k" | grep -c '"hmac": "[0-9a-f]\{64\}"'; done | grep -c '^1$')"
mount_node SB "remote=$(URL),remote_key_file=$T_TMP/key1,remote_trust=signed,remote_modules=on,remote_publish=off"
replay SB-first "$SRC" "$M_SB"
check_eq "B, signed, the same key: every kernel and module a hit" \
	"$KERNELS/0 $MODULES/0" "$(seen_of SB-first)"
check_tree "... byte for byte" "$M_SB" binary
check_eq "... each fetched once, nothing refused" "$KERNELS $MODULES 0" \
	"$(settled "$S_SB" kernel_hits) $(fig "$S_SB" module_hits) $(fig "$S_SB" refused)"
# signed_refused NODE OPTS DESC: two kernels probed on a new node: misses,
# each refused and counted, nothing landed.
signed_refused() {
	local r1 r2 ms
	mount_node "$1" "remote=$(URL),remote_publish=off,$2"
	read -r ms r1 < <(probe_ms "$M" "$K1" "$N1")
	read -r ms r2 < <(probe_ms "$M" "${KEYS[1]}" "${NAMES[1]}")
	check_eq "$3: misses" "miss miss" "$r1 $r2"
	check_eq "... each refused, counted; none fetched" "2 0" \
		"$(settled "$S" refused) $(fig "$S" kernel_hits)"
	check_eq "... nothing landed" "" \
		"$(find "$M/$K1" "$M/${KEYS[1]}" -mindepth 1)"
}
signed_refused SC "remote_key_file=$T_TMP/key2,remote_trust=signed" \
	"signed, another key"
signed_refused SD "remote_key_file=$T_TMP/key2" \
	"checked with a key: a sidecar signed with another"
rcli flushall >/dev/null
tcfs remote push --store "$S_SA" -o "remote=$(URL)" --json
check_eq "the same kernels pushed with no key" "$KERNELS" "$(json_get "$OUT" published)"
check_eq "... their sidecars unsigned" 0 \
	"$(rcli --scan --pattern 'triton:*:__tcfs__*' | while read -r k; do rcli get "$k"; done | grep -c hmac)"
signed_refused SE "remote_key_file=$T_TMP/key1,remote_trust=signed" \
	"signed, the right key, unsigned sidecars"

echo "# --- options refused at mount"
mkdir -p "$T_TMP/bad-mnt"
at_exit "fusermount3 -uz '$T_TMP/bad-mnt'"
tcfs mount --store "$T_TMP/bad-store" -o remote_trust=any "$T_TMP/bad-mnt"
check_rc "a remote_* option without remote=: usage error (2)" 2
check_grep "... saying so" "remote" "$ERR"
tcfs mount --store "$T_TMP/bad-store" -o "remote=redis://u:hunter2@127.0.0.1:$RPORT" "$T_TMP/bad-mnt"
check_rc "a password in the URL: refused (2)" 2
check_eq "... and the message does not repeat it" "" "$(grep -l hunter2 "$ERR")"
tcfs mount --store "$T_TMP/bad-store" -o "remote=redis://127.0.0.1:$RPORT,remote_trust=maybe" "$T_TMP/bad-mnt"
check_rc "remote_trust=maybe: refused (2)" 2
tcfs mount --store "$T_TMP/bad-store" -o "remote=redis://127.0.0.1:$RPORT,remote_trust=signed" "$T_TMP/bad-mnt"
check_rc "remote_trust=signed without remote_key_file: refused (2)" 2
check_grep "... saying it needs one" "remote_key_file" "$ERR"
check "no mount was left behind" sh -c "! grep -q ' $T_TMP/bad-mnt ' /proc/self/mountinfo"

echo "# --- tcfs remote status, push, pull"
rcli flushall >/dev/null
tcfs remote status --store "$S_A" -o "remote=$(URL)" --json
check_rc "remote status: it answers (exit 0)" 0
cp "$OUT" "$T_TMP/status0.json"
check_eq "remote status --json: it answers; of the store's $KERNELS kernels, 0 are there" \
	"true $KERNELS 0" "$(json_eval "$T_TMP/status0.json" '"%s %s %s" % (str(d["answers"]).lower(), d["kernels"], d["held"])')"
tcfs remote push --store "$S_A" -o "remote=$(URL)" --json
check_rc "remote push from A's store (mounted)" 0
check_eq "... published every kernel" "$KERNELS" "$(json_get "$OUT" published)"
check_eq "... every kernel is in Redis" "$KERNELS" \
	"$(rcli --scan --pattern 'triton:*:__grp__*' | wc -l)"
tcfs remote status --store "$S_A" -o "remote=$(URL)" --json
check_eq "remote status --json: now all $KERNELS are there" "$KERNELS" \
	"$(json_get "$OUT" held)"
tcfs remote push --store "$S_A" -o "remote=$(URL)" --json
check_eq "push again: nothing to publish, all skipped" "0 $KERNELS" \
	"$(json_eval "$OUT" '"%d %d" % (d["published"], d["skipped"])')"
tcfs remote pull --store "$T_TMP/pulled" -o "remote=$(URL)" -q
check_rc "remote pull into a new store, not mounted" 0
tcfs list --json --store "$T_TMP/pulled"
check_eq "... it holds every kernel, from the remote" "$KERNELS remote" \
	"$(json_eval "$OUT" '"%d %s" % (len(d), ",".join(sorted(set(str(k.get("origin")) for k in d))))')"
mount_node U "remote=$(URL)" "$SRC"
POI=$(printf '%s\n' "${NAMES[@]}" | grep -c '^triton_poi')
tcfs remote pull --store "$S_U" -o "remote=$(URL)" --name 'triton_poi*' -q
check_rc "remote pull --name into a mounted store that has them all: nothing to do" 0
mount_node V "remote=$(URL)"
tcfs remote pull --store "$S_V" -o "remote=$(URL)" --name 'triton_poi*' -q
check_rc "remote pull --name into a mounted store (through its daemon)" 0
tcfs list --json --store "$S_V"
check_eq "... only the $POI kernels named so, from the remote" "$POI remote" \
	"$(json_eval "$OUT" '"%d %s" % (len(d), ",".join(sorted(set(str(k.get("origin")) for k in d))))')"
bad=
for i in "${!KEYS[@]}"; do
	[[ ${NAMES[i]} == triton_poi* ]] || continue
	test -e "$M_V/${KEYS[i]}/__grp__${NAMES[i]}.json" || bad="$bad ${KEYS[i]}"
done
check_eq "... and the mount shows them at once" "" "$bad"
check_tree "... byte for byte" "$M_V" binary $(for i in "${!KEYS[@]}"; do [[ ${NAMES[i]} == triton_poi* ]] && echo "${KEYS[i]}"; done)

echo "# --- Redis stopped (SIGSTOP): misses within the budget, the breaker opens"
mount_node E "remote=$(URL)" "$SRC"
kill -STOP "$RPID"
res= slow= times=
for n in 31 32 33 34 35; do
	read -r ms r < <(probe_ms "$M_E" "$(NK "$n")" x)
	res="$res $r"
	times="$times ${ms}ms"
	[ "$ms" -lt 2000 ] || slow="$slow ${ms}ms"
done
echo "# probes of new keys with Redis stopped took$times"
check_eq "probes of new keys with Redis stopped: misses" " miss miss miss miss miss" "$res"
check_eq "... each within 2 s (budget 500 ms; a sanity bound)" "" "$slow"
check_eq "... the breaker is open" open "$(settled "$S_E" breaker)"
check_num "... counted as opened" "$(fig "$S_E" breaker_opens)" -ge 1
check_num "... errors counted" "$(fig "$S_E" errors)" -ge 1
warm_local E-stopped

# Cold replays of a bigger cache with no remote and with the stopped one:
# the figure is printed, not asserted beyond a loose bound.
BIG=$(fixture_top triton-3.6-multitarget.tgz big)
mount_node N ""
replay N-cold "$BIG" "$M_N"
mount_node Q "remote=$(URL)"
replay Q-cold "$BIG" "$M_Q"
tn=$(json_get "$T_TMP/N-cold.json" elapsed)
tq=$(json_get "$T_TMP/Q-cold.json" elapsed)
ratio=$(python3 -c "print('%.2f' % ($tq / $tn))")
echo "# ratio cold replay (154 kernels) with a stopped Redis / with no remote: $ratio ($tq s / $tn s)"
echo "# ... the stopped one's figures: errors $(settled "$S_Q" errors), skipped $(fig "$S_Q" skipped), breaker_opens $(fig "$S_Q" breaker_opens), queue_drops $(fig "$S_Q" queue_drops)"
check "... under 3 (a sanity bound, not a benchmark)" \
	python3 -c "import sys; sys.exit(not $tq < 3 * $tn + 5)"
tcfs stats --json --store "$S_N"
check_eq "stats --json of a mount with no remote: remote is null" null "$(json_get "$OUT" remote)"
kill -CONT "$RPID"
rcli flushall >/dev/null
mount_node L "remote=$(URL)"
replay L-cold "$BIG" "$M_L"
tl=$(json_get "$T_TMP/L-cold.json" elapsed)
echo "# ratio cold replay (154 kernels) publishing to a live Redis / with no remote: $(python3 -c "print('%.2f' % ($tl / $tn))") ($tl s / $tn s)"
check_eq "... which published them all, in the background" $((154 + 5)) \
	"$(wait_fig "$S_L" published $((154 + 5)) 30)"

echo "# --- Redis killed mid-replay, then restarted empty"
rcli flushall >/dev/null
mount_node D "remote=$(URL),remote_breaker=3:1000"
timeout 120 python3 "$REPLAY/replay.py" --landed "$T_TMP/D.landed" "$BIG" "$M_D" \
	>"$T_TMP/D-cold.json" 2>"$T_TMP/D-cold.err" &
RP=$!
for _ in $(seq 1000); do
	[ -f "$T_TMP/D.landed" ] && [ "$(wc -l <"$T_TMP/D.landed")" -ge 100 ] && break
	sleep 0.01
done
redis_kill
alive=no
kill -0 "$RP" 2>/dev/null && alive=yes
wait "$RP"
rrc=$?
check_eq "Redis was killed while the replay ran" yes "$alive"
tcfs remote status --store "$S_A" -o "remote=$(URL)" --json
check_rc "remote status with Redis dead: exit 1" 1
check_eq "... it does not answer" false "$(json_get "$OUT" answers)"
check_eq "the replay completes, every byte read back (exit 0)" 0 "$rrc"
[ "$rrc" = 0 ] || diag "$(head -5 "$T_TMP/D-cold.err")"
replay D-warm "$BIG" "$M_D"
check_eq "with Redis dead: a warm replay, all hits" "154/0 5/0" "$(seen_of D-warm)"
RPORT_KEEP=1 redis_start
sleep 1.2	# the breaker's 1 s
replay D-restarted "$BIG" "$M_D"
check_eq "Redis restarted empty: a warm replay, all hits" "154/0 5/0" "$(seen_of D-restarted)"
m0=$(fig "$S_D" misses)
read -r ms r1 < <(probe_ms "$M_D" "$(NK 51)" x)
sleep 1.2
read -r ms r2 < <(probe_ms "$M_D" "$(NK 52)" x)
check_eq "new keys: misses" "miss miss" "$r1 $r2"
check_num "... asked of the restarted Redis: remote misses counted" "$(settled "$S_D" misses)" -gt "$m0"
kill -STOP "$RPID" 2>/dev/null
redis_kill

echo "# --- a listener that answers garbage"
GPORT=$(free_port)
python3 - "$GPORT" >/dev/null 2>&1 <<'EOF' &
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
def junk(c):
    try:
        while c.recv(4096):
            c.sendall(b"HTTP/1.1 400 Bad Request\r\n\x00\xff$-7\r\n*99999999999\r\n" * 50)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=junk, args=(c,), daemon=True).start()
EOF
GPID=$!
at_exit "kill $GPID"
for _ in $(seq 100); do
	python3 -c "import socket, sys; socket.create_connection(('127.0.0.1', $GPORT))" 2>/dev/null && break
	sleep 0.05
done
mount_node Z "remote=redis://127.0.0.1:$GPORT" "$SRC"
res= slow=
for n in 61 62; do
	read -r ms r < <(probe_ms "$M_Z" "$(NK "$n")" x)
	res="$res $r"
	[ "$ms" -lt 2000 ] || slow="$slow ${ms}ms"
done
check_eq "garbage for answers: probes of new keys miss" " miss miss" "$res"
check_eq "... within 2 s" "" "$slow"
check_num "... errors counted" "$(settled "$S_Z" errors)" -ge 1
warm_local Z-garbage
kill "$GPID"

echo "# --- a password"
redis_start --requirepass s3cret
printf 's3cret\n' >"$T_TMP/pw-good"
printf 'wrong\n' >"$T_TMP/pw-bad"
printf 's3cret\n' >"$T_TMP/pw-loose"
chmod 0600 "$T_TMP/pw-good" "$T_TMP/pw-bad"
chmod 0644 "$T_TMP/pw-loose"
"$PYR" "$TR" --port "$RPORT" --password-file "$T_TMP/pw-good" put "$SRC" --key "$K1" >/dev/null
mount_node W "remote=$(URL),remote_auth_file=$T_TMP/pw-bad,remote_trust=any,remote_publish=off"
read -r ms r < <(probe_ms "$M_W" "$K1" "$N1")
check_eq "a wrong password: the probe misses" miss "$r"
check_num "... an error counted" "$(settled "$S_W" errors)" -ge 1
mount_node W2 "remote=$(URL),remote_auth_file=$T_TMP/pw-good,remote_trust=any,remote_publish=off"
read -r ms r < <(probe_ms "$M_W2" "$K1" "$N1")
check_eq "the right one: a hit" hit "$r"
mkdir -p "$T_TMP/loose-mnt"
at_exit "fusermount3 -uz '$T_TMP/loose-mnt'"
tcfs mount --store "$T_TMP/loose-store" -o "remote=$(URL),remote_auth_file=$T_TMP/pw-loose" "$T_TMP/loose-mnt"
check_rc "an auth file others can read (0644): mount refused (2)" 2
check_grep_fixed "... naming the file" "$T_TMP/pw-loose" "$ERR"
check "no mount was left behind" sh -c "! grep -q ' $T_TMP/loose-mnt ' /proc/self/mountinfo"
