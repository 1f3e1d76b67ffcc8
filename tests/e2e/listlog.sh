#!/usr/bin/env bash
# What a new user tripped on in log, list, prune, info and config (issue
# 31), each with the command they typed: log -F printed the whole log
# before following; list's rows ran past 200 columns on a terminal, and
# its --arch refused the TARGET column's own value; prune showed keys cut
# to 20 characters and blamed processes for blobs nobody held; info
# counted those blobs as stored for a minute; config's table lost its
# columns past 15-character keys.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
PTY=$(dirname "$0")/pty_run.py
SRC=$(fixture_top triton-3.6-h200-small.tgz cA)
S=$T_TMP/store
M=$T_TMP/mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M' 2>/dev/null"
tcfs mount --store "$S" "$M"
check_rc "mount" 0
replay cold "$SRC" "$M"
replay warm "$SRC" "$M"
tcfs log --store "$S"
check_num "the log holds more than 10 events" "$(wc -l <"$OUT")" -gt 10
tail -10 "$OUT" >"$T_TMP/last10"
ALL=$(wc -l <"$OUT")

echo "# --- tcfs log -F: the last 10, then what comes"
"$TCFS" log --store "$S" -F >"$T_TMP/follow" 2>&1 &
FPID=$!
at_exit "kill $FPID 2>/dev/null"
for _ in $(seq 100); do
	[ "$(wc -l <"$T_TMP/follow")" -ge 10 ] && break
	sleep 0.1
done
KEY=$(cd "$SRC" && ls | head -1)
GRP=$(cd "$SRC/$KEY" && ls __grp__*.json)
cat "$M/$KEY/$GRP" >/dev/null
for _ in $(seq 100); do
	[ "$(wc -l <"$T_TMP/follow")" -ge 11 ] && break
	sleep 0.1
done
kill "$FPID"
wait "$FPID" 2>/dev/null
check_eq "log -F first prints the log's last 10 events" "$(cat "$T_TMP/last10")" \
	"$(head -10 "$T_TMP/follow")"
check_grep "then each new one: the probe made while it followed" \
	" hit +kernel $KEY/" <(sed -n 11p "$T_TMP/follow")
tcfs log --store "$S"
check_eq "log alone: the whole log, as before" "$((ALL + 1))" "$(wc -l <"$OUT")"
tail -3 "$OUT" >"$T_TMP/last3"
tcfs log --store "$S" -n 3
check_eq "log -n 3: the last 3 events" "$(cat "$T_TMP/last3")" "$(cat "$OUT")"
tcfs log --store "$S" -n 0
check_eq "log -n 0: nothing" "" "$(cat "$OUT")"
tcfs log --store "$S" -n ten
check_rc "log -n ten: a usage error (2)" 2

echo "# --- tcfs list on a terminal, and --arch as TARGET shows it"
# list_tty COLUMNS: tcfs list run as from a terminal COLUMNS wide.
list_tty() {
	COLUMNS=$1 run python3 "$PTY" - "$T_TMP/tty" "$TCFS" list --store "$S"
	tr -d '\r' <"$T_TMP/tty" >"$T_TMP/tty.txt"
}
for cols in 200 120 100 80; do
	list_tty "$cols"
	check_rc "list on a $cols-column terminal: exit 0" 0
	check_eq "... every row fits in $cols columns" 0 \
		"$(python3 -c 'import sys; print(sum(len(l.rstrip("\n")) > int(sys.argv[1]) for l in open(sys.argv[2], encoding="utf-8")))' "$cols" "$T_TMP/tty.txt")"
	check_eq "... one row per kernel and the header" 27 "$(grep -c . "$T_TMP/tty.txt")"
done
check_grep "a long name is cut with an ellipsis on an 80-column terminal" \
	"^triton_per_f*… " "$T_TMP/tty.txt"
check_grep "... keys show 16 characters, a prefix every command takes" \
	" 2YZTOHNUHXOOLRMW " "$T_TMP/tty.txt"
check_grep "... which names the kernel (why takes it)" "^[a-z_]" \
	<("$TCFS" why --store "$S" 2YZTOHNUHXOOLRMW 2>&1)
list_tty 200
check_grep "200 columns show every column" "CREATED +ORIGIN VISIBLE ROOT$" "$T_TMP/tty.txt"
tcfs list --store "$S"
check_grep "a pipe gets whole rows: whole names" \
	"^triton_per_fused__softmax_add_cumsum_exp_mul_prepare_softmax_online_sin_sub_0 " "$OUT"
check_grep "... and whole keys" " 37QWF3PQORQNDY2BLCX7ZDBZHJLIO26GSHLETVC6HWB3MR4PP2MQ " "$OUT"
check_eq "... and columns aligned: every row's KEY at one column" 1 \
	"$(python3 -c 'import re, sys
