#!/bin/bash
# tcfs's command line: help, version, usage errors, a missing store, and
# where the store is when --store is not given.
. "$(dirname "$0")/lib.sh"

CMDS="import export info fsck gc config"

# --- help and version -------------------------------------------------------

tcfs --help
if [ "$RC" = 0 ] && grep -q '^Usage: tcfs \[--store DIR\] COMMAND' "$OUT"; then
	ok "tcfs --help exits 0 and prints Usage on stdout"
else
	not_ok "tcfs --help exits 0 and prints Usage on stdout"
	show_run
fi
missing=
for c in $CMDS; do
	grep -Eq "^  $c " "$OUT" || missing="$missing $c"
done
check_eq "tcfs --help lists every command ($CMDS)" "" "$missing"

for c in $CMDS; do
	tcfs "$c" --help
	if [ "$RC" = 0 ] && grep -q "^Usage: tcfs $c " "$OUT" &&
		grep -q -- '--help' "$OUT" && [ ! -s "$ERR" ]; then
		ok "tcfs $c --help exits 0 and prints its Usage on stdout"
	else
		not_ok "tcfs $c --help exits 0 and prints its Usage on stdout"
		show_run
	fi
	tcfs "$c" -h
	if [ "$RC" = 0 ] && grep -q "^Usage: tcfs $c " "$OUT"; then
		ok "tcfs $c -h is the same help"
	else
		not_ok "tcfs $c -h is the same help"
		show_run
	fi
done

tcfs --version
if [ "$RC" = 0 ] && grep -Eq '^tcfs [0-9]+\.[0-9]+\.[0-9]+' "$OUT"; then
	ok "tcfs --version exits 0 and prints 'tcfs X.Y.Z' ($(head -1 "$OUT"))"
else
	not_ok "tcfs --version exits 0 and prints 'tcfs X.Y.Z'"
	show_run
fi

# --- usage errors: exit 2 with a message on stderr ----------------------------

tcfs
if [ "$RC" = 2 ] && grep -q '^Usage:' "$ERR" && [ ! -s "$OUT" ]; then
	ok "tcfs without a command exits 2 with the usage on stderr"
else
	not_ok "tcfs without a command exits 2 with the usage on stderr"
	show_run
fi

tcfs frobnicate
if [ "$RC" = 2 ] && grep -q "frobnicate" "$ERR" && [ ! -s "$OUT" ]; then
	ok "an unknown command exits 2 and stderr names it"
else
	not_ok "an unknown command exits 2 and stderr names it"
	show_run
fi

for c in $CMDS; do
	tcfs "$c" --no-such-option
	if [ "$RC" = 2 ] && [ -s "$ERR" ] && grep -q "tcfs $c" "$ERR" &&
		[ ! -s "$OUT" ]; then
		ok "tcfs $c --no-such-option exits 2 with a message on stderr"
	else
		not_ok "tcfs $c --no-such-option exits 2 with a message on stderr"
		show_run
	fi
done

tcfs import --store "$T_TMP/never"
if [ "$RC" = 2 ] && grep -q "no source" "$ERR" && [ ! -e "$T_TMP/never" ]; then
	ok "import without a source exits 2, says so, creates no store"
else
	not_ok "import without a source exits 2, says so, creates no store"
	show_run
fi

tcfs export --store "$T_TMP/never"
if [ "$RC" = 2 ] && grep -q "destination" "$ERR"; then
	ok "export without DEST exits 2 and says a destination is needed"
else
	not_ok "export without DEST exits 2 and says a destination is needed"
	show_run
fi

tcfs import --wait soon --store "$T_TMP/never" "$T_TMP"
if [ "$RC" = 2 ] && grep -q "soon" "$ERR" && [ ! -e "$T_TMP/never" ]; then
	ok "import --wait with a non-number exits 2 naming the bad value"
else
	not_ok "import --wait with a non-number exits 2 naming the bad value"
	show_run
fi

