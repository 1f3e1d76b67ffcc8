#!/usr/bin/env bash
# tcfs unpack and pack where an image, a store or other writers could lead
# them astray: OCI whiteouts that remove what lower layers put and nothing
# else, links in a cache landed as files or left out (and said so), pack
# never writing an image its own unpack refuses, and an unpack through a
# mount racing Triton's writers of the same kernels: it fails or succeeds
# without ever removing what the writers landed.  (pack.sh refuses every
# hostile image kind of oci_gen.py; this is what takes more than one.)
. "$(dirname "$0")/lib.sh"

GEN=$(dirname "$0")/oci_gen.py
require_cmds skopeo umoci
export TMPDIR=$T_TMP/tmp
mkdir -p "$TMPDIR"
export TCFS_GPUS=

SMALL=$(fixture_top triton-3.6-h200-small.tgz cA) || exit 1
BIG=$(fixture_top triton-3.6-multitarget.tgz big) || exit 1
I=$T_TMP/img
have_fuse=0
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null && have_fuse=1

kernels_of() {
	info_field "$1" kernels
}
# Every group file under DIR names children that are there: no half kernel.
whole_kernels() {
	python3 - "$1" <<'EOF'
import glob, json, os, sys
bad = 0
for g in glob.glob(os.path.join(sys.argv[1], "*", "__grp__*.json")):
    try:
        paths = json.load(open(g))["child_paths"].values()
    except (OSError, ValueError, KeyError):
        bad += 1
        continue
    bad += any(not os.path.isfile(p) for p in paths)
print(bad)
EOF
}

# foreign_errors REPLAY_JSON: the replay's errors but a read that found
# no file: a reader may hit one of unpack's kernels (or files of it that
# no writer has replaced yet) just before the rollback takes it back.
# What the writers landed is checked apart: every file of it stays.
foreign_errors() {
	python3 - "$1" <<'EOF'
import json, sys
for p in json.load(open(sys.argv[1]))["procs"]:
    for e in p["errors"]:
        if "[Errno 2] No such file" not in e and "listed but missing" not in e:
            print(e)
EOF
}

# --- whiteouts: lower layers only -------------------------------------------
read -r key key2 < <(python3 "$GEN" layered "$SMALL" "$I-layered")
tcfs unpack --store "$T_TMP/s-layered" "$I-layered"
check_rc "an image of two layers with whiteouts unpacks" 0
run "$TCFS" export -q --store "$T_TMP/s-layered" "$T_TMP/e-layered"
E=$T_TMP/e-layered
check "a whiteout removes a lower layer's file" test ! -e "$E/$key/stale.bin"
check_eq "... but never its own layer's, even written before it" "new" \
	"$(cat "$E/$key/new.bin" 2>/dev/null)"
check "an opaque whiteout empties the lower layer's dir" \
	test ! -e "$E/$key2/junk.bin"
check_eq "... and keeps all its own layer put there, before it too" \
	"$(ls "$SMALL/$key2")" "$(ls "$E/$key2")"
tcfs import -q --store "$T_TMP/s-small" "$SMALL"
check_eq "every other kernel is there" "$(kernels_of "$T_TMP/s-small")" \
	"$(kernels_of "$T_TMP/s-layered")"

# --- entries that hold no bytes still cost ----------------------------------
# A small layer can hold millions of empty files (inodes, memory); each
# entry counts a tar header's 512 bytes against --max-size.
E0=$T_TMP/empties/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
mkdir -p "$E0"
(cd "$E0" && seq 5000 | xargs touch)
run python3 "$GEN" cache --variant compat "$T_TMP/empties" "$I-empties"
tcfs unpack --store "$T_TMP/s-empties" --max-size 1M "$I-empties"
check_rc "5000 empty files past --max-size 1M: refused" 1
check_grep "... as a possible bomb" "limit on unpacked bytes" "$ERR"
tcfs unpack --store "$T_TMP/s-empties" --max-size 4M "$I-empties"
check_rc "... and taken within 4M" 0

