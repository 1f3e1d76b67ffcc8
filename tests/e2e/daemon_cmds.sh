#!/usr/bin/env bash
# What a new user trips on with a mounted store (issue 31), each as the
# command the user typed: a second tcfs mount fails at once naming the
# mount point; a writer waiting for another says so at once; tcfs gc and
# tcfs remote status and pull go through the mount's daemon, with the
# mount's own remote; tcfs mount -f prints each error once; a busy
# tcfs umount names the processes that hold the mount; the remote line of
# tcfs stats says what its "not asked" counts.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	TAP_PLAN_DONE=1
	exit 0
fi
SMALL=$(fixture_top triton-3.6-h200-small.tgz cA)

# wait_for_line FILE PATTERN: waits until FILE has a line matching the
# extended regex (20 s at most: the line is due at once, the bound only
# ends a failed check).  0 when it came.
wait_for_line() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# orphan STORE TEXT [TOUCH]: a blob of TEXT that no file names, its mtime
# TOUCH (touch -d) when given; prints its path.
orphan() {
	local f=$T_TMP/orphan.src p
	printf '%s\n' "$2" >"$f"
	p=$(blob_path "$1" "$f") || return 1
	mkdir -p "${p%/*}" && cp "$f" "$p" && chmod 444 "$p" || return 1
	[ -z "${3:-}" ] || touch -m -d "$3" "$p"
	echo "$p"
}
echo "# --- a second mount of a mounted store"
S=$T_TMP/s
M=$T_TMP/m
mkdir -p "$M" "$T_TMP/m2"
at_exit "fusermount3 -uz '$M'"
at_exit "fusermount3 -uz '$T_TMP/m2'"
tcfs import -q --store "$S" "$SMALL"
check_rc "import a cache" 0
# The mount frees orphans it finds as it starts, as this one: once it
# is gone, no look of the mount's own comes for an hour.
CANARY=$(orphan "$S" "an orphan the mount frees as it starts" "-1 hour")
tcfs mount --store "$S" "$M"
check_rc "tcfs mount --store S M" 0
# The default --wait is 10 s: a refusal after it is the defect.
t0=$(date +%s)
tcfs mount --store "$S" "$T_TMP/m2"
t1=$(date +%s)
check_rc "tcfs mount --store S M2, S mounted at M: fails (1)" 1
check_eq "... naming where it is mounted" \
	"tcfs mount: store $S is already mounted at $M" "$(cat "$ERR")"
check_num "... at once, not after --wait's 10 s ($((t1 - t0)) s)" $((t1 - t0)) -lt 8
check "... and mounts nothing at M2" sh -c "! grep -q ' $T_TMP/m2 ' /proc/self/mountinfo"

# In the foreground syslog copies its lines to stderr as well.
tcfs mount -f --store "$S" "$T_TMP/m2"
check_rc "tcfs mount -f --store S M2: fails (1)" 1
check_eq "... its error printed once" \
	"tcfs mount: store $S is already mounted at $M" "$(cat "$ERR")"
tcfs mount -f --store "$T_TMP/s-new" -o max_size=lots "$T_TMP/m2"
check_eq "tcfs mount -f -o max_size=lots: its error printed once" 1 \
	"$(grep -c "max_size=lots" "$ERR")"

tcfs import -q --store "$S" "$SMALL"
check_rc "tcfs import into S while mounted: fails (1)" 1
check_grep "... at once, naming the mount point" \
	"^tcfs import: store $S is mounted at $M, and its daemon is the store's writer" "$ERR"

echo "# --- tcfs gc on a mounted store"
for _ in $(seq 200); do
	[ -e "$CANARY" ] || break
	sleep 0.1
done
check "the mount's own look for orphans is done" test ! -e "$CANARY"
OLD=$(orphan "$S" "an orphan of an hour ago" "-1 hour")
NEW=$(orphan "$S" "an orphan put just now")
BLOBS=$(blob_count "$S")
tcfs gc --store "$S" --dry-run --json
check_rc "tcfs gc --dry-run, the store mounted: exit 0" 0
check_eq "... the mount's daemon counts the old orphan, and keeps the new one for now" \
	"true 1 $(stat -c %s "$OLD") 1" \
	"$(json_eval "$OUT" '"%s %d %d %d" % (str(d["dry_run"]).lower(), d["removed"], d["freed_bytes"], d["recent"])')"
