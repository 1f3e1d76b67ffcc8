#!/bin/bash
# Bad input and hostile conditions: unreadable files, symlinks, FIFOs, temp
# entries, a full disk, a second writer, a corrupted index, a damaged blob
# at export time, malformed JSON.  Each must give a clear error naming the
# file and the cause, and lose nothing that was stored before.
. "$(dirname "$0")/lib.sh"

SMALL=$(fixture_top triton-3.6-h200-small.tgz cA) &&
	BIG=$(fixture_top triton-3.6-multitarget.tgz big) &&
	BIG2=$(fixture_top triton-3.6-multitarget-fpfusion.tgz big2) || {
	echo "Bail out! cannot extract the fixtures"
	exit 1
}

# Every scenario's store first holds BASE (three key dirs of big2, disjoint
# from cA and big): what was stored before must survive the bad input.
BASE=$T_TMP/base
mkdir -p "$BASE"
find "$BIG2" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | sed -n 1,3p |
	while read -r k; do cp -a "$BIG2/$k" "$BASE/"; done
BASE_FILES=$(find "$BASE" -type f | wc -l)
SMALL_FILES=$(find "$SMALL" -type f | wc -l)

# new_store NAME: sets S to a new store $T_TMP/NAME holding BASE.
new_store() {
	S=$T_TMP/$1
	tcfs import --quiet --store "$S" "$BASE"
	check_rc "$1: a store holding earlier key dirs is set up" 0
}

# check_kept LABEL STORE [SRC...]: fsck is clean and every key dir of BASE
# (and of the SRCs) still exports byte-exact.
check_kept() {
	local label=$1 s=$2 d=$T_TMP/kept-$1
	shift 2
	tcfs fsck --store "$s"
	check_rc "$label: fsck exits 0 afterwards" 0
	rm -rf "$d"
	tcfs export --quiet --store "$s" "$d"
	if [ "$RC" = 0 ]; then
		check_export "$label: what was stored before still exports byte-exact" \
			--partial "$d" "$BASE" "$@"
	else
		not_ok "$label: what was stored before still exports byte-exact"
		show_run
	fi
}

# kernel_key DIR [N]: the Nth (default 1st) key dir of DIR holding a
# cubin.
kernel_key() {
	find "$1" -mindepth 2 -maxdepth 2 -name '*.cubin' -printf '%h\n' |
		sort | sed -n "${2:-1}p" | xargs -r basename
}

# one_file DIR GLOB: the name of the one file in DIR matching GLOB.
one_file() {
	local f
	for f in "$1"/$2; do
		[ -e "$f" ] && basename "$f" && return 0
	done
	return 1
}

