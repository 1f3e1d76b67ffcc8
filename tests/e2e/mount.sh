#!/usr/bin/env bash
# The mount under Triton's own traffic (tests/replay/replay.py on the
# multitarget fixture, 154 kernels and 5 modules): cold then warm, with 1
# and with 8 processes racing on the same keys, Triton 3.0/3.1's in-place
# temp files and Inductor's directory rename, and group files read the
# moment they land.  Every byte read is checked by the replay; every count
# of tcfs stats is checked exactly against what each replaying process saw.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
SRC=$(fixture_top triton-3.6-multitarget.tgz big)
KERNELS=154
MODULES=5

# mount_fresh NAME: a new store and mount point; sets S and M.
mount_fresh() {
	S=$T_TMP/$1-store
	M=$T_TMP/$1-mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount --store "$S" "$M"
	check_rc "$1: tcfs mount returns once it serves" 0
}

# Events reach the store in batches, yet tcfs stats counts every probe
# the moment a job ends (it has the mount commit what it holds): no
# check here waits for them.

echo "# --- one process: cold, then warm"
mount_fresh one
replay one-cold "$SRC" "$M"
check_eq "cold: every kernel probe is a miss" "0 $KERNELS" \
	"$(seen one-cold kernel hits) $(seen one-cold kernel misses)"
check_eq "cold: every module probe is a miss" "0 $MODULES" \
	"$(seen one-cold module hits) $(seen one-cold module misses)"
replay one-warm "$SRC" "$M"
check_eq "warm: every kernel probe is a hit" "$KERNELS 0" \
	"$(seen one-warm kernel hits) $(seen one-warm kernel misses)"
check_stats one-cold one-warm
tcfs stats --json --store "$S"
check_eq "stats: new_kernels lists the $KERNELS keys that missed" "$KERNELS" \
	"$(json_eval "$OUT" 'len(set(d["new_kernels"]))')"
check_eq "stats: per_kernel sums to the kernel probes" "$KERNELS $KERNELS" \
	"$(json_eval "$OUT" 'sum(v["hits"] for v in d["per_kernel"].values())') $(json_eval "$OUT" 'sum(v["misses"] for v in d["per_kernel"].values())')"
check_eq "stats: cache_dir is the mount point" "$M" "$(json_get "$OUT" cache_dir)"
tcfs log --store "$S"
check_eq "log: one line per probe" $((2 * (KERNELS + MODULES))) "$(wc -l <"$OUT")"
tcfs info --json --store "$S"
check_eq "info: the kernels table has every kernel" "$KERNELS" "$(json_get "$OUT" kernels)"
# A miss that nothing follows (a key never compiled) is a miss, not a new
# kernel.
NOKEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
mkdir "$M/$NOKEY"
test -e "$M/$NOKEY/__grp__never.json"
tcfs stats --json --store "$S"
check_eq "stats: a miss whose kernel never landed counts as a miss, not a new kernel" \
	"$((KERNELS + 1)) $KERNELS" "$(json_eval "$OUT" '"%d %d" % (d["misses"], len(set(d["new_kernels"])))')"
rmdir "$M/$NOKEY"
# The CI check that a warm cache stayed warm.
tcfs stats --max-misses $((KERNELS + 1)) --store "$S"
check_rc "stats --max-misses N: exit 0 with N misses" 0
tcfs stats --max-misses "$KERNELS" --store "$S"
check_rc "stats --max-misses N: exit 1 with more" 1
check_grep "... saying how many missed and the limit" \
	"$((KERNELS + 1)) kernel probes missed, more than --max-misses $KERNELS" "$ERR"
# (A second later: --since @EPOCH has whole seconds, and the miss above
# may be in the current one.)
sleep 1
tcfs stats --since "@$(date +%s)" --max-misses 0 --store "$S"
check_rc "stats --since NOW --max-misses 0: no miss since, exit 0" 0
tcfs stats --max-misses many --store "$S"
check_rc "stats --max-misses with no count: usage error (2)" 2

