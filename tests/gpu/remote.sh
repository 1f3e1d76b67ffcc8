#!/usr/bin/env bash
# The fleet tier under real Triton (issue 22): one redis-server started
# here on a free port, and two stores and mounts on this machine standing
# for two nodes.  Node A compiles the program (cold: its kernels published
# to Redis in the background) and runs it warm; node B, a fresh store, runs
# it first through the remote (every kernel a remote hit, results right)
# and warm.  Beside them, for the targets: plain disk cold and warm; cold
# and warm through a mount with no remote; cold through a mount with the
# remote but remote_publish=off (it must write nothing); and Triton's own
# RemoteCacheManager + RedisRemoteCacheBackend on plain disk, through
# tests/gpu/triton_redis_shim.py (3.6.0's backend fails without it), cold
# on "node A", then first run and warm on "node B".  Cold and first runs
# run once each, the warm runs REPS times in turns (medians compared).
# Every run is a fresh process; its record (OUT/remote.jsonl) has its
# process and kernel time, tcfs's hits, misses and remote figures for the
# run, and the Redis commands it caused (INFO commandstats before and
# after: tcfs's warm runs must cause none).  The summary
# (OUT/remote-summary.txt) prints the ratios the issue's targets name and
# PASS/FAIL for correctness.  Exit 1 on a correctness failure only, never
# on a missed target; 2 when it could not start.
# Run from the project root on the GPU machine, after building here and
# bundling (tests/gpu/bundle.sh, which brings redis-server, redis-cli and
# python3-redis along; doc/testing.md, "Real Triton on a GPU machine"):
#   tests/gpu/remote.sh [BUNDLE_DIR] [OUT_DIR]
# REPS (default 3): rounds of warm runs; FIRST_REPS (default 3): first
# runs on a fresh node B (and of Triton's own manager).  B_OPTS (default
# remote_modules=on, as RemoteCacheManager fetches launcher modules too):
# node B's remote options beside remote=.  TRITON_RUN: another program
# in triton_run.py's place (same argument and output).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$(cd "${1:-$top/.device-bundle}" && pwd) || exit 2
out=${2:-${OUT:-/tmp/tcfs-gpu-remote}}
reps=${REPS:-3}
first_reps=${FIRST_REPS:-3}
b_opts=${B_OPTS-remote_modules=on}
prog=${TRITON_RUN:-$top/tests/gpu/triton_run.py}
report=$top/tests/gpu/remote_report.py
for f in tcfs redis/redis-server redis/redis-cli python/redis; do
	[ -e "$bundle/$f" ] || {
		echo "remote.sh: no $bundle/$f (tests/gpu/bundle.sh makes it)" >&2
		exit 2
	}
done
# The bundle's libraries (Debian's) for tcfs and Redis alone: Python and
# PyTorch keep the machine's own.
export PATH=$bundle:$PATH PYTHONUNBUFFERED=1
unset TRITON_CACHE_DIR TRITON_CACHE_MANAGER TRITON_REMOTE_CACHE_BACKEND \
	TRITON_REDIS_HOST TRITON_REDIS_PORT TRITON_REDIS_KEY_FORMAT \
	TRITON_ALWAYS_COMPILE TRITON_STORE_BINARY_ONLY