# meta_file KEYDIR: NAME.json, the metadata beside __grp__NAME.json.
meta_file() {
	local g
	g=$(one_file "$1" '__grp__*.json') || return 1
	g=${g#__grp__}
	echo "$g"
}

# stored FILE: 0 when FILE's bytes are a blob in store $S.
stored() {
	[ -e "$(blob_path "$S" "$1")" ]
}

# === unreadable file ==========================================================

echo "# --- an unreadable file in a source"
# Root reads any file: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH for
# the import so that mode 000 means unreadable, as it does for a user.
NOCAPS=()
if is_root; then
	# shellcheck disable=SC2054 # commas are setpriv's list syntax
	NOCAPS=(setpriv --inh-caps=-all --bounding-set=-dac_override,-dac_read_search)
fi
new_store store-unreadable
SRC=$T_TMP/src-unreadable
fixture_copy triton-3.6-h200-small.tgz cA "$SRC"
V=$(kernel_key "$SRC" 2)
VF=$(one_file "$SRC/$V" '*.cubin')
chmod 000 "$SRC/$V/$VF"
if is_root && ! "${NOCAPS[@]}" true 2>/dev/null; then
	skip "import stops at an unreadable file" "setpriv cannot drop capabilities here"
elif "${NOCAPS[@]}" cat "$SRC/$V/$VF" >/dev/null 2>&1; then
	skip "import stops at an unreadable file" "a mode 000 file is still readable (without CAP_DAC_OVERRIDE)"
else
	run "${NOCAPS[@]}" "$TCFS" import --store "$S" "$SRC"
	check_rc "import of a source with an unreadable file exits 1" 1
	check_grep "stderr names $V/$VF and 'Permission denied'" \
		"$SRC/$V/$VF: Permission denied" "$ERR"
	E=$T_TMP/export-unreadable
	tcfs export --quiet --store "$S" "$E"
	check_rc "export afterwards exits 0" 0
	if [ ! -e "$E/$V" ]; then
		ok "the key dir with the unreadable file is not in the store at all"
	else
		not_ok "the key dir with the unreadable file is not in the store at all"
		diag "$(ls -la "$E/$V")"
	fi
	check_export "every other key dir of the source (and the earlier ones) is, byte-exact" \
		"$E" "$SMALL" "$BASE" -- "$V"
	check_eq "info files == earlier files + the source's files outside $V" \
		$((BASE_FILES + SMALL_FILES - $(find "$SMALL/$V" -type f | wc -l))) \
		"$(info_field "$S" files)"
	# The blobs that only the failed key dir had added were taken out.
	find "$SMALL" "$BASE" -type f ! -path "*/$V/*" -print0 |
		xargs -0 xxhsum -q -H2 | cut -d' ' -f1 | sort -u >"$T_TMP/others.xxh"
	leaked=0
	for f in "$SMALL/$V"/*; do
		case $f in */__grp__*.json | */"$VF") continue ;; esac
		# content shared with another file is rightly stored
		grep -qx "$(xxh128 "$f" | cut -d' ' -f1)" "$T_TMP/others.xxh" && continue
		stored "$f" && leaked=$((leaked + 1))
	done
	check_eq "the blobs of the failed key dir were removed again (no orphans left)" 0 "$leaked"
	tcfs fsck --json --store "$S"
	check_eq "fsck: 0 problems, 0 orphans" "0 0" \
		"$(json_get "$OUT" problems) $(json_get "$OUT" orphans)"
	check_kept unreadable "$S" "$SMALL" -- "$V"
	chmod 644 "$SRC/$V/$VF"
	tcfs import --quiet --store "$S" "$SRC"
	check_rc "once readable, importing again exits 0" 0
	check_eq "... and the store holds everything" $((BASE_FILES + SMALL_FILES)) \
		"$(info_field "$S" files)"

	# Files are read and stored ahead of the key dir whose rows are being
	# written: a later key dir may find a blob that the failing one made,
	# and taking back the failed key dir's blobs must leave that one.
	new_store store-unreadable-shared
	SRC=$T_TMP/src-unreadable-shared
	fixture_copy triton-3.6-h200-small.tgz cA "$SRC"
	W=$(kernel_key "$SRC" 3)
	printf 'bytes that only %s and %s hold\n' "$V" "$W" >"$SRC/$V/matmul_kernel.ptx"
	cp "$SRC/$V/matmul_kernel.ptx" "$SRC/$W/matmul_kernel.ptx"
	chmod 000 "$SRC/$V/$VF"
	run "${NOCAPS[@]}" "$TCFS" import --store "$S" "$SRC"
	check_rc "a later key dir shares bytes with the failing one: import exits 1" 1
	E=$T_TMP/export-unreadable-shared
	tcfs export --quiet --store "$S" "$E"
	check_rc "... export exits 0" 0
	if cmp -s "$SRC/$W/matmul_kernel.ptx" "$E/$W/matmul_kernel.ptx"; then
		ok "... the later key dir's copy of those bytes is in the store"
	else
		not_ok "... the later key dir's copy of those bytes is in the store"
	fi
	tcfs fsck --json --store "$S"
	check_eq "... fsck: 0 problems, 0 orphans" "0 0" \
		"$(json_get "$OUT" problems) $(json_get "$OUT" orphans)"
fi

# === symlinks and a FIFO =========================================================

echo "# --- symlinks and a FIFO in a key dir"
new_store store-links
SRC=$T_TMP/src-links
fixture_copy triton-3.6-h200-small.tgz cA "$SRC"
K=$(kernel_key "$SRC" 1)
K2=$(kernel_key "$SRC" 2)
META=$(meta_file "$SRC/$K")
CUBIN2=$(one_file "$SRC/$K2" '*.cubin')
ln -s "$META" "$SRC/$K/link_in"
ln -s "../$K2/$CUBIN2" "$SRC/$K/link_other"
ln -s /etc/passwd "$SRC/$K/link_out"
ln -s "../$K2" "$SRC/$K/link_dir"
ln -s "does-not-exist" "$SRC/$K/link_dangling"
mkfifo "$SRC/$K/fifo" "$SRC/$K/"$'\e[2J'fifo
ln -s fifo "$SRC/$K/link_fifo"
touch -r "$SMALL/$K" "$SRC/$K"	# the key dir's mtime is checked too
run timeout 20 "$TCFS" import --store "$S" "$SRC"
if [ "$RC" = 124 ]; then
	not_ok "import with symlinks and a FIFO finishes (it hung for 20 s)"
