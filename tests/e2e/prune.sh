#!/usr/bin/env bash
# tcfs prune (offline and while mounted) and the size limit: whole kernels
# go, or only their IR with group files that stay loadable; blobs nothing
# names are freed; the mount evicts the least recently used kernels past
# max-size, never one in use, counts what it evicted and the misses that
# cost; a kill -9 during eviction leaves no half kernel; a client of
# ctl.sock that stalls holds up no prune, unmount or remount; paths that
# mountinfo escapes do not hide the mount.
set -u
. "$(dirname "$0")/lib.sh"

SRC=$(fixture_top triton-3.6-multitarget.tgz big)
S=$T_TMP/store
NOW=$(date +%s)

kernels() { info_field "$1" kernels; }
# t ARGS...: the tcfs under test with its output, for $(...).
t() { "$TCFS" "$@"; }
# jpy EXPR: EXPR evaluated with d bound to the JSON document on stdin.
jpy() {
	python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}
fsck_clean() {
	t fsck --store "$1" >"$T_TMP/fsck.out" 2>&1
	check_grep "$2: tcfs fsck finds 0 problems" "0 problems" "$T_TMP/fsck.out"
}
# groups_load DIR: every group file under DIR names only files that exist.
groups_load() {
	python3 - "$1" <<'PY'
import json, os, sys
bad = 0
for key in os.listdir(sys.argv[1]):
    d = os.path.join(sys.argv[1], key)
    for f in os.listdir(d) if os.path.isdir(d) else []:
        if f.startswith("__grp__"):
            for p in json.load(open(os.path.join(d, f)))["child_paths"].values():
                bad += not os.path.exists(p)
print(bad)
PY
}

tcfs import -q --store "$S" "$SRC"
check_rc "import the multitarget fixture" 0
ALL=$(kernels "$S")

# --- offline --------------------------------------------------------------
tcfs prune --store "$S"; cp "$ERR" "$T_TMP/err"
check_rc "prune with no filter is a usage error" 2
check_grep "  and says which to give" "say which kernels" "$T_TMP/err"
tcfs prune --store "$S" --unused-since never
check_rc "a bad --unused-since is a usage error" 2

NADD=$(t list --store "$S" --name 'add*' --json | jpy 'len(d)')
tcfs prune --store "$S" --name 'add*' --dry-run --json; cp "$OUT" "$T_TMP/dry.json"
check_rc "prune --dry-run --name" 0
check_eq "  lists every add kernel" "$NADD" "$(jpy 'len(d["kernels"])' <"$T_TMP/dry.json")"
check_eq "  and removes nothing" "$ALL" "$(kernels "$S")"

# A key dir with two kernels is one victim, under its first kernel's name,
# wherever its kernels' rows lie.
TWO=$T_TMP/two
mkdir -p "$TWO"
K1=$(ls "$SRC" | head -1) K2=$(ls "$SRC" | sed -n 2p)
cp -a "$SRC/$K1" "$SRC/$K2" "$TWO/"
G1=$(cd "$TWO/$K1" && ls __grp__*.json | head -1)
tcfs import -q --store "$T_TMP/s2" "$TWO"
cp "$TWO/$K1/$G1" "$TWO/$K1/__grp__0first.json"
tcfs import -q --store "$T_TMP/s2" "$TWO"
tcfs prune --store "$T_TMP/s2" --name '*' --dry-run --json; cp "$OUT" "$T_TMP/two.json"
check_eq "a key dir with two kernels is one victim" 2 "$(jpy 'len(d["kernels"])' <"$T_TMP/two.json")"
check_eq "  named by its first kernel" "$K1 0first" \
	"$(jpy '" ".join([(k["key"], k["name"]) for k in d["kernels"] if k["key"] == "'"$K1"'"][0])' <"$T_TMP/two.json")"