rows = open(sys.argv[1]).read().splitlines()
at = {rows[0].index("KEY")} | {re.search(" [A-Z2-7]{52} ", r).start() + 1 for r in rows[1:]}
print(len(at))' "$OUT")"
tcfs list --store "$S" --arch cuda-90 --json
check_eq "list --arch cuda-90, as TARGET shows it: every kernel" 26 \
	"$(json_eval "$OUT" 'len(d)')"
tcfs list --store "$S" --arch hip-90 --json
check_eq "list --arch hip-90: none (the backend counts)" 0 "$(json_eval "$OUT" 'len(d)')"
tcfs list --store "$S" --arch sm_90 --json
check_eq "list --arch sm_90, as before: every kernel" 26 "$(json_eval "$OUT" 'len(d)')"
tcfs list --help
check_grep "list --help names the ORIGIN column" "ORIGIN" "$OUT"
check_grep "... and the VISIBLE column" "VISIBLE" "$OUT"

echo "# --- tcfs prune: whole keys, and the figures right at once"
tcfs info --store "$S" --json
STORED=$(json_get "$OUT" stored_bytes)
tcfs prune --store "$S" --name 'matmul*'
check_rc "prune --name 'matmul*': exit 0" 0
cp "$OUT" "$T_TMP/prune.out"
check_eq "prune shows each key whole, as list does" 8 \
	"$(grep -cE '^matmul_kernel +[A-Z2-7]{52} ' "$T_TMP/prune.out")"
check_grep "what is not freed yet is said to go within a minute, not blamed on processes" \
	"freed .* more within a minute: blobs written in the last minute" "$T_TMP/prune.out"
check_eq "... and no process is said to hold any" 0 \
	"$(grep -c 'once no process uses them' "$T_TMP/prune.out")"
tcfs info --store "$S" --json
PENDING=$(json_get "$OUT" pending_bytes)
check_num "info right after: the blobs to be freed are told apart" "$PENDING" -gt 0
check_eq "... and the dedup saving is what stays against what is logical" \
	"$(json_eval "$OUT" "max(0, d['logical_bytes'] - (d['stored_bytes'] - d['pending_bytes']))")" \
	"$(json_get "$OUT" dedup_saved_bytes)"
check_num "... which no longer reads 0 B" "$(json_get "$OUT" dedup_saved_bytes)" -gt 0
tcfs info --store "$S"
check_grep "info (text) says what the mount frees within a minute" \
	"of it no file names: the mount frees it within a minute" "$OUT"

echo "# --- tcfs prune of kernels the kernel holds, but no process"
# Imported (no blob new to the mount), then read through it as Triton
# does: the kernel keeps their nodes, which prune waits a moment for.
S3=$T_TMP/store3
M3=$T_TMP/mnt3
mkdir -p "$M3"
tcfs import -q --store "$S3" "$SRC"
at_exit "fusermount3 -uz '$M3' 2>/dev/null"
tcfs mount --store "$S3" "$M3"
check_rc "mount an imported store" 0
cat "$M3"/*/* >/dev/null
STORED3=$(info_field "$S3" stored_bytes)
tcfs prune --store "$S3" --name 'add*' --json
cp "$OUT" "$T_TMP/prune3.json"
FREED=$(json_get "$T_TMP/prune3.json" freed_bytes)
check_eq "prune --name 'add*', its files read through the mount: nothing left pending" \
	0 "$(json_get "$T_TMP/prune3.json" pending_bytes)"
check_num "... it freed their blobs itself" "$FREED" -gt 0
check_eq "... and info's stored size is less by exactly that, at once" \
	"$((STORED3 - FREED))" "$(info_field "$S3" stored_bytes)"
HELD=$(ls "$M3"/*/softmax_kernel.json | head -n 1)
sleep 600 <"$HELD" &
HOLDER=$!
at_exit "kill $HOLDER 2>/dev/null"
tcfs prune --store "$S3" --name 'softmax*'
check_grep "prune with a file held open: its bytes wait for it, and it says so" \
	"more once no process uses them\)" "$OUT"
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
fusermount3 -u "$M3"

echo "# --- tcfs config: one table, however long the key"
tcfs config --store "$S" remote-key-format triton
tcfs config --store "$S"
check_rc "config: exit 0" 0
check_eq "every value starts at one column" 1 \
	"$(awk '{ match($0, /^[^ ]+ +/); print RLENGTH }' "$OUT" | sort -u | wc -l)"
check_eq "... and every '(default' at one column" 1 \
	"$(awk '{ print index($0, "(default") }' "$OUT" | sort -u | wc -l)"
fusermount3 -u "$M"