else
	ok "import with symlinks and a FIFO finishes without hanging"
fi
check_rc "import with symlinks and a FIFO exits 0 (skipped entries are no error)" 0
check_grep "the symlink to /etc/passwd is skipped with a message naming it" \
	"$K/link_out: .*out of the source" "$ERR"
check_grep "the symlink to a directory is skipped with a message naming it" \
	"$K/link_dir: .*skipped" "$ERR"
check_grep "the FIFO is skipped with a message naming it" "$K/fifo: .*skipped" "$ERR"
check_grep "the symlink to the FIFO is skipped with a message naming it" \
	"$K/link_fifo: .*skipped" "$ERR"
check_grep "the dangling symlink is skipped with a message naming it" \
	"$K/link_dangling: .*skipped" "$ERR"
check_grep_fixed "a name holding a terminal escape is printed escaped" \
	"$K/\\x1b[2Jfifo: not a regular file" "$ERR"
check_eq "no raw control byte reaches the terminal" 0 "$(tr -d '\n' <"$ERR" | tr -cd '\000-\037\177' | wc -c)"
E=$T_TMP/export-links
tcfs export --quiet --store "$S" "$E"
check_rc "export afterwards exits 0" 0
if [ -f "$E/$K/link_in" ] && [ ! -L "$E/$K/link_in" ] &&
	cmp -s "$E/$K/link_in" "$SRC/$K/$META"; then
	ok "a symlink to a file in its key dir is stored as a regular file with the target's bytes"
else
	not_ok "a symlink to a file in its key dir is stored as a regular file with the target's bytes"
fi
if [ -f "$E/$K/link_other" ] && [ ! -L "$E/$K/link_other" ] &&
	cmp -s "$E/$K/link_other" "$SRC/$K2/$CUBIN2"; then
	ok "a symlink to a file in another key dir of the source is stored as a regular file"
else
	not_ok "a symlink to a file in another key dir of the source is stored as a regular file"
fi
present=
for n in link_out link_dir link_dangling fifo link_fifo; do
	[ -e "$E/$K/$n" ] || [ -L "$E/$K/$n" ] && present="$present $n"
done
check_eq "none of the skipped entries is in the store" "" "$present"
if stored /etc/passwd; then
	not_ok "the bytes of /etc/passwd are not in the store"
else
	ok "the bytes of /etc/passwd are not in the store"
fi
# Expected: the fixture plus the two links as regular files (with the
# target's mode and mtime).
X=$T_TMP/expect-links
mkdir -p "$X"
cp -a "$SMALL/$K" "$X/"
cp -p "$SRC/$K/$META" "$X/$K/link_in"
cp -p "$SRC/$K2/$CUBIN2" "$X/$K/link_other"
touch -r "$SMALL/$K" "$X/$K"
check_export "everything else is byte-exact, group files included" "$E" "$X" "$SMALL" "$BASE"
check_kept links "$S"

# A symlink checked and then opened by name could be led out of the source
# by a directory swapped between the two (RENAME_EXCHANGE): import resolves
# and opens in one step beneath the source.  Here every link points into a
# dir d that a racer keeps swapping with one outside, whose files are links
# to a secret.
echo "# --- a directory swapped under import's feet"
SRC=$T_TMP/src-swap
OUTSIDE=$T_TMP/outside-swap
fixture_copy triton-3.6-h200-small.tgz cA "$SRC"
K=$(kernel_key "$SRC" 1)
printf 'secret bytes that must never reach the store\n' >"$T_TMP/secret"
mkdir -p "$SRC/$K/d" "$OUTSIDE/d"
for i in $(seq 0 499); do
	echo "inside $i" >"$SRC/$K/d/t$i"
	ln -s "d/t$i" "$SRC/$K/l$i"
	ln -s "$T_TMP/secret" "$OUTSIDE/d/t$i"
