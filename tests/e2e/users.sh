#!/usr/bin/env bash
# One cache for many users (issue 23): a mount with -o allow_other, its
# root 1777, Triton's traffic replayed as other uids through setpriv.
# Untrusted users' kernels are their own: each hits its own and the shared
# kernels, never another's; the names at the root differ per user and are
# never cached; identical bytes are stored once.  An untrusted user cannot
# replace or plant a shared kernel, nor make one writable; tcfs trust
# promote shares a user's kernels; export and pack leave them out; probe
# counts stay exact per user with eight processes each.
set -u
. "$(dirname "$0")/lib.sh"

require_other_users

UA=2101 UB=2102 UC=2103
# Other users read the fixture and the replay (copies of our own, never
# the source tree's) and write the replays' output dirs.
chmod 755 "$T_TMP"
others_copy
SRC=$(fixture_top triton-3.6-h200-small.tgz cA)
chmod -R a+rX "$T_TMP/fixtures"
KERNELS=26
MODULES=5
S=$T_TMP/store
M=$T_TMP/mnt
mkdir -p "$M"


# replay_as UID NAME ARGS...: the replay as that user.
replay_as() {
	local uid=$1 name=$2
	shift 2
	as_uid "$uid" timeout 300 python3 "$OTHERS_REPLAY/replay.py" "$@" \
		>"$T_TMP/$name.json" 2>"$T_TMP/$name.err"
	if [ $? = 0 ]; then
		ok "$name: replay as uid $uid read back every byte, 0 errors"
	else
		not_ok "$name: replay as uid $uid read back every byte, 0 errors"
		diag "$(head -20 "$T_TMP/$name.err")"
	fi
}

# seen_of NAME: "kernel hits/misses module hits/misses".
seen_of() {
	echo "$(seen "$1" kernel hits)/$(seen "$1" kernel misses)" \
		"$(seen "$1" module hits)/$(seen "$1" module misses)"
}

tcfs mount --store "$S" -o allow_other "$M"
check_rc "mount with -o allow_other" 0
at_exit "fusermount3 -uz '$M' 2>/dev/null"
chmod 1777 "$M"

echo "# --- two untrusted users, each with kernels of their own"
replay_as "$UA" A-cold "$SRC" "$M"
check_eq "A cold: every kernel and module a miss" "0/$KERNELS 0/$MODULES" \
	"$(seen_of A-cold)"
replay_as "$UA" A-warm "$SRC" "$M"
check_eq "A warm: every kernel and module a hit" "$KERNELS/0 $MODULES/0" \
	"$(seen_of A-warm)"
replay_as "$UB" B-cold "$SRC" "$M"
check_eq "B cold: never A's: every kernel and module a miss" \
	"0/$KERNELS 0/$MODULES" "$(seen_of B-cold)"
replay_as "$UB" B-warm "$SRC" "$M"
check_eq "B warm: its own, every one a hit" "$KERNELS/0 $MODULES/0" \
	"$(seen_of B-warm)"
K=$(ls "$SRC" | grep -E '^[A-Z2-7]{52}$' | head -1)
check_eq "stat as A: A owns its key dir" "$UA" "$(as_uid "$UA" stat -c %u "$M/$K")"
check_eq "stat as B: B owns its key dir" "$UB" "$(as_uid "$UB" stat -c %u "$M/$K")"
check_eq "stat as A: A owns its files" "$UA" \
	"$(as_uid "$UA" stat -c %u "$M/$K/$(ls "$SRC/$K" | head -1)")"
check_eq "root sees neither's key dirs" "" "$(ls "$M" | grep -E '^[A-Z2-7]{52}$')"
check_eq "no listing shows users' own dirs" "" \
	"$(as_uid "$UA" ls -a "$M" | grep tcfs-private)"
