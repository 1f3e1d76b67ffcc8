#!/bin/bash
# fsck: a clean store, a damaged blob, a missing blob, an unindexed
# kernel, --json, --repair.
# gc: an orphan blob, --dry-run, --json, and nothing referenced removed.
. "$(dirname "$0")/lib.sh"

# The multitarget fixture: unlike the small one it has blobs shared by
# several files, so fsck must name every file that uses a damaged blob.
BIG=$(fixture_top triton-3.6-multitarget.tgz big) || {
	echo "Bail out! cannot extract triton-3.6-multitarget.tgz"
	exit 1
}
S=$T_TMP/store
tcfs import --quiet --store "$S" "$BIG"
check_rc "import of big exits 0" 0
NFILES=$(find "$BIG" -type f | wc -l)

# --- a clean store --------------------------------------------------------------

tcfs fsck --store "$S"
check_rc "fsck of a freshly imported store exits 0" 0
check_grep "fsck reports 0 problems and checked all $NFILES files" \
	"checked [0-9]+ blobs and $NFILES files: 0 problems" "$OUT"
tcfs fsck --json --store "$S"
check_eq "fsck --json: problems 0, files $NFILES, no reports, no orphans" \
	"0 $NFILES [] 0" \
	"$(json_get "$OUT" problems) $(json_get "$OUT" files) $(json_get "$OUT" reports) $(json_get "$OUT" orphans)"

# Which source files use which blob: "XXH KEY/FILE" for non-group files.
(cd "$BIG" && find . -type f ! -name '__grp__*.json' -printf '%P\0' |
	xargs -0 xxhsum -q -H2) | sed 's/  */ /' | sort >"$T_TMP/map.txt"

# The damaged blob: the first (by name) used by exactly two kernel files.
DAMAGED=$(awk '$2 !~ /\.so$/ {c[$1]++} END {for (h in c) if (c[h] == 2) print h}' \
	"$T_TMP/map.txt" | sort | sed -n 1p)
grep "^$DAMAGED " "$T_TMP/map.txt" | cut -d' ' -f2 | sort >"$T_TMP/damaged-users"
# The missing blob: the first cubin used by one file only, in a key dir the
# damaged blob does not touch.
MISSING=$(awk '{c[$1]++; f[$1] = $2} END {for (h in c) if (c[h] == 1 && f[h] ~ /\.cubin$/) print h, f[h]}' \
	"$T_TMP/map.txt" | sort | grep -v -F -f <(cut -d/ -f1 "$T_TMP/damaged-users") |
	sed -n 1p | cut -d' ' -f1)
grep "^$MISSING " "$T_TMP/map.txt" | cut -d' ' -f2 | sort >"$T_TMP/missing-users"
diag "damaged blob $DAMAGED used by: $(tr '\n' ' ' <"$T_TMP/damaged-users")" \
	"missing blob $MISSING used by: $(tr '\n' ' ' <"$T_TMP/missing-users")"
check_eq "the fixture has a blob shared by two files and a cubin of its own" \
	"2 1" "$(wc -l <"$T_TMP/damaged-users") $(wc -l <"$T_TMP/missing-users")"

DBLOB=$S/objects/${DAMAGED:0:2}/$DAMAGED
MBLOB=$S/objects/${MISSING:0:2}/$MISSING

# --- one byte flipped in a blob ---------------------------------------------------

flip_byte "$DBLOB" 100
cp "$DBLOB" "$T_TMP/damaged-bytes"
tcfs fsck --store "$S"
check_rc "fsck exits 1 after a byte of a blob was flipped" 1
named=0
while read -r p; do
	grep -q "^damaged: $p: .*$DAMAGED" "$OUT" && named=$((named + 1))
done <"$T_TMP/damaged-users"
check_eq "fsck names every KEY/FILE using the damaged blob as damaged" \
	"$(wc -l <"$T_TMP/damaged-users")" "$named"
check_eq "fsck reports nothing else" "$(wc -l <"$T_TMP/damaged-users")" \
	"$(grep -c '^[a-z]*: ' "$OUT")"

# --- a blob deleted ----------------------------------------------------------------

chmod u+w "$(dirname "$MBLOB")"
rm -f "$MBLOB"
tcfs fsck --store "$S"
check_rc "fsck exits 1 after a blob was deleted" 1
while read -r p; do
	check_grep "fsck names $p as missing" "^missing: $p: .*missing" "$OUT"
done <"$T_TMP/missing-users"