done
python3 "$(dirname "$0")/swap_dirs.py" "$SRC/$K/d" "$OUTSIDE/d" &
racer=$!
at_exit "kill $racer"
leaked=0
for round in 1 2 3 4; do
	S=$T_TMP/store-swap-$round
	tcfs import --store "$S" "$SRC"
	cat "$ERR" >>"$T_TMP/swap.err"
	stored "$T_TMP/secret" && leaked=$((leaked + 1))
done
kill "$racer" 2>/dev/null
wait "$racer" 2>/dev/null
check_eq "4 imports racing a swapped dir never store a file from outside the source" \
	0 "$leaked"
check_grep "the links that led out while swapped are skipped with a message" \
	"$K/(d/t|l)[0-9]+: .*(out of the source|skipped)" "$T_TMP/swap.err"

# === temp entries and foreign top-level entries =====================================

echo "# --- temp entries of unfinished writes, and entries that are not key dirs"
new_store store-temp
SRC=$T_TMP/src-temp
fixture_copy triton-3.6-h200-small.tgz cA "$SRC"
K=$(kernel_key "$SRC" 3)
K2=$(kernel_key "$SRC" 4)
mkdir "$SRC/$K/tmp.pid_123_abc"
printf 'temp entry: a file in a tmp.pid dir\n' >"$SRC/$K/tmp.pid_123_abc/x.cubin"
META=$(meta_file "$SRC/$K")
printf 'temp entry: a FILE.tmp.pid file\n' >"$SRC/$K/$META.tmp.pid_1_x"
mkdir -p "$SRC/tmp.xyz/$K2"
printf 'temp entry: under a top-level tmp dir\n' >"$SRC/tmp.xyz/$K2/y.cubin"
mkdir "$SRC/notakey"
printf 'not a key dir\n' >"$SRC/notakey/f"
printf 'a README at the top\n' >"$SRC/README"
touch -r "$SMALL/$K" "$SRC/$K"	# the key dir's mtime is checked too
tcfs import --store "$S" "$SRC"
check_rc "import with temp entries and foreign entries exits 0" 0
check_grep "notakey/ is skipped with a message naming it" "/notakey: .*not a Triton key dir" "$ERR"
check_grep "README is skipped with a message naming it" "/README: .*not a Triton key dir" "$ERR"
E=$T_TMP/export-temp
tcfs export --quiet --store "$S" "$E"
check_rc "export afterwards exits 0" 0
check_export "the store holds exactly the fixture: no temp entry, no foreign entry" \
	"$E" "$SMALL" "$BASE"
leaked=
for f in "$SRC/$K/tmp.pid_123_abc/x.cubin" "$SRC/$K/$META.tmp.pid_1_x" \
	"$SRC/tmp.xyz/$K2/y.cubin" "$SRC/notakey/f" "$SRC/README"; do
	stored "$f" && leaked="$leaked ${f#"$SRC"/}"
done
check_eq "the bytes of the skipped entries are not in the store" "" "$leaked"
check_eq "info files == earlier files + the fixture's" $((BASE_FILES + SMALL_FILES)) \
	"$(info_field "$S" files)"
check_kept temp "$S"

# === full disk =====================================================================

echo "# --- a full disk"
M=$T_TMP/tmpfs
mkdir -p "$M"
if ! is_root; then
	skip "import onto a full disk" "needs root to mount a tmpfs"
elif ! mount -t tmpfs -o size=12m tmpfs "$M" 2>"$T_TMP/mount.err"; then
	skip "import onto a full disk" "cannot mount a tmpfs: $(head -1 "$T_TMP/mount.err")"
