#!/usr/bin/env bash
# The mount on nearly full disks: small ext4 file systems, loop-mounted
# (root, as in CI).  A write that cannot be stored must fail in its
# writer's own write or rename with ENOSPC, never be acknowledged and then
# lost; a name never points at bytes other than those written to it; a
# flood of mkdirs or of probes (from another user, with allow_other) fails
# its own requests, never stops the mount; and each run ends with tcfs fsck
# clean and every acknowledged name holding exactly its bytes after a
# remount.
set -u
. "$(dirname "$0")/lib.sh"

if ! is_root; then
	echo "1..0 # SKIP needs root to loop-mount small file systems"
	exit 0
elif [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
elif ! command -v mkfs.ext4 >/dev/null; then
	echo "1..0 # SKIP no mkfs.ext4"
	exit 0
fi
WRITERS=$(dirname "$0")/full_writers.py
MIB=$((1024 * 1024))
SMALL=$(fixture_top triton-3.6-h200-small.tgz cA)
SMALL_KERNELS=26
# Blobs leave this to the index on a small file system (index/blob/space.h).
RESERVE=$((8 * MIB))
KEY=JLI3W7YUZ6H6IB4PG6NA55MGXJ3OX4IC7GWTMUKQ2I2QRVL7WMAQ

# small_fs NAME [SIZE]: a fresh ext4 of SIZE (20M) at $T_TMP/NAME,
# loop-mounted; sets F.
# With 4 KiB blocks, as on any real disk: with 1 KiB ones (mkfs's choice
# for so small a file system) SQLite's shared memory file can be left
# sparse under a page, and touching it on a full disk is a SIGBUS.
small_fs() {
	F=$T_TMP/$1
	truncate -s "${2:-20M}" "$F.img" && mkfs.ext4 -q -F -b 4096 "$F.img" && mkdir -p "$F" &&
		mount -o loop "$F.img" "$F" || {
		echo "Bail out! cannot loop-mount an ext4 image"
		exit 1
	}
	at_exit "umount -l '$F'"
}

# leave BYTES: a filler file on $F so that about BYTES stay available.
leave() {
	local avail
	avail=$(df --output=avail -B1 "$F" | tail -1)
	fallocate -l $((avail - $1)) "$F/filler"
}

# mount_on NAME [OPTION...]: the store $F/store mounted at $T_TMP/NAME-mnt;
# sets S and M.
mount_on() {
	local name=$1
	shift
	S=$F/store
	M=$T_TMP/$name-mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount "$@" --store "$S" "$M"
	check_rc "$name: tcfs mount on a small ext4" 0
}

# remount_checked NAME CHECK...: unmounts, runs fsck, mounts again and
# runs CHECK (a command) on the mount again.
remount_checked() {
	local name=$1
	shift
	tcfs umount "$M"
	check_rc "$name: tcfs umount exits 0" 0
	tcfs fsck --store "$S"
	check_rc "$name: fsck of the store exits 0 (clean)" 0
	[ "$RC" = 0 ] || show_run
	tcfs mount --store "$S" "$M"
	check_rc "$name: mount it again" 0
	check "$name: after the remount, still: every name holds exactly its bytes" "$@"
	tcfs umount "$M"
}

echo "# --- eight writers race for the last room (write, close, rename)"
small_fs replace
mount_on replace
mkdir "$M/$KEY"
leave $((RESERVE + 3 * MIB))
for round in 1 2 3; do
	python3 "$WRITERS" replace "$M" "$KEY" "$round" "$T_TMP/replace-$round.json" \
		>>"$T_TMP/replace.log" 2>&1
done
diag "$(cat "$T_TMP/replace.log")"
check_num "some writers succeeded" "$(grep -o '[0-9]* of 8 writers succeeded' "$T_TMP/replace.log" |
	awk '{ n += $1 } END { print n + 0 }')" -gt 0
check_grep "and others were told: No space left on device" "No space left on device" \
	"$T_TMP/replace.log"