check_eq "... removing nothing" "$BLOBS" "$(blob_count "$S")"
t0=$(date +%s)
tcfs gc --store "$S"
t1=$(date +%s)
check_rc "tcfs gc --store S, S mounted: exit 0" 0
check_grep "... removed the old orphan" "^removed 1 unreferenced blob, freed " "$OUT"
check_grep "... and says why it kept the new one" \
	"; 1 unreferenced \(.*\) kept, written less than a minute ago" "$OUT"
check_num "... at once, not after --wait's 10 s ($((t1 - t0)) s)" $((t1 - t0)) -lt 8
check "... the old one is gone" test ! -e "$OLD"
check "... the new one is there" test -e "$NEW"
check_eq "... and nothing else went" "$((BLOBS - 1))" "$(blob_count "$S")"
check_eq "... the mount serves every kernel still" "" \
	"$(cd "$SMALL" && find . -type f ! -name '__grp__*' -exec cmp -s {} "$M/{}" \; -o -type f ! -name '__grp__*' -print)"
touch -m -d "-1 hour" "$NEW"
tcfs gc --store "$S" --verbose
check_grep "tcfs gc --verbose through the mount names the orphan" \
	"^orphan objects/${NEW#"$S/objects/"} \(" "$OUT"

echo "# --- tcfs remote status and pull of a store mounted with -o remote=URL"
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
	redis_start
	URL=redis://127.0.0.1:$RPORT
	# README's tour: the mount names the remote, the store does not.
	mount_node A "remote=$URL" "$SMALL"
	KERNELS=$(info_field "$S_A" kernels)
	TCFS_STORE=$S_A tcfs remote status
	check_rc "tcfs remote status, the store mounted with -o remote=URL: exit 0" 0
	check_eq "... of the mount's own remote, which answers and holds none yet" \
		"remote   $URL/0 (the mount's, at $M_A)
answers  yes
holds    0 of the store's $KERNELS kernels" \
		"$(sed 's/^\(answers  yes\),.*/\1/' "$OUT")"
	tcfs remote push --store "$S_A" -o "remote=$URL" -q
	check_rc "tcfs remote push -o remote=URL" 0
	TCFS_STORE=$S_A tcfs remote status --json
	check_eq "tcfs remote status --json: it holds them all now" \
		"true $KERNELS $KERNELS" \
		"$(json_eval "$OUT" '"%s %d %d" % (str(d["answers"]).lower(), d["kernels"], d["held"])')"
	mount_node B "remote=$URL"
	TCFS_STORE=$S_B tcfs remote pull
	check_rc "tcfs remote pull, the store mounted with -o remote=URL: exit 0" 0
	check_eq "... pulled every kernel through the mount" \
		"pulled $KERNELS kernels (0 here already, 0 gone from the remote or refused), 0 failed" \
		"$(cat "$OUT")"
	tcfs list --json --store "$S_B"
	check_eq "... each from the remote" "$KERNELS remote" \
		"$(json_eval "$OUT" '"%d %s" % (len(d), ",".join(sorted(set(str(k.get("origin")) for k in d))))')"
	K=$(ls "$SMALL" | sed -n 1p)
	F=$(ls "$SMALL/$K" | grep -v '^__grp__' | sed -n 1p)
	check "... and the mount shows them, byte for byte" cmp -s "$SMALL/$K/$F" "$M_B/$K/$F"
	mount_node C ""
	TCFS_STORE=$S_C tcfs remote status
	check_rc "tcfs remote status, mounted with no remote anywhere: a usage error (2)" 2
	check_grep "... saying how to name one" "no remote: give -o remote=URL" "$ERR"
else
	skip "tcfs remote status and pull through the mount" "no redis-server"
fi

echo "# --- tcfs stats after a Redis outage: what 'not asked' counts"
# Nothing listens at the remote's port: the first probe's call fails, the
# breaker opens (for 10 minutes, past the test), and every later call is
# not made: the probes' and the publishes' of the kernels compiled.
mount_node D "remote=redis://127.0.0.1:$(free_port),remote_breaker=1:600000"
replay D-outage "$SMALL" "$M_D"
PROBED=$(seen D-outage kernel misses)
PUBLISHES=$(find "$SMALL" -type f \( -name '__grp__*.json' -o -name '*.so' -o -name '*.autotune.json' \) | wc -l)
ERRORS=$(settled "$S_D" errors)
SKIPPED=$(fig "$S_D" skipped)
echo "# $PROBED probes missed; remote errors $ERRORS, misses $(fig "$S_D" misses), not asked $SKIPPED, publishes dropped $(fig "$S_D" queue_drops)"
check_eq "each of the $PROBED probes that missed is one asked (a miss, an error) or one not asked" \
	"$PROBED" "$((ERRORS + SKIPPED + $(fig "$S_D" misses)))"