OLDEST=$(t list --store "$S" --json | jpy 'min(k["created"] for k in d)')
tcfs prune --store "$S" --unused-since "@$OLDEST" --dry-run --json; cp "$OUT" "$T_TMP/u.json"
check_eq "--unused-since the oldest kernel's creation: none is older" 0 \
	"$(jpy 'len(d["kernels"])' <"$T_TMP/u.json")"

BEFORE=$(info_field "$S" stored_bytes)
tcfs prune --store "$S" --name 'add*' --json; cp "$OUT" "$T_TMP/add.json"
check_rc "prune --name 'add*'" 0
check_eq "  removes those kernels" "$((ALL - NADD))" "$(kernels "$S")"
check_eq "  none is left" 0 "$(t list --store "$S" --name 'add*' --json | jpy 'len(d)')"
check_num "  and frees their blobs" "$(jpy 'd["freed_bytes"]' <"$T_TMP/add.json")" -gt 0
check_num "  stored bytes went down" "$(info_field "$S" stored_bytes)" -lt "$BEFORE"
fsck_clean "$S" "after prune"
t gc --store "$S" --dry-run >"$T_TMP/gc.out"
check_grep "  gc finds nothing left to free" "remove 0 unreferenced" "$T_TMP/gc.out"

N80=$(t list --store "$S" --backend cuda --arch 80 --json | jpy 'len(d)')
tcfs prune --store "$S" --backend cuda --arch sm_80; cp "$OUT" "$T_TMP/out"
check_rc "prune --backend cuda --arch sm_80" 0
check_grep "  says how many went" "pruned $N80 kernels" "$T_TMP/out"
check_eq "  only cuda-80 went" "0 $((ALL - NADD - N80))" \
	"$(t list --store "$S" --arch 80 --json | jpy 'len(d)') $(kernels "$S")"

# --ir: IR out, group files rewritten, every kernel still loadable.
K=$(kernels "$S")
tcfs prune --store "$S" --ir --json; cp "$OUT" "$T_TMP/ir.json"
check_rc "prune --ir" 0
check_num "  dropped IR files" "$(jpy 'd["files"]' <"$T_TMP/ir.json")" -gt 0
check_eq "  kept every kernel" "$K" "$(kernels "$S")"
rm -rf "$T_TMP/ex"
tcfs export --store "$S" "$T_TMP/ex"
check_eq "  no IR file is left" 0 \
	"$(find "$T_TMP/ex" -name '*.ttir' -o -name '*.ttgir' -o -name '*.llir' -o -name '*.ptx' -o -name '*.amdgcn' | wc -l)"
check_eq "  every group file names only files that exist" 0 "$(groups_load "$T_TMP/ex")"
fsck_clean "$S" "after prune --ir"
tcfs prune --store "$S" --ir --json; cp "$OUT" "$T_TMP/ir2.json"
check_eq "  a second --ir has nothing to do" 0 "$(jpy 'len(d["kernels"])' <"$T_TMP/ir2.json")"

tcfs prune --store "$S" --unused-since "@$((NOW + 3600))" --name 'softmax*'
check_eq "--unused-since a future time takes every kernel never hit" 0 \
	"$(t list --store "$S" --name 'softmax*' --json | jpy 'len(d)')"

# --- config max-size -------------------------------------------------------
tcfs config --store "$S" max-size 20G
check_rc "config max-size 20G" 0
check_eq "  reads back as 20G" "20G" "$(t config --store "$S" max-size)"
tcfs config --store "$S" max-size 20Q; cp "$ERR" "$T_TMP/err"
check_rc "config max-size 20Q is refused" 2
check_grep "  with the sizes it takes" "a size" "$T_TMP/err"
tcfs config --store "$S" --unset max-size
check_rc "config --unset max-size" 0

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip "the mount's prune and eviction" "no /dev/fuse or fusermount3"
	exit 0
fi

