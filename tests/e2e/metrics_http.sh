#!/usr/bin/env bash
# Prometheus, the real way: a mount serves GET /metrics over HTTP
# (-o metrics=[ADDR:]PORT, or tcfs config metrics), which a real
# Prometheus scrapes and promtool accepts; the port bounds its clients
# (connections, time, request size) against hostile ones while a scraper
# still gets in; the Grafana dashboard in doc/ uses only metrics the mount
# serves; and tcfs mount --help names every -o option (issue 31, item 9).
set -u
. "$(dirname "$0")/lib.sh"

SRC_ROOT=${SRC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
require_cmds prometheus promtool redis-server curl

# --- tcfs mount --help names every -o option ------------------------------

# A user looking for the fleet tier's options typed this, and found none.
tcfs mount --help
check_eq "tcfs mount --help names the 16 remote_* options" 16 \
	"$(grep -cE '^  remote_[a-z_]+=' "$OUT")"
check_grep "tcfs mount --help names remote=URL" '^  remote=URL ' "$OUT"
check_grep "tcfs mount --help names metrics=[ADDR:]PORT" \
	'^  metrics=\[ADDR:\]PORT ' "$OUT"

# --- values refused -----------------------------------------------------------

SMALL=$(fixture_top triton-3.6-h200-small.tgz cA)
S=$T_TMP/store
M=$T_TMP/mnt
mkdir -p "$M"
at_exit "fusermount3 -uz '$M'"

# refused DESC RC MESSAGE: the last tcfs mount exited RC, said MESSAGE
# and mounted nothing.
refused() {
	if [ "$RC" = "$2" ] && grep -qF -- "$3" "$ERR" && ! mountpoint -q "$M"; then
		ok "$1"
	else
		not_ok "$1"
		show_run
	fi
}

for v in notaport 127.0.0.1:0 1.2.3:9100 ::1:9100 '[::1]'; do
	tcfs mount --store "$S" -o "metrics=$v" "$M"
	refused "mount -o metrics=$v: exit 2, the value named, nothing mounted" 2 \
		"tcfs mount: -o metrics: '$v' is not [ADDR:]PORT"
done

# A port another process holds (held by a listener of the test's own).
BUSY=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
time.sleep(120)' "$BUSY" &
HOLDER=$!
at_exit "kill $HOLDER"
for _ in $(seq 100); do
	python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' \
		"$BUSY" 2>/dev/null && break
	sleep 0.05
done
tcfs mount --store "$S" -o "metrics=$BUSY" "$M"
refused "mount -o metrics=PORT on a port in use: refused, exit 1, saying so" 1 \
	"metrics=127.0.0.1:$BUSY: cannot listen: Address already in use"
# An address no interface here has (TEST-NET-1, RFC 5737).
tcfs mount --store "$S" -o "metrics=192.0.2.1:$BUSY" "$M"
refused "mount -o metrics=ADDR:PORT, ADDR not here: refused, exit 1, saying so" 1 \
	"metrics=192.0.2.1:$BUSY: cannot listen: Cannot assign requested address"
kill "$HOLDER"

# --- a mount serving /metrics, after Triton's traffic ---------------------------

redis_start
PORT=$(free_port)
tcfs mount --store "$S" -o "metrics=$PORT,remote=redis://127.0.0.1:$RPORT" "$M"
check_rc "mount -o metrics=$PORT (ADDR omitted),remote=..." 0
replay cold "$SMALL" "$M"
replay warm "$SMALL" "$M"
stat "$M/.tcfs/sync" >/dev/null
HITS=$(seen warm kernel hits)
MISSES=$(seen cold kernel misses)
check "the replays probed kernels ($MISSES misses, $HITS hits)" [ "$HITS" -gt 0 ]

# scrape [URL-PATH [CURL-ARGS...]]: the answer's head in $T_TMP/head, its
# body in $T_TMP/body; curl's exit status.
scrape() {
	local path=${1:-/metrics}
	shift
	rm -f "$T_TMP/head" "$T_TMP/body"
	curl -sS --max-time 10 -D "$T_TMP/head" -o "$T_TMP/body" "$@" \
		"http://127.0.0.1:$PORT$path" 2>"$T_TMP/curl.err"
}
# status: the last scrape's HTTP status.
status() {
	sed -n '1s/^HTTP\/1\.1 \([0-9]*\) .*/\1/p' "$T_TMP/head" 2>/dev/null
}
# value NAME{LABELS}: its sample in the last scrape's body.
value() {
	grep -F "$1 " "$T_TMP/body" | sed -n '1s/.* //p'
}

scrape
check_eq "curl http://127.0.0.1:PORT/metrics: 200" 200 "$(status)"
check_grep "... as Prometheus's text format, version 0.0.4" \
	'^Content-Type: text/plain; version=0\.0\.4' "$T_TMP/head"
check_grep "... one request a connection (Connection: close)" \
	'^Connection: close' "$T_TMP/head"
check_eq "... tcfs_probes_total of kernels: the replays' hits and misses" \
	"$HITS $MISSES" \
	"$(value 'tcfs_probes_total{kind="kernel",result="hit"}') $(value 'tcfs_probes_total{kind="kernel",result="miss"}')"
cp "$T_TMP/body" "$T_TMP/metrics.txt"
check_eq "... the same series as .tcfs/metrics.prom" \
	"$(grep -v '^#' "$M/.tcfs/metrics.prom" | sed 's/ .*//')" \
	"$(grep -v '^#' "$T_TMP/metrics.txt" | sed 's/ .*//')"
run promtool check metrics <"$T_TMP/metrics.txt"
check_rc "promtool check metrics accepts it" 0

# --- a real Prometheus scrapes it --------------------------------------------------

PPORT=$(free_port)
cat >"$T_TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: tcfs
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF
prometheus --config.file="$T_TMP/prometheus.yml" \
	--storage.tsdb.path="$T_TMP/prom-data" \
	--web.listen-address="127.0.0.1:$PPORT" >"$T_TMP/prometheus.log" 2>&1 &
PROM=$!
at_exit "kill $PROM"

# prom_query EXPR: the value of EXPR's first sample ("" when none yet).
prom_query() {
	curl -s --max-time 5 "http://127.0.0.1:$PPORT/api/v1/query" \
		--data-urlencode "query=$1" >"$T_TMP/prom.json" 2>/dev/null
	json_eval "$T_TMP/prom.json" \
		'd["data"]["result"][0]["value"][1] if d.get("data", {}).get("result") else ""' 2>/dev/null
}
got=
END=$((SECONDS + 120))
while [ "$SECONDS" -lt "$END" ]; do
	got="$(prom_query 'tcfs_probes_total{kind="kernel",result="hit"}') $(prom_query 'tcfs_probes_total{kind="kernel",result="miss"}')"
	[ "$got" = "$HITS $MISSES" ] && break
	sleep 0.1
done
if [ "$got" = "$HITS $MISSES" ]; then
	ok "Prometheus's /api/v1/query: tcfs_probes_total of kernels is the replays' $HITS hits, $MISSES misses"
else
	not_ok "Prometheus's /api/v1/query: tcfs_probes_total of kernels is the replays' $HITS hits, $MISSES misses"
	diag "got '$got'" "$(tail -5 "$T_TMP/prometheus.log")" "$(cat "$T_TMP/prom.json")"
fi
check_eq "... and its target is up" 1 "$(prom_query 'up{job="tcfs"}')"
# Its scrapes would take slots while the bounds are counted below.
kill "$PROM"
wait "$PROM" 2>/dev/null

# --- the Grafana dashboard ---------------------------------------------------------

DASH=$SRC_ROOT/doc/grafana-tcfs.json
python3 - "$DASH" "$T_TMP/metrics.txt" >"$T_TMP/dash.out" <<'PY'
import json, re, sys
dash = json.load(open(sys.argv[1]))
served = set(re.findall(r"^# TYPE (\S+) ", open(sys.argv[2]).read(), re.M))
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
for v in dash.get("templating", {}).get("list", []):
    q = v.get("query")
    exprs.append(q.get("query", "") if isinstance(q, dict) else "")
used = set(n for e in exprs for n in re.findall(r"\btcfs_[a-z_]+", e))
print(len(dash["panels"]), len(used))
print(" ".join(sorted(used - served)))
PY
read -r NPANELS NUSED <"$T_TMP/dash.out"
check "doc/grafana-tcfs.json: $NPANELS panels using $NUSED tcfs metrics" \
	[ "${NUSED:-0}" -ge 10 ]
check_eq "every metric the dashboard uses is in /metrics" "" \
	"$(sed -n 2p "$T_TMP/dash.out")"
for want in tcfs_probes_total tcfs_remote_hits_total tcfs_remote_breaker_open \
	tcfs_evictions_total tcfs_stored_bytes; do
	check_grep_fixed "the dashboard shows $want" "$want" "$DASH"
done

# --- what is not GET /metrics ------------------------------------------------------

scrape /
check_eq "GET /: 404" 404 "$(status)"
scrape /metrics -X POST
check_eq "POST /metrics: 405" 405 "$(status)"
check_grep "... naming what is allowed" '^Allow: GET' "$T_TMP/head"
scrape '/metrics?name[]=tcfs_kernels'
check_eq "GET /metrics?QUERY: 200" 200 "$(status)"

# --- hostile clients, and a scraper all the same ----------------------------------

cat >"$T_TMP/hostile.py" <<'PY'
"""Hostile clients of the metrics port; prints what each part saw."""
import select, socket, sys, time

port, what = int(sys.argv[1]), sys.argv[2]


def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def answer(s, limit=30):
    """What s gets until the server closes it (at most limit seconds)."""
    got, end = b"", time.monotonic() + limit
    while time.monotonic() < end:
        r, _, _ = select.select([s], [], [], end - time.monotonic())
        if not r:
            break
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        got += b
    return got


def first_line(b):
    return b.split(b"\r\n", 1)[0].decode() if b else "closed"


if what == "flood":
    # More connections than the limit, held open, sending nothing.
    socks = [conn() for _ in range(int(sys.argv[3]))]
    open(sys.argv[4], "w").close()  # tell the test they are held
    counts = {}
    for s in socks:
        line = first_line(answer(s))
        counts[line] = counts.get(line, 0) + 1
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
elif what == "endless":
    # A request that never ends: its head never finished.
    s = conn()
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    open(sys.argv[3], "w").close()
    t = time.monotonic()
    print(first_line(answer(s)), int(time.monotonic() - t < 30))
elif what == "huge":
    # A 1 MiB header.
    s = conn()
    s.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20) +
              b"\r\n\r\n")
    print(first_line(answer(s)))
