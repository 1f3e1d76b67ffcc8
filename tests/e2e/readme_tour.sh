#!/usr/bin/env bash
# The README's "A short tour", run as written, so that the README cannot
# drift from the program.  Each command line of the tour's code blocks is
# taken from README.md itself and run by bash, in a home of the test's own
# where the default store is mounted at ~/.triton/cache (what
# tools/setup.sh leaves), after a workload: a real Triton cache replayed
# cold then warm, and real FX graphs written as Inductor writes them.
# Only the tour's placeholders are filled in (KEY, FKEY, the registry, the
# Redis server); a block that follows "on another machine" runs in a
# second home with a store of its own.  A line of the tour this test does
# not know fails it: a new line needs its expectation here.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
require_cmds skopeo redis-server redis-cli
README=$SRC_ROOT/README.md
[ -r "$README" ] || bail_out "no README.md at $SRC_ROOT"

H1=$T_TMP/home
H2=$T_TMP/home2
BIN=$T_TMP/bin
mkdir -p "$H1/work" "$H2/work" "$BIN"
ln -s "$TCFS" "$BIN/tcfs"
C=$H1/.triton/cache
mkdir -p "$C"

# in_home HOME CMD: CMD run by bash as a user of HOME would, with tcfs on
# PATH and nothing of the test's own environment that names a store.
in_home() {
	(cd "$1/work" && env -u TCFS_STORE -u XDG_DATA_HOME -u TRITON_CACHE_DIR \
		-u TORCHINDUCTOR_CACHE_DIR HOME="$1" PATH="$BIN:$PATH" \
		bash -c "$2" </dev/null >"$OUT" 2>"$ERR")
	RC=$?
}

at_exit "fusermount3 -uz '$C' 2>/dev/null"
in_home "$H1" "tcfs mount ~/.triton/cache"
check_rc "the default store mounted at ~/.triton/cache, as tools/setup.sh does" 0

# The workload: Triton's kernels cold then warm, and four FX graphs.
SRC=$(fixture_top triton-3.6-h200-small.tgz cA)
replay cold "$SRC" "$C"
replay warm "$SRC" "$C"
FX=$(fixture inductor-2.11-fxgraph.tgz)
for f in $(cd "$FX" && find fxgraph -type f -printf '%T@ %p\n' | sort -n | cut -d' ' -f2); do
	stat "$C/${f%/*}" >/dev/null 2>&1
	mkdir -p "$C/${f%/*}"
	cp "$FX/$f" "$C/${f%/*}/.tmp.$$" && mv "$C/${f%/*}/.tmp.$$" "$C/$f"
done
KEY=$(cd "$SRC" && ls | head -1)
FKEY=fhrmdmeqxj6tphbvtcmo3qetsqx7epv6uad4t6rpqvrxbk2lqp5q
NAME=$(cd "$SRC/$KEY" && ls __grp__*.json | sed 's/^__grp__//; s/\.json$//')
redis_start

# The tour: "BLOCK ANOTHER" before each code block (ANOTHER 1 when the
# text before it says it runs on another machine), then its command lines
# with their trailing comments cut.
python3 - "$README" >"$T_TMP/tour" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
tour = text.split("\n## A short tour\n", 1)[1].split("\n## ", 1)[0]
para, block = [], None
for line in tour.split("\n"):
    if line.startswith("    "):
        if block is None:
            block = "another machine" in " ".join(para)
            print("BLOCK %d" % block)
        print(re.sub(r"\s{2,}#.*$", "", line[4:]).rstrip())
    elif line.strip():
        if block is not None:
            para, block = [], None
        para.append(line)
PY
check_num "the README has a tour of commands" "$(grep -vc '^BLOCK' "$T_TMP/tour")" -ge 15

# expect LINE: the exit status the tour's LINE must give, and a pattern its
# output must match; "" when the test does not know the line.
expect() {
	case "$1" in
	"tcfs stats") echo "0|hit rate" ;;
	"tcfs log -F") echo "124|hit" ;;
	"tcfs list --sort hits") echo "0|$NAME" ;;
	"tcfs why KEY") echo "0|$NAME" ;;
	"tcfs why FKEY") echo "0|nearest" ;;
	"tcfs info") echo "0|dedup" ;;
	"ls ~/.triton/cache/by-name/") echo "0|^$NAME\$" ;;
	"tcfs config max-size 20G") echo "0|" ;;
	"tcfs prune --unused-since 30d") echo "0|" ;;
	"tcfs stats --since 1h --max-misses 0") echo "1|miss" ;;
	"tcfs pack --used-since 2h job-42:v1") echo "0|job-42:v1" ;;
	"skopeo copy oci:job-42:v1 docker://registry/triton-cache:job-42") echo "0|" ;;
	"skopeo copy docker://registry/triton-cache:job-42 oci:job-42:v1") echo "0|" ;;
	"tcfs unpack job-42:v1") echo "0|kernels" ;;
	"tcfs config remote redis://cache.example:6379") echo "0|" ;;
	"tcfs remote status") echo "0|127.0.0.1:$RPORT" ;;
	esac
}

# fill LINE: the line with the tour's placeholders filled in.
fill() {
	local l=$1
	l=${l//docker:\/\/registry\/triton-cache:job-42/oci:$T_TMP/registry:job-42}
	l=${l//redis:\/\/cache.example:6379/redis://127.0.0.1:$RPORT}
	l=$(sed "s/ FKEY\$/ $FKEY/; s/ KEY\$/ $KEY/" <<<"$l")
	# -F follows until interrupted, as a user would with ^C (timeout's
	# status then is 124).
	[ "$l" = "tcfs log -F" ] && l="timeout -s INT 3 tcfs log -F"
	echo "$l"
}

home=$H1
while IFS= read -r line; do
	if [[ "$line" == "BLOCK "* ]]; then
		[ "${line#BLOCK }" = 1 ] && home=$H2 || home=$H1
		continue
	fi
	want=$(expect "$line")
	if [ -z "$want" ]; then
		not_ok "tour: '$line' is a line this test knows (add its expectation)"
		continue
	fi
	in_home "$home" "$(fill "$line")"
	check_rc "tour: $line (exit ${want%%|*})" "${want%%|*}"
	pat=${want#*|}
	[ -n "$pat" ] && check_grep "tour: $line says '$pat'" "$pat" <(cat "$OUT" "$ERR")
	case "$line" in
	"tcfs log -F")
		check_eq "tour: log -F shows the last 10 events, then follows" 10 \
			"$(grep -c . "$OUT")" ;;
	"tcfs config remote "*)
		# "then remount"
		in_home "$H1" "tcfs umount ~/.triton/cache && tcfs mount ~/.triton/cache"
		check_rc "tour: remounted with the remote" 0 ;;
	"tcfs unpack job-42:v1")
		in_home "$H1" "tcfs info --json"
		n1=$(json_get "$OUT" kernels)
		in_home "$H2" "tcfs info --json"
		check_eq "tour: the other machine's store holds the job's kernels" \
			"$n1" "$(json_get "$OUT" kernels)" ;;
	esac
done <"$T_TMP/tour"