# --- links in a store: pack and unpack agree --------------------------------
# A store holding links of every kind, made through a mount as a user would.
SL=$T_TMP/s-links
tcfs import -q --store "$SL" "$SMALL"
k=$(ls "$SMALL" | sed -n 1p)
bin=$(cd "$SMALL/$k" && ls ./*.cubin | sed -n 1p)
bin=${bin#./}
if [ "$have_fuse" = 1 ]; then
	ML=$T_TMP/m-links
	mkdir -p "$ML"
	at_exit "fusermount3 -uz '$ML'"
	tcfs mount --store "$SL" "$ML"
	ln -s /etc/passwd "$ML/$k/evil.cubin" &&
		ln -s "../$(ls "$SMALL" | sed -n 2p)/x.cubin" "$ML/$k/up.cubin" &&
		ln -s "$bin" "$ML/$k/alias.cubin" &&
		ln -s nothere "$ML/$k/dangling.bin"
	check_rc "links made in the mount" 0
	tcfs umount "$ML"

	tcfs pack --store "$SL" --json "$I:links"
	check_rc "pack a store holding links that lead out" 0
	check_eq "... leaving those out" 2 "$(json_get "$OUT" links_left_out)"
	check_grep "... naming each" "$k/evil.cubin: a symlink to '/etc/passwd'.*left out" "$ERR"
	check_grep "... the one up too" "$k/up.cubin: a symlink" "$ERR"
	tcfs unpack --store "$T_TMP/s-links2" "$I:links"
	check_rc "its own unpack takes the image" 0
	check_grep "... saying which link it skipped" "dangling.bin" "$ERR"
	run "$TCFS" export -q --store "$T_TMP/s-links2" "$T_TMP/e-links"
	check "a link inside the cache lands as a file of its target's bytes" \
		cmp "$T_TMP/e-links/$k/alias.cubin" "$SMALL/$k/$bin"
	check "... and the links out are not there" \
		test ! -e "$T_TMP/e-links/$k/evil.cubin" -a ! -L "$T_TMP/e-links/$k/evil.cubin"

	# The same through a mount.
	SM=$T_TMP/s-links3
	MM=$T_TMP/m-links3
	tcfs import -q --store "$SM" "$BIG"
	mkdir -p "$MM"
	at_exit "fusermount3 -uz '$MM'"
	tcfs mount --store "$SM" "$MM"
	tcfs unpack --store "$SM" --json "$I:links"
	check_rc "unpack of the image through a mount" 0
	check "... a link inside the cache lands as a file, not a link" \
		test -f "$MM/$k/alias.cubin" -a ! -L "$MM/$k/alias.cubin"
	check "... of its target's bytes" cmp "$MM/$k/alias.cubin" "$SMALL/$k/$bin"
	check_grep "... and the dangling one is said to be skipped" \
		"dangling.bin: a symlink that leads to no file" "$ERR"
	check_eq "... no link at all in the mount" "" \
		"$(find "$MM" \( -path "$MM/by-*" -o -path "$MM/.tcfs" \) -prune -o -type l -print | sed -n 1p)"

	# A link chained out of the image, unpacked into the mount.
	python3 "$GEN" hostile link-chain-in-cache "$SMALL" "$T_TMP/h-chain" >/dev/null
	before=$(find "$MM" -path "$MM/by-*" -prune -o -print | wc -l)
	tcfs unpack --store "$SM" "$T_TMP/h-chain"
	check_rc "a link chained out of the image, into a mount: refused" 1
	check_grep "... naming the link" "x.cubin' -> '../x/etc/passwd'" "$ERR"
	check_eq "... and the mount is as it was" "$before" \
		"$(find "$MM" -path "$MM/by-*" -prune -o -print | wc -l)"
	tcfs umount "$MM"
else
	skip "no /dev/fuse: links made through a mount"
fi

# --- an unpack racing Triton's writers --------------------------------------
# 8 processes land BIG's kernels through the mount while unpack lands the
# same ones.  An image that fails at its very end (a file under by-name/,
# which the mount refuses) makes unpack roll back all it landed; it must
# take back only its own files, never one a writer put there.
if [ "$have_fuse" = 1 ]; then
	tcfs import -q --store "$T_TMP/s-big" "$BIG"
	tcfs pack --store "$T_TMP/s-big" "$I:big"
	NBIG=$(kernels_of "$T_TMP/s-big")
	C=$T_TMP/failing
	cp -a "$BIG" "$C"
	mkdir -p "$C/by-name/x"
	echo x >"$C/by-name/x/f"
	run python3 "$GEN" cache --variant compat "$C" "$I-failing"
	check_rc "an image that fails while it lands" 0
	for round in 1 2 3; do
		for what in good failing; do
			S=$T_TMP/race-$what-$round
			M=$T_TMP/mr-$what-$round
			mkdir -p "$M"
			at_exit "fusermount3 -uz '$M'"
			run "$TCFS" mount --store "$S" "$M"
			img=$I:big
			[ "$what" = failing ] && img=$I-failing
			L=$T_TMP/landed-$what-$round
			python3 "$REPLAY/replay.py" --procs 8 --landed "$L" "$BIG" "$M" \
				>"$T_TMP/replay.json" 2>"$T_TMP/replay.err" &
			rp=$!
			tcfs unpack --store "$S" "$img"
			urc=$RC
			cp "$ERR" "$T_TMP/unpack.err"
			wait "$rp"
			rrc=$?
			if [ "$what" = good ]; then
				check_eq "round $round, good image: the 8 writers had no error" \
					0 "$rrc"
			else
				# A reader that hit one of unpack's kernels may see it
				# go with the rollback, as with a prune; none of the
				# writers' own may go.
				check_eq "round $round, failing image: the writers' only errors are reads of files taken back" \
					"" "$(foreign_errors "$T_TMP/replay.json")"
			fi
			if [ "$what" = good ]; then
				check_eq "... and unpack took the kernels there as there" \
					0 "$urc"
			else
				check_eq "... and unpack failed at the end" 1 "$urc"
				check_grep "... saying why" "by-name" "$T_TMP/unpack.err"
			fi
			check_eq "... no kernel is half there" 0 "$(whole_kernels "$M")"
			check_eq "... no temp dir or file of unpack's left" "" \
				"$(find "$M" -name 'tmp.pid_*' 2>/dev/null)"
			check_eq "... every file a writer landed is still there" 0 \
				"$(sort -u "$L" | while read -r f; do [ -f "$M/$f" ] || echo "$f"; done | wc -l)"
			diag "$(sort -u "$L" | wc -l) files landed by the writers"
			if [ "$what" = good ]; then
				check_eq "... every kernel is there" "$NBIG" \
					"$(find "$M" -mindepth 2 -maxdepth 2 -name '__grp__*.json' | wc -l)"
			fi
			run python3 "$REPLAY/replay.py" "$BIG" "$M"
			check_rc "... and a warm run reads back every byte" 0
			[ "$what" = good ] && check_eq "... all of them hits" 0 \
				"$(json_eval "$OUT" 'sum(p["seen"]["kernel"]["misses"] for p in d["procs"])' 2>/dev/null || echo "?")"
			tcfs umount "$M"
			run "$TCFS" fsck --store "$S"
			check_rc "... and the store checks clean" 0
		done
	done
else
	skip "no /dev/fuse: unpack racing writers through a mount"
fi
