# shellcheck shell=bash
#
# Shared helpers for the tcfs end-to-end tests.  Each test script sources
# this file, runs checks, and prints TAP: "ok N - desc" / "not ok N - desc"
# lines as it goes and the plan "1..N" when it exits.
#
# Environment (set by tests/meson.build):
#   TCFS      path to the tcfs binary
#   FIXTURES  directory holding the fixture tarballs (read-only)
#
# Scripts use `set -u` but never `set -e`: a failed check is reported as
# "not ok" and the script goes on with the next one.

set -u
umask 022

: "${TCFS:?TCFS must name the tcfs binary}"
: "${FIXTURES:?FIXTURES must name the fixtures directory}"
export LC_ALL=C

TAP_N=0
TAP_FAILED=0
TAP_PLAN_DONE=0

# A per-script scratch directory, removed on exit.  Resolved with realpath:
# tcfs export writes the absolute destination into group files.
T_TMP=$(mktemp -d "/tmp/tcfs-e2e-$(basename "$0" .sh).XXXXXX") || {
	echo "Bail out! cannot create a temp dir under /tmp"
	exit 1
}
T_TMP=$(realpath "$T_TMP")

# A command that forgets --store must not touch the user's own store.
export TCFS_STORE=$T_TMP/default-store

# A daemon's stderr is gone once it runs in the background: the
# sanitizers (in the test build) write their reports to files instead,
# and a report from any process fails the script (_lib_exit).  GCC's
# UBSan, a runtime of its own beside ASan's, ignores log_path: its
# reports stay on stderr, and halt_on_error makes the daemon's death the
# failure the checks see.
T_SANITIZER=$T_TMP/sanitizer
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$T_SANITIZER"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$T_SANITIZER"

# Cleanup steps registered by the scripts (unmounts, killing helpers), run
# in reverse order before the temp dir is removed.
T_CLEANUPS=()
at_exit() {
	T_CLEANUPS+=("$1")
}

_lib_exit() {
	local i
	for ((i = ${#T_CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${T_CLEANUPS[i]}" >/dev/null 2>&1
	done
	# (A log holding only LSan's list of the suppressions used is no
	# report.)
	local reports
	reports=$(grep -l -E 'ERROR: |runtime error' "$T_SANITIZER".* 2>/dev/null)
	if [ -n "$reports" ]; then
		not_ok "no tcfs process had a sanitizer report"
		# shellcheck disable=SC2086
		diag "$(head -n 40 $reports)"
	fi
	if [ -n "${T_TMP:-}" ] && [ -d "$T_TMP" ]; then
		# Blobs and test inputs may be read-only or mode 000.
		chmod -R u+rwX "$T_TMP" 2>/dev/null
		rm -rf "$T_TMP"
	fi
	if [ -n "$T_SIGNAL" ]; then
		echo "Bail out! interrupted by SIG$T_SIGNAL"
		exit 130
	fi
	# bail_out said why; no plan after a "Bail out!".
	[ "$T_BAILED" = 0 ] || exit 1
	if [ "$TAP_PLAN_DONE" = 0 ]; then
		echo "1..$TAP_N"
		TAP_PLAN_DONE=1
	fi
	# The TAP lines say what failed; the status only says whether
	# something did (or the script died before its checks ran).
	if [ "$TAP_FAILED" -gt 0 ] || [ "$TAP_N" = 0 ]; then
		exit 1
	fi
	exit 0
}
T_SIGNAL=
T_BAILED=0
trap _lib_exit EXIT
trap 'T_SIGNAL=INT; exit 130' INT
trap 'T_SIGNAL=TERM; exit 143' TERM
trap 'T_BAILED=1; exit 1' USR1

# The TAP stream, which a subshell's own stdout may be diverted from.
exec {T_TAP}>&1

# bail_out REASON: prints "Bail out! REASON" and ends the script as failed,
# with its cleanups.  From a subshell ($(...), a pipeline) it signals the
# script, which stops as soon as the subshell returns.
bail_out() {
	echo "Bail out! $1" >&"$T_TAP"
	if [ "$BASHPID" != $$ ]; then
		kill -USR1 $$
		exit 1
	fi
	T_BAILED=1
	exit 1
}

# --- TAP ------------------------------------------------------------------

# ok DESC / not_ok DESC: report one check.  While TAP_TODO is set (to the
# name of a known tcfs bug) checks are reported with "# TODO $TAP_TODO":
# a failure is expected and does not fail the script, a pass shows up as
# an unexpected pass (the bug was fixed: drop the TODO).
TAP_TODO=
_tap_directive() {
	if [ -n "$TAP_TODO" ]; then
		echo " # TODO $TAP_TODO"
	fi
}

ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $*$(_tap_directive)"
}

not_ok() {
	TAP_N=$((TAP_N + 1))
	[ -n "$TAP_TODO" ] || TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $*$(_tap_directive)"
}

# skip DESC REASON: a check that could not run here.
skip() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1 # SKIP $2"
}

# require_cmds CMD...: skips the whole script unless every CMD is there.
require_cmds() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null && continue
		echo "1..0 # SKIP $c is not installed (tools/deps.sh)"
		TAP_PLAN_DONE=1
		exit 0
	done
}

