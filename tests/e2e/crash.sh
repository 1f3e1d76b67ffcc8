#!/bin/bash
# kill -9 of the mount daemon in the middle of a storm of compiles, three
# times, each on a fresh store: the dead mount answers ENOTCONN and comes
# off, the store mounts again, every kernel that has a group file is whole,
# no file is half-written, no temp entry is left, fsck finds the store
# consistent, and a warm replay fills in the rest without an error.  Then
# a simulated power cut, SIGTERM in a storm (a clean stop) and with an
# invalidation under way, a put cut off by a clean stop, and an index
# that stops taking commits (the mount stops by itself, left dead).
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	echo "1..0 # SKIP no /dev/fuse"
	exit 0
fi
. "$(dirname "$0")/lib.sh"

REPLAY=${REPLAY:-$(cd "$(dirname "$0")/../replay" && pwd)}
SRC=$(fixture_top triton-3.6-multitarget.tgz big) || {
	echo "Bail out! cannot extract triton-3.6-multitarget.tgz"
	exit 1
}
NKEYS=$(find "$SRC" -mindepth 1 -maxdepth 1 -type d | wc -l)
NKERNELS=$(find "$SRC" -mindepth 2 -maxdepth 2 -name '__grp__*.json' | wc -l)
NFILES=$(find "$SRC" -type f | wc -l)

# The delays before each kill are random; CRASH_SEED replays a run.
SEED=${CRASH_SEED:-$(( $(od -An -N2 -tu2 /dev/urandom) % 32768 ))}
RANDOM=$SEED
diag "fixture: $NKEYS key dirs, $NKERNELS kernels, $NFILES files; CRASH_SEED=$SEED"

# gone PID [SECS]: PID exits (or is a zombie) within SECS (default 5).
gone() {
	local i
	for ((i = 0; i < ${2:-5} * 50; i++)); do
		[ -r "/proc/$1/stat" ] || return 0
		[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ] && return 0
		sleep 0.02
	done
	return 1
}

# dead_mount MNT: exit 0 when MNT answers ENOTCONN, else the errno (1 when
# there was none).  It stats a name never looked up: what the kernel has
# cached, it serves even from a dead mount.
dead_mount() {
	python3 -c 'import errno, os, sys
try:
    os.stat(sys.argv[1] + "/never-looked-up")
except OSError as e:
    sys.exit(0 if e.errno == errno.ENOTCONN else e.errno)
sys.exit(1)' "$1"
}

# check_tree MNT [--complete]: compares the mount with the fixture (SRC).
# Prints "KEYS KERNELS_WHOLE FILES" on the first line, then one line per
# problem: a key dir or file the fixture lacks, a temp entry, a file whose
# bytes differ, a group file with a child that is missing or differs.
# With --complete, every fixture file must be there too.  Exit 1 on a
# problem.
check_tree() {
	python3 - "$SRC" "$@" <<'EOF'
import json, os, sys
src, mnt = sys.argv[1], sys.argv[2]
complete = "--complete" in sys.argv[3:]
problems, keys, whole, files = [], 0, 0, 0
def read(p):
    with open(p, "rb") as f:
        return f.read()
for key in sorted(os.listdir(mnt)):
    kd, sd = os.path.join(mnt, key), os.path.join(src, key)
    if key.startswith("tmp."):
        problems.append("temp entry at the top: %s" % key)
        continue
    if not os.path.isdir(sd):
        problems.append("key dir not in the fixture: %s" % key)
        continue
    keys += 1
    names = sorted(os.listdir(kd))
    for n in names:
        p = os.path.join(kd, n)
        if n.startswith("tmp.pid_") or ".tmp.pid_" in n:
            problems.append("temp entry left: %s/%s" % (key, n))
        elif not os.path.exists(os.path.join(sd, n)):
            problems.append("file not in the fixture: %s/%s" % (key, n))
        elif n.startswith("__grp__"):
            files += 1
            try:
                got = json.loads(read(p))["child_paths"]
                want = json.loads(read(os.path.join(sd, n)))["child_paths"]
            except Exception as e:
                problems.append("%s/%s: group file does not parse: %s" % (key, n, e))
                continue
            if list(got) != list(want):
                problems.append("%s/%s: lists %s, the fixture %s" % (key, n, list(got), list(want)))
                continue
            bad = []
            for c, cp in got.items():
                if cp != os.path.join(kd, c):
                    bad.append("%s points to %s" % (c, cp))
                elif not os.path.exists(cp):
                    bad.append("%s missing" % c)
                elif read(cp) != read(os.path.join(sd, c)):
                    bad.append("%s differs" % c)
            if bad:
                problems.append("%s/%s: a kernel with its group file is not whole: %s" % (key, n, bad))
            else:
                whole += 1
        else:
            files += 1
            if read(p) != read(os.path.join(sd, n)):
                problems.append("%s/%s: %d bytes differ from the fixture's %d" % (
                    key, n, os.path.getsize(p), os.path.getsize(os.path.join(sd, n))))
    if complete:
        for n in sorted(set(os.listdir(sd)) - set(names)):
            problems.append("missing: %s/%s" % (key, n))
if complete:
    for key in sorted(set(os.listdir(src)) - set(os.listdir(mnt))):
        problems.append("missing key dir: %s" % key)
print(keys, whole, files)
for p in problems[:20]:
    print(p)
if len(problems) > 20:
    print("... and %d more" % (len(problems) - 20))
sys.exit(1 if problems else 0)
EOF
}