else
	at_exit "umount '$M'"
	new_store tmpfs/store
	BIGFILES=$(find "$BIG" -type f | wc -l)
	tcfs import --store "$S" "$BIG"
	check_rc "import of big into a 12 MiB tmpfs (8 MiB of it left to the index) exits 1" 1
	check_grep "stderr says 'No space left on device'" "No space left on device" "$ERR"
	tcfs fsck --store "$S"
	check_rc "fsck of the full store exits 0 (consistent)" 0
	INFO=$(info_json "$S")
	RC=$?
	check_rc "info of the full store exits 0" 0
	NK=$(json_get "$INFO" kernels)
	NBASE=$(find "$BASE" -name '__grp__*.json' | wc -l)
	check_num "the store kept some kernels of big ($((NK - NBASE)))" "$NK" -gt "$NBASE"
	E=$T_TMP/export-full
	tcfs export --quiet --store "$S" "$E"
	check_rc "export of the full store exits 0" 0
	check_eq "it exports as many kernels as info reports" "$NK" \
		"$(find "$E" -name '__grp__*.json' | wc -l)"
	check_export "every key dir it exports is whole and byte-exact" --subset \
		"$E" "$BIG" "$BASE"
	check_kept full "$S"
	check_eq "no leftovers in STORE/staging" "" "$(ls -A "$S/staging")"
	if mount -o remount,size=64m "$M"; then
		tcfs import --store "$S" "$BIG"
		check_rc "after growing the tmpfs to 64 MiB, importing again exits 0" 0
		check_eq "the store then holds all of big: files $BIGFILES (+ earlier $BASE_FILES)" \
			$((BIGFILES + BASE_FILES)) "$(info_field "$S" files)"
		rm -rf "$E"
		tcfs export --quiet --store "$S" "$E"
		check_export "and exports all of it byte-exact" "$E" "$BIG" "$BASE"
		tcfs fsck --store "$S"
		check_rc "fsck exits 0" 0
	else
		skip "import after growing the tmpfs" "mount -o remount failed"
	fi
fi

# === the mount on a full disk ======================================================

# Blobs leave the last 8 MiB of the file system to the index (cas.c), so a
# full disk fails writes with ENOSPC and the mount goes on serving: the
# batch of changes it has not committed yet (db.h) is never lost.
echo "# --- the mount on a full disk"
M2=$T_TMP/tmpfs-mount
MNT=$T_TMP/full-mnt
mkdir -p "$M2" "$MNT"
if ! is_root; then
	skip "the mount on a full disk" "needs root to mount a tmpfs"