PY

# hostile_bg NAME ARGS...: hostile.py's part NAME in the background
# (HOSTILE its pid, its output in $T_TMP/NAME.out), once it holds its
# connections.
hostile_bg() {
	local name=$1
	shift
	rm -f "$T_TMP/$name.ready"
	python3 "$T_TMP/hostile.py" "$PORT" "$name" "$@" "$T_TMP/$name.ready" \
		>"$T_TMP/$name.out" &
	HOSTILE=$!
	for _ in $(seq 200); do
		[ -e "$T_TMP/$name.ready" ] && break
		sleep 0.05
	done
}

# A request that never ends holds one slot: a scrape meanwhile is served,
# and the endless one is told 408 at the deadline, well within 30 s.
hostile_bg endless
scrape
check_eq "a scrape while a request never ends: 200" 200 "$(status)"
wait "$HOSTILE"
check_eq "the request that never ends: 408 at its deadline (within 30 s)" \
	"HTTP/1.1 408 Request Timeout 1" "$(cat "$T_TMP/endless.out")"

run python3 "$T_TMP/hostile.py" "$PORT" huge
check_eq "a request with a 1 MiB header: 431" \
	"HTTP/1.1 431 Request Header Fields Too Large" "$(cat "$OUT")"
scrape
check_eq "a scrape after it: 200" 200 "$(status)"

