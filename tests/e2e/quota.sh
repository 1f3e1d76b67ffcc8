#!/usr/bin/env bash
# Bounds per user on an allow_other mount: a user past their share of the
# size limit (-o user_max_size) loses their own least recently used
# kernels first and nobody else's; a user whose kernels are all in use
# gets EDQUOT until one can go; a user's files no kernel holds (plain
# files, key dirs with no group file) count too, and a write taking them
# past the share fails; root and the mount's owner have no share;
# tcfs stats shows each writer's kernels; and one user's flood of probes
# does not push another's out of the probe log.
set -u
. "$(dirname "$0")/lib.sh"

require_other_users
S=$T_TMP/store
M=$T_TMP/mnt
mkdir -p "$M"
chmod o+x "$T_TMP"	# for the other users, to reach the mount point
at_exit "fusermount3 -uz '$M'"
# The system's python3, which other users can run (root's may be under
# /root).
PY3=/usr/bin/python3
# jpy EXPR: EXPR evaluated with d bound to the JSON document on stdin.
jpy() {
	python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}

# put U NAME...: uid U writes a kernel of each NAME as Triton does: a key
# dir, a 100 KiB cubin and its metadata, then the group file by a rename.
# Each key is NAME's, so a test can name the kernel it looks for.  Prints
# how many writes failed with EDQUOT, and the first other error.
put() {
	local u=$1
	shift
	as_uid "$u" "$PY3" - "$M" "$@" <<'PY'
import base64, errno, hashlib, json, os, sys
root, names = sys.argv[1], sys.argv[2:]
quota = 0
for name in names:
    key = base64.b32encode(hashlib.sha256(name.encode()).digest()).decode().rstrip("=")
    d = os.path.join(root, key)
    try:
        os.makedirs(d, exist_ok=True)
        files = {name + ".cubin": os.urandom(100 * 1024),
                 name + ".json": json.dumps({"name": name, "target": {"backend": "cuda", "arch": 90, "warp_size": 32}}).encode()}
        for f, data in files.items():
            with open(os.path.join(d, f), "wb") as out:
                out.write(data)
        tmp = os.path.join(d, "__grp__%s.json.tmp.pid_%d" % (name, os.getpid()))
        with open(tmp, "w") as out:
            json.dump({"child_paths": {f: os.path.join(d, f) for f in files}}, out)
        os.replace(tmp, os.path.join(d, "__grp__%s.json" % name))
    except OSError as e:
        if e.errno != errno.EDQUOT:
            print("error", name, e)
            sys.exit(1)
        quota += 1
print(quota)
PY
}
# has NAME...: how many of the kernels NAME... are in the cache.
# has UID NAME...: how many of the kernels the user sees (their own key
# dirs are theirs alone: users.c).
has() {
	local u=$1
	shift
	as_uid "$u" "$PY3" - "$M" "$@" <<'PY'
import base64, hashlib, os, sys
root, names = sys.argv[1], sys.argv[2:]
n = 0
for name in names:
    key = base64.b32encode(hashlib.sha256(name.encode()).digest()).decode().rstrip("=")
    n += os.path.exists(os.path.join(root, key, "__grp__%s.json" % name))
print(n)
PY
}
# settle: two passes of the evictor (one a second).
settle() { sleep 3; }

tcfs mount -o allow_other,user_max_size=1Q --store "$S" "$M"
check_rc "-o user_max_size=1Q is refused: a usage error" 2
check_grep_fixed "... naming the option" "-o user_max_size=1Q" "$ERR"

tcfs mount -o allow_other,user_max_size=300K --store "$S" "$M"
check_rc "mount with allow_other,user_max_size=300K" 0
chmod 1777 "$M"

echo "# --- a user past their share loses their own oldest kernels"
check_eq "uid 1001 writes a1 a2 a3 (about 300 KiB)" 0 "$(put 1001 a1 a2 a3)"
check_eq "uid 1002 writes b1 b2" 0 "$(put 1002 b1 b2)"
sleep 11	# past the grace of a kernel just made (in use)
check_eq "uid 1001 writes a4 a5" 0 "$(put 1001 a4 a5)"
settle
check_eq "... its oldest three kernels are evicted" 0 "$(has 1001 a1 a2 a3)"
check_eq "... its newest two stay" 2 "$(has 1001 a4 a5)"
check_eq "... uid 1002's kernels all stay" 2 "$(has 1002 b1 b2)"
tcfs stats --json --store "$S"
check_eq "stats: 1001 has 2 kernels, 1002 2" "1001:2 1002:2" \
	"$(jpy '" ".join("%s:%d" % (u["uid"], u["kernels"]) for u in d["users"])' <"$OUT")"
check_eq "... and no share in the store (-o is the mount's own)" 0 \
	"$(json_eval "$OUT" "d['eviction']['user_max_size']")"
tcfs config --store "$S" user-max-size 300K
check_rc "config user-max-size 300K" 0
tcfs stats --json --store "$S"
check_eq "... stats shows the store's share" 307200 \
	"$(json_eval "$OUT" "d['eviction']['user_max_size']")"