# The mounts here are compared with the fixture's plain tree: no views
# (-o noviews).
for round in 1 2 3; do
	S=$T_TMP/r$round/store
	M=$T_TMP/r$round/mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount -o noviews --store "$S" "$M"
	check_rc "round $round: tcfs mount of a fresh store" 0
	[ "$RC" = 0 ] || continue
	pid=$(daemon_pid "$S")
	check "round $round: the daemon holds the store's lock" test -n "$pid"

	# The storm: one replay, four processes, each its own order.  In its
	# own session so that whatever is left of it can be killed at the end.
	setsid -w timeout -k 5 60 python3 "$REPLAY/replay.py" --procs 4 --shuffle \
		--landed "$T_TMP/landed$round" "$SRC" "$M" \
		>"$T_TMP/replay$round.out" 2>"$T_TMP/replay$round.err" </dev/null &
	rpid=$!
	at_exit "kill -9 -- -$rpid"
	# The kill comes a random while after the first file lands, not after
	# the start: how long the replay takes to start varies too much.
	for ((i = 0; i < 600; i++)); do
		[ -s "$T_TMP/landed$round" ] && break
		sleep 0.05
	done
	ms=$((RANDOM % 601))
	delay=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
	sleep "$delay"
	alive=$(kill -0 "$rpid" 2>/dev/null && echo yes || echo no)
	[ -n "$pid" ] && kill -9 "$pid"
	wait "$rpid"
	rrc=$?
	kill -9 -- "-$rpid" 2>/dev/null
	diag "round $round: daemon $pid killed ${delay}s after the first landing (replay still running: $alive);" \
		"replay exited $rrc: $(head -c 200 "$T_TMP/replay$round.err" | tr '\n' ' ')"
	check "round $round: the replay was still running when the daemon was killed" test "$alive" = yes
	check "round $round: the replay exits by itself (no hang) after the crash" test "$rrc" != 124 -a "$rrc" != 137
	check "round $round: the daemon is gone" gone "$pid"

	run dead_mount "$M"
	check_rc "round $round: the dead mount answers ENOTCONN" 0
	run fusermount3 -u "$M"
	if [ "$RC" != 0 ]; then
		diag "fusermount3 -u: $(cat "$ERR"); trying -uz"
		run fusermount3 -uz "$M"
	fi
	check_rc "round $round: fusermount3 -u of the dead mount works" 0
	tcfs mount -o noviews --store "$S" "$M"
	check_rc "round $round: the store mounts again after the crash" 0
	[ "$RC" = 0 ] || continue

	out=$(check_tree "$M" 2>&1)
	trc=$?
	read -r keys whole files <<<"$(sed -n 1p <<<"$out")"
	diag "round $round: after the crash: $keys of $NKEYS key dirs, $whole of $NKERNELS kernels whole" \
		"(with their group file), $files of $NFILES files"
	if [ "$trc" = 0 ]; then
		ok "round $round: every kernel with a group file is whole, every file is the fixture's, no temp entry is left"
	else
		not_ok "round $round: every kernel with a group file is whole, every file is the fixture's, no temp entry is left"
		diag "$(sed 1d <<<"$out")"
	fi
	check "round $round: the crash hit mid-storm (not every kernel was written)" \
		test "${whole:-0}" -lt "$NKERNELS"
	# The mount commits a rename before it answers (dir.c): whatever the
	# replay saw land survives the kill, byte for byte.
	out=$(check_landed "$SRC" "$M" "$T_TMP/landed$round")
	read -r nlanded nlost <<<"$(sed -n 1p <<<"$out")"
	diag "round $round: $nlanded files had landed before the kill"
	check_eq "round $round: every file whose rename had returned is there, byte-exact" 0 "${nlost:-x}"
	[ "${nlost:-x}" = 0 ] || diag "$(sed 1d <<<"$out")"
	check "round $round: some files had landed before the kill" test "${nlanded:-0}" -gt 0

	tcfs umount "$M"
	check_rc "round $round: tcfs umount after the remount" 0
	tcfs fsck --store "$S"
	check_rc "round $round: fsck finds the store consistent" 0

	tcfs mount -o noviews --store "$S" "$M"
	check_rc "round $round: mount for the warm replay" 0
	[ "$RC" = 0 ] || continue
	run timeout 60 python3 "$REPLAY/replay.py" "$SRC" "$M"
	if [ "$RC" = 0 ] && [ "$(json_get "$OUT" errors)" = 0 ]; then
		ok "round $round: a warm replay of the whole fixture completes with 0 errors"
	else
		not_ok "round $round: a warm replay of the whole fixture completes with 0 errors"
		diag "exit status $RC, errors: $(json_get "$OUT" errors 2>/dev/null)"
		sed -n '1,3p' "$ERR" | cut -c1-400 | sed 's/^/#   /'
	fi
	out=$(check_tree "$M" --complete 2>&1)
	check_eq "round $round: the mount then holds exactly the fixture ($NKERNELS kernels whole)" \
		"$NKEYS $NKERNELS $NFILES" "$out"
	tcfs umount "$M"
	check_rc "round $round: tcfs umount at the end" 0
	tcfs fsck --store "$S"
	check_rc "round $round: fsck at the end exits 0" 0
