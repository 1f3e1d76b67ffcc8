#!/usr/bin/env bash
# What a cache shared by many users costs one user: Triton's warm traffic
# (tests/replay/replay.py, the multitarget fixture) through a mount of
# one user (today's), through a shared mount (-o allow_other,trust=...)
# replayed by a trusted user (root), and by an untrusted one (its own key
# dirs), in the same loop.  On a shared mount the names at the cache root
# mean something else for each user, so the kernel caches none of them:
# this measures that.  Prints medians and the ratios (target: shared,
# trusted, within 1.1 of one user's).
#   tests/bench/users.sh [TCFS_BINARY] [RUNS]      (as root)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
runs=${2:-7}
fixtures=${FIXTURES:-$top/tests/fixtures}
[ "$(id -u)" = 0 ] || { echo "users.sh: needs root (setpriv)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench-users.XXXXXX")
chmod 755 "$tmp"
# The other user reads a copy of its own: the clone may sit in a 0700 home.
cp "$top"/tests/replay/*.py "$tmp/" && chmod a+r "$tmp"/*.py
replay=$tmp/replay.py
trap 'for m in "$tmp"/m*; do fusermount3 -uz "$m" 2>/dev/null; done; rm -rf "$tmp"' EXIT
tar -xzf "$fixtures/triton-3.6-multitarget.tgz" -C "$tmp"
chmod -R a+rX "$tmp/big"
mkdir -p "$tmp/m1" "$tmp/m2"
"$tcfs" mount --store "$tmp/s1" "$tmp/m1"
"$tcfs" mount --store "$tmp/s2" -o allow_other,trust=0 "$tmp/m2"
chmod 1777 "$tmp/m2"
u=2201
as() { setpriv --reuid "$u" --regid "$u" --clear-groups "$@"; }
one() { "$@" /usr/bin/python3 "$replay" "$tmp/big" "$dir" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["errors"] == 0, d; print(d["elapsed"])'; }
dir=$tmp/m1 one env >/dev/null
dir=$tmp/m2 one env >/dev/null
dir=$tmp/m2 one as >/dev/null
declare -A T
for i in $(seq "$runs"); do
	T[one]="${T[one]:-} $(dir=$tmp/m1 one env)"
	T[trusted]="${T[trusted]:-} $(dir=$tmp/m2 one env)"
	T[untrusted]="${T[untrusted]:-} $(dir=$tmp/m2 one as)"
done
med() { echo "${T[$1]}" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "# warm replay of the multitarget fixture (154 kernels), $runs runs, medians in seconds"
for k in one trusted untrusted; do printf '%-10s %s\n' "$k" "$(med "$k")"; done
python3 - "$(med one)" "$(med trusted)" "$(med untrusted)" <<'PY'
import sys
one, t, u = map(float, sys.argv[1:])
print(f"ratio shared, trusted user / one user's mount    {t / one:.2f}  (target <= 1.1)")
print(f"ratio shared, untrusted user / one user's mount  {u / one:.2f}")
PY
