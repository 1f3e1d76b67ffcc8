#!/usr/bin/env bash
# Inductor's entries through the fleet tier under real torch.compile
# (issue 30): TORCHINDUCTOR_CACHE_DIR on fresh mounts (TRITON_CACHE_DIR
# unset, so Triton's cache sits under it and the mount serves both).  Two
# redis-servers on free ports: R1 is tcfs's, R2 is filled by stock
# PyTorch's own remote caches.  Runs, each a fresh process
# (inductor_run.py): plain disk cold (COLD_REPS) and warm (REPS); tcfs cold
# without a remote and node A cold publishing (remote_inductor=signed, a
# 0600 key file), each on a fresh store (COLD_REPS); FIRST_REPS fresh
# nodes B (signed) first run, then REPS warm runs on one B, counting the
# Redis commands they cause (INFO commandstats around each run: must be 0);
# PyTorch's own remote caches: one cold run filling R2, then FIRST_REPS
# fresh plain dirs; interop: stock PyTorch on a fresh plain dir against R1
# (its fxgraph_cache_hit > 0) and a fresh tcfs node with
# remote_inductor=any against R2 (remote.fxgraph_hits > 0).  Each fresh
# node's `tcfs stats --json` and `tcfs log --json` go under OUT; the
# summary (OUT/inductor-remote-summary.txt) has the table, the ratios the
# targets name, PASS/FAIL for correctness and interop, and a fresh node's
# probes per kind.  Exit 1 on a FAIL, never on a missed target; 2 when it
# could not start.  From the project root on the GPU machine, after
# tests/gpu/bundle.sh (doc/testing.md):
#   tests/gpu/inductor_remote.sh [BUNDLE_DIR] [OUT_DIR]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$(cd "${1:-$top/.device-bundle}" && pwd) || exit 2
out=${2:-${OUT:-/tmp/tcfs-gpu-inductor-remote}}
reps=${REPS:-3}
cold_reps=${COLD_REPS:-2}
first_reps=${FIRST_REPS:-3}
prog=${INDUCTOR_RUN:-$top/tests/gpu/inductor_run.py}
report=$top/tests/gpu/inductor_report.py
for f in tcfs redis/redis-server redis/redis-cli python/redis; do
	[ -e "$bundle/$f" ] || {
		echo "inductor_remote.sh: no $bundle/$f (tests/gpu/bundle.sh makes it)" >&2
		exit 2
	}
done
export PATH=$bundle:$PATH PYTHONUNBUFFERED=1
unset TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR TORCHINDUCTOR_FORCE_DISABLE_CACHES \
	TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE \
	TORCHINDUCTOR_REDIS_HOST TORCHINDUCTOR_REDIS_PORT