# 24 connections held: 16 (the limit) are served, each told 408 at its
# deadline; the 8 beyond are closed at once, unanswered.  A scrape in
# the meantime is closed too, not left waiting; one after gets in.
hostile_bg flood 24
scrape
check "a scrape while 16 connections are held: refused at once (curl $?)" \
	[ ! -s "$T_TMP/body" ]
wait "$HOSTILE"
check_eq "24 connections held: 16 served (408 at the deadline), 8 closed at once" \
	"HTTP/1.1 408 Request Timeout=16 closed=8" "$(cat "$T_TMP/flood.out")"
scrape
check_eq "a scrape after the flood: 200" 200 "$(status)"
check_eq "... with the replays' kernel hits still" "$HITS" \
	"$(value 'tcfs_probes_total{kind="kernel",result="hit"}')"

# Out of descriptors (the daemon's limit set to what it holds and 4
# more), the backlog cannot be taken: the server leaves it alone a
# while rather than poll it in a loop.  Spinning, it burnt 2.5 to 4 s of
# CPU in the 4 s of the hold; a bound of 1 s leaves room for a slow
# machine.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}
DPID=$(daemon_pid "$S")
NFD=$(find "/proc/$DPID/fd" -mindepth 1 | wc -l)
LIMIT=$(prlimit --pid "$DPID" --nofile --noheadings --output SOFT,HARD |
	awk '{ print $1 ":" $2 }')