run as_uid "$UB" ls "$M/.tcfs-private-$UA"
check "B cannot reach A's own dir (ENOENT)" grep -q "No such file" "$ERR"
run as_uid "$UB" cat "$M/.tcfs-private-$UA/$K/$(ls "$SRC/$K" | head -1)"
check "B cannot read A's files by path" [ "$RC" != 0 ]
tcfs info --json --store "$S"
files=$(json_get "$OUT" files)
blobs=$(json_get "$OUT" blobs)
check_num "identical bytes stored once: blobs ($blobs) no more than half the files ($files)" \
	"$((blobs * 2))" -le "$files"

echo "# --- root (trusted) compiles: shared; the users hit it"
replay_as 0 R-cold "$SRC" "$M"
check_eq "root cold: every kernel and module a miss (users' own are not root's)" \
	"0/$KERNELS 0/$MODULES" "$(seen_of R-cold)"
replay_as "$UC" C-first "$SRC" "$M"
check_eq "C, a third user, hits root's shared kernels" "$KERNELS/0 $MODULES/0" \
	"$(seen_of C-first)"
check_eq "root's key dir: not writable by others" "drwxr-xr-x" \
	"$(stat -c %A "$M/$K")"

echo "# --- an untrusted user tries"
G=$(ls "$SRC/$K" | grep '^__grp__' | head -1)
run as_uid "$UC" sh -c "echo evil > '$M/$K/$G'"
check "C cannot replace a shared group file" [ "$RC" != 0 ]
SO=$(cd "$SRC" && ls -d */*.so 2>/dev/null | head -1)
if [ -n "$SO" ]; then
	run as_uid "$UC" sh -c "echo evil > '$M/$SO'"
	check "C cannot replace a shared launcher .so" [ "$RC" != 0 ]
	run as_uid "$UC" mv "$M/$SO" "$M/$SO.x"
	check "C cannot rename one away" [ "$RC" != 0 ]
fi
run as_uid "$UC" chmod 4777 "$M/$K/$G"
check "C cannot chmod a shared file setuid" [ "$RC" != 0 ]
run chmod 0666 "$M/$K/$G"
check "root's chmod making a shared kernel's file writable by others: refused" \
	grep -q "Operation not permitted" "$ERR"
cmp -s "$SRC/$K/$(ls "$SRC/$K" | grep cubin | head -1)" \
	"$M/$K/$(ls "$SRC/$K" | grep cubin | head -1)"
check "root's kernel byte-exact after all that" [ $? = 0 ]
replay_as 0 R-warm "$SRC" "$M"
check_eq "root warm: every kernel and module a hit" "$KERNELS/0 $MODULES/0" \
	"$(seen_of R-warm)"

tcfs list --json --store "$S"
check_eq "list: users' kernels are theirs, root's shared, each with its writer" \
	"0:shared $UA:$UA $UB:$UB" \
	"$(json_eval "$OUT" '" ".join(sorted(set("%s:%s" % (k["writer"] if k["writer"] is not None else 0, k["visibility"]) for k in d)))')"
check_eq "B's .tcfs/stats.json shows B's processes only" "$UB" \
	"$(as_uid "$UB" cat "$M/.tcfs/stats.json" | python3 -c 'import json,sys; print(" ".join(sorted(set(str(p["uid"]) for p in json.load(sys.stdin)["per_process"]))))')"

echo "# --- promote"
tcfs trust promote --user "$UA" --store "$S"
check_rc "tcfs trust promote --user A" 0
check_grep "it says how many" "promoted" "$OUT"
replay_as "$UB" B-after "$SRC" "$M"
check_eq "B still hits (its own first)" "$KERNELS/0 $MODULES/0" "$(seen_of B-after)"
tcfs trust promote --store "$S"
check_rc "promote with neither KEY nor --user: a usage error" 2

echo "# --- what leaves the machine"
tcfs export --store "$S" "$T_TMP/export"
check_eq "export: no user's own dir in it" "" \
	"$(ls -a "$T_TMP/export" | grep tcfs-private)"

echo "# --- eight processes per user, three users: counts exact per user"
tcfs stats --reset --store "$S"
pids=
for u in "$UA" "$UB" "$UC"; do
	as_uid "$u" timeout 300 python3 "$OTHERS_REPLAY/replay.py" --procs 8 --shuffle \
		"$SRC" "$M" >"$T_TMP/P$u.json" 2>"$T_TMP/P$u.err" &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p"
	check "a user's 8 processes: every byte read back, 0 errors" [ $? = 0 ]
done
sleep 0.5
tcfs log --json --store "$S"
for u in "$UA" "$UB" "$UC"; do
	want=$(json_eval "$T_TMP/P$u.json" \
		"sum(p['seen']['kernel']['hits'] + p['seen']['module']['hits'] for p in d['procs'])")
	got=$(python3 -c "import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l).get('uid') == $u and json.loads(l)['hit']))" "$OUT" 2>/dev/null)
	check_eq "uid $u: the log's hits equal the replay's" "$want" "$got"
done

echo "# --- 70 other users each hold a remembered probe: root's counts stay exact"
# Each process's first lookup of a path is its probe, and later ones are
# folded into it while the path is remembered: 70 users each holding one
# must not leave root's lookups unremembered (each probe counted twice).
HOLD=$T_TMP/hold
mkdir -m 1777 "$HOLD"
holders=
for u in $(seq 3000 3069); do
	as_uid "$u" /usr/bin/python3 -c '
import os, sys, time
os.path.exists(os.path.join(sys.argv[1], "__grp__held.json"))
open(os.path.join(sys.argv[2], str(os.getuid())), "w").close()
time.sleep(300)' "$M/$K" "$HOLD" &
	holders="$holders $!"
done
at_exit "kill $holders 2>/dev/null"
for _ in $(seq 600); do
	[ "$(ls "$HOLD" | wc -l)" = 70 ] && break
	sleep 0.1
done
check_eq "70 users each probed once, and hold on" 70 "$(ls "$HOLD" | wc -l)"
tcfs stats --reset --store "$S"
replay_as 0 R-held "$SRC" "$M"
check_eq "root warm: every kernel and module a hit" "$KERNELS/0 $MODULES/0" \
	"$(seen_of R-held)"
sleep 0.5
tcfs log --json --store "$S"
check_eq "root's hits in the log: one per probe, $((KERNELS + MODULES))" \
	"$((KERNELS + MODULES))" \
	"$(python3 -c "import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l).get('uid') == 0 and json.loads(l)['hit']))" "$OUT")"
kill $holders 2>/dev/null
wait $holders 2>/dev/null

echo "# --- a mount without allow_other is as before"
mkdir -p "$T_TMP/mnt2"
run "$TCFS" mount --store "$T_TMP/s2" -o trust=root "$T_TMP/mnt2"
check_rc "-o trust without allow_other: a usage error" 2

echo "# --- a user's own kernels out, with --user"
tcfs export --store "$S" --user "$UB" "$T_TMP/export-b"
check_rc "export --user B" 0
check_eq "export --user B: B's own key dirs, at the top as B sees them" \
	"$(ls "$SRC" | grep -cE '^[A-Z2-7]{52}$')" \
	"$(ls "$T_TMP/export-b" | grep -cE '^[A-Z2-7]{52}$')"
check_eq "... and no user's own dir" "" "$(ls -a "$T_TMP/export-b" | grep tcfs-private)"
tcfs pack --store "$S" --user "$UB" --json "$T_TMP/img-b"
check_rc "pack --user B" 0
tcfs pack --store "$S" --json "$T_TMP/img-shared"
check_rc "pack (shared only)" 0
check "pack: the image has no user's own dir" sh -c \
	"! tar -tf \$(ls -S '$T_TMP/img-shared/blobs/sha256/'* | head -1) 2>/dev/null | grep -q tcfs-private"