check "every name a writer saw renamed holds exactly its bytes; no failed one is there" \
	python3 "$WRITERS" check "$M" "$T_TMP"/replace-*.json
check "the daemon still serves" eval "ls '$M/$KEY' >/dev/null"
remount_checked replace python3 "$WRITERS" check "$M" "$T_TMP"/replace-*.json

echo "# --- the disk fills while a file is written, before its rename"
# Another program takes the room a file being written was promised: its
# commit (at close, or the rename) fails, and the rename says so (ENOSPC)
# and moves nothing; the file keeps its bytes, and once there is room the
# rename lands them whole.
small_fs late
mount_on late
mkdir -p "$M/$KEY/tmp.pid_1_x"
python3 - "$M/$KEY" "$F" >"$T_TMP/late.out" 2>&1 <<'PY'
import errno, os, subprocess, sys
key, fs = sys.argv[1:]
data = os.urandom(300 * 1024)
tmp = os.path.join(key, "tmp.pid_1_x", "late.cubin")
with open(tmp, "wb") as f:
    f.write(data)
    f.flush()
    avail = os.statvfs(fs).f_bavail * os.statvfs(fs).f_frsize
    subprocess.run(["fallocate", "-l", str(avail), os.path.join(fs, "thief")],
                   check=True)
try:
    os.replace(tmp, os.path.join(key, "late.cubin"))
    print("first rename: succeeded")
except OSError as e:
    print("first rename:", errno.errorcode[e.errno])
print("after it, the temp file holds its bytes:", open(tmp, "rb").read() == data)
print("and the final name is absent:", not os.path.exists(os.path.join(key, "late.cubin")))
os.unlink(os.path.join(fs, "thief"))
os.replace(tmp, os.path.join(key, "late.cubin"))
print("with room again, the rename lands it whole:",
      open(os.path.join(key, "late.cubin"), "rb").read() == data)
PY
diag "$(cat "$T_TMP/late.out")"
check_grep "the rename fails with ENOSPC" "first rename: ENOSPC" "$T_TMP/late.out"
check_grep "... the temp file keeps its bytes" "holds its bytes: True" "$T_TMP/late.out"
check_grep "... nothing lands at the final name" "final name is absent: True" "$T_TMP/late.out"
check_grep "with room again, the rename lands it whole" "lands it whole: True" "$T_TMP/late.out"
late_check() { test "$(stat -c %s "$M/$KEY/late.cubin")" = $((300 * 1024)); }
remount_checked late late_check

echo "# --- ten empty files rewritten in place (open r+b)"
small_fs rewrite
mount_on rewrite
mkdir "$M/$KEY"
leave $((RESERVE + 3 * MIB))
python3 "$WRITERS" rewrite "$M" "$KEY" 1 "$T_TMP/rewrite.json" >"$T_TMP/rewrite.log" 2>&1
diag "$(cat "$T_TMP/rewrite.log")"
check_grep "some rewrites were told: No space left on device" "No space left on device" \
	"$T_TMP/rewrite.log"
check "every file holds its bytes, or the part of them its writer was told was written" \
	python3 "$WRITERS" check "$M" "$T_TMP/rewrite.json"
remount_checked rewrite python3 "$WRITERS" check "$M" "$T_TMP/rewrite.json"

echo "# --- a flood of mkdirs fills the index's own reserve"
small_fs mkdirs
mount_on mkdirs
mkdir "$M/$KEY"
printf 'kept through it all\n' >"$M/$KEY/kept.txt"
leave $((RESERVE + MIB))
# Long names fill the index sooner.
python3 - "$M/$KEY" >"$T_TMP/mkdirs.out" <<'PY'
import errno, os, sys
d, n, err = sys.argv[1], 0, "none"
while n < 200000:
    try:
        os.mkdir(os.path.join(d, "%06d" % n + "x" * 200))
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    n += 1
print(n, err)
PY
read -r made err <"$T_TMP/mkdirs.out"
diag "mkdirs that succeeded: $made, then: $err"
check_eq "the flood ends with a mkdir failing with ENOSPC" ENOSPC "$err"
check_eq "the mount still serves, and reads what it held" "kept through it all" \
	"$(cat "$M/$KEY/kept.txt")"