tcfs() { LD_LIBRARY_PATH=$bundle "$bundle/tcfs" "$@"; }
rcli() {
	LD_LIBRARY_PATH=$bundle/redis:$bundle "$bundle/redis/redis-cli" \
		-h 127.0.0.1 -p "$port" "$@"
}
mkdir -p "$out"
results=$out/remote.jsonl
log=$out/remote-runs.log
: >"$results"
: >"$log"
work=$(mktemp -d)
redis_pid=
# shellcheck disable=SC2317 # (run by the trap)
cleanup() {
	local m
	for m in "$work"/mnt-*; do
		[ -d "$m" ] && fusermount3 -uz "$m" 2>/dev/null
	done
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/redis"
LD_LIBRARY_PATH=$bundle/redis:$bundle "$bundle/redis/redis-server" --bind 127.0.0.1 \
	--port "$port" --save '' --appendonly no --daemonize no \
	--dir "$work/redis" --logfile "$out/remote-redis.log" &
redis_pid=$!
for _ in $(seq 100); do
	[ "$(rcli ping 2>/dev/null)" = PONG ] && break
	sleep 0.1
done
[ "$(rcli ping 2>/dev/null)" = PONG ] || {
	echo "remote.sh: redis-server did not answer on port $port" >&2
	exit 2
}
# tcfs on database 1; Triton's backend always uses database 0.
url=redis://127.0.0.1:$port/1
rcm_env=(TRITON_CACHE_MANAGER=triton.runtime.cache:RemoteCacheManager
	TRITON_REMOTE_CACHE_BACKEND=triton_redis_shim:RedisBackend
	TRITON_REDIS_HOST=127.0.0.1 TRITON_REDIS_PORT="$port"
	PYTHONPATH="$top/tests/gpu${PYTHONPATH:+:$PYTHONPATH}"
	TCFS_GPU_PYTHON="$bundle/python")
tcfs --version
LD_LIBRARY_PATH=$bundle/redis:$bundle "$bundle/redis/redis-server" --version

fact() {
	python3 "$report" fact "$1" "$2" >>"$results"
}
# mount_node NAME [OPTS]: a fresh store and mount for node NAME.
mount_node() {
	mkdir -p "$work/mnt-$1"
	tcfs mount --store "$work/store-$1" ${2:+-o "$2"} "$work/mnt-$1" || {
		echo "remote.sh: could not mount node $1 (-o ${2:-})" >&2
		exit 2
	}
}
# run LABEL REP WHERE [VAR=VALUE...]: the program once, in a fresh
# process, with the variables given, its cache at WHERE: mnt-NODE (that
# node's mount) or plain-NAME (a plain directory); records it.
run() {
	local label=$1 rep=$2 dir=$work/$3 store="" start end rc stats=()
	shift 3
	mkdir -p "$dir"
	case $dir in
	"$work"/mnt-*)
		store=$work/store-${dir#"$work"/mnt-}
		tcfs stats --json --store "$store" >"$work/sb.json" 2>/dev/null
		stats=("$work/sb.json" "$work/sa.json")
		;;
	esac
	rcli info commandstats >"$work/rb.txt"
	start=$(date +%s.%N)
	env "$@" TRITON_CACHE_DIR="$dir" python3 "$prog" "$label" \
		>"$work/one.json" 2>"$work/err.txt"
	rc=$?
	end=$(date +%s.%N)
	# The mount saves its counters every ~100 ms; stats commits the probes.
	sleep 0.5
	rcli info commandstats >"$work/ra.txt"
	[ -z "$store" ] || tcfs stats --json --store "$store" \
		>"$work/sa.json" 2>>"$work/err.txt"
	{ echo "== $label #$rep: exit $rc"; cat "$work/err.txt"; } >>"$log"
	python3 "$report" record "$label" "$rep" "$work/one.json" "$rc" \
		"$start" "$end" "$work/rb.txt" "$work/ra.txt" "${stats[@]}" |
		tee -a "$results"
}
published() {
	tcfs stats --json --store "$work/store-$1" 2>/dev/null |
		python3 "$report" get remote.published
}
# wait_published NODE N: until NODE has published at least N and the
# count stood still for two polls, at most 30 s.
wait_published() {
	local n=0 last=-1 still=0 start deadline=$((SECONDS + 30))
	start=$(date +%s.%N)
	while [ "$SECONDS" -lt "$deadline" ]; do
		n=$(published "$1")
		if [ "$n" -ge "$2" ] && [ "$n" = "$last" ]; then
			still=$((still + 1))
			[ "$still" -ge 2 ] && break
		else
			still=0
		fi
		last=$n
		sleep 0.25
	done
	fact published "$n"
	fact publish_wait_seconds "$(python3 -c 'import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))' "$start" "$(date +%s.%N)")"
}
redis_count() {
	rcli -n "$1" --scan --pattern "$2" | wc -l
}

# A throwaway cold run first: it loads Python, PyTorch, ptxas and the
# compiler from disk, so that the first cold run compared does not pay it.
run prime 1 plain-prime
[ "$(tail -n 1 "$results" | python3 "$report" get rc)" = 0 ] || {
	echo "remote.sh: the program fails on its own (see $log)" >&2
	exit 2
}
fact reps "$reps"
fact b_opts "\"remote=$url${b_opts:+,$b_opts}\""

# Cold and first runs, once each.
run plain-cold 1 plain
kernels=$(python3 "$report" groups "$work/plain")
fact kernels_compiled "$kernels"
mount_node N
run noremote-cold 1 mnt-N
# The remote configured, publishing off: asks Redis (empty) on every
# miss, and must write nothing.
mount_node A2 "remote=$url,remote_publish=off"
run publish-off-cold 1 mnt-A2
sleep 1
fact publish_off_published "$(published A2)"
fact publish_off_keys "$(rcli -n 1 dbsize)"
tcfs umount "$work/mnt-A2"
mount_node A "remote=$url"
run A-cold 1 mnt-A
wait_published A "$kernels"
fact redis_groups "$(redis_count 1 'triton:*:__grp__*')"
fact redis_sidecars "$(redis_count 1 'triton:*:__tcfs__*')"
mount_node B "remote=$url${b_opts:+,$b_opts}"
run B-first 1 mnt-B
fact b_vs_a "$(python3 "$report" compare "$work/mnt-A" "$work/mnt-B")"
fact b_origins "$(tcfs list --json --store "$work/store-B" 2>/dev/null |
	python3 "$report" origins)"
# Triton's own, on database 0 (emptied): node A's plain directory, then
# node B's.
rcli -n 0 flushdb >/dev/null
run rcm-A-cold 1 plain-rcm-A "${rcm_env[@]}"
run rcm-B-first 1 plain-rcm-B "${rcm_env[@]}"

# Warm runs, in turns, so that a drift of the machine touches all alike.
for rep in $(seq "$reps"); do
	run plain-warm "$rep" plain
	run noremote-warm "$rep" mnt-N
	run A-warm "$rep" mnt-A
	run B-warm "$rep" mnt-B
	run rcm-B-warm "$rep" plain-rcm-B "${rcm_env[@]}"
done
# More first runs, each on a fresh node (a fresh store, or a fresh plain
# directory for Triton's own), beside a plain warm run: one sample of a
# first run is within the noise of the targets.
for rep in $(seq 2 "$first_reps"); do
	mount_node "B$rep" "remote=$url${b_opts:+,$b_opts}"
	run B-first "$rep" "mnt-B$rep"
	tcfs umount "$work/mnt-B$rep"
	run rcm-B-first "$rep" "plain-rcm-B$rep" "${rcm_env[@]}"
	run plain-warm "$((reps + rep - 1))" plain
done
tcfs stats --store "$work/store-B" >>"$log" 2>&1
for n in N A B; do
	tcfs umount "$work/mnt-$n" || echo "remote.sh: umount of node $n failed" >&2
done

python3 "$report" summary "$results" | tee "$out/remote-summary.txt"
exit "${PIPESTATUS[0]}"