# Unmounting commits and flushes; the daemon exits 0 (seen with -f).
tcfs umount "$M"
check_rc "tcfs umount" 0
check "the mount is gone" sh -c "! grep -q ' $M ' /proc/self/mountinfo"
"$TCFS" mount -f --store "$S" "$M" &
DAEMON=$!
for _ in $(seq 100); do grep -q " $M " /proc/self/mountinfo && break; sleep 0.05; done
replay remount-warm "$SRC" "$M"
check_eq "after a remount: every kernel still a hit" "$KERNELS 0" \
	"$(seen remount-warm kernel hits) $(seen remount-warm kernel misses)"
replay warm-314 --opens 3.14 "$SRC" "$M"
check_eq "opened as CPython 3.14 does: every kernel a hit" "$KERNELS 0" \
	"$(seen warm-314 kernel hits) $(seen warm-314 kernel misses)"
# Busy-polling stops with the burst (fs/busypoll.c): an idle daemon only
# wakes to see whether it has events to write (every 100 ms) or changes
# to sync (every second).  CPU time in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sleep 0.2
t0=$(cpu_ticks "$DAEMON")
sleep 2
t1=$(cpu_ticks "$DAEMON")
echo "# the idle daemon used $((t1 - t0)) ticks of CPU in 2 s"
check "an idle mount spends no CPU (it busy-polls only in bursts)" \
	test $((t1 - t0)) -le 5
fusermount3 -u "$M"
wait "$DAEMON"
check_eq "fusermount3 -u: the foreground daemon exits 0" 0 $?
tcfs stats --json --store "$S"
check_eq "events of the last runs were flushed at unmount (and the lone miss)" \
	$((4 * KERNELS + 1)) \
	"$(json_eval "$OUT" 'd["hits"] + d["misses"]')"
tcfs fsck --store "$S"
check_rc "fsck after all that: clean" 0

echo "# --- eight processes racing on the same keys"
mount_fresh race
replay race-cold --procs 8 --shuffle "$SRC" "$M"
check_eq "cold race: each process probed every kernel once" $((8 * KERNELS)) \
	"$(( $(seen race-cold kernel hits) + $(seen race-cold kernel misses) ))"
replay race-warm --procs 8 --shuffle "$SRC" "$M"
check_eq "warm race: all hits" "$((8 * KERNELS)) 0" \
	"$(seen race-warm kernel hits) $(seen race-warm kernel misses)"
check_stats race-cold race-warm
tcfs umount "$M"
tcfs fsck --store "$S"
check_rc "fsck after the race: clean" 0
tcfs info --json --store "$S"
check_eq "after the race: every file once" "1237" "$(json_get "$OUT" files)"

echo "# --- Triton 3.0/3.1: temp files renamed in place"
mount_fresh t30
replay t30-cold --protocol 3.0 "$SRC" "$M"
replay t30-warm --protocol 3.0 "$SRC" "$M"
check_eq "3.0 warm: all hits" "$KERNELS 0" \
	"$(seen t30-warm kernel hits) $(seen t30-warm kernel misses)"
check_stats t30-cold t30-warm
check_eq "3.0: no temp file is left in a key dir" "" \
	"$(find "$M" -name '*.tmp.pid_*' | head -3)"

echo "# --- Inductor: whole key dirs renamed into place"
mount_fresh ind
replay ind-cold --protocol inductor "$SRC" "$M"
replay ind-warm --protocol inductor "$SRC" "$M"
check_eq "inductor warm: all hits" "$KERNELS 0" \
	"$(seen ind-warm kernel hits) $(seen ind-warm kernel misses)"
check_stats ind-cold ind-warm
tcfs info --json --store "$S"
check_eq "inductor: kernels indexed when their dir lands" "$KERNELS" \
	"$(json_get "$OUT" kernels)"
check_eq "inductor: no tmp.* dir is left at the top" "" \
	"$(ls "$M" | grep '^tmp\.' | head -3)"

# A group file naming its children outside the mount (a cache copied
# from /e) is stored key-relative once it lands in its key dir, and shown
# with the mount's path: a size other than the one written.  Read the
# moment its rename returns, it is whole and shown so, however it landed.
echo "# --- group files read the moment they land"
mount_fresh land
python3 - "$SRC" "$M" >"$T_TMP/land.out" <<'PY'
import json, os, sys
src, m = sys.argv[1:]
groups = sorted((key, f) for key in os.listdir(src)
                for f in os.listdir(os.path.join(src, key))
                if f.startswith("__grp__"))