count_dirs() {
	[ "$(find "$M/$KEY" -mindepth 1 -maxdepth 1 -type d | wc -l)" = "$made" ]
}
check "every mkdir that succeeded is there ($made)" count_dirs
remount_checked mkdirs count_dirs

echo "# --- another user floods the log with probes (allow_other)"
small_fs probes
mount_on probes -o allow_other
mkdir -m 755 "$M/$KEY"
printf '{}' >"$M/$KEY/k.json"
leave $((RESERVE + MIB))
N=60000
chmod o+x "$T_TMP"	# for nobody, to reach the mount point
# The system's python3: nobody may not run one installed under /root.
SYSPY=python3
[ -x /usr/bin/python3 ] && SYSPY=/usr/bin/python3
cat >"$T_TMP/probe.py" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.path.exists(os.path.join(d, "__grp__k%d.json" % i))
PY
run setpriv --reuid=65534 --regid=65534 --clear-groups "$SYSPY" "$T_TMP/probe.py" \
	"$M/$KEY" "$N"
check_rc "$N probes of missing group files by user nobody run through" 0
check "the mount still serves" test -f "$M/$KEY/k.json"
mkdir "$M/$KEY/after" 2>"$T_TMP/after.err"
mkdir_rc=$?
check "a mkdir after the flood succeeds or fails with ENOSPC" \
	eval "[ $mkdir_rc = 0 ] || grep -q 'No space left' '$T_TMP/after.err'"
tcfs umount "$M"
check_rc "probes: tcfs umount exits 0" 0
tcfs stats --json --store "$S"
logged=$(json_get "$OUT" misses)
dropped=$(json_eval "$OUT" "d['log']['dropped']")
diag "probes logged: $logged, dropped while the disk was full: $dropped"
check_eq "every probe is logged or counted as dropped" "$N" "$((logged + dropped))"
check_num "some were dropped: the log yields to the tree" "$dropped" -gt 0
tcfs fsck --store "$S"
check_rc "probes: fsck exits 0" 0

echo "# --- another user probes names never there, with room: the index stays bounded"
# All that a probe of an absent name adds to the index is bounded by
# log-max-events: its event, and its row of counts, folded beyond the
# bound into one row per kind, so the totals still count it.  Rows of
# kernels that are there (hits, misses that became kernels) stay, and the
# flood folds only its own user's rows: a miss by root before it, whose
# kernel lands after it, is still a new kernel.
small_fs flood 200M
mount_on flood -o allow_other
tcfs config --store "$S" log-max-events 1000
check_rc "flood: tcfs config log-max-events 1000" 0
replay flood-cold "$SMALL" "$M"
replay flood-warm "$SMALL" "$M"
K=$(find "$SMALL" -mindepth 2 -maxdepth 2 -name '__grp__*.json' -printf '%h\n' | sort | sed -n 1p)
G=$(basename "$(find "$K" -name '__grp__*.json' | sed -n 1p)")
# shellcheck disable=SC2019 # base32: A-Z rotated stays a key
LATE=$(basename "$K" | tr 'A-Z' 'B-ZA')
mkdir -p "$M/late/$LATE"
# Root's job, as Triton: a probe that misses, then (once the flood is
# over) the put, the group file last, each renamed into place.
python3 - "$M/late/$LATE" "$K" "$G" "$T_TMP/flood-done" >"$T_TMP/late.out" 2>&1 <<'PY' &
import os, shutil, sys, time
dst, src, grp, done = sys.argv[1:]
print("miss:", not os.path.exists(os.path.join(dst, grp)), flush=True)
while not os.path.exists(done):
    time.sleep(0.05)
for f in sorted(os.listdir(src), key=lambda f: f == grp):
    tmp = os.path.join(dst, "tmp.pid_%d_late" % os.getpid())
    os.makedirs(tmp, exist_ok=True)
    shutil.copyfile(os.path.join(src, f), os.path.join(tmp, f))
    os.replace(os.path.join(tmp, f), os.path.join(dst, f))
    os.rmdir(tmp)
