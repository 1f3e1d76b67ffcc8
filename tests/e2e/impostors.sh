#!/usr/bin/env bash
# Another user's impostors of root's mount (issue 29): a fuse.tcfs mount
# of their own that names root's store as its source (tcfs mount -o
# fsname=), and a listener of their own in place of the store's ctl.sock.
# tcfs umount and prune act on neither, and say whose each is.
set -u
. "$(dirname "$0")/lib.sh"

require_other_users

U=2201
others_copy
as() {
	as_uid "$U" "$@"
}
mounted() {
	grep -q " $1 " /proc/self/mountinfo
}
S=$T_TMP/store
M=$T_TMP/mnt
UD=$T_TMP/u
mkdir -p "$M" "$UD/store" "$UD/mnt"
SRC=$(fixture_top triton-3.6-h200-small.tgz cA)
tcfs import --store "$S" "$SRC"
check_rc "root's store imported" 0
chown -R "$U:$U" "$UD"
# keys: the key dirs an export of root's store holds.
keys() {
	rm -rf "$T_TMP/e"
	tcfs export --quiet --store "$S" "$T_TMP/e"
	ls "$T_TMP/e" | grep -cE '^[A-Z2-7]{52}$'
}
KEYS=$(keys)
check_num "... of many kernels" "$KEYS" -gt 10

echo "# --- uid $U's mount, with root's store as its source"
at_exit "fusermount3 -uz '$UD/mnt'"
# Any user may mount a FUSE file system (fusermount3); where /dev/fuse is
# root's alone, uid U gets the two capabilities a mount takes, and it is
# still uid U's mount (user_id=U).
run as --inh-caps=+sys_admin,+dac_override \
	--ambient-caps=+sys_admin,+dac_override \
	"$OTHERS_TCFS" mount --store "$UD/store" -o "fsname=$S" "$UD/mnt"
check_rc "uid $U mounts a store of its own" 0
check "... which names root's store as its source" \
	grep -q " $UD/mnt .* fuse.tcfs $S " /proc/self/mountinfo
tcfs umount "$UD/mnt"
check_rc "root's tcfs umount of it: refused" 1
check_grep_fixed "... naming the mount and its uid" \
	"$UD/mnt: a mount of $S by uid $U" "$ERR"
check "... and it is still mounted" mounted "$UD/mnt"
tcfs prune --store "$S" --name '*'
check_rc "tcfs prune of root's store: refused" 1
check_grep_fixed "... naming the mount and its uid" \
	"$UD/mnt: a mount of $S by uid $U" "$ERR"
check_eq "... and pruned nothing" "$KEYS" "$(keys)"

echo "# --- root's own mount of the store beside it"
at_exit "fusermount3 -uz '$M'"
tcfs mount --store "$S" "$M"
check_rc "root mounts its store" 0
tcfs prune --store "$S" --name 'none*'
check_rc "prune goes through root's mount, past uid $U's" 0

echo "# --- uid $U's listener in place of the store's ctl.sock"
# A store dir that others can write (shared by mistake).
chmod 0777 "$S"
cat >"$UD/listen.py" <<'PY'
import os, socket, sys
path, got, ready = sys.argv[1:4]
os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
open(ready, "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(5)
    with open(got, "ab") as f:
        f.write(c.recv(65536) or b"")
    c.sendall(b'{"kernels": [], "bytes": 0, "files": 0}')
    c.close()
PY
chmod a+r "$UD/listen.py"
as /usr/bin/python3 "$UD/listen.py" "$S/ctl.sock" "$UD/got" "$UD/ready" &
at_exit "kill $!"
for _ in $(seq 100); do
	[ -e "$UD/ready" ] && break
	sleep 0.1
done
check "uid $U listens on the store's ctl.sock" test -e "$UD/ready"
tcfs prune --store "$S" --name '*'
check_rc "tcfs prune through it: refused" 1
check_grep_fixed "... naming the socket and its uid" \
	"$S/ctl.sock: its listener runs as uid $U" "$ERR"
check_eq "... and sent it nothing" "" "$(cat "$UD/got" 2>/dev/null)"
tcfs umount "$M"
check_rc "root's mount unmounts" 0
check_eq "... and nothing was pruned" "$KEYS" "$(keys)"