done

# --- files closed (or fsynced) a while before the crash -------------------

S=$T_TMP/closed/store
M=$T_TMP/closed/mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
tcfs mount -o noviews --store "$S" "$M"
check_rc "closed: tcfs mount of a fresh store" 0
if [ "$RC" = 0 ]; then
	pid=$(daemon_pid "$S")
	python3 - "$M" >"$OUT" 2>"$ERR" <<'PY'
import os, sys, time
m = sys.argv[1]
os.mkdir(m + "/K")
with open(m + "/K/a.json", "wb") as f:
    f.write(b"a" * 1000)
open(m + "/K/a.json", "rb").read()  # an open of an existing file: the kernel goes no-open
with open(m + "/K/closed.cubin", "wb") as f:
    f.write(b"closed" * 1000)
with open(m + "/K/fsynced.cubin", "wb") as f:
    f.write(b"fsynced" * 1000)
    f.flush()
    os.fsync(f.fileno())
time.sleep(1)
PY
	RC=$?
	check_rc "closed: files written, closed, one fsynced" 0
	[ -n "$pid" ] && kill -9 "$pid"
	gone "$pid"
	fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M"
	tcfs mount -o noviews --store "$S" "$M"
	check_rc "closed: the store mounts again after the crash" 0
	check_eq "closed: a file fsynced before the crash keeps its bytes" 7000 \
		"$(python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); print(len(d) if d == b"fsynced" * 1000 else "differs: %d bytes" % len(d))' "$M/K/fsynced.cubin" 2>&1)"
	check_eq "closed: a file written and closed 1 s before the crash keeps its bytes" 6000 \
		"$(python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); print(len(d) if d == b"closed" * 1000 else "differs: %d bytes" % len(d))' "$M/K/closed.cubin" 2>&1)"
	tcfs umount "$M"
	check_rc "closed: tcfs umount" 0
	tcfs fsck --store "$S"
	check_rc "closed: fsck exits 0" 0