check_eq "... and the publishes not sent are counted apart, as dropped" \
	"0 $PUBLISHES" "$(fig "$S_D" published) $(fig "$S_D" queue_drops)"
tcfs stats --store "$S_D"
check_grep "tcfs stats: its remote line says what it did not ask" \
	", $SKIPPED misses not asked \(breaker open, or every connection busy\); breaker open" "$OUT"
check_grep "... and what it did not publish" \
	"^ +0 published, $PUBLISHES not \(the publish queue full, or the remote not asked\)$" "$OUT"

echo "# --- a busy tcfs umount names the processes in the way"
K=$(ls "$SMALL" | sed -n 1p)
F=$(ls "$SMALL/$K" | grep -v '^__grp__' | sed -n 1p)
(cd "$M" && exec sleep 60) &
CWD_PID=$!
python3 -c 'import sys, time; f = open(sys.argv[1], "rb"); print("open", flush=True); time.sleep(60)' \
	"$M/$K/$F" >"$T_TMP/py.out" 2>&1 &
OPEN_PID=$!
at_exit "kill $CWD_PID $OPEN_PID"
wait_for_line "$T_TMP/py.out" "^open$"
tcfs umount "$M"
check_rc "tcfs umount M, M busy: fails (1)" 1
check_eq "... naming each process that holds it, not fusermount3's message" \
	"tcfs umount: $M: busy: these processes have their working directory, root, or files open or mapped in it:
    PID COMMAND
$(printf '%7d %s\n%7d %s' $(printf '%s\n' "$CWD_PID sleep" "$OPEN_PID python3" | sort -n))" \
	"$(cat "$ERR")"
check "... and leaves it mounted" mountpoint -q "$M"
kill $CWD_PID $OPEN_PID 2>/dev/null
wait $CWD_PID $OPEN_PID 2>/dev/null
tcfs umount "$M"
check_rc "tcfs umount M once they are gone: exit 0" 0

echo "# --- a wait for another writer is said as it starts"
S2=$T_TMP/s2
tcfs import -q --store "$S2" "$SMALL"
# hold_lock: another process (HOLDER) takes S2's writer lock, held
# once this returns.  A daemon just unmounted may hold it a moment
# longer: the lock is taken only once it is free, so that it is HOLDER's.
hold_lock() {
	for _ in $(seq 100); do
		flock -n "$S2/lock" true && break
		sleep 0.1
	done
	flock "$S2/lock" sleep 60 </dev/null >/dev/null 2>&1 &
	HOLDER=$!
	at_exit "kill \$(pgrep -P $HOLDER) $HOLDER"
	for _ in $(seq 100); do
		flock -n "$S2/lock" true || break
		sleep 0.1
	done
}
hold_lock
for cmd in "mount" "fsck --repair"; do
	read -r -a argv <<<"$cmd"
	[ "$cmd" = mount ] && argv+=("$T_TMP/m2")
	"$TCFS" "${argv[0]}" --store "$S2" --wait 60 "${argv[@]:1}" \
		</dev/null >"$T_TMP/w.out" 2>"$T_TMP/w.err" &
	W=$!
	if wait_for_line "$T_TMP/w.err" \
		"^tcfs ${argv[0]}: $S2: waiting up to 60 s for another writer, pid [0-9]+ \\((flock|sleep)\\)$"; then
		ok "tcfs $cmd --store S --wait 60, another process holding S: says at once what it waits for"
	else
		not_ok "tcfs $cmd --store S --wait 60, another process holding S: says at once what it waits for"
		diag "$(cat "$T_TMP/w.err")"
	fi
	kill $(pgrep -P $HOLDER) $HOLDER 2>/dev/null
	wait $HOLDER 2>/dev/null
	wait $W
	check_eq "... and goes on once the holder is gone (exit 0)" 0 $?
	[ "$cmd" = mount ] && fusermount3 -u "$T_TMP/m2"
	hold_lock
done
kill $(pgrep -P $HOLDER) $HOLDER 2>/dev/null
wait $HOLDER 2>/dev/null