# --- while mounted ---------------------------------------------------------
S2=$T_TMP/store2
M=$T_TMP/mnt
mkdir -p "$M"
tcfs import -q --store "$S2" "$SRC"
at_exit "fusermount3 -uz '$M'"
tcfs mount --store "$S2" "$M"
check_rc "mount a fresh store" 0
ALL=$(kernels "$S2")
MK=$(t list --store "$S2" --name 'matmul*' --json | jpy 'd[0]["key"]')
NMM=$(t list --store "$S2" --name 'matmul*' --json | jpy 'len(d)')
BIN=$(ls "$M/$MK" | grep -E '\.(cubin|hsaco)$' | head -1)
exec 7<"$M/$MK/$BIN"
check_eq "a matmul kernel is there" 1 "$(ls "$M/by-name/matmul_kernel" | grep -c "$MK")"
tcfs prune --store "$S2" --name 'matmul*' --json; cp "$OUT" "$T_TMP/m.json"
check_rc "prune --name 'matmul*' while mounted" 0
check_eq "  the daemon removed them" "$NMM" "$(jpy 'len(d["kernels"])' <"$T_TMP/m.json")"
check_eq "  they are gone from the mount at once" "0 0" \
	"$(ls "$M" | grep -c "^$MK\$") $(ls "$M/by-name" | grep -c '^matmul_kernel$')"
