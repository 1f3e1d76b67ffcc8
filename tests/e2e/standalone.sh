#!/usr/bin/env bash
# The project stands on its own: the fixtures every test names are in
# FIXTURES (by default tests/fixtures), a missing one stops its test at
# once with a message naming it, and no file of the project points
# outside the repository for what the tests or the docs need.
set -u
. "$(dirname "$0")/lib.sh"
: "${SRC_ROOT:?SRC_ROOT must name the source tree}"
LIB=${STANDALONE_LIB:-$SRC_ROOT/tests/e2e/lib.sh}	# the lib under test

# --- every fixture a test names is there ------------------------------------

# (This script's own names are those of fixtures that are not there.)
named=$(grep -ohE 'fixture(_top|_copy)? [a-z0-9.-]+\.tgz' "$SRC_ROOT"/tests/e2e/*.sh |
	grep -v -e -absent -e -bad | awk '{ print $2 }' | sort -u)
check "the e2e scripts name fixtures" test -n "$named"
extracts() {	# extracts TGZ: a whole tarball, read to its end
	tar -tzf "$1" >/dev/null
}
for f in $named; do
	check "fixture $f is in FIXTURES and extracts" extracts "$FIXTURES/$f"
done

# --- a missing fixture ends its script at once --------------------------------

# child BODY: runs BODY as an e2e script sourcing LIB, with FIXTURES an
# empty directory; its TAP output in OUT, its status in RC.
mkdir -p "$T_TMP/none"
child() {
	printf '. %q\n%s\n' "$LIB" "$1" >"$T_TMP/child.sh"
	FIXTURES=$T_TMP/none timeout 60 bash "$T_TMP/child.sh" \
		>"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
OUT=$T_TMP/out ERR=$T_TMP/err
lacks() {	# lacks WORD FILE: FILE does not hold WORD
	! grep -q "$1" "$2"
}
child 'ok "before"
SRC=$(fixture_top triton-3.6-absent.tgz big)
ok "after, with [$SRC]"'
check_eq "a missing fixture in \$(fixture_top ...) fails the script" 1 "$RC"
check_grep "... with a Bail out! naming it" \
	"^Bail out! fixture $T_TMP/none/triton-3.6-absent.tgz not found" "$OUT"
check "... and nothing after it runs" lacks after "$OUT"
child 'echo "# tmp $T_TMP"
fixture_copy triton-3.6-absent.tgz cA "$T_TMP/copy"
ok "after"'
check_eq "a missing fixture in fixture_copy fails the script" 1 "$RC"
check_grep "... with a Bail out! naming it" \
	"^Bail out! fixture $T_TMP/none/triton-3.6-absent.tgz not found" "$OUT"
check "... and nothing after it runs" lacks after "$OUT"
tmp=$(sed -n 's/^# tmp //p' "$OUT")
check "... and its cleanups ran (its temp dir is gone)" \
	test -n "$tmp" -a ! -e "$tmp"
printf 'not a tarball\n' >"$T_TMP/none/triton-3.6-bad.tgz"
child 'X=$(fixture_top triton-3.6-bad.tgz big)
ok "after"'
check_grep "a fixture that does not extract bails out, naming it" \
	"^Bail out! fixture $T_TMP/none/triton-3.6-bad.tgz does not extract" "$OUT"
check "... and nothing after it runs" lacks after "$OUT"

# --- nothing points outside the repository --------------------------------

# (The pattern is spelled so that this file does not match it.)
if git -C "$SRC_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	outside=$(cd "$SRC_ROOT" && git ls-files -co --exclude-standard -z |
		xargs -0 grep -lIE -- '[.][.]/shared' 2>/dev/null)
	check_eq "no file of the project names the directory beside it" "" "$outside"
else
	skip "no file of the project names the directory beside it" "not a git checkout"
fi
