#!/usr/bin/env bash
# The fleet tier's cost where it must cost nothing: Triton's traffic
# (tests/replay/replay.py) on a cache of N synthetic kernels (gen_kernels.py
# --full, 8 files each), through a mount with no remote, with a live Redis
# (publishing binary-only in the background), and with a Redis that is
# SIGSTOPped (every call a timeout until the breaker opens).  Then node B:
# a fresh store whose first replay is all remote hits, and its warm replay,
# against plain disk's warm replay; the Redis commands each phase sent are
# counted (INFO commandstats), so a warm run that asks nothing shows 0.
# One redis-server of Debian's, started here on a free port.  Prints medians
# and the ratios of doc/testing.md's targets:
#   cold, remote live / no remote          <= 1.1
#   cold, remote stopped / no remote       <= 1.2
#   B's first run / plain warm             (kernels fetched over loopback)
#   B warm / plain warm, Redis calls 0
#
#   tests/bench/remote.sh [TCFS_BINARY] [N] [RUNS]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
n=${2:-1000}
runs=${3:-3}
fixtures=${FIXTURES:-$top/tests/fixtures}
replay=$top/tests/replay/replay.py
[ -x "$tcfs" ] || { echo "no tcfs binary at $tcfs (build first)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "needs redis-server" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench-remote.XXXXXX")
mnt=$tmp/mnt
rpid=
cleanup() {
	fusermount3 -uz "$mnt" 2>/dev/null || true
	[ -z "$rpid" ] || { kill -CONT "$rpid"; kill "$rpid"; } 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$mnt" "$tmp/fx"
tar -xzf "$fixtures/triton-3.6-multitarget.tgz" -C "$tmp/fx"
python3 "$top/tests/bench/gen_kernels.py" --full "$tmp/fx/big" "$n" "$tmp/src" >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
	--daemonize no >"$tmp/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 50); do
	redis-cli -p "$port" ping >/dev/null 2>&1 && break
	sleep 0.1
done
url=redis://127.0.0.1:$port

# calls: the Redis commands served so far (INFO commandstats).
calls() {
	redis-cli -p "$port" info commandstats |
		awk -F'[:=,]' '/^cmdstat_/ && $1 !~ /info|flushall|config/ { s += $3 } END { print s + 0 }'
}

# one LABEL DIR: a replay of the source on DIR, its seconds.
one() {
	python3 "$replay" "$tmp/src" "$2" >"$tmp/r.json"
	python3 - "$tmp/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["errors"] == 0, d
print(d["elapsed"])
PY
}

# mount STORE [OPTS]
mountit() {
	"$tcfs" mount --store "$1" ${2:+-o "$2"} "$mnt"
}

# cold_run LABEL OPTS: a fresh store, its cold replay's seconds.
cold_run() {
	rm -rf "$tmp/s"
	mountit "$tmp/s" "$2"
	one "$1" "$mnt"
	"$tcfs" umount "$mnt"
}

declare -A T
add() { T[$1]="${T[$1]:-} $2"; }
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

for i in $(seq "$runs"); do
	add cold_none "$(cold_run none '')"
	redis-cli -p "$port" flushall >/dev/null
	add cold_live "$(cold_run live "remote=$url")"
	kill -STOP "$rpid"
	add cold_stopped "$(cold_run stopped "remote=$url")"
	kill -CONT "$rpid"
done

# Node A publishes; node B's first run is all remote hits, then warm.
redis-cli -p "$port" flushall >/dev/null
rm -rf "$tmp/a"
mountit "$tmp/a" "remote=$url"
one a "$mnt" >/dev/null
for _ in $(seq 300); do	# the publisher's queue drains
	p=$("$tcfs" stats --store "$tmp/a" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["remote"]["published"])')
	[ "$p" -ge "$n" ] && break
	sleep 0.1
done
"$tcfs" umount "$mnt"
rm -rf "$tmp/plain"
mkdir "$tmp/plain"
one plain "$tmp/plain" >/dev/null
for i in $(seq "$runs"); do
	add plain_warm "$(one plain "$tmp/plain")"
	rm -rf "$tmp/b"
	mountit "$tmp/b" "remote=$url"
	c0=$(calls)
	add b_first "$(one b "$mnt")"
	c1=$(calls)
	add b_warm "$(one b "$mnt")"
	c2=$(calls)
	hits=$("$tcfs" stats --store "$tmp/b" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["remote"]["kernel_hits"])')
	"$tcfs" umount "$mnt"
	add b_first_calls "$((c1 - c0))"
	add b_warm_calls "$((c2 - c1))"
	add b_remote_hits "$hits"
done

echo "# $n kernels ($((n * 8)) files), $runs runs, medians in seconds"
for k in cold_none cold_live cold_stopped plain_warm b_first b_warm; do
	printf '%-14s %s\n' "$k" "$(echo "${T[$k]}" | median)"
done
printf '%-14s %s\n' "B remote hits" "$(echo "${T[b_remote_hits]}" | median)"
printf '%-14s %s\n' "B first: Redis calls" "$(echo "${T[b_first_calls]}" | median)"
printf '%-14s %s\n' "B warm: Redis calls" "$(echo "${T[b_warm_calls]}" | median)"
m() { echo "${T[$1]}" | median; }
python3 - "$(m cold_none)" "$(m cold_live)" "$(m cold_stopped)" \
	"$(m plain_warm)" "$(m b_first)" "$(m b_warm)" <<'PY'
import sys
none, live, stopped, plain, first, warm = map(float, sys.argv[1:])
print(f"ratio cold, remote live / no remote      {live / none:.2f}  (target <= 1.1)")
print(f"ratio cold, remote stopped / no remote   {stopped / none:.2f}  (target <= 1.2)")
print(f"ratio B first run / plain warm           {first / plain:.2f}")
print(f"ratio B warm / plain warm                {warm / plain:.2f}")
PY