tcfs() { LD_LIBRARY_PATH=$bundle "$bundle/tcfs" "$@"; }
rcli() {	# rcli PORT ARGS...
	local p=$1
	shift
	LD_LIBRARY_PATH=$bundle/redis:$bundle "$bundle/redis/redis-cli" \
		-h 127.0.0.1 -p "$p" "$@"
}
mkdir -p "$out"
results=$out/inductor-remote.jsonl
log=$out/inductor-remote-runs.log
: >"$results"
: >"$log"
work=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # (run by the trap)
cleanup() {
	local m p
	for m in "$work"/mnt-*; do
		[ -d "$m" ] && fusermount3 -uz "$m" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null && wait "$p"
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
redis_start() {	# redis_start NAME: a redis-server; its port in $port
	port=$(free_port)
	mkdir -p "$work/redis-$1"
	LD_LIBRARY_PATH=$bundle/redis:$bundle "$bundle/redis/redis-server" \
		--bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--dir "$work/redis-$1" --logfile "$out/redis-$1.log" &
	pids+=($!)
	for _ in $(seq 100); do
		[ "$(rcli "$port" ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.1
	done
	echo "inductor_remote.sh: redis-server $1 did not answer on $port" >&2
	exit 2
}
redis_start R1
p1=$port
redis_start R2
p2=$port
key=$work/fleet.key
head -c 32 /dev/urandom | base64 >"$key"
chmod 0600 "$key"
signed="remote=redis://127.0.0.1:$p1,remote_inductor=signed,remote_key_file=$key"
anyopt="remote=redis://127.0.0.1:$p2,remote_inductor=any"
# Stock PyTorch's remote caches (its RedisRemoteCache, db 0), on R1 or R2.
# python3-redis from the bundle, but only the packages the machine lacks:
# PYTHONPATH comes first, and Debian's packaging must not shadow torch's.
mkdir -p "$work/py"
for p in "$bundle"/python/*; do
	case $p in *-info) continue ;; esac
	python3 -c "import ${p##*/}" 2>/dev/null || ln -s "$p" "$work/py/"
done
pt=(TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE=1 TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE=1
	TORCHINDUCTOR_REDIS_HOST=127.0.0.1 PYTHONPATH="$work/py")
tcfs --version

fact() {
	python3 "$report" fact "$1" "$2" >>"$results"
}
mount_node() {	# mount_node NAME [OPTS]: a fresh store and mount
	mkdir -p "$work/mnt-$1"
	tcfs mount --store "$work/store-$1" ${2:+-o "$2"} "$work/mnt-$1" || {
		echo "inductor_remote.sh: could not mount node $1 (-o ${2:-})" >&2
		exit 2
	}
}
umount_node() {	# umount_node NAME: its stats and trace under OUT first
	tcfs stats --json --store "$work/store-$1" >"$out/stats-$1.json" 2>&1
	tcfs log --json --store "$work/store-$1" >"$out/log-$1.jsonl" 2>&1
	tcfs umount "$work/mnt-$1" || echo "inductor_remote.sh: umount $1 failed" >&2
}
# run LABEL REP WHERE [VAR=VALUE...]: the program once, a fresh process,
# its cache at $work/WHERE (mnt-NODE or plain-NAME); records it.
run() {
	local label=$1 rep=$2 dir=$work/$3 store="" start end rc sb=- sa=-
	shift 3
	mkdir -p "$dir"
	case $dir in
	"$work"/mnt-*)
		store=$work/store-${dir#"$work"/mnt-}
		tcfs stats --json --store "$store" >"$work/sb.json" 2>/dev/null
		sb=$work/sb.json sa=$work/sa.json
		;;
	esac
	rcli "$p1" info commandstats >"$work/r1b.txt"
	rcli "$p2" info commandstats >"$work/r2b.txt"
	start=$(date +%s.%N)
	env "$@" TORCHINDUCTOR_CACHE_DIR="$dir" python3 "$prog" "$label" \
		>"$work/one.json" 2>"$work/err.txt"
	rc=$?
	end=$(date +%s.%N)
	sleep 0.5	# the mount saves its counters every ~100 ms
	rcli "$p1" info commandstats >"$work/r1a.txt"
	rcli "$p2" info commandstats >"$work/r2a.txt"
	[ -z "$store" ] || tcfs stats --json --store "$store" >"$sa" 2>>"$work/err.txt"
	{ echo "== $label #$rep: exit $rc"; tail -n 20 "$work/err.txt"; } >>"$log"
	python3 "$report" record "$label" "$rep" "$work/one.json" "$rc" \
		"$start" "$end" "$work"/r1b.txt "$work"/r1a.txt \
		"$work"/r2b.txt "$work"/r2a.txt "$sb" "$sa" | tee -a "$results"
}
# wait_published NODE: until its remote.published stood still 1 s (>0), at most 30 s.
wait_published() {
	local n last=-1 still=0 deadline=$((SECONDS + 30))
	while [ "$SECONDS" -lt "$deadline" ]; do
		n=$(tcfs stats --json --store "$work/store-$1" 2>/dev/null |
			python3 "$report" get remote.published)
		if [ "$n" -gt 0 ] && [ "$n" = "$last" ]; then
			still=$((still + 1))
			[ "$still" -ge 4 ] && break
		else
			still=0
		fi
		last=$n
		sleep 0.25
	done
	fact "published_$1" "$n"
}

# A throwaway cold run: loads Python, PyTorch and the compilers from disk.
run prime 1 plain-prime
[ "$(tail -n 1 "$results" | python3 "$report" get rc)" = 0 ] || {
	echo "inductor_remote.sh: the program fails on its own (see $log)" >&2
	exit 2
}
fact reps "$reps"
# ONLY_INTEROP=1: node A's cold run and the interop runs alone, with the
# keys each side wrote (OUT/keys-*.txt), to see why one side missed.
if [ -n "${ONLY_INTEROP:-}" ]; then
	cold_reps=1 first_reps=0 reps=0
fi
for rep in $(seq "$cold_reps"); do
	if [ -z "${ONLY_INTEROP:-}" ]; then
		run plain-cold "$rep" "plain-c$rep"
		mount_node "N$rep"
		run noremote-cold "$rep" "mnt-N$rep"
		umount_node "N$rep"
	fi
	mount_node "A$rep" "$signed"
	run A-cold "$rep" "mnt-A$rep"
	wait_published "A$rep"
	[ "$rep" = "$cold_reps" ] || umount_node "A$rep"
done
fact r1_fxgraph_keys "$(rcli "$p1" --scan --pattern 'pt2:fx-graph-v1::*:c1' | wc -l)"
fact r1_aot_keys "$(rcli "$p1" --scan --pattern 'pt2:autograd-experimental::*:c1' | wc -l)"
# Stock PyTorch fills R2, then its fresh nodes.
run pt-cold 1 plain-ptA "${pt[@]}" TORCHINDUCTOR_REDIS_PORT="$p2"
for rep in $(seq "$first_reps"); do
	mount_node "B$rep" "$signed"
	run B-first "$rep" "mnt-B$rep"
	[ "$rep" = 1 ] || umount_node "B$rep"
	run pt-first "$rep" "plain-ptB$rep" "${pt[@]}" TORCHINDUCTOR_REDIS_PORT="$p2"
	run plain-warm "$rep" plain-c1
done
for rep in $(seq "$reps"); do
	run B-warm "$rep" mnt-B1
	run A-warm "$rep" "mnt-A$cold_reps"
	run plain-warm "$((first_reps + rep))" plain-c1
done
# Interop: stock PyTorch reads what tcfs published, tcfs (any) what
# PyTorch published.
rcli "$p1" --scan --pattern 'pt2:*' | sort >"$out/keys-r1-tcfs.txt"
ls "$work/mnt-A$cold_reps/aotautograd" >"$out/keys-a-aot.txt" 2>&1
run interop-pt-reads-tcfs 1 plain-x1 "${pt[@]}" TORCHINDUCTOR_REDIS_PORT="$p1"
rcli "$p1" --scan --pattern 'pt2:*' | sort >"$out/keys-r1-after-pt.txt"
ls "$work/plain-x1/aotautograd" >"$out/keys-x1-aot.txt" 2>&1
rcli "$p2" --scan --pattern 'pt2:*' | sort >"$out/keys-r2-pt.txt"
mount_node X "$anyopt"
run interop-tcfs-reads-pt 1 mnt-X
umount_node X
umount_node B1
umount_node "A$cold_reps"
python3 "$report" summary "$results" "$out" | tee "$out/inductor-remote-summary.txt"
exit "${PIPESTATUS[0]}"