print("put: done", flush=True)
PY
late_pid=$!
until grep -q miss "$T_TMP/late.out" 2>/dev/null || ! kill -0 $late_pid 2>/dev/null; do
	sleep 0.05
done
check_grep "root's probe of a kernel not there yet misses" "miss: True" "$T_TMP/late.out"
mkdir -m 755 "$M/$KEY"
N=100000
chmod o+x "$T_TMP"
SYSPY=python3
[ -x /usr/bin/python3 ] && SYSPY=/usr/bin/python3
cat >"$T_TMP/flood.py" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.path.exists(os.path.join(d, "__grp__absent%d.json" % i))
PY
run setpriv --reuid=65534 --regid=65534 --clear-groups "$SYSPY" "$T_TMP/flood.py" \
	"$M/$KEY" "$N"
check_rc "$N probes of absent group files by user nobody run through" 0
touch "$T_TMP/flood-done"
wait $late_pid
check_eq "a put after the flood succeeds (root lands the late kernel)" \
	"miss: True put: done" "$(tr '\n' ' ' <"$T_TMP/late.out" | sed 's/ $//')"
tcfs umount "$M"
check_rc "flood: tcfs umount exits 0" 0
rows=$(sqlite3 "$S/index.db" "SELECT count(*) FROM probe_counts")
events=$(sqlite3 "$S/index.db" "SELECT count(*) FROM events")
size=$(stat -c %s "$S/index.db")
diag "after $N probes: probe_counts $rows rows, events $events rows, index.db $size bytes"
check_num "probe_counts stays near log-max-events (1000)" "$rows" -le 1100
check_num "the log keeps at most log-max-events events" "$events" -le 1000
check_num "index.db stays small (under 4 MiB)" "$size" -le $((4 * MIB))
tcfs stats --json --store "$S"
cp "$OUT" "$T_TMP/flood-stats.json"
check_eq "the totals still count every probe of the flood as a miss" \
	"$((SMALL_KERNELS + 1 + N)) 0" \
	"$(json_eval "$T_TMP/flood-stats.json" "'%d %d' % (d['misses'], d['log']['dropped'])")"
check_eq "... and the replays' hits" "$SMALL_KERNELS" "$(json_get "$T_TMP/flood-stats.json" hits)"
check_eq "every kernel that missed then landed is a new kernel, the late one too" \
	"$((SMALL_KERNELS + 1)) True" \
	"$(json_eval "$T_TMP/flood-stats.json" "'%d %s' % (d['new_kernels_count'], '$LATE' in d['new_kernels'])")"
check_num "per kernel: the kernels' names, and the flood's newest names only" \
	"$(json_eval "$T_TMP/flood-stats.json" "len([k for k in d['per_kernel'] if k.startswith('absent')])")" \
	-le 1000
tcfs fsck --store "$S"
check_rc "flood: fsck exits 0" 0

# One person may flood through many uids (a user namespace maps 65,536):
# all users together keep at most four times one user's bound.
mount_on flood-uids -o allow_other
for u in 1 2 3 4 5 6 7 8; do
	setpriv --reuid=$((60000 + u)) --regid=65534 --clear-groups "$SYSPY" \
		-c 'import os, sys
for i in range(1500):
    os.path.exists(os.path.join(sys.argv[1], "__grp__u%s_%d.json" % (sys.argv[2], i)))' \
		"$M/$KEY" "$u"
done
tcfs umount "$M"
rows=$(sqlite3 "$S/index.db" "SELECT count(*) FROM probe_counts")
diag "after 8 uids x 1500 probes: probe_counts $rows rows"
check_num "8 uids flooding keep at most 4 x log-max-events rows (and the kernels')" \
	"$rows" -le $((4000 + SMALL_KERNELS + 10))
tcfs stats --json --store "$S"
check_eq "... and the totals count all 12000 more misses" \
	"$((SMALL_KERNELS + 1 + N + 12000))" "$(json_get "$OUT" misses)"
