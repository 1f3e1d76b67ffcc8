#!/usr/bin/env bash
# A hostile Redis (issue 29): a server of the test's own (drip_redis.py)
# says each child of a kernel is 64 MiB, then sends their MGET reply a
# byte at a time.  Probes of such kernels, more at once than there are
# connections, each return a miss within remote_budget (and a margin),
# under remote_trust=checked with a sidecar that states those sizes, and
# under remote_trust=any with none; the connections they held are then
# free again, so the same server's honest kernel is a hit.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
DRIP="$(dirname "$0")/drip_redis.py"

NK() {	# NK N: a key (52 letters of base32) that no other kernel has
	printf 'ZZZZ%048d' "$1" | tr 0-9 A-J
}
HONEST=$(NK 100)
HOSTILE=() BARE=() ARGS=()
for i in 1 2 3 4 5 6; do
	HOSTILE+=("$(NK "$i")")
	BARE+=("$(NK $((i + 10)))")
	ARGS+=(--hostile "${HOSTILE[-1]}:big" --bare "${BARE[-1]}:big")
done

python3 "$DRIP" "$T_TMP/drip.port" --honest "$HONEST:honest" "${ARGS[@]}" \
	>"$T_TMP/drip.log" 2>&1 &
DPID=$!
at_exit "kill $DPID"
for _ in $(seq 200); do
	[ -s "$T_TMP/drip.port" ] && break
	sleep 0.05
done
[ -s "$T_TMP/drip.port" ] || bail_out "drip_redis.py does not listen: $(tail -3 "$T_TMP/drip.log")"
PORT=$(cat "$T_TMP/drip.port")

# probes MNT NAME KEY...: a lookup of KEY/__grp__NAME.json for each KEY,
# all at once, as Triton's processes would; prints the slowest's time in
# ms, then each result (hit, miss, or the error).
probes() {
	python3 - "$@" <<'EOF'
import os, sys, threading, time
mnt, name, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
res, took = {}, {}
def probe(k):
    os.makedirs(os.path.join(mnt, k), exist_ok=True)
    t = time.monotonic()
    try:
        os.stat(os.path.join(mnt, k, "__grp__%s.json" % name))
        res[k] = "hit"
    except FileNotFoundError:
        res[k] = "miss"
    except OSError as e:
        res[k] = e.strerror.replace(" ", "_")
    took[k] = (time.monotonic() - t) * 1000
ts = [threading.Thread(target=probe, args=(k,)) for k in keys]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("%d %s" % (max(took.values()), " ".join(res[k] for k in keys)))
EOF
}

# hostile TRUST KEY...: a new mount of the server under remote_trust=TRUST
# (the breaker kept closed, so that it hides nothing), the KEYs' kernels
# probed at once, then the honest one.
hostile() {
	local trust=$1 s=$T_TMP/$1-store m=$T_TMP/$1-mnt ms res
	shift
	mkdir -p "$m"
	at_exit "fusermount3 -uz '$m'"
	tcfs mount --store "$s" -o "remote=redis://127.0.0.1:$PORT,remote_trust=$trust,remote_publish=off,remote_breaker=1000" "$m"
	check_rc "$trust: mount" 0
	read -r ms res < <(probes "$m" big "$@")
	echo "# $trust: the slowest of $# probes of dripped kernels took $ms ms"
	check_eq "$trust: $# probes at once of kernels of 3 x 64 MiB, dripped: misses" \
		"$(printf 'miss %.0s' "$@")" "$res "
	check_num "$trust: ... the slowest within 5 s (remote_budget 500 ms)" "$ms" -lt 5000
	check_eq "$trust: ... each given up (a timeout) or not asked (no connection free)" \
		$# "$(sleep 0.5; "$TCFS" stats --json --store "$s" 2>/dev/null </dev/null |
			python3 -c 'import json, sys; r = json.load(sys.stdin)["remote"]; print(r["errors"] + r["skipped"])')"
	read -r ms res < <(probes "$m" honest "$HONEST")
	check_eq "$trust: then the same server's honest kernel: a hit (connections free again)" hit "$res"
	check_eq "$trust: ... landed whole" "bytes of honest.cubin" "$(cat "$m/$HONEST/honest.cubin" 2>&1)"
	fusermount3 -u "$m"
}

hostile checked "${HOSTILE[@]}"
hostile any "${BARE[@]}"