tcfs fsck --json --store "$S"
cp "$OUT" "$T_TMP/fsck.json"
check_rc "fsck --json exits 1 too" 1
nusers=$(cat "$T_TMP/damaged-users" "$T_TMP/missing-users" | wc -l)
check_eq "fsck --json: problems == $nusers, repaired 0" "$nusers 0" \
	"$(json_get "$OUT" problems) $(json_get "$OUT" repaired)"
check_eq "fsck --json reports each damaged and missing file by path" \
	"$( (sed 's/^/damaged /' "$T_TMP/damaged-users"; sed 's/^/missing /' "$T_TMP/missing-users") | sort)" \
	"$(json_eval "$OUT" '"\n".join(sorted(r["problem"] + " " + r["path"] for r in d["reports"]))')"

# --- repair -------------------------------------------------------------------------

tcfs fsck --repair --json --store "$S"
check_rc "fsck --repair exits 1 (damage was found, even if repaired)" 1
check_eq "fsck --repair: every problem repaired" "$nusers $nusers" \
	"$(json_get "$OUT" problems) $(json_get "$OUT" repaired)"
tcfs fsck --store "$S"
check_rc "fsck after the repair exits 0" 0
check_grep "fsck after the repair reports 0 problems" ": 0 problems" "$OUT"
if [ -f "$S/quarantine/$DAMAGED" ] && cmp -s "$S/quarantine/$DAMAGED" "$T_TMP/damaged-bytes"; then
	ok "the damaged blob is kept, as it was, under STORE/quarantine/"
else
	not_ok "the damaged blob is kept, as it was, under STORE/quarantine/"
	diag "$(ls -lR "$S/quarantine" 2>&1)"
fi
if [ ! -e "$DBLOB" ]; then
	ok "the damaged blob is no longer under objects/"
else
	not_ok "the damaged blob is no longer under objects/"
fi

E=$T_TMP/export
tcfs export --store "$S" "$E"
check_rc "export after the repair exits 0" 0
AFFECTED=$(cat "$T_TMP/damaged-users" "$T_TMP/missing-users" | cut -d/ -f1 | sort -u)
for key in $AFFECTED; do
	if [ -d "$E/$key" ] && [ -z "$(find "$E/$key" -name '__grp__*.json')" ]; then
		ok "repaired kernel $key is exported without its group file (Triton recompiles it)"
	else
		not_ok "repaired kernel $key is exported without its group file (Triton recompiles it)"
		diag "$(ls -la "$E/$key" 2>&1)"
	fi
done
gone=0
while read -r p; do
	[ -e "$E/$p" ] || gone=$((gone + 1))
done < <(cat "$T_TMP/damaged-users" "$T_TMP/missing-users")
check_eq "the files whose blob was damaged or missing are gone" "$nusers" "$gone"
# shellcheck disable=SC2086
check_export "every other kernel still exports byte-exact" "$E" "$BIG" -- $AFFECTED
nkernels=$(find "$BIG" -name '__grp__*.json' | wc -l)
check_eq "info counts the repaired kernels out" \
	$((nkernels - $(echo "$AFFECTED" | wc -w))) "$(info_field "$S" kernels)"

# A fresh import of the source heals the store: the kernels come back whole.
tcfs import --quiet --store "$S" "$BIG"
check_rc "re-importing the source after the repair exits 0" 0
rm -rf "$E"
tcfs export --store "$S" "$E"
check_export "after re-import every kernel exports byte-exact again" "$E" "$BIG"
tcfs fsck --store "$S"
check_rc "fsck after the re-import exits 0" 0

# --- a kernel missing from the index ---------------------------------------------
# The kernels table is derived from the tree, so a row that went missing
# (a bug, an edit by hand) is found, and --repair derives it again.

q() { sqlite3 "$S/index.db" "$1"; }
NK=$(q "SELECT count(*) FROM kernels")
GPATH=$(q "SELECT d.name || '/' || g.name FROM kernels k JOIN nodes g ON g.ino = k.grp_ino
	JOIN nodes d ON d.ino = g.parent ORDER BY d.name, g.name LIMIT 1")
q "DELETE FROM kernels WHERE grp_ino = (SELECT grp_ino FROM kernels k JOIN nodes g ON g.ino = k.grp_ino
	JOIN nodes d ON d.ino = g.parent ORDER BY d.name, g.name LIMIT 1)"