fi

# --- a power cut ------------------------------------------------------------
# New blobs are synced in batches (index/blob/durable.h).  A power cut between
# two syncs can leave rows whose blobs the disk lost; every such blob is
# noted in the index, and the next mount checks them.  Simulated: a cold
# replay with syncs put off for an hour, then a kill -9, and three noted
# blobs emptied, deleted and cut short, as the disk may have lost them.

S=$T_TMP/cut/store
M=$T_TMP/cut/mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
q() { sqlite3 "$S/index.db" "$1"; }
tcfs mount -o noviews --sync-every 3600 --store "$S" "$M"
check_rc "power cut: tcfs mount -o noviews --sync-every 3600" 0
if [ "$RC" = 0 ]; then
	pid=$(daemon_pid "$S")
	run timeout 60 python3 "$REPLAY/replay.py" "$SRC" "$M"
	check_eq "power cut: a cold replay completes" 0 "$(json_get "$OUT" errors)"
	sleep 0.3	# the last changes reach the index (100 ms)
	blobs=$(q "SELECT count(DISTINCT blob) FROM nodes WHERE blob IS NOT NULL")
	check_eq "power cut: every blob not yet synced is noted ($blobs)" "$blobs" \
		"$(q "SELECT count(*) FROM unsynced u JOIN (SELECT DISTINCT blob FROM nodes) n ON n.blob = u.blob")"
	# One group file's blob, one child's, one module's.
	lost=$(q "SELECT (SELECT blob FROM nodes WHERE name GLOB '__grp__*' ORDER BY ino LIMIT 1),
		(SELECT blob FROM nodes WHERE name GLOB '*.cubin' ORDER BY ino LIMIT 1),
		(SELECT blob FROM nodes WHERE name GLOB '*.so' ORDER BY ino LIMIT 1)" | tr '|' ' ')
	in_list=$(sed "s/\([0-9a-f]\{32\}\)/'\1'/g; s/ /,/g" <<<"$lost")
	gone_files=$(q "SELECT p.name || '/' || n.name FROM nodes n JOIN nodes p ON p.ino = n.parent
		WHERE n.blob IN ($in_list) ORDER BY 1")
	gone_dirs=$(q "SELECT DISTINCT p.name FROM nodes n JOIN nodes p ON p.ino = n.parent
		WHERE n.blob IN ($in_list)")
	kill -9 "$pid"
	gone "$pid"
	fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M"
	set -- $lost
	chmod u+w "$S/objects/${1:0:2}/$1" "$S/objects/${3:0:2}/$3"
	truncate -s 0 "$S/objects/${1:0:2}/$1"
	rm -f "$S/objects/${2:0:2}/$2"
	truncate -s 100 "$S/objects/${3:0:2}/$3"
	nlost=0
	for d in $gone_dirs; do
		nlost=$((nlost + $(find "$SRC/$d" -name '__grp__*' | wc -l)))
	done
	diag "power cut: lost 3 blobs, named by $(wc -w <<<"$gone_files") files" \
		"(a group template is shared by every key dir of its kernel) in" \
		"$(wc -w <<<"$gone_dirs") key dirs with $nlost kernels"

	tcfs mount -o noviews --store "$S" "$M"
	check_rc "power cut: the store mounts again" 0
	missing=0
	for f in $gone_files; do
		[ -e "$M/$f" ] && missing=$((missing + 1))
	done
	check_eq "power cut: the files whose blobs were lost are gone" 0 "$missing"
	groups=0
	for d in $gone_dirs; do
		groups=$((groups + $(find "$M/$d" -name '__grp__*' | wc -l)))
	done
	check_eq "power cut: and so are the group files beside them (a miss, not half a kernel)" 0 "$groups"
	out=$(check_tree "$M" 2>&1)
	trc=$?
	read -r keys whole files <<<"$(sed -n 1p <<<"$out")"
	diag "power cut: after: $whole of $NKERNELS kernels whole, $files of $NFILES files"
	check_eq "power cut: every other kernel is whole and every file the fixture's" 0 "$trc"
	[ "$trc" = 0 ] || diag "$(sed 1d <<<"$out")"
	check_eq "power cut: only those $nlost kernels were lost" $((NKERNELS - nlost)) "$whole"
	tcfs umount "$M"
	check_rc "power cut: tcfs umount" 0
	check_eq "power cut: no note is left after the check and a clean stop" 0 \
		"$(q "SELECT count(*) FROM unsynced")"
	tcfs fsck --store "$S"
	check_rc "power cut: fsck finds the store consistent" 0

	tcfs mount -o noviews --store "$S" "$M"
	run timeout 60 python3 "$REPLAY/replay.py" "$SRC" "$M"
	check_eq "power cut: a replay recompiles what was lost, 0 errors" 0 "$(json_get "$OUT" errors)"
	out=$(check_tree "$M" --complete 2>&1)
	check_eq "power cut: the mount then holds exactly the fixture" "$NKEYS $NKERNELS $NFILES" "$out"
	for ((i = 0; i < 50; i++)); do	# once a second, plus the commit
		[ "$(q "SELECT count(*) FROM unsynced")" = 0 ] && break
		sleep 0.1
	done
	check_eq "power cut: with the default --sync-every the mount syncs and forgets its notes while it runs" 0 \
		"$(q "SELECT count(*) FROM unsynced")"
	tcfs umount "$M"
	check_rc "power cut: tcfs umount at the end" 0
fi

# SIGTERM in the middle of a storm: a clean stop.  The daemon ends its
# session loop, stops its own threads (the busy-poll reader among them,
# which must not go on serving the storm), commits and unmounts.
S=$T_TMP/term-store
M=$T_TMP/term-mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
"$TCFS" mount -f --store "$S" "$M" 2>"$T_TMP/term.err" &
DAEMON=$!
for _ in $(seq 100); do grep -q " $M " /proc/self/mountinfo && break; sleep 0.05; done
timeout 120 python3 "$REPLAY/replay.py" --procs 8 --shuffle "$SRC" "$M" >/dev/null 2>&1 &
STORM=$!
sleep "0.$((RANDOM % 6 + 2))"
# The mount comes off at once; the daemon's last step, a sync of the
# store's file system, may take a while on a busy disk.
t0=$(date +%s%N)
kill -TERM "$DAEMON"
for ((i = 0; i < 250; i++)); do
	grep -q " $M " /proc/self/mountinfo || break
	sleep 0.02
done
t1=$(date +%s%N)
check "SIGTERM during a storm: the mount comes off within 5 s" \
	sh -c "! grep -q ' $M ' /proc/self/mountinfo"
check "SIGTERM during a storm: the daemon exits (no hang: within 60 s)" gone "$DAEMON" 60
diag "SIGTERM during a storm: unmounted after $(((t1 - t0) / 1000000)) ms," \
	"the daemon gone after $((($(date +%s%N) - t0) / 1000000)) ms"
wait "$DAEMON"
check_eq "SIGTERM during a storm: exit status 0 (a clean stop)" 0 $?
wait "$STORM"
tcfs fsck --store "$S"
check_rc "SIGTERM during a storm: fsck finds the store consistent" 0

# SIGTERM while an invalidation is on its way to the kernel, and a request
# queued that holds the directory it needs (an rmdir holds its parent
# until answered).  Once the session loop has returned nobody else answers
# that request, and the events thread cannot be joined until it is: the
# daemon must serve it itself, or both wait for ever.  The SLOW_INVAL shim
# (tests/e2e/slow_inval.c) holds each invalidation back for a second, time
# to stop the loop and queue the rmdir.
if [ -n "${SLOW_INVAL:-}" ] && [ -f "$SLOW_INVAL" ]; then
	S=$T_TMP/inval-store
	M=$T_TMP/inval-mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	LD_PRELOAD=$SLOW_INVAL TCFS_SLOW_INVAL_MS=1000 \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		"$TCFS" mount -f --store "$S" "$M" 2>"$T_TMP/inval.err" &
	DAEMON=$!
	for _ in $(seq 100); do grep -q " $M " /proc/self/mountinfo && break; sleep 0.05; done
	mkdir -p "$M/KEY/sub"
	echo '{}' >"$M/KEY/k.json"
	# A probe name lands from a name the kernel caches: it is told to drop
	# KEY/__grp__k.json.
	mv "$M/KEY/k.json" "$M/KEY/__grp__k.json"
	sleep 0.1
	kill -TERM "$DAEMON"
	sleep 0.3
	timeout -s KILL 70 rmdir "$M/KEY/sub" &
	RMDIR=$!
	check "an invalidation under way at SIGTERM: the daemon exits (no deadlock: within 60 s)" \
		gone "$DAEMON" 60
	wait "$RMDIR"
	check_eq "an invalidation under way at SIGTERM: the rmdir queued meanwhile is answered" 0 $?
	wait "$DAEMON"
	check_eq "an invalidation under way at SIGTERM: exit status 0" 0 $?
else
	skip "an invalidation under way at SIGTERM" "no slow_inval shim (SLOW_INVAL)"
fi

# A put cut off by a clean stop leaves its temp dir behind, group file and
# all: no fault for fsck (it is not a kernel yet), and the next mount
# removes it.  The storm above leaves such dirs only by chance.
S=$T_TMP/stop-store
M=$T_TMP/stop-mnt
mkdir -p "$M"
K=$(find "$SRC" -mindepth 2 -maxdepth 2 -name '__grp__*.json' -printf '%h\n' | sort | sed -n 1p)
K=${K##*/}
TMPD=tmp.pid_4242_0f0e0d0c-0b0a-0908-0706-050403020100
tcfs mount -o noviews --store "$S" "$M"
mkdir -p "$M/$K/$TMPD" && cp "$SRC/$K"/* "$M/$K/$TMPD/"
tcfs umount "$M"
check_rc "a put cut off by a clean stop: tcfs umount" 0
tcfs fsck --store "$S"
check_rc "a put cut off by a clean stop: fsck finds the store consistent" 0
tcfs mount -o noviews --store "$S" "$M"
check "a put cut off by a clean stop: the next mount removes its temp dir" \
	test ! -e "$M/$K/$TMPD"
check_eq "a put cut off by a clean stop: and the key dir stays a miss" "" "$(ls -A "$M/$K")"
tcfs umount "$M"

# The index stops taking commits (a disk gone bad; tests/e2e/fail_wal.c
# fails every write to the WAL once told to).  The mount must stop by
# itself, whichever thread met the failure, and stay dead (ENOTCONN)
# rather than serve a tree that is not in the index.
if [ -n "${FAIL_WAL:-}" ] && [ -f "$FAIL_WAL" ]; then
	S=$T_TMP/lost-store
	M=$T_TMP/lost-mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	LD_PRELOAD=$FAIL_WAL TCFS_FAIL_WAL=$T_TMP/fail-now \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		LSAN_OPTIONS=suppressions=$(dirname "$0")/lsan-dead-mount.supp \
		"$TCFS" mount -f --store "$S" "$M" 2>"$T_TMP/lost.err" &
	DAEMON=$!
	for _ in $(seq 100); do grep -q " $M " /proc/self/mountinfo && break; sleep 0.05; done
	mkdir "$M/KEPT" && sleep 0.5
	touch "$T_TMP/fail-now"
	mkdir "$M/LOST"
	# Nothing touches the mount from here on: no request wakes a worker.
	# No request wakes it: a daemon that missed the failure would wait
	# for ever.  60 s leaves time for its last sync on a busy disk.
	check "index commits fail: the daemon stops by itself" gone "$DAEMON" 60
	wait "$DAEMON"
	check_eq "index commits fail: exit status 1" 1 $?
	check "index commits fail: the log says why" grep -q "uncommitted changes lost" "$T_TMP/lost.err"
	run dead_mount "$M"
	check_rc "index commits fail: the mount is left dead (ENOTCONN)" 0
	fusermount3 -u "$M"
	rm -f "$T_TMP/fail-now"
	tcfs fsck --store "$S"
	check_rc "index commits fail: fsck finds the store consistent" 0
	tcfs mount -o noviews --store "$S" "$M"
	check "index commits fail: what was committed is there after a remount" test -d "$M/KEPT"
	tcfs umount "$M"
else
	skip "index commits fail: the mount stops by itself" "no fail_wal shim (FAIL_WAL)"
fi
