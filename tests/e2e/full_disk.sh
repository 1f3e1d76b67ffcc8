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
# Blobs leave this to the index on a small file system (index/space.h).
RESERVE=$((8 * MIB))
KEY=JLI3W7YUZ6H6IB4PG6NA55MGXJ3OX4IC7GWTMUKQ2I2QRVL7WMAQ

# small_fs NAME: a fresh 20 MB ext4 at $T_TMP/NAME, loop-mounted; sets F.
# With 4 KiB blocks, as on any real disk: with 1 KiB ones (mkfs's choice
# for so small a file system) SQLite's shared memory file can be left
# sparse under a page, and touching it on a full disk is a SIGBUS.
small_fs() {
	F=$T_TMP/$1
	truncate -s 20M "$F.img" && mkfs.ext4 -q -F -b 4096 "$F.img" && mkdir -p "$F" &&
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
	check_rc "$name: tcfs mount on a 20 MB ext4" 0
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