tcfs fsck --store "$S"
check_rc "fsck exits 1 when a kernel's row is missing" 1
check_grep_fixed "fsck names its group file as unindexed" "unindexed: $GPATH: kernel not indexed" "$OUT"
check_eq "fsck reports nothing else" 1 "$(grep -c '^[a-z]*: ' "$OUT")"
tcfs fsck --repair --store "$S"
check_rc "fsck --repair exits 1 (a problem was found)" 1
check_grep_fixed "fsck --repair says it indexed the kernel" \
	"unindexed: $GPATH: kernel not indexed; indexed it" "$OUT"
check_eq "the row is back" "$NK" "$(q "SELECT count(*) FROM kernels")"
tcfs fsck --store "$S"
check_rc "fsck after that repair exits 0" 0

# --- gc -------------------------------------------------------------------------------

SMALL=$(fixture_top triton-3.6-h200-small.tgz cA)
G=$T_TMP/store-gc
tcfs import --quiet --store "$G" "$SMALL"
check_rc "import of the small fixture into a fresh store exits 0" 0
tcfs gc --json --dry-run --store "$G"
check_eq "gc --dry-run on a freshly imported store finds no orphan" "0 0" \
	"$(json_get "$OUT" removed) $(json_get "$OUT" freed_bytes)"

# make_orphan TEXT: a well-formed blob of TEXT that no file references;
# prints its path.
make_orphan() {
	local f=$T_TMP/orphan.src h
	printf '%s' "$1" >"$f"
	h=$(xxh128 "$f" | cut -d' ' -f1)
	mkdir -p "$G/objects/${h:0:2}"
	cp "$f" "$G/objects/${h:0:2}/$h" && chmod 0444 "$G/objects/${h:0:2}/$h"
	echo "$G/objects/${h:0:2}/$h"
}
ORPHAN=$(make_orphan "orphan blob written by the tcfs e2e test fsck_gc.sh")
OSIZE=$(stat -c %s "$ORPHAN")
find "$G/objects" -type f -printf '%P\n' | sort >"$T_TMP/blobs.before"

tcfs fsck --json --store "$G"
check_eq "fsck counts the orphan (orphans 1, orphan_bytes $OSIZE) and is not damage" \
	"0 1 $OSIZE 0" \
	"$RC $(json_get "$OUT" orphans) $(json_get "$OUT" orphan_bytes) $(json_get "$OUT" problems)"

tcfs gc --dry-run --store "$G"
check_rc "gc --dry-run exits 0" 0
check_grep "gc --dry-run reports 1 unreferenced blob" "would remove 1 unreferenced" "$OUT"
tcfs gc --dry-run --json --store "$G"
check_eq "gc --dry-run --json: dry_run true, removed 1, freed_bytes $OSIZE" \
	"true 1 $OSIZE" \
	"$(json_get "$OUT" dry_run) $(json_get "$OUT" removed) $(json_get "$OUT" freed_bytes)"
check_eq "gc --dry-run deletes nothing" "$(cat "$T_TMP/blobs.before")" \
	"$(find "$G/objects" -type f -printf '%P\n' | sort)"

tcfs gc --json --store "$G"
check_rc "gc exits 0" 0
check_eq "gc --json: removed 1, freed_bytes $OSIZE, kept == the other blobs" \
	"1 $OSIZE $(($(wc -l <"$T_TMP/blobs.before") - 1))" \
	"$(json_get "$OUT" removed) $(json_get "$OUT" freed_bytes) $(json_get "$OUT" kept)"
check_eq "gc removed exactly the orphan and nothing else" \
	"$(grep -v -F "${ORPHAN#"$G"/objects/}" "$T_TMP/blobs.before")" \
	"$(find "$G/objects" -type f -printf '%P\n' | sort)"
tcfs gc --json --store "$G"
check_eq "a second gc removes nothing" "0 0" \
	"$(json_get "$OUT" removed) $(json_get "$OUT" freed_bytes)"

ORPHAN2=$(make_orphan "a second orphan, reported by gc --verbose")
tcfs gc --verbose --store "$G"
check_grep "gc --verbose names the orphan it deletes" \
	"orphan objects/${ORPHAN2#"$G"/objects/}" "$OUT"
if [ ! -e "$ORPHAN2" ]; then
	ok "gc --verbose deleted it"
else
	not_ok "gc --verbose deleted it"
fi

tcfs export --store "$G" "$T_TMP/export-gc"
check_rc "export after gc exits 0" 0
check_export "after gc the store still exports byte-exact" "$T_TMP/export-gc" "$SMALL"
tcfs fsck --store "$G"
check_rc "fsck after gc exits 0" 0