# require_other_users: skips the whole test unless it can mount and run
# commands as other users: /dev/fuse, fusermount3, root, setpriv.
require_other_users() {
	if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		echo "1..0 # SKIP no /dev/fuse or fusermount3"
		TAP_PLAN_DONE=1
		exit 0
	fi
	if ! is_root; then
		echo "1..0 # SKIP needs root to run as other users (setpriv)"
		TAP_PLAN_DONE=1
		exit 0
	fi
	require_cmds setpriv
}

# as_uid UID CMD...: CMD as that user and the group of that number, with
# no other groups.
as_uid() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
}

# diag TEXT...: a TAP comment (each line prefixed with "# ").
diag() {
	printf '%s\n' "$@" | sed 's/^/# /'
}

# check DESC CMD [ARGS...]: ok when CMD exits 0.
check() {
	local desc=$1
	shift
	if "$@"; then
		ok "$desc"
	else
		not_ok "$desc"
	fi
}

# check_eq DESC EXPECTED ACTUAL (multi-line values are shown as a diff)
check_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		case "$2$3" in
		*$'\n'*)
			diag "expected (-) vs got (+):"
			diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") |
				grep '^[<>]' | sed -n '1,20p' | sed 's/^</-/; s/^>/+/; s/^/#   /'
			;;
		*)
			diag "expected: $2" "     got: $3"
			;;
		esac
	fi
}

# check_num DESC A OP B: numeric comparison (OP as for test: -eq -le ...).
check_num() {
	local desc=$1 a=$2 op=$3 b=$4
	if [[ "$a" =~ ^-?[0-9]+$ && "$b" =~ ^-?[0-9]+$ ]] && test "$a" "$op" "$b"; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "expected: $a $op $b"
	fi
}

# check_grep DESC PATTERN FILE: ok when FILE has a line matching the
# extended regex PATTERN (shows FILE otherwise).
check_grep() {
	if grep -Eq -- "$2" "$3" 2>/dev/null; then
		ok "$1"
	else
		not_ok "$1"
		diag "no line matches /$2/ in:"
		sed -n '1,20p' "$3" 2>/dev/null | sed 's/^/#   /'
	fi
}

# check_grep_fixed DESC STRING FILE: like check_grep with a fixed string.
check_grep_fixed() {
	if grep -Fq -- "$2" "$3" 2>/dev/null; then
		ok "$1"
	else
		not_ok "$1"
		diag "no line contains '$2' in:"
		sed -n '1,20p' "$3" 2>/dev/null | sed 's/^/#   /'
	fi
}

# --- running commands -----------------------------------------------------