bad = {"3.0": 0, "3.6": 0, "inductor": 0}
for n, (key, grp) in enumerate(groups[:90]):
    style = ("3.0", "3.6", "inductor")[n // 30]
    kids = json.load(open(os.path.join(src, key, grp)))["child_paths"]
    body = json.dumps({"child_paths": {c: "/e/%s/%s" % (key, c)
                                       for c in kids}})
    final = os.path.join(m, key, grp)
    if style == "inductor":
        tmpd = os.path.join(m, "tmp.%d" % n)
        os.mkdir(tmpd)
        tmp = os.path.join(tmpd, grp)
    else:
        os.mkdir(os.path.join(m, key))
        tmpd = os.path.join(m, key, "tmp.pid_%d_%d" % (os.getpid(), n))
        if style == "3.6":
            os.mkdir(tmpd)
            tmp = os.path.join(tmpd, grp)
        else:
            tmp = final + ".tmp.pid_%d_%d" % (os.getpid(), n)
    with open(tmp, "w") as f:
        f.write(body)
    os.replace(tmpd if style == "inductor" else tmp,
               os.path.join(m, key) if style == "inductor" else final)
    if style == "3.6":
        os.rmdir(tmpd)
    got = open(final, "rb").read()
    try:
        paths = json.loads(got)["child_paths"].values()
        ok = all(p.startswith(os.path.join(m, key) + "/") for p in paths)
    except ValueError:
        ok = False
    if not ok:
        bad[style] += 1
        print("bad %s %s: %r" % (style, key, got[-80:]))
for style, n in bad.items():
    print("%s %d" % (style, n))
PY
check_eq "Triton 3.0's in place temp files: 30 of 30 read whole, under the mount" \
	"3.0 0" "$(grep '^3.0 ' "$T_TMP/land.out")"
check_eq "Triton 3.6's temp dirs: 30 of 30 read whole, under the mount" \
	"3.6 0" "$(grep '^3.6 ' "$T_TMP/land.out")"
check_eq "Inductor's key dirs: 30 of 30 read whole, under the mount" \
	"inductor 0" "$(grep '^inductor ' "$T_TMP/land.out")"
diag "$(grep '^bad ' "$T_TMP/land.out" | head -3)"
tcfs umount "$M"
check_rc "unmount" 0

echo "# --- --no-fsync: the same traffic, blobs not fsynced"
S=$T_TMP/nosync-store
M=$T_TMP/nosync-mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
tcfs mount --no-fsync --store "$S" "$M"
check_rc "tcfs mount --no-fsync" 0
replay nosync-cold "$SRC" "$M"
replay nosync-warm "$SRC" "$M"
check_eq "--no-fsync warm: all hits" "$KERNELS 0" \
	"$(seen nosync-warm kernel hits) $(seen nosync-warm kernel misses)"
check_stats nosync-cold nosync-warm
tcfs umount "$M"
tcfs fsck --store "$S"
check_rc "--no-fsync: fsck after unmount is clean" 0

echo "# --- --busy-poll 0: the libfuse workers alone"
S=$T_TMP/nopoll-store
M=$T_TMP/nopoll-mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
tcfs mount --busy-poll 0 --store "$S" "$M"
check_rc "tcfs mount --busy-poll 0" 0
replay nopoll-cold "$SRC" "$M"
replay nopoll-warm "$SRC" "$M"
check_eq "--busy-poll 0 warm: all hits" "$KERNELS 0" \
	"$(seen nopoll-warm kernel hits) $(seen nopoll-warm kernel misses)"
check_stats nopoll-cold nopoll-warm
tcfs umount "$M"
check_rc "--busy-poll 0: tcfs umount" 0

# A file renamed onto a probe name from a name the kernel caches keeps its
# cache entry, timeout and all: the daemon has the kernel drop it, so that
# every later probe still reaches the daemon.
echo "# --- a probe name reached from a cached name"
mount_fresh mv
KEYMV=MV2MV2MV2MV2MV2MV2MV2MV2MV2MV2MV2MV2MV2MV2MV2MV2MV2M	# a key's shape
mkdir "$M/$KEYMV"
echo '{}' >"$M/$KEYMV/staged.json"
stat "$M/$KEYMV/staged.json" >/dev/null
mv "$M/$KEYMV/staged.json" "$M/$KEYMV/__grp__mv.json"
for _ in 1 2; do
	python3 -c 'import os, sys; os.stat(sys.argv[1])' "$M/$KEYMV/__grp__mv.json"
done
tcfs umount "$M"
tcfs log --store "$S"
check_eq "after the rename, each of 2 processes probing it logs a hit" 2 \
	"$(grep -c " hit  kernel $KEYMV/mv\$" "$OUT")"

S=$T_TMP/ind-store
M=$T_TMP/ind-mnt
echo "# --- the store moves: export, import elsewhere, mount elsewhere"
tcfs umount "$M"
S2=$T_TMP/moved-store
M2=$T_TMP/moved-mnt
mkdir -p "$M2"
at_exit "fusermount3 -uz '$M2'"
cp -a "$S" "$S2"
tcfs mount --store "$S2" "$M2"
replay moved-warm "$SRC" "$M2"
check_eq "a store copied and mounted elsewhere: all hits, children under the new mount" \
	"$KERNELS 0" "$(seen moved-warm kernel hits) $(seen moved-warm kernel misses)"

# A process's probes are folded into one per path until it exits; a new
# process that gets its pid again probes afresh.  ns_last_pid (root only)
# hands the next fork the pid just freed.
GRP=$(ls "$M2"/*/__grp__*.json | head -1)
python3 - "$GRP" >"$T_TMP/pids" 2>/dev/null <<'PY'
import os, sys, time
def probe():
    pid = os.fork()
    if pid == 0:
        os.stat(sys.argv[1])
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
first = probe()
time.sleep(0.5)		# past the daemon's 100 ms pruning tick
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(first - 1))
print(first, probe())
PY
read -r P1 P2 <"$T_TMP/pids"
if [ -n "${P1:-}" ] && [ "$P1" = "${P2:-}" ]; then
	tcfs log --json --store "$S2"
	check_eq "a pid used again after its process exited: each process's probe is logged" 2 \
		"$(grep -c "\"pid\": *$P1," "$OUT")"
else
	skip "a pid used again after its process exited" "cannot choose pids here"
fi

# A process names itself (prctl, /proc/self/comm): a name holding a
# terminal escape is shown escaped by log and stats, never raw.
python3 - "$GRP" <<'PY'
import os, sys
open("/proc/self/comm", "w").write("\x1b[2Jevil")
os.stat(sys.argv[1])
PY
tcfs log --store "$S2"
check_grep_fixed "tcfs log shows a command name holding ESC escaped" '\x1b[2Jevil' "$OUT"
check_eq "... and prints no raw control byte" 0 "$(tr -d '\n' <"$OUT" | tr -cd '\000-\037\177' | wc -c)"
tcfs stats --store "$S2"
check_grep_fixed "tcfs stats shows it escaped too" '\x1b[2Jevil' "$OUT"
check_eq "... and prints no raw control byte" 0 "$(tr -d '\n' <"$OUT" | tr -cd '\000-\037\177' | wc -c)"
tcfs umount "$M2"

echo "# --- a damaged blob is never served"
# Three kernels' blobs are spoiled behind the store's back: a cubin with
# one byte flipped, a cubin cut to 100 bytes, a group file's template with
# a byte flipped.  A read of one fails (EIO, never wrong bytes); a probe
# of a kernel using one misses, so Triton compiles it again at once
# instead of failing on EIO when it reads.  Each bad blob goes to
# quarantine/ and its kernels out of the cache.
S=$T_TMP/damaged-store
M=$T_TMP/damaged-mnt
tcfs import --quiet --store "$S" "$SRC"
check_rc "damaged: import the fixture" 0
keys=() cubins=()
for k in $(find "$SRC" -mindepth 2 -maxdepth 2 -name '*.cubin' -printf '%h\n' | sort -u | sed -n '1,2p'); do
	keys+=("$(basename "$k")")
	cubins+=("$(basename "$(ls "$k"/*.cubin | head -1)")")
done
flip_byte "$(blob_path "$S" "$SRC/${keys[0]}/${cubins[0]}")" 64
B=$(blob_path "$S" "$SRC/${keys[1]}/${cubins[1]}")
chmod u+w "$B" && truncate -s 100 "$B" && chmod 444 "$B"
# The third: a kernel of another name, whose template (shared by every
# kernel of that name) no recompile of the first two rewrites meanwhile.
for k in $(ls "$SRC"); do
	g=$(basename "$(ls "$SRC/$k"/__grp__*.json 2>/dev/null | head -1)")
	case $g in
	"" | __grp__"${cubins[0]%.cubin}".json | __grp__"${cubins[1]%.cubin}".json) ;;
	*) keys[2]=$k GRP=$g && break ;;
	esac
done
GB=$(sqlite3 "$S/index.db" "SELECT blob FROM nodes WHERE name = '$GRP' AND parent = (SELECT ino FROM nodes WHERE parent = 1 AND name = '${keys[2]}')")
flip_byte "$S/objects/${GB:0:2}/$GB" 20
# Blobs are shared: every kernel that uses one of the three goes.
B0=$(basename "$(blob_path "$S" "$SRC/${keys[0]}/${cubins[0]}")")
NBAD=$(sqlite3 "$S/index.db" "SELECT count(DISTINCT parent) FROM nodes WHERE blob IN ('$B0', '$(basename "$B")', '$GB')")
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
tcfs mount --store "$S" "$M"
check_rc "damaged: mount the store" 0
run cat "$M/${keys[0]}/${cubins[0]}"
check_eq "a cubin with a flipped byte: cat fails with EIO, no byte served" \
	"1 0" "$RC $(stat -c %s "$OUT")"
check_grep "... Input/output error" "Input/output error" "$ERR"
check_eq "its kernel's group file is gone (its next probe misses)" "" \
	"$(ls "$M/${keys[0]}" | grep __grp__)"
check_eq "and the damaged cubin is gone from its key dir" "" \
	"$(ls "$M/${keys[0]}" | grep -F -e "${cubins[0]}")"
replay damaged-replay "$SRC" "$M"
check_eq "a replay misses exactly the $NBAD kernels using the three blobs, and compiles them" \
	"$((KERNELS - NBAD)) $NBAD" "$(seen damaged-replay kernel hits) $(seen damaged-replay kernel misses)"
check_eq "the three damaged blobs are in quarantine/ (the truncated one too)" 3 \
	"$(ls "$S/quarantine" 2>/dev/null | wc -l)"
replay damaged-warm "$SRC" "$M"
check_eq "and the next replay hits every kernel, every byte right" "$KERNELS 0" \
	"$(seen damaged-warm kernel hits) $(seen damaged-warm kernel misses)"
tcfs umount "$M"
tcfs fsck --store "$S"
check_rc "fsck of the store afterwards exits 0 (nothing damaged is left)" 0

echo "# --- a group file keeps its bytes across a rename into another key dir"
# Stored relative to its key dir, a group file is rendered for where it
# is; a rename must still not change its bytes, under a reader that has
# it open least of all (the page cache dropped, its reads reach us).
mount_fresh pin
python3 - "$M" >"$T_TMP/pin.out" 2>&1 <<'PY'
import json, os, sys
m = sys.argv[1]
k1, k2, k3 = ("PINKEY%s%s" % (c, "A" * 45) for c in "BCD")
for k in (k1, k2):
    os.makedirs(os.path.join(m, k, "tmp.pid_1_x"))
open(os.path.join(m, k1, "a.cubin"), "wb").write(b"cubin")
want = json.dumps({"child_paths": {"a.cubin": os.path.join(m, k1, "a.cubin")}}).encode()
tmp = os.path.join(m, k1, "tmp.pid_1_x", "__grp__a.json")
open(tmp, "wb").write(want)
os.replace(tmp, os.path.join(m, k1, "__grp__a.json"))
fd = os.open(os.path.join(m, k1, "__grp__a.json"), os.O_RDONLY)
head = os.read(fd, 10)
os.rename(os.path.join(m, k1, "__grp__a.json"), os.path.join(m, k2, "__grp__a.json"))
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.lseek(fd, 10, os.SEEK_SET)
print("open across the rename:", head + os.read(fd, 1 << 20) == want)
os.close(fd)
print("opened anew after it:", open(os.path.join(m, k2, "__grp__a.json"), "rb").read() == want)
os.rename(os.path.join(m, k2), os.path.join(m, k3))
print("its key dir renamed:", open(os.path.join(m, k3, "__grp__a.json"), "rb").read() == want)
PY
diag "$(cat "$T_TMP/pin.out")"
check_grep "a reader with it open reads the bytes it opened" "open across the rename: True" "$T_TMP/pin.out"
check_grep "opened again at its new place, the same bytes" "opened anew after it: True" "$T_TMP/pin.out"
check_grep "and after its key dir is renamed too" "key dir renamed: True" "$T_TMP/pin.out"
tcfs umount "$M"

echo "# --- a huge sparse file holds no lock that others need"
# A file grown by truncate to 64 GiB is hashed as it grows, in its
# writer's own request; its rename, which holds the key dir in the
# kernel, then has nothing left to hash.  So another put into the same key
# dir, started while the huge file is written, lands first (the old build
# hashed it at the rename, blocking the key dir for a minute).
mount_fresh huge
python3 - "$M" >"$T_TMP/huge.out" 2>&1 <<'PY'
import os, sys, threading, time
m = sys.argv[1]
key = os.path.join(m, "HUGEKEY" + "A" * 45)
os.makedirs(os.path.join(key, "tmp.pid_1_a"))
done = {}
started = threading.Event()
def huge():
    with open(os.path.join(key, "tmp.pid_1_a", "huge.bin"), "wb") as f:
        f.write(b"x")
        f.flush()
        started.set()
        f.truncate(64 << 30)
    os.replace(os.path.join(key, "tmp.pid_1_a", "huge.bin"), os.path.join(key, "huge.bin"))
    done["huge"] = time.monotonic()
t = threading.Thread(target=huge)
t.start()
started.wait()
time.sleep(0.3)
os.mkdir(os.path.join(key, "tmp.pid_2_b"))
with open(os.path.join(key, "tmp.pid_2_b", "small.json"), "wb") as f:
    f.write(b"{}")
os.replace(os.path.join(key, "tmp.pid_2_b", "small.json"), os.path.join(key, "small.json"))
os.rmdir(os.path.join(key, "tmp.pid_2_b"))
done["small"] = time.monotonic()
t.join()
print("small put landed first:", done["small"] < done["huge"])
print("huge size:", os.stat(os.path.join(key, "huge.bin")).st_size)
PY
diag "$(cat "$T_TMP/huge.out")"
check_grep "a small put into the same key dir lands while the huge file is written" \
	"landed first: True" "$T_TMP/huge.out"
check_grep "the huge file lands, 64 GiB" "huge size: $((64 << 30))" "$T_TMP/huge.out"
tcfs umount "$M"
tcfs fsck --store "$S"
check_rc "fsck verifies its blob (holes hashed, not read) and exits 0" 0

echo "# --- the probe log keeps within its bounds (tcfs config)"
mount_fresh bounds
tcfs config --store "$S" log-max-events 1000
check_rc "tcfs config log-max-events 1000, while mounted" 0
K=JLI3W7YUZ6H6IB4PG6NA55MGXJ3OX4IC7GWTMUKQ2I2QRVL7WMAQ
mkdir "$M/$K"
python3 - "$M/$K" <<'PY'
import os, sys
for i in range(3000):
    os.path.exists(os.path.join(sys.argv[1], "__grp__k%d.json" % i))
PY
sleep 3	# the log is trimmed every 2 s
tcfs stats --json --store "$S"
check_eq "stats still counts all 3000 probes" 3000 "$(json_get "$OUT" misses)"
check_num "the log keeps at most 1000 events" "$(json_eval "$OUT" "d['log']['events']")" -le 1000
check_eq "... and says its bound" 1000 "$(json_eval "$OUT" "d['log']['max_events']")"
tcfs config --store "$S" log-max-age 1s
sleep 4
tcfs stats --json --store "$S"
check_eq "log-max-age 1s: the log is empty seconds later" 0 "$(json_eval "$OUT" "d['log']['events']")"
check_eq "... and the counts stay" 3000 "$(json_get "$OUT" misses)"
tcfs stats --reset --store "$S"
tcfs stats --json --store "$S"
check_eq "stats --reset clears the counts too" 0 "$(json_get "$OUT" misses)"
tcfs umount "$M"

echo "# --- relative paths: the daemon leaves the working directory"
mkdir -p "$T_TMP/rel/mnt"
at_exit "fusermount3 -uz '$T_TMP/rel/mnt'"
(cd "$T_TMP/rel" && "$TCFS" mount --store new-store mnt)
check_rc "tcfs mount --store new-store mnt, from their parent" 0
check "the mount is at the relative mount point" \
	grep -q " $T_TMP/rel/mnt " /proc/self/mountinfo
check "the new store is created beside it, not under /" \
	test -f "$T_TMP/rel/new-store/index.db"
(cd "$T_TMP/rel" && "$TCFS" umount mnt)
check_rc "tcfs umount mnt" 0

echo "# --- a probe of a big cache reads no blob once its group file's size is known"
# A lookup answers with the group file's size as rendered for this mount,
# and a cache of more kernels than renderings kept (4,096) read and
# rendered the template again at nearly every probe.  Counted by the
# blobs the daemon opened (its metrics), which no retry or extra request
# of a loaded machine changes, as they did its read calls.
BIG=$T_TMP/bigcache
python3 "$(dirname "$0")/../bench/gen_kernels.py" \
	"$(fixture_top triton-3.6-multitarget.tgz big)" 6000 "$BIG/src"
tcfs import -q --store "$BIG/store" "$BIG/src"
mkdir -p "$BIG/mnt"
at_exit "fusermount3 -uz '$BIG/mnt'"
tcfs mount --store "$BIG/store" "$BIG/mnt"
(cd "$BIG/src" && ls -d -- */__grp__*) > "$BIG/grps"
blob_opens() {
	awk '$1 == "tcfs_blob_opens_total" { print $2 }' \
		"$BIG/mnt/.tcfs/metrics.prom"
}
(cd "$BIG/mnt" && xargs stat -c '%n %s' < "$BIG/grps") > "$BIG/first"
A=$(blob_opens)
(cd "$BIG/mnt" && xargs stat -c '%n %s' < "$BIG/grps") > "$BIG/second"
B=$(blob_opens)
check_eq "6000 group files: the same sizes twice" "$(cat "$BIG/first")" "$(cat "$BIG/second")"
check "... and each as many bytes as a read gives" python3 - "$BIG/mnt" "$BIG/first" <<'PY'
import os, sys
for line in open(sys.argv[2]):
    path, size = line.rsplit(" ", 1)
    with open(os.path.join(sys.argv[1], path), "rb") as f:
        assert len(f.read()) == int(size), path
PY
check_num "the first look opened the 6000 group files' blobs" "$A" -ge 6000
check_eq "a second look at 6000: no blob opened" "0" "$((B - A))"
tcfs umount "$BIG/mnt"

echo "# --- a dir of short and long names lists each once, in pages read in batches"
# Each readdir page is filled from batches of rows sized to the room left
# in it (dir.c), whatever the names' lengths.
LS=$T_TMP/ls-store
LM=$T_TMP/ls-mnt
mkdir -p "$LM"
at_exit "fusermount3 -uz '$LM'"
tcfs mount --store "$LS" "$LM"
check "3000 names from 1 to 255 bytes, listed each once" python3 - "$LM" <<'PY'
import os, sys
d = os.path.join(sys.argv[1], "many")
os.mkdir(d)
names = set()
for i in range(3000):
    n = ("%d" % i) if i % 3 else ("%d-" % i).ljust(1 + i % 255, "x")
    open(os.path.join(d, n), "w").close()
    names.add(n)
got = os.listdir(d)
assert len(got) == len(set(got)) == 3000, len(got)
assert set(got) == names
root = os.listdir(sys.argv[1])
assert "many" in root and len(root) == len(set(root)), root
PY
tcfs umount "$LM"