run test -e "$M/$MK/__grp__matmul_kernel.json"
check_rc "  a probe of one misses" 1
check_eq "  the store has the rest" "$((ALL - NMM))" "$(kernels "$S2")"
check_eq "  a file held open keeps its bytes" "$(cmp -s - "$SRC/$MK/$BIN" <&7 && echo same)" same
exec 7<&-
mkdir -p "$M/$MK" && cp "$SRC/$MK"/* "$M/$MK/" 2>/dev/null
check_eq "  and the key can be written again" 1 "$(ls "$M/by-name/matmul_kernel" | grep -c "$MK")"
tcfs prune --store "$S2" --ir --name 'softmax*'
check_rc "prune --ir while mounted" 0
check_eq "  the mount lists no IR of those" 0 \
	"$(for k in "$M"/by-name/softmax_kernel/*; do ls "$k/"; done | grep -cE '\.(ttir|ttgir|llir|ptx|amdgcn)$')"
check_eq "  their group files still load" 0 "$(groups_load "$M")"
tcfs umount "$M"
check_rc "unmount" 0
fsck_clean "$S2" "after prunes while mounted"

# --- ctl.sock: clients that stall -----------------------------------------
# A client that connects and sends nothing, one that sends half a
# request and stalls, one that sends without end: none may hold up a
# prune, the unmount or the next mount.
# stall NAME [BYTES]: a client of $S2's ctl.sock that sends BYTES (none
# if not given; "-": spaces without end) and holds on; returns once it
# is connected.
stall() {
	rm -f "$T_TMP/$1.up"
	python3 - "$S2/ctl.sock" "$T_TMP/$1.up" "${2:-}" <<'PY' &
import socket, sys, time
c = socket.socket(socket.AF_UNIX)
c.connect(sys.argv[1])
open(sys.argv[2], "w").close()
try:
    while sys.argv[3] == "-":
        c.sendall(b" " * 65536)
    c.sendall(sys.argv[3].encode())
except OSError:
    pass
time.sleep(3600)
PY
	at_exit "kill $!"
	for _ in $(seq 1 100); do
		[ -e "$T_TMP/$1.up" ] && break
		sleep 0.1
	done
}
# ctl_raw JSON: what the daemon of $S2 answers to the request JSON.
ctl_raw() {
	python3 - "$S2/ctl.sock" "$1" <<'PY'
import socket, sys
c = socket.socket(socket.AF_UNIX)
c.settimeout(60)
c.connect(sys.argv[1])
c.sendall(sys.argv[2].encode())
c.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = c.recv(65536)
    if not b:
        break
    out += b
print(out.decode())
PY
}
tcfs mount --store "$S2" "$M"
check_rc "mount again for the ctl.sock clients" 0
stall idle
stall half '{"op": "prune", "na'
stall flood -
K2=$(kernels "$S2")
NSM=$(t list --store "$S2" --name 'softmax*' --json | jpy 'len(d)')
run timeout 60 "$TCFS" prune --store "$S2" --name 'softmax*'
check_rc "prune while clients of ctl.sock send nothing, half, no end" 0
check_eq "  the daemon removed them" "$((K2 - NSM))" "$(kernels "$S2")"
ctl_raw '{"op": "prune"}' >"$T_TMP/raw.out"
check_grep "a raw prune with no filter is refused by the daemon" \
	'"error":.*say which kernels' "$T_TMP/raw.out"
ctl_raw '{"op": "prune", "name": 7}' >"$T_TMP/raw.out"
check_grep "  as is a filter that is not a string" '"error":.*name' \
	"$T_TMP/raw.out"
head -c 70000 /dev/zero | tr '\0' ' ' >"$T_TMP/big"
ctl_raw "$(cat "$T_TMP/big")" >"$T_TMP/raw.out"
check_grep "  and a request over 64 KiB" '"error":.*over' "$T_TMP/raw.out"
check_eq "  none of them pruned anything" "$((K2 - NSM))" "$(kernels "$S2")"
python3 - "$S2/ctl.sock" >"$T_TMP/late.out" <<'PY'
import socket, sys
c = socket.socket(socket.AF_UNIX)
c.settimeout(60)
c.connect(sys.argv[1])
c.sendall(b'{"op": "prune"')
print(c.recv(65536).decode())
PY
check_grep "a client that stalls mid-request is told so, and cut off" \
	'"error":.*no whole request' "$T_TMP/late.out"
# The daemon cut those off (5 s): two more, connected as it unmounts.
stall idle2
stall half2 '{"op": '
stall flood2 -
run timeout 60 "$TCFS" umount "$M"
check_rc "umount while clients send nothing, half, no end" 0
tcfs mount --store "$S2" "$M"
check_rc "  and the store mounts again" 0
tcfs umount "$M"
check_rc "  and unmounts" 0

# --- paths /proc/self/mountinfo escapes ----------------------------------
# It writes a space as \040, a backslash as \134, a tab and a newline as
# \011 and \012: the commands that look for the mount (prune, unpack,
# umount) find it all the same.
S5="$T_TMP/a store \\ of"$'\t'"kernels"
M5="$T_TMP/a mount \\ point"$'\n'"here"
mkdir -p "$M5"
tcfs import -q --store "$S5" "$SRC"
at_exit "fusermount3 -uz '$M5'"
tcfs mount --store "$S5" "$M5"
check_rc "mount a store and a mount point with a space, a backslash, a tab, a newline" 0
K5=$(kernels "$S5")
NSM=$(t list --store "$S5" --name 'softmax*' --json | jpy 'len(d)')
tcfs pack --store "$S5" "$T_TMP/img:all"
check_rc "  pack it while mounted" 0
tcfs prune --store "$S5" --name 'softmax*'
check_rc "  prune while mounted" 0
check_eq "  the daemon removed them" "$((K5 - NSM))" "$(kernels "$S5")"
tcfs unpack --store "$S5" --no-gpu-check --json "$T_TMP/img:all"
check_rc "  unpack while mounted" 0
check_eq "  through the mount" "$M5" "$(jpy 'd["mount"]' <"$OUT")"
check_eq "  the kernels are back" "$K5" "$(kernels "$S5")"
tcfs umount "$M5"
check_rc "  tcfs umount" 0
run mountpoint -q "$M5"
check_rc "  it is unmounted" 32

# --- the size limit --------------------------------------------------------
# A store of every fixture kernel, then a limit of a third of it: the mount
# evicts, least recently used first, only kernels not used for 10 s.
S3=$T_TMP/store3
tcfs import -q --store "$S3" "$SRC"
FULL=$(info_field "$S3" stored_bytes)
LIMIT=$((FULL / 3))
KEEP=$(ls "$SRC" | head -3)
tcfs mount --store "$S3" -o max_size=$LIMIT "$M"
check_rc "mount with -o max_size=$LIMIT (a third of the store)" 0
for k in $KEEP; do cat "$M/$k"/__grp__*.json >/dev/null 2>&1; done
for _ in $(seq 1 60); do
	[ "$(info_field "$S3" kernels)" -lt "$ALL" ] && break
	sleep 1
done
sleep 2
tcfs stats --store "$S3" --json; cp "$OUT" "$T_TMP/ev.json"
EV=$(jpy 'd["eviction"]["evictions"]' <"$T_TMP/ev.json")
check_num "the mount evicted kernels" "$EV" -gt 0
check_eq "  stats counts them" "$((ALL - $(kernels "$S3")))" "$EV"
check_eq "  the kernels just hit stayed" 3 \
	"$(for k in $KEEP; do ls "$M/$k"/__grp__*.json; done 2>/dev/null | wc -l)"
GONE=$(comm -23 <(cd "$SRC" && ls -d */__grp__*.json | cut -d/ -f1 | sort) \
	<(ls "$M" | sort) | head -1)