# run CMD [ARGS...]: runs CMD with stdin from /dev/null, stdout in $OUT,
# stderr in $ERR (files), its exit status in $RC.  Never fails itself.
OUT=$T_TMP/.out
ERR=$T_TMP/.err
RC=0
run() {
	"$@" </dev/null >"$OUT" 2>"$ERR"
	RC=$?
	return 0
}

# tcfs ARGS...: runs the tcfs under test as run does.
tcfs() {
	run "$TCFS" "$@"
}

# show_run: the last command's output as TAP comments (for diagnosis).
show_run() {
	diag "exit status $RC" "stdout:"
	sed -n '1,25p' "$OUT" | sed 's/^/#   /'
	diag "stderr:"
	sed -n '1,25p' "$ERR" | sed 's/^/#   /'
}

# check_rc DESC EXPECTED: checks the last run's exit status.
check_rc() {
	if [ "$RC" = "$2" ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "expected exit status $2"
		show_run
	fi
}

# --- JSON -----------------------------------------------------------------

# json_get FILE PATH: prints the value at PATH ("a.b.0.c") of the JSON
# document in FILE ("-" for stdin); strings bare, others as JSON.  Exits 1
# (printing nothing) when FILE is not JSON or PATH is not there.
json_get() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
src, path = sys.argv[1], sys.argv[2]
try:
    d = json.load(sys.stdin if src == "-" else open(src))
    for p in path.split(".") if path else []:
        d = d[int(p)] if isinstance(d, list) else d[p]
except Exception:
    sys.exit(1)
print(d if isinstance(d, str) else json.dumps(d))
EOF
}

# json_eval FILE EXPR: prints the Python expression EXPR evaluated with d
# bound to the JSON document in FILE.
json_eval() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    r = eval(sys.argv[2], {"d": d})
except Exception as e:
    print("ERROR: %s" % e, file=sys.stderr)
    sys.exit(1)
print(r if isinstance(r, str) else json.dumps(r))
EOF
}

# info_json STORE: runs tcfs info --json on STORE into a new file under
# $T_TMP and prints that file's name; returns tcfs's exit status.
info_json() {
	local f
	f=$(mktemp "$T_TMP/info.XXXXXX") || return 1
	"$TCFS" info --store "$1" --json >"$f" 2>"$T_TMP/.info.err" </dev/null
	local rc=$?
	echo "$f"
	return $rc
}

# info_field STORE FIELD: one field of tcfs info --json (empty on error).
info_field() {
	local f
	f=$(info_json "$1") || return 1
	json_get "$f" "$2"
}

# info_numbers STORE: "files logical_bytes stored_bytes blobs kernels
# modules" of a store, one line, for before/after comparisons.
info_numbers() {
	local f
	f=$(info_json "$1") || { echo "info-failed"; return 1; }
	json_eval "$f" '" ".join(str(d[k]) for k in ("files", "logical_bytes", "stored_bytes", "blobs", "kernels", "modules"))'
}

# --- replays (tests/replay/) ---------------------------------------------

# replay NAME ARGS...: runs the replay, its JSON in $T_TMP/NAME.json;
# REPLAY_TOOL (default replay.py) is the script run.
replay() {
	local name=$1
	shift
	timeout 300 python3 "$REPLAY/${REPLAY_TOOL:-replay.py}" "$@" >"$T_TMP/$name.json" \
		2>"$T_TMP/$name.err"
	local rc=$?
	if [ "$rc" = 0 ]; then
		ok "$name: replay read back every byte, 0 errors"
	else
		not_ok "$name: replay read back every byte, 0 errors (rc $rc)"
		diag "$(head -20 "$T_TMP/$name.err")"
	fi
}

# seen NAME KIND FIELD: the sum over the replay's processes.
seen() {
	json_eval "$T_TMP/$1.json" \
		"sum(p['seen']['$2']['$3'] for p in d['procs'])"
}