elif [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip "the mount on a full disk" "no /dev/fuse"
elif ! mount -t tmpfs -o size=12m tmpfs "$M2" 2>"$T_TMP/mount.err"; then
	skip "the mount on a full disk" "cannot mount a tmpfs: $(head -1 "$T_TMP/mount.err")"
else
	at_exit "umount '$M2'"
	at_exit "fusermount3 -uz '$MNT'"
	S=$M2/store
	tcfs mount --store "$S" "$MNT"
	check_rc "mount a store on a 12 MiB tmpfs" 0
	pid=$(daemon_pid "$S")
	run timeout 120 python3 "$REPLAY/replay.py" --landed "$T_TMP/landed-full" "$BIG" "$MNT"
	check_rc "a cold replay of big (20 MiB) into it fails" 1
	check_grep "with 'No space left on device'" "No space left on device" "$ERR"
	check "the daemon is still running" kill -0 "$pid"
	out=$(check_landed "$BIG" "$MNT" "$T_TMP/landed-full")
	read -r nlanded nlost <<<"$(sed -n 1p <<<"$out")"
	check_num "some files landed ($nlanded)" "${nlanded:-0}" -gt 0
	check_eq "every file that landed reads back byte-exact from the full mount" 0 "${nlost:-x}"
	[ "${nlost:-x}" = 0 ] || diag "$(sed 1d <<<"$out")"
	tcfs umount "$MNT"
	check_rc "tcfs umount of the full mount exits 0" 0
	tcfs fsck --store "$S"
	check_rc "fsck of the full store exits 0" 0
	if mount -o remount,size=64m "$M2"; then
		tcfs mount --store "$S" "$MNT"
		check_rc "mount it again" 0
		out=$(check_landed "$BIG" "$MNT" "$T_TMP/landed-full")
		check_eq "after a remount every file that landed is still there" \
			"$nlanded 0" "$(sed -n 1p <<<"$out")"
		[ "$(sed -n 1p <<<"$out")" = "$nlanded 0" ] || diag "$(sed 1d <<<"$out")"
		run timeout 120 python3 "$REPLAY/replay.py" "$BIG" "$MNT"
		check_rc "with room again, a replay completes the cache (exit 0)" 0
		tcfs umount "$MNT"
		tcfs fsck --store "$S"
		check_rc "fsck then exits 0" 0
	else
		skip "the mount after growing the tmpfs" "mount -o remount failed"
	fi
fi

# === a second writer ===============================================================

echo "# --- a second writer"
new_store store-lock
tcfs import --quiet --store "$S" "$SMALL"
BEFORE=$(info_numbers "$S")
flock "$S/lock" sleep 30 </dev/null >/dev/null 2>&1 &
HOLDER=$!
# (at exit only if the script did not get to kill it itself)
# shellcheck disable=SC2016 # expanded when the cleanup runs
at_exit '[ -n "$HOLDER" ] && kill $(pgrep -P "$HOLDER") "$HOLDER"'
held=0
for _ in $(seq 100); do
	if ! flock -n "$S/lock" true; then
		held=1
		break
	fi
	sleep 0.1
done
check_eq "flock(1) holds STORE/lock" 1 "$held"
for name in import gc "fsck --repair"; do
	read -r -a argv <<<"$name"
	[ "$name" = import ] && argv+=("$SMALL")
	t0=$(date +%s%N)
	tcfs "${argv[0]}" --wait 1 --store "$S" "${argv[@]:1}"
	ms=$((($(date +%s%N) - t0) / 1000000))
	check_rc "$name exits 1 while another process holds the writer lock" 1
	check_num "$name gives up within a few seconds (${ms} ms)" "$ms" -lt 5000
	check_grep "$name says the store is in use by another writer" \
		"in use by another writer" "$ERR"
done
tcfs info --store "$S"
check_rc "info (a reader) works meanwhile" 0
tcfs fsck --store "$S"
check_rc "fsck without --repair (a reader) works meanwhile" 0
tcfs export --quiet --store "$S" "$T_TMP/export-lock"
check_rc "export (a reader) works meanwhile" 0
# flock(1) runs sleep as its child, which holds the lock too: kill both.
kill $(pgrep -P "$HOLDER") "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
HOLDER=
check_eq "the store is unchanged" "$BEFORE" "$(info_numbers "$S")"
tcfs import --wait 5 --store "$S" "$SMALL"
check_rc "once the holder is gone, import exits 0" 0
check_kept lock "$S" "$SMALL"

# === a corrupted index.db ============================================================

echo "# --- a corrupted index.db"
new_store store-index
tcfs import --quiet --store "$S" "$SMALL"
BEFORE=$(info_numbers "$S")
cp "$S/index.db" "$T_TMP/index.db.good"
list_objects() {
	find "$S/objects" -type f -printf '%P %s\n' | sort
}
list_objects >"$T_TMP/objects.before"

# index_case LABEL PATTERN: info, import, fsck, gc and export all exit 1
# with a message naming index.db (and matching PATTERN); objects/ and
# index.db are left exactly as they were.
index_case() {
	local label=$1 pat=$2 cmd
	cp "$S/index.db" "$T_TMP/index.db.bad"
	for cmd in info "import $SMALL" fsck "fsck --repair" gc \
		"export $T_TMP/export-index"; do
		read -r -a argv <<<"$cmd"
		tcfs "${argv[0]}" --store "$S" "${argv[@]:1}"
		cmd=${cmd%% /*}
		if [ "$RC" = 1 ] && grep -q "$S/index.db: .*$pat" "$ERR"; then
			ok "$label: $cmd exits 1 and stderr names index.db"
		else
			not_ok "$label: $cmd exits 1 and stderr names index.db"
			show_run
		fi
	done
	check_eq "$label: every blob is still in objects/" \
		"$(cat "$T_TMP/objects.before")" "$(list_objects)"
	if cmp -s "$S/index.db" "$T_TMP/index.db.bad"; then
		ok "$label: index.db is byte for byte what it was (not rewritten)"
	else
		not_ok "$label: index.db is byte for byte what it was (not rewritten)"
	fi
}

python3 -c '
import random, sys
r = random.Random(20261121)
sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(65536)))
' >"$S/index.db"
index_case "random bytes" "not a database"

head -c $(($(stat -c %s "$T_TMP/index.db.good") / 2)) "$T_TMP/index.db.good" >"$S/index.db"
index_case "truncated to half" ""

cp "$T_TMP/index.db.good" "$S/index.db"
sqlite3 "$S/index.db" 'PRAGMA user_version=99;'
index_case "user_version 99" "newer tcfs"
check_eq "user_version 99: index.db still says 99" 99 \
	"$(sqlite3 "$S/index.db" 'PRAGMA user_version;')"

# An index.db emptied (truncated to 0 bytes) looks like a brand-new SQLite
# file; tcfs must still not take a store whose objects/ holds blobs for an
# empty one.
: >"$S/index.db"
tcfs info --store "$S"
if [ "$RC" = 1 ] && grep -q "index.db" "$ERR"; then
	ok "empty index.db: info exits 1 naming index.db"
else
	not_ok "empty index.db: info exits 1 naming index.db"
	show_run
fi
check_eq "empty index.db: info (a reader) leaves it empty" 0 "$(stat -c %s "$S/index.db")"
: >"$S/index.db"
tcfs fsck --store "$S"
check_rc "empty index.db: fsck exits 1" 1
: >"$S/index.db"
tcfs gc --store "$S"
check_eq "empty index.db: gc deletes no blob (of $(wc -l <"$T_TMP/objects.before"))" \
	"$(wc -l <"$T_TMP/objects.before")" "$(list_objects | wc -l)"
# Restore the good index; re-importing would heal any blob lost above.
cp "$T_TMP/index.db.good" "$S/index.db"
tcfs import --quiet --store "$S" "$BASE" "$SMALL"

cp "$T_TMP/index.db.good" "$S/index.db"
check_eq "with the good index.db back, the store is as before" "$BEFORE" "$(info_numbers "$S")"
check_kept index "$S" "$SMALL"

# === a damaged blob at export time ====================================================

echo "# --- a damaged blob at export time"
new_store store-damaged
tcfs import --quiet --store "$S" "$SMALL"
K=$(kernel_key "$SMALL" 5)
CUBIN=$(one_file "$SMALL/$K" '*.cubin')
flip_byte "$(blob_path "$S" "$SMALL/$K/$CUBIN")" 64
E=$T_TMP/export-damaged
tcfs export --store "$S" "$E"
check_rc "export with a damaged cubin blob exits 1" 1
check_grep "stderr names $K/$CUBIN and says it is damaged" "$K/$CUBIN: .*damaged" "$ERR"
if [ -d "$E/$K" ] && [ -z "$(find "$E/$K" -name '__grp__*.json')" ]; then
	ok "that kernel's dir in DEST has no group file (Triton recompiles it)"
else
	not_ok "that kernel's dir in DEST has no group file (Triton recompiles it)"
	diag "$(ls -la "$E/$K" 2>&1)"
fi
if [ ! -e "$E/$K/$CUBIN" ]; then
	ok "the damaged cubin is not written to DEST"
else
	not_ok "the damaged cubin is not written to DEST"
fi
check_eq "no temp files are left in DEST" "" "$(find "$E" -name 'tmp.*')"
check_export "every other kernel is exported byte-exact" "$E" "$SMALL" "$BASE" -- "$K"

# === a hostile export destination =====================================================

# Export never writes through a symlink under DEST: not one planted at the
# temp names it writes (they are random and created exclusively), nor one
# in place of a key dir or a file (refused, with a message naming it).
echo "# --- symlinks planted in an export destination"
S=$T_TMP/store-damaged	# holds BASE and cA; one cubin damaged
E=$T_TMP/export-planted
rm -rf "$E"
tcfs export --quiet --store "$S" "$E"
K=$(kernel_key "$SMALL" 2)
VICTIM=$T_TMP/victim
mkdir -p "$VICTIM"
# Export's temp names were tmp.pid_PID_tcfsN, N counting from 0: plant
# links at those of the pid the export will have (exec keeps the shell's).
run bash -c 'for k in "$1"/*/; do
		for n in $(seq 0 400); do
			ln -s "$2/v$n" "$k/tmp.pid_$$_tcfs$n"
		done
	done
	exec "$3" export --quiet --store "$4" "$1"' _ "$E" "$VICTIM" "$TCFS" "$S"
check_eq "no file outside DEST is written through a planted temp-name link" "" \
	"$(ls -A "$VICTIM")"
check_eq "no exported file is a symlink" "" \
	"$(find "$E" -type l ! -name 'tmp.pid_*' | head -3)"
find "$E" -type l -name 'tmp.pid_*' -delete
tcfs export --quiet --store "$S" "$E"	# the key dirs' mtimes again
check_export "and every kernel but the damaged one exports byte-exact" "$E" "$SMALL" "$BASE" \
	-- "$(kernel_key "$SMALL" 5)"
printf 'precious\n' >"$VICTIM/precious"
chmod 600 "$VICTIM/precious"
CUBIN=$(one_file "$E/$K" '*.cubin')
rm "$E/$K/$CUBIN"
ln -s "$VICTIM/precious" "$E/$K/$CUBIN"
K3=$(kernel_key "$SMALL" 3)
mv "$E/$K3" "$VICTIM/$K3"
ln -s "$VICTIM/$K3" "$E/$K3"
touch -d '2001-01-01' "$VICTIM/$K3"/*
tcfs export --store "$S" "$E"
check_rc "export into a DEST with a file and a key dir replaced by symlinks exits 1" 1
check_grep "it names the file that is a symlink" "$E/$K/$CUBIN: is a symlink" "$ERR"
check_grep "it names the key dir that is a symlink" "$E/$K3: is a symlink" "$ERR"
check_eq "the symlinked file's target is untouched" "precious 600" \
	"$(cat "$VICTIM/precious") $(stat -c %a "$VICTIM/precious")"
check_eq "nothing is written into the symlinked key dir's target" "" \
	"$(find "$VICTIM/$K3" -newer "$VICTIM/precious")"
check "the symlinks are left as they were" test -L "$E/$K/$CUBIN" -a -L "$E/$K3"

# Modes that make sense on no shared cache (setuid, setgid, sticky,
# world-writable) are dropped on the way in and on the way out.
echo "# --- setuid, setgid and world-writable modes"
SRC=$T_TMP/src-modes
fixture_copy triton-3.6-h200-small.tgz cA "$SRC"
K=$(kernel_key "$SRC" 1)
CUBIN=$(one_file "$SRC/$K" '*.cubin')
chmod 6777 "$SRC/$K/$CUBIN"
chmod 3777 "$SRC/$K"
S=$T_TMP/store-modes
tcfs import --quiet --store "$S" "$SRC"
check_rc "import of a key dir with setuid, setgid, sticky and o+w modes exits 0" 0
E=$T_TMP/export-modes
tcfs export --quiet --store "$S" "$E"
check_eq "export drops setuid, setgid and o+w from the file (6777 -> 775)" 775 \
	"$(stat -c %a "$E/$K/$CUBIN")"
check_eq "and setgid, sticky and o+w from the key dir (3777 -> 775)" 775 \
	"$(stat -c %a "$E/$K")"

# === malformed JSON ===================================================================

echo "# --- malformed JSON in key dirs"
new_store store-json
SRC=$T_TMP/src-json
fixture_copy triton-3.6-h200-small.tgz cA "$SRC"
K1=$(kernel_key "$SRC" 6)
K2=$(kernel_key "$SRC" 7)
K3=$(kernel_key "$SRC" 8)
M1=$(meta_file "$SRC/$K1")
G2=$(one_file "$SRC/$K2" '__grp__*.json')
G3=$(one_file "$SRC/$K3" '__grp__*.json')
printf '{"name": "not json, cut off' >"$SRC/$K1/$M1"
N2=${G2#__grp__}
N2=${N2%.json}
printf '{"child_paths": ["%s", "%s"]}' "$N2.cubin" "$N2.json" >"$SRC/$K2/$G2"
printf 'not JSON at all\n' >"$SRC/$K3/$G3"
tcfs import --store "$S" "$SRC"
check_rc "import with malformed metadata and group files exits 0" 0
E=$T_TMP/export-json
tcfs export --quiet --store "$S" "$E"
check_rc "export afterwards exits 0" 0
for what in "metadata that is not JSON:$K1/$M1" \
	"a group file in Triton's Redis format:$K2/$G2" \
	"a group file that is not JSON:$K3/$G3"; do
	f=${what#*:}
	if cmp -s "$SRC/$f" "$E/$f"; then
		ok "${what%%:*} is exported byte for byte"
	else
		not_ok "${what%%:*} is exported byte for byte"
	fi
done
bad=
for k in "$K2" "$K3"; do
	diff -r "$SRC/$k" "$E/$k" >/dev/null || bad="$bad $k"
done
check_eq "the key dirs with raw group files are byte-identical to the source" "" "$bad"
check_export "every other key dir is byte-exact" "$E" "$SRC" "$BASE" -- "$K2" "$K3"
check_kept json "$S"
