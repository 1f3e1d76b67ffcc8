#!/usr/bin/env bash
# Progress: each long command (import, export, export --flat, pack, unpack
# offline and through a mount, prune offline and through a mount, gc,
# fsck) draws a progress line on a terminal, redrawn in place and cleared
# when it ends; none in a pipe, none with -q, and none on stdout, so that
# --json output stays JSON.  A terminal here is a pty (pty_run.py).
. "$(dirname "$0")/lib.sh"

PTY=$(dirname "$0")/pty_run.py
# pack and unpack stage under TMPDIR; no GPU tool is asked.
export TMPDIR=$T_TMP/tmp
mkdir -p "$TMPDIR"
export TCFS_GPUS=

SMALL=$(fixture_top triton-3.6-h200-small.tgz cA) || exit 1
S=$T_TMP/store
I=$T_TMP/img
TTY=$T_TMP/.tty

# on_tty ARGS...: tcfs ARGS with stderr on a pty (its bytes into $TTY),
# stdout into $OUT, the status into $RC.
on_tty() {
	python3 "$PTY" "$OUT" "$TTY" "$TCFS" "$@"
	RC=$?
}

# drawn WHAT FILE: FILE holds WHAT's progress line, drawn over the line
# ("\r", erase to its end) and erased after its last drawing.
drawn() {
	python3 - "$1" "$2" <<'PY'
import sys
what, data = sys.argv[1].encode(), open(sys.argv[2], "rb").read()
clear = b"\r\x1b[K"
last = data.rfind(clear + what + b": ")
sys.exit(0 if last >= 0 and data.rfind(clear) > last else 1)
PY
}

# no_progress FILE: nothing of a progress line in FILE (a pty's lines
# end in "\r\n": only the escape tells).
no_progress() {
	! grep -q $'\033' "$1"
}

# progress WHAT DESC PREP ARGS...: runs tcfs ARGS four times, each "@" in
# them made the run's number, after "PREP N" (a function; "" for none):
# on a terminal (progress WHAT drawn, stdout clean), with --json on a
# terminal (stdout is JSON), in a pipe and with -q (no progress).
progress() {
	local what=$1 desc=$2 prep=$3
	shift 3
	[ -z "$prep" ] || "$prep" 1
	on_tty "${@//@/1}"
	check_rc "$desc on a terminal" 0
	check "... draws '$what: ' progress there and erases it" drawn "$what" "$TTY"
	check "... and none of it on stdout" no_progress "$OUT"
	[ -z "$prep" ] || "$prep" 2
	on_tty "${@//@/2}" --json
	check "... --json on a terminal: stdout is JSON alone" \
		python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT"
	[ -z "$prep" ] || "$prep" 3
	run "$TCFS" "${@//@/3}"
	check_rc "$desc in a pipe" 0
	check "... draws no progress" no_progress "$ERR"
	[ -z "$prep" ] || "$prep" 4
	on_tty "${@//@/4}" -q
	check_rc "$desc -q on a terminal" 0
	check "... draws no progress" no_progress "$TTY"
}

fresh_store() {
	rm -rf "$T_TMP/p$1"
	"$TCFS" import -q --store "$T_TMP/p$1" "$SMALL"
}

progress importing "import" "" import --store "$T_TMP/i@" "$SMALL"
"$TCFS" import -q --store "$S" "$SMALL"
progress exporting "export" "" export --store "$S" "$T_TMP/e@"
progress exporting "export --flat" "" export --flat --store "$S" "$T_TMP/f@"
progress packing "pack" "" pack --store "$S" "$I:v@"
progress unpacking "unpack" "" unpack --store "$T_TMP/u@" "$I:v1"
progress pruning "prune" fresh_store prune --store "$T_TMP/p@" --name '*'
progress collecting "gc" "" gc --store "$S"
progress checking "fsck" "" fsck --store "$S"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip "unpack and prune through a mount" "no /dev/fuse or fusermount3"
	exit 0
fi
M=$T_TMP/mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"
"$TCFS" import -q --store "$T_TMP/m" "$SMALL"
tcfs mount --store "$T_TMP/m" "$M"
check_rc "mount a store" 0
progress unpacking "unpack through the mount" "" unpack --store "$T_TMP/m" "$I:v1"
progress pruning "prune through the mount" "" prune --store "$T_TMP/m" --ir
tcfs umount "$M"