tcfs stats --store "$S"
check_grep "stats shows a line per user when the store sets a share" \
	"uid 1001: .* of 300.0 KiB, 2 kernels" "$OUT"
as_uid 1002 cat "$M/.tcfs/stats.json" >"$T_TMP/own.json"
check_eq ".tcfs/stats.json shows uid 1002 only its own figures" "1002" \
	"$(jpy '" ".join(str(u["uid"]) for u in d["users"])' <"$T_TMP/own.json")"

echo "# --- a user whose kernels are all in use gets EDQUOT"
check_eq "uid 1003 writes c1..c4 (400 KiB) at once" 0 "$(put 1003 c1 c2 c3 c4)"
settle
check_eq "... nothing of theirs could go: all just made" 4 "$(has 1003 c1 c2 c3 c4)"
check_eq "... so their next kernel's writes fail with EDQUOT" 1 "$(put 1003 c5)"
check_eq "... while another user writes on" 0 "$(put 1002 b3)"
sleep 11
settle
check_eq "once theirs are out of use, the oldest go" "0 2" \
	"$(has 1003 c1 c2) $(has 1003 c3 c4)"
check_eq "... and the user writes again" 0 "$(put 1003 c6)"

echo "# --- root and the mount's owner have no share"
check_eq "root writes r1..r5 (500 KiB)" 0 "$(put 0 r1 r2 r3 r4 r5)"
sleep 11
check_eq "... and more" 0 "$(put 0 r6)"
settle
check_eq "... and keeps all six" 6 "$(has 0 r1 r2 r3 r4 r5 r6)"

echo "# --- the probe log is kept per user"
tcfs config --store "$S" log-max-events 100
check_rc "config log-max-events 100" 0
K=JLI3W7YUZ6H6IB4PG6NA55MGXJ3OX4IC7GWTMUKQ2I2QRVL7WMAQ
mkdir -m 1777 "$M/$K"
as_uid 1002 "$PY3" -c '
import os, sys
for i in range(5):
    os.path.exists(os.path.join(sys.argv[1], "__grp__quiet%d.json" % i))' "$M/$K"
as_uid 1001 "$PY3" -c '
import os, sys
for i in range(1000):
    os.path.exists(os.path.join(sys.argv[1], "__grp__flood%d.json" % i))' "$M/$K"
sleep 3	# the log is trimmed every 2 s
tcfs log --json --store "$S"
check_eq "uid 1001 probed 1000 times; uid 1002's 5 probes stay in tcfs log" 5 \
	"$(grep -c '"name":"quiet' "$OUT")"
check_num "... and the log keeps its bound" "$(wc -l <"$OUT")" -le 100
check_num "... most of it the flood's newest" "$(grep -c '"name":"flood9' "$OUT")" -gt 50

echo "# --- bytes that cannot be evicted count toward the share too"
tcfs umount "$M"
check_rc "unmount" 0
tcfs mount -o allow_other,user_max_size=1M --store "$S" "$M"
check_rc "mount with allow_other,user_max_size=1M" 0
# big U PATH: uid U writes 20 MiB to PATH (made with its dir), 64 KiB a
# write; prints the errno's name of the write that failed, or ok, and the
# bytes written.
big() {
	as_uid "$1" "$PY3" - "$2" <<'PY'
import errno, os, sys
n = 0
try:
    os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)
    with open(sys.argv[1], "wb", buffering=0) as f:
        for _ in range(320):
            f.write(b"x" * 65536)
            n += 65536
except OSError as e:
    print(errno.errorcode[e.errno], n)
    sys.exit(0)
print("ok", n)
PY
}
check_eq "uid 1004 writes d1 d2" 0 "$(put 1004 d1 d2)"
check_eq "uid 1005 writes e1 e2" 0 "$(put 1005 e1 e2)"
sleep 11	# past the grace of a kernel just made
check_eq "uid 1004: a plain file stops at the share, EDQUOT" \
	"EDQUOT 1048576" "$(big 1004 "$M/plain-1004")"
check_eq "uid 1006: a key dir with no group file stops there too" \
	"EDQUOT 1048576" \
	"$(big 1006 "$M/JLI3W7YUZ6H6IB4PG6NA55MGXJ3OX4IC7GWTMUKQ2I2QRVL7WMA2/x.cubin")"
settle
check_eq "uid 1004's own kernels went first" 0 "$(has 1004 d1 d2)"
check_eq "... uid 1005's all stay" 2 "$(has 1005 e1 e2)"
check_eq "... uid 1004 writes no new file past its share" "EDQUOT 0" \
	"$(big 1004 "$M/plain2-1004")"
check_eq "... nor does uid 1006, the bytes once committed" "EDQUOT 0" \
	"$(big 1006 "$M/plain-1006")"
run as_uid 1004 "$PY3" -c '
import sys
with open(sys.argv[1], "r+b", buffering=0) as f:
    f.write(b"y" * 65536)' "$M/plain-1004"
check_rc "... yet uid 1004 rewrites its own file in place" 0
check_eq "root has no share" "ok 20971520" "$(big 0 "$M/plain-root")"

tcfs umount "$M"
check_rc "unmount" 0