for bad in sync-every=0 sync-every=-1 sync-every=soon busy-poll=-1 \
	busy-poll=1000001 busy-poll=fast busy-poll=1.5; do
	opt=${bad%%=*} v=${bad#*=}
	tcfs mount "--$opt" "$v" --store "$T_TMP/never" "$T_TMP"
	if [ "$RC" = 2 ] && grep -q -- "--$opt: '$v'" "$ERR" &&
		[ ! -e "$T_TMP/never" ]; then
		ok "mount --$opt $v exits 2 naming the bad value, creates no store"
	else
		not_ok "mount --$opt $v exits 2 naming the bad value, creates no store"
		show_run
	fi
done

for bad in "nope" "log-max-events 0" "log-max-events many" "log-max-age 5y" \
	"log-max-age -1d" "--unset" "log-max-age 1d extra"; do
	# shellcheck disable=SC2086 # the words are the arguments
	tcfs config --store "$T_TMP/never" $bad
	if [ "$RC" = 2 ] && grep -q "tcfs config: " "$ERR" && [ ! -e "$T_TMP/never" ]; then
		ok "config $bad exits 2 with a message, creates no store"
	else
		not_ok "config $bad exits 2 with a message, creates no store"
		show_run
	fi
done

tcfs info --store "$T_TMP/never" extra
if [ "$RC" = 2 ] && grep -q "extra" "$ERR"; then
	ok "info with a stray argument exits 2 naming it"
else
	not_ok "info with a stray argument exits 2 naming it"
	show_run
fi

# --- a store that is not there: exit 1 naming it -------------------------------

for c in info fsck gc config; do
	tcfs "$c" --store "$T_TMP/nonexistent-store"
	if [ "$RC" = 1 ] && grep -q "$T_TMP/nonexistent-store" "$ERR" &&
		[ ! -e "$T_TMP/nonexistent-store" ]; then
		ok "$c on a nonexistent --store exits 1, names the dir, creates nothing"
	else
		not_ok "$c on a nonexistent --store exits 1, names the dir, creates nothing"
		show_run
	fi
done

tcfs export --store "$T_TMP/nonexistent-store" "$T_TMP/nowhere"
if [ "$RC" = 1 ] && grep -q "$T_TMP/nonexistent-store" "$ERR"; then
	ok "export from a nonexistent --store exits 1 and names the dir"
else
	not_ok "export from a nonexistent --store exits 1 and names the dir"
	show_run
fi

# One of a thing is not "1 things": a store of one file in one key dir.
KEY1=$(printf '%064d' 1)
mkdir -p "$T_TMP/one-src/$KEY1" && printf 'x' >"$T_TMP/one-src/$KEY1/f"
tcfs import --store "$T_TMP/one" "$T_TMP/one-src"
tcfs info --store "$T_TMP/one"
check_grep "info on a store of one blob says 'in 1 blob'" \
	'^stored size +1 B \(1 byte\) in 1 blob$' "$OUT"
check_grep "and of one dir 'in 1 directory'" \
	'^files +1 in 1 directory$' "$OUT"
mkdir -p "$T_TMP/none-src"
tcfs import --store "$T_TMP/none" "$T_TMP/none-src"
tcfs info --store "$T_TMP/none"
check_grep "and of none 'in 0 blobs', 'in 0 directories'" \
	'^files +0 in 0 directories$' "$OUT"
check_grep_fixed "(the blobs)" " in 0 blobs" "$OUT"
tcfs fsck --store "$T_TMP/one"
check_eq "fsck of one file in one blob says so" \
	"checked 1 blob and 1 file: 0 problems, 0 repaired" "$(cat "$OUT")"
ONEBLOB=$(find "$T_TMP/one/objects" -type f)
mv "$ONEBLOB" "$T_TMP/one-blob"
tcfs fsck --store "$T_TMP/one"
check_grep "and of its blob gone '1 problem'" \
	'^checked 0 blobs and 1 file: 1 problem, 0 repaired$' "$OUT"
mv "$T_TMP/one-blob" "$ONEBLOB"
tcfs import --store "$T_TMP/orphan" "$T_TMP/one-src"
sqlite3 "$T_TMP/orphan/index.db" "DELETE FROM nodes WHERE kind = 'f'"
tcfs fsck --store "$T_TMP/orphan"
check_grep_fixed "fsck of one orphan blob: '1 unreferenced blob', 'removes it'" \
	"1 unreferenced blob (1 B): tcfs gc removes it" "$OUT"
tcfs gc --store "$T_TMP/orphan"
check_eq "gc of it: 'removed 1 unreferenced blob', '0 blobs in use'" \
	"removed 1 unreferenced blob, freed 1 B; 0 blobs (0 B) in use" \
	"$(cat "$OUT")"

# A store only ever mounted holds the empty blob, which the mount puts
# and every file it creates names: fsck, gc and info all count it in
# use, and gc keeps it.
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	mkdir -p "$T_TMP/mounted-mnt"
	at_exit "fusermount3 -uz '$T_TMP/mounted-mnt'"
	tcfs mount --store "$T_TMP/mounted" "$T_TMP/mounted-mnt"
	check_rc "a new store mounts" 0
	tcfs umount "$T_TMP/mounted-mnt"
	tcfs fsck --store "$T_TMP/mounted"
	check_eq "fsck of a store only mounted finds no unreferenced blob" \
		"checked 1 blob and 0 files: 0 problems, 0 repaired" \
		"$(cat "$OUT")"
	tcfs gc --store "$T_TMP/mounted"
	check_eq "gc keeps its empty blob, in use" \
		"removed 0 unreferenced blobs, freed 0 B; 1 blob (0 B) in use" \
		"$(cat "$OUT")"
	tcfs info --store "$T_TMP/mounted"
	check_grep "info counts it as gc does" \
		'^stored size +0 B \(0 bytes\) in 1 blob$' "$OUT"
else
	skip "fsck, gc and info of a store only mounted" "no /dev/fuse"
fi

mkdir -p "$T_TMP/empty-dir"
tcfs info --store "$T_TMP/empty-dir"
if [ "$RC" = 1 ] && grep -q "$T_TMP/empty-dir" "$ERR" &&
	[ -z "$(ls -A "$T_TMP/empty-dir")" ]; then
	ok "info on a directory that is not a store exits 1, names it, writes nothing"
else
	not_ok "info on a directory that is not a store exits 1, names it, writes nothing"
	show_run
fi

# --- the default store: $TCFS_STORE, else $XDG_DATA_HOME/tcfs, else ~ ---------

SRC=$(fixture_top triton-3.6-h200-small.tgz cA) || {
	echo "Bail out! cannot extract triton-3.6-h200-small.tgz"
	exit 1
}
NFILES=$(find "$SRC" -type f | wc -l)

# default_store_case DESC EXPECTED_STORE ENV...: imports SRC with no --store
# under exactly the environment ENV (plus PATH), then checks that the store
# is EXPECTED_STORE, mode 0700, holding every file, and that info (also
# without --store) finds it.
default_store_case() {
	local desc=$1 want=$2
	shift 2
	run env -i PATH="$PATH" "$@" "$TCFS" import --quiet "$SRC"
	if [ "$RC" = 0 ] && [ -f "$want/index.db" ] && [ -d "$want/objects" ]; then
		ok "$desc: import without --store creates ${want#"$T_TMP"/}"
	else
		not_ok "$desc: import without --store creates ${want#"$T_TMP"/}"
		show_run
	fi
	check_eq "$desc: the store dir is created with mode 0700" \
		700 "$(stat -c %a "$want" 2>/dev/null)"
	run env -i PATH="$PATH" "$@" "$TCFS" info --json
	local files
	files=$(json_get "$OUT" files)
	if [ "$RC" = 0 ] && [ "$files" = "$NFILES" ] &&
		[ "$(json_get "$OUT" store)" = "$want" ]; then
		ok "$desc: info without --store reads that store ($NFILES files)"
	else
		not_ok "$desc: info without --store reads that store ($NFILES files)"
		show_run
	fi
}

H=$T_TMP/home
X=$T_TMP/xdg
mkdir -p "$H" "$X"

default_store_case "TCFS_STORE" "$T_TMP/ts/store" \
	TCFS_STORE="$T_TMP/ts/store" XDG_DATA_HOME="$X" HOME="$H"
if [ ! -e "$X/tcfs" ] && [ ! -e "$H/.local/share/tcfs" ]; then
	ok "TCFS_STORE wins over XDG_DATA_HOME and HOME (nothing created there)"
else
	not_ok "TCFS_STORE wins over XDG_DATA_HOME and HOME (nothing created there)"
fi

default_store_case "XDG_DATA_HOME" "$X/tcfs" XDG_DATA_HOME="$X" HOME="$H"
if [ ! -e "$H/.local/share/tcfs" ]; then
	ok "XDG_DATA_HOME wins over HOME (nothing created under HOME)"
else
	not_ok "XDG_DATA_HOME wins over HOME (nothing created under HOME)"
fi

default_store_case "HOME" "$H/.local/share/tcfs" HOME="$H"

run env -i PATH="$PATH" "$TCFS" info
if [ "$RC" = 1 ] && [ -s "$ERR" ]; then
	ok "with no --store, TCFS_STORE, XDG_DATA_HOME or HOME, info exits 1 with a message"
else
	not_ok "with no --store, TCFS_STORE, XDG_DATA_HOME or HOME, info exits 1 with a message"
	show_run
fi

# --store beats the environment.
run env TCFS_STORE="$T_TMP/ts/store" "$TCFS" import --quiet \
	--store "$T_TMP/explicit" "$SRC"
if [ "$RC" = 0 ] && [ -f "$T_TMP/explicit/index.db" ]; then
	ok "--store DIR wins over TCFS_STORE"
else
	not_ok "--store DIR wins over TCFS_STORE"
	show_run
fi

tcfs help import
if [ "$RC" = 0 ] && grep -q '^Usage: tcfs import' "$OUT"; then
	ok "tcfs help import prints import's help"
else
	not_ok "tcfs help import prints import's help"
	show_run
fi