# check_stats NAME...: tcfs stats of the store $S agrees exactly with the
# replays NAME..., per process and in total.
check_stats() {
	tcfs stats --json --store "$S"
	cp "$OUT" "$T_TMP/stats.json"
	python3 - "$T_TMP/stats.json" "$@" >"$T_TMP/stats.diff" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
want = {}
for name in sys.argv[2:]:
    for p in json.load(open(f"{sys.argv[1].rsplit('/', 1)[0]}/{name}.json"))["procs"]:
        want[p["pid"]] = p["seen"]
got = {p["pid"]: p for p in stats["per_process"]}
bad = []
for pid, s in want.items():
    g = got.get(pid, {"hits": 0, "misses": 0})
    total = {k: s["kernel"][k] + s["module"][k] for k in ("hits", "misses")}
    if (g["hits"], g["misses"]) != (total["hits"], total["misses"]):
        bad.append(f"pid {pid}: stats {g['hits']}/{g['misses']}, "
                   f"replay saw {total['hits']}/{total['misses']}")
    if pid in got and g.get("comm") != "python3":
        bad.append(f"pid {pid}: command name {g.get('comm')!r}, not python3")
extra = set(got) - set(want)
if extra:
    bad.append(f"processes in stats that did not replay: {sorted(extra)}")
k = {x: sum(s["kernel"][x] for s in want.values()) for x in ("hits", "misses")}
m = {x: sum(s["module"][x] for s in want.values()) for x in ("hits", "misses")}
if (stats["hits"], stats["misses"]) != (k["hits"], k["misses"]):
    bad.append(f"kernel totals {stats['hits']}/{stats['misses']}, want {k}")
if (stats["modules"]["hits"], stats["modules"]["misses"]) != (m["hits"], m["misses"]):
    bad.append(f"module totals {stats['modules']}, want {m}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
	if [ $? = 0 ]; then
		ok "stats --json equals what the replays saw, per process (and its command name) and in total"
	else
		not_ok "stats --json equals what the replays saw, per process (and its command name) and in total"
		diag "$(cat "$T_TMP/stats.diff")"
	fi
}

# --- fixtures -------------------------------------------------------------

# fixture NAME.tgz: extracts the tarball once under $T_TMP/fixtures and
# prints the path of the directory holding its top folder.  The extracted
# tree is shared by the whole script: do not modify it, copy it
# (fixture_copy).  A fixture that is missing or does not extract ends the
# script at once, as failed (bail_out), even from inside $(...): the
# checks after it would run on an empty path.
fixture() {
	local name=$1 dir=$T_TMP/fixtures/${1%.tgz}
	if [ ! -f "$dir/.extracted" ]; then
		[ -r "$FIXTURES/$name" ] ||
			bail_out "fixture $FIXTURES/$name not found (meson -Dfixtures=DIR names the fixtures directory, by default tests/fixtures)"
		rm -rf "$dir"
		{ mkdir -p "$dir" && tar -xzf "$FIXTURES/$name" -C "$dir" &&
			touch "$dir/.extracted"; } ||
			bail_out "fixture $FIXTURES/$name does not extract"
	fi
	echo "$dir"
}

# fixture_top NAME.tgz TOP: prints the extracted top folder (e.g. big).
fixture_top() {
	local d
	d=$(fixture "$1") || exit 1
	[ -d "$d/$2" ] || bail_out "fixture $FIXTURES/$1 has no $2/"
	echo "$d/$2"
}

# fixture_copy NAME.tgz TOP DEST: a private, writable copy of a fixture's
# top folder at DEST (modes and mtimes preserved).
fixture_copy() {
	local src
	src=$(fixture_top "$1" "$2") || exit 1
	rm -rf "$3" && cp -a "$src" "$3"
}

# --- store and tree helpers -----------------------------------------------

# xxh128 FILE...: "HASH  FILE" lines with the XXH3-128 that tcfs names
# blobs by (-q: no progress output on stderr).
xxh128() {
	xxhsum -q -H2 "$@"
}

# blob_count STORE: number of files under STORE/objects.
blob_count() {
	find "$1/objects" -type f | wc -l
}

# blob_path STORE FILE: where FILE's bytes live in the store (it need not
# exist): STORE/objects/<2 hex>/<32 hex of XXH3-128>.
blob_path() {
	local h
	h=$(xxh128 "$2" | cut -d' ' -f1) || return 1
	echo "$1/objects/${h:0:2}/$h"
}

# flip_byte FILE [OFFSET]: inverts one byte of FILE in place (even if it
# is read-only; the mode is restored afterwards).
flip_byte() {
	local mode
	mode=$(stat -c %a "$1") || return 1
	chmod u+w "$1" || return 1
	python3 - "$1" "${2:-0}" <<'EOF'
import sys
path, off = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(off)
    b = f.read(1)
    f.seek(off)
    f.write(bytes([b[0] ^ 0xFF]))
EOF
	local rc=$?
	chmod "$mode" "$1"
	return $rc
}

# compare_export [--subset] [--partial] DEST SRC... [-- EXCLUDED_KEY...]: compares an
# exported cache DEST with the source trees SRC... (the union of their key
# dirs; the excluded ones are not looked at, in DEST or the sources):
#  - DEST has exactly the key dirs of the sources, each with exactly the
#    same entries, and the same mode and mtime;
#  - every non-group file is byte-identical, with the same mode and mtime;
#  - every group file (__grp__*.json) lists the same children in the same
#    order, each as DEST/KEY/CHILD that exists, and is exactly Python's
#    json.dumps({"child_paths": {...}}) of those paths.
# With --subset, DEST may hold fewer key dirs than the sources (filtered
# exports); with --partial, it may hold more (a store with other things in
# it); the key dirs both have must match either way.  Prints what differs; exit 0 when
# nothing does.
compare_export() {
	python3 - "$@" <<'EOF'
import json, os, stat, sys

args = sys.argv[1:]
subset = partial = False
while args and args[0] in ("--subset", "--partial"):
    if args[0] == "--subset":
        subset = True
    else:
        partial = True
    args = args[1:]
excluded = set()
if "--" in args:
    i = args.index("--")
    args, excluded = args[:i], set(args[i + 1:])
dest, srcs = os.path.realpath(args[0]), args[1:]
errors = []
def err(msg):
    errors.append(msg)

want = {}
for s in srcs:
    for key in sorted(os.listdir(s)):
        if key not in excluded:
            want.setdefault(key, os.path.join(s, key))
have = set(os.listdir(dest)) - excluded
missing = sorted(set(want) - have)
extra = sorted(have - set(want))
if missing and not subset:
    err("missing key dirs in DEST: %s" % missing[:5])
if extra and not partial:
    err("unexpected entries in DEST: %s" % extra[:5])
for key in sorted(have & set(want)):
    sdir, ddir = want[key], os.path.join(dest, key)
    ss, ds = os.stat(sdir), os.stat(ddir)
    if stat.S_IMODE(ss.st_mode) != stat.S_IMODE(ds.st_mode):
        err("%s/: mode %o, want %o" % (key, stat.S_IMODE(ds.st_mode), stat.S_IMODE(ss.st_mode)))
    if ss.st_mtime_ns != ds.st_mtime_ns:
        err("%s/: mtime %d, want %d" % (key, ds.st_mtime_ns, ss.st_mtime_ns))
    snames, dnames = sorted(os.listdir(sdir)), sorted(os.listdir(ddir))
    if snames != dnames:
        err("%s: entries differ: only in source %s, only in DEST %s" % (
            key, sorted(set(snames) - set(dnames))[:5],
            sorted(set(dnames) - set(snames))[:5]))
    for name in sorted(set(snames) & set(dnames)):
        sp, dp = os.path.join(sdir, name), os.path.join(ddir, name)
        ss, ds = os.lstat(sp), os.lstat(dp)
        if not stat.S_ISREG(ds.st_mode):
            err("%s/%s: not a regular file in DEST" % (key, name))
            continue
        sb, db = open(sp, "rb").read(), open(dp, "rb").read()
        if name.startswith("__grp__") and name.endswith(".json"):
            try:
                sj = json.loads(sb)["child_paths"]
                dj = json.loads(db)["child_paths"]
            except Exception as e:
                err("%s/%s: group file does not parse: %s" % (key, name, e))
                continue
            if list(sj) != list(dj):
                err("%s/%s: children differ: %s vs %s" % (key, name, list(sj), list(dj)))
                continue
            for child, p in dj.items():
                if p != os.path.join(dest, key, child):
                    err("%s/%s: child %s points to %s" % (key, name, child, p))
                elif not os.path.exists(p):
                    err("%s/%s: child %s does not exist" % (key, name, p))
            exp = json.dumps({"child_paths": {c: os.path.join(dest, key, c) for c in sj}})
            if db != exp.encode():
                err("%s/%s: not json.dumps of its paths" % (key, name))
        else:
            if sb != db:
                err("%s/%s: bytes differ" % (key, name))
            if stat.S_IMODE(ss.st_mode) != stat.S_IMODE(ds.st_mode):
                err("%s/%s: mode %o, want %o" % (key, name, stat.S_IMODE(ds.st_mode), stat.S_IMODE(ss.st_mode)))
            if ss.st_mtime_ns != ds.st_mtime_ns:
                err("%s/%s: mtime %d, want %d" % (key, name, ds.st_mtime_ns, ss.st_mtime_ns))
for e in errors[:20]:
    print(e)
if len(errors) > 20:
    print("... and %d more" % (len(errors) - 20))
sys.exit(1 if errors else 0)
EOF
}

# check_export DESC DEST SRC... [-- EXCLUDED...]: compare_export as a check.
check_export() {
	local desc=$1 out
	shift
	if out=$(compare_export "$@" 2>&1); then
		ok "$desc"
	else
		not_ok "$desc"
		diag "$out"
	fi
}

# daemon_pid STORE: the pid holding STORE/lock's flock (the mount daemon).
# check_landed SRC MNT LOG: every KEY/NAME in LOG (replay.py --landed) is
# in MNT with the bytes it has in SRC.  Prints "LANDED LOST", then what is lost.
check_landed() {
	python3 - "$@" <<'EOF'
import json, os, sys
src, mnt, log = sys.argv[1:]
paths = set(open(log).read().split()) if os.path.exists(log) else set()
lost = []
def same(p):
    with open(os.path.join(mnt, p), "rb") as f:
        got = f.read()
    want = open(os.path.join(src, p), "rb").read()
    if not os.path.basename(p).startswith("__grp__"):
        return got == want
    # A group file names its children where they were written: the mount.
    key = os.path.dirname(p)
    want = {c: os.path.join(mnt, key, c)
            for c in json.loads(want)["child_paths"]}
    return json.loads(got)["child_paths"] == want
for p in sorted(paths):
    try:
        if not same(p):
            lost.append(p + " differs")
    except (OSError, ValueError, KeyError) as e:
        lost.append("%s: %s" % (p, e))
print(len(paths), len(lost))
for p in lost[:10]:
    print(p)
EOF
}

daemon_pid() {
	local ino pid
	ino=$(stat -c %i "$1/lock" 2>/dev/null) || return 1
	pid=$(awk -v ino="$ino" '$2 == "FLOCK" { n = split($6, a, ":"); if (a[n] == ino) print $5 }' \
		/proc/locks | sed -n 1p)
	[ -n "$pid" ] || pid=$(pgrep -f "tcfs mount --store $1 " | sed -n 1p)
	[ -n "$pid" ] && echo "$pid"
}

# is_root: 0 when running as root.
is_root() {
	[ "$(id -u)" = 0 ]
}

# others_copy: copies of what runs as other uids (setpriv) in a dir of
# the script's own that every uid may read, $T_TMP/others: the source and
# build trees may be under a dir only their owner can enter (a clone in
# /root, mode 0700).  Sets OTHERS_TCFS (the tcfs binary, which links
# libtcfs statically) and OTHERS_REPLAY (tests/replay's scripts).
others_copy() {
	local replay=${REPLAY:-$(dirname "$0")/../replay}
	OTHERS_TCFS=$T_TMP/others/bin/tcfs
	OTHERS_REPLAY=$T_TMP/others/replay
	mkdir -p "${OTHERS_TCFS%/*}" "$OTHERS_REPLAY" &&
		cp "$TCFS" "$OTHERS_TCFS" &&
		cp "$replay"/*.py "$OTHERS_REPLAY" &&
		chmod -R a+rX "$T_TMP/others" && chmod o+x "$T_TMP" ||
		bail_out "cannot copy tcfs and the replays into $T_TMP/others"
}

# --- Redis (tests of the fleet tier) -------------------------------------

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# redis_start [ARGS...]: a new redis-server on a free port (RPORT, or the
# port it had when RPORT_KEEP=1), with nothing saved to disk; sets RPID.
redis_start() {
	[ "${RPORT_KEEP:-0}" = 1 ] || RPORT=$(free_port)
	redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no "$@" >>"$T_TMP/redis.log" 2>&1 &
	RPID=$!
	at_exit "kill -CONT $RPID; kill -9 $RPID"
	for _ in $(seq 100); do
		# (With --requirepass PING answers NOAUTH: it answers.)
		redis-cli -p "$RPORT" ping 2>&1 | grep -q -e PONG -e NOAUTH && return 0
		sleep 0.05
	done
	bail_out "redis-server on port $RPORT does not answer: $(tail -3 "$T_TMP/redis.log")"
}

rcli() {
	redis-cli -p "$RPORT" "$@"
}

# require_redis_py: sets PYR, the Python that has redis-py (Debian's
# python3-redis: python3 on PATH may be another one), or skips the test.
require_redis_py() {
	local p
	PYR=
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import redis' 2>/dev/null; then
			PYR=$p
			return 0
		fi
	done
	echo "1..0 # SKIP python3-redis is not installed (tools/deps.sh)"
	exit 0
}

# mount_node NAME OPTS [IMPORT]: a new store and mount point (S_NAME,
# M_NAME; S and M too) mounted with -o OPTS ("" for none); with IMPORT,
# the store first has that cache imported (every kernel local).
mount_node() {
	S=$T_TMP/$1-store
	M=$T_TMP/$1-mnt
	mkdir -p "$M"
	if [ -n "${3:-}" ]; then
		"$TCFS" import --store "$S" "$3" >/dev/null 2>&1 </dev/null ||
			bail_out "tcfs import $3 fails"
	fi
	printf -v "S_$1" %s "$S"
	printf -v "M_$1" %s "$M"
	at_exit "fusermount3 -uz '$M'"
	if [ -n "$2" ]; then
		tcfs mount --store "$S" -o "$2" "$M"
	else
		tcfs mount --store "$S" "$M"
	fi
	check_rc "$1: mount with ${2:-no remote}" 0
}

# fig STORE NAME: remote.NAME of tcfs stats --json ("" when absent).
fig() {
	"$TCFS" stats --json --store "$1" >"$T_TMP/fig.json" 2>"$T_TMP/fig.err" </dev/null
	json_get "$T_TMP/fig.json" "remote.$2"
}

# wait_fig STORE NAME MIN [SECONDS]: waits until remote.NAME >= MIN (the
# mount saves its figures every ~100 ms), at most SECONDS (10); then,
# after a little more, prints it: what it settled on.
wait_fig() {
	local v i
	for ((i = 0; i < ${4:-10} * 10; i++)); do
		v=$(fig "$1" "$2")
		[[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -ge "$3" ] && break
		sleep 0.1
	done
	sleep 0.4
	fig "$1" "$2"
}

# settled STORE NAME: remote.NAME once the mount saved what it counted.
settled() {
	sleep 0.5
	fig "$1" "$2"
}