GN=$(ls "$SRC/$GONE" | sed -n 's/^__grp__\(.*\)\.json$/\1/p' | head -1)
mkdir -p "$M/$GONE"	# as Triton makes the key dir before its probe
run test -e "$M/$GONE/__grp__$GN.json"
check_rc "a probe of an evicted kernel misses" 1
tcfs stats --store "$S3" --json; cp "$OUT" "$T_TMP/ev2.json"
check_num "  and counts as evicted, then requested" \
	"$(jpy 'd["eviction"]["evicted_requested"]' <"$T_TMP/ev2.json")" -ge 1
t stats --store "$S3" >"$T_TMP/stats.out"
check_grep "stats shows the eviction line" "kernels evicted" "$T_TMP/stats.out"
check_grep ".tcfs/metrics.prom has the counters" "tcfs_evictions_total $EV" \
	"$M/.tcfs/metrics.prom"
tcfs umount "$M"
check_rc "unmount" 0
check_num "after unmount the store is under the limit" \
	"$(info_field "$S3" stored_bytes)" -le "$LIMIT"
fsck_clean "$S3" "after eviction"

# --- eviction under an 8-process replay -------------------------------------
# Every load byte-exact or a clean miss: the replay reads back what it
# probed and counts anything else as an error.
S4=$T_TMP/store4
C=$T_TMP/replay
tcfs import -q --store "$S4" "$SRC"
rm -rf "$C" && mkdir -p "$C"
tcfs mount --store "$S4" -o max_size=$((FULL / 4)) "$C"
check_rc "mount with a limit of a quarter of the store" 0
sleep 11	# past the grace of kernels just made
ok=0
for round in 1 2 3; do
	timeout 300 python3 "$REPLAY/replay.py" --procs 8 --shuffle "$SRC" "$C" \
		>"$T_TMP/r$round.json" 2>"$T_TMP/r$round.err" && ok=$((ok + 1))
done
check_eq "three 8-process replays while the mount evicts: 0 errors" 3 "$ok"
diag "$(head -5 "$T_TMP/r1.err" 2>/dev/null)"
tcfs stats --store "$S4" --json; cp "$OUT" "$T_TMP/r.json"
check_num "  the mount evicted meanwhile" \
	"$(jpy 'd["eviction"]["evictions"]' <"$T_TMP/r.json")" -gt 0

# --- kill -9 during eviction ------------------------------------------------
PID=$(daemon_pid "$S4")
tcfs config --store "$S4" max-size 1M
sleep 1.5
kill -9 "$PID"
fusermount3 -uz "$C"
fsck_clean "$S4" "after kill -9 during eviction"
tcfs mount --store "$S4" "$C"
check_rc "the store mounts again" 0
check_eq "  no kernel is half there: every group file loads" 0 "$(groups_load "$C")"
tcfs umount "$C"