prlimit --pid "$DPID" --nofile=$((NFD + 4)):$((NFD + 4))
BEFORE=$(cpu_ticks "$DPID")
hostile_bg flood 8
sleep 4
SPENT=$(($(cpu_ticks "$DPID") - BEFORE))
check "out of descriptors, 8 clients waiting: the daemon idles ($SPENT of $(getconf CLK_TCK) ticks a second, in 4 s)" \
	[ "$SPENT" -lt "$(getconf CLK_TCK)" ]
wait "$HOSTILE"
prlimit --pid "$DPID" --nofile="$LIMIT"
scrape
check_eq "a scrape once they are gone: 200" 200 "$(status)"

# --- unmounted, the port is closed ----------------------------------------------

tcfs umount "$M"
check_rc "tcfs umount, after the hostile clients" 0
scrape
check_eq "after the unmount nothing listens (curl: connection refused)" 7 "$?"

# --- tcfs config metrics -----------------------------------------------------------

tcfs config --store "$S" metrics 127.0.0.1:notaport
if [ "$RC" != 0 ] && grep -qF "metrics: '127.0.0.1:notaport' is not [ADDR:]PORT" "$ERR"; then
	ok "tcfs config metrics ADDR:notaport: refused, the value named"
else
	not_ok "tcfs config metrics ADDR:notaport: refused, the value named"
	show_run
fi
CPORT=$(free_port)
tcfs config --store "$S" metrics "127.0.0.1:$CPORT"
check_rc "tcfs config metrics 127.0.0.1:PORT" 0
tcfs mount --store "$S" "$M"
check_rc "mount with no -o metrics" 0
PORT=$CPORT scrape
check_eq "... serves /metrics where tcfs config metrics says" 200 "$(status)"
tcfs umount "$M"
OPORT=$(free_port)
tcfs mount --store "$S" -o "metrics=127.0.0.1:$OPORT" "$M"
check_rc "mount -o metrics=ADDR:PORT over the store's setting" 0
PORT=$OPORT scrape
check_eq "... serves /metrics where -o metrics says" 200 "$(status)"
PORT=$CPORT scrape
check_eq "... and not where the store's setting says" 7 "$?"
tcfs umount "$M"
check_rc "unmount" 0
