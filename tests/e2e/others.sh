#!/usr/bin/env bash
# Other users on an allow_other mount: the reports under .tcfs/ show
# everyone the counts, but the processes (pids, command names, users) of
# other users only to root and the mount's owner.  Each user reads a view
# of its own, even right after root read root's (no page is shared).
set -u
. "$(dirname "$0")/lib.sh"

if ! is_root; then
	echo "1..0 # SKIP needs root to run as another user (setpriv)"
	exit 0
elif [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
KEY=JLI3W7YUZ6H6IB4PG6NA55MGXJ3OX4IC7GWTMUKQ2I2QRVL7WMAQ
S=$T_TMP/store
M=$T_TMP/mnt
mkdir -p "$M"
chmod o+x "$T_TMP"	# for nobody, to reach the mount point
at_exit "fusermount3 -uz '$M'"
tcfs mount -o allow_other --store "$S" "$M"
check_rc "mount with allow_other" 0
mkdir -m 755 "$M/$KEY"
# Two jobs with command names of their own: a copy of stat each.
cp "$(command -v stat)" "$T_TMP/rootsecretjob"
cp "$(command -v stat)" "$T_TMP/nobodyjob"
chmod 755 "$T_TMP/rootsecretjob" "$T_TMP/nobodyjob"
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
"$T_TMP/rootsecretjob" "$M/$KEY/__grp__a.json" >/dev/null 2>&1
as_nobody "$T_TMP/nobodyjob" "$M/$KEY/__grp__b.json" >/dev/null 2>&1

cat "$M/.tcfs/stats" >"$T_TMP/root.txt"
check_grep "root sees its own job in .tcfs/stats (one miss, not '1 misses')" \
	" rootsecretjob \(uid 0\): 0 hits, 1 miss$" \
	"$T_TMP/root.txt"
check_grep "... and nobody's" " nobodyjob \(uid 65534\): 0 hits, 1 miss$" \
	"$T_TMP/root.txt"
# Read right after root's read: a view shared with root would show root's.
as_nobody cat "$M/.tcfs/stats" >"$T_TMP/nobody.txt" 2>&1
check_grep "nobody sees its own job in .tcfs/stats" \
	" nobodyjob \(uid 65534\): 0 hits, 1 miss$" \
	"$T_TMP/nobody.txt"
check "... not root's" eval "! grep -q rootsecretjob '$T_TMP/nobody.txt'"
check_grep "... and the totals of everyone" "^kernel probes    0 hits, 2 misses" "$T_TMP/nobody.txt"

cat "$M/.tcfs/stats.json" >"$T_TMP/root.json"
as_nobody cat "$M/.tcfs/stats.json" >"$T_TMP/nobody.json" 2>&1
check_eq "stats.json: root sees both jobs, with their users" \
	"nobodyjob 65534 rootsecretjob 0" \
	"$(json_eval "$T_TMP/root.json" "' '.join('%s %s' % (p['comm'], p['uid']) for p in sorted(d['per_process'], key=lambda p: p['comm']))")"
check_eq "stats.json: nobody sees its own job only, and everyone's totals" \
	"nobodyjob 65534 misses 2" \
	"$(json_eval "$T_TMP/nobody.json" "' '.join('%s %s' % (p['comm'], p['uid']) for p in d['per_process']) + ' misses %d' % d['misses']")"
as_nobody cat "$M/.tcfs/metrics.prom" >"$T_TMP/nobody.prom" 2>&1
check_grep "metrics.prom: nobody reads the counts" \
	'^tcfs_probes_total{kind="kernel",result="miss"} 2$' "$T_TMP/nobody.prom"
check "... which name no process" eval "! grep -q -e rootsecretjob -e nobodyjob '$T_TMP/nobody.prom'"

# A descriptor nobody holds is of nobody's view, whatever root reads meanwhile.
# The system's python3: nobody may not run one installed under /root.
SYSPY=python3
[ -x /usr/bin/python3 ] && SYSPY=/usr/bin/python3
as_nobody "$SYSPY" - "$M/.tcfs/stats" "$T_TMP/root-read" >"$T_TMP/held.txt" 2>&1 <<'PY' &
import os, sys, time
f = open(sys.argv[1], "rb", buffering=0)
f.read()

print("opened", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
os.lseek(f.fileno(), 0, 0)
sys.stdout.write(f.read().decode())
PY
held=$!
until grep -q opened "$T_TMP/held.txt" 2>/dev/null || ! kill -0 $held 2>/dev/null; do
	sleep 0.05
done
cat "$M/.tcfs/stats" >/dev/null
touch "$T_TMP/root-read"
wait $held
check_grep_fixed "a descriptor nobody held reads nobody's job after root read" \
	" nobodyjob (uid 65534)" "$T_TMP/held.txt"
check "... not root's" eval "! grep -q rootsecretjob '$T_TMP/held.txt'"

# Another user's lookups in a loop push out no rendering root holds open:
# each user keeps its own share of the snapshots.
rm -f "$T_TMP/root-read"
chmod 777 "$T_TMP"	# for nobody to say when it is done
"$SYSPY" - "$M/.tcfs/stats.json" "$T_TMP/root-read" >"$T_TMP/root-held.txt" 2>&1 <<'PY' &
import json, os, sys, time
f = open(sys.argv[1], "rb", buffering=0)
print("opened", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
print("valid" if json.loads(f.read()) else "empty", flush=True)
PY
held=$!
until grep -q opened "$T_TMP/root-held.txt" 2>/dev/null || ! kill -0 $held 2>/dev/null; do
	sleep 0.05
done
# (Each open a rendering nobody holds: 300 of them, past all the mount
# keeps for everyone.)
as_nobody "$SYSPY" -c 'import os, sys
fds = [os.open(sys.argv[1], os.O_RDONLY) for i in range(300)]
open(sys.argv[2], "w").close()' "$M/.tcfs/stats" "$T_TMP/root-read"
wait $held
check_grep_fixed "root's open .tcfs/stats.json reads whole after nobody held 300" \
	"valid" "$T_TMP/root-held.txt"

tcfs stats --store "$S"
check_grep_fixed "tcfs stats (who can open the store sees it all) shows root's job" \
	" rootsecretjob (uid 0)" "$OUT"
tcfs umount "$M"
check_rc "tcfs umount exits 0" 0
