#!/usr/bin/env bash
# Why an FX graph missed (issue 24): four real FX graph entries written by
# torch 2.11 on an H200 (tests/fixtures/inductor-2.11-fxgraph.tgz: a model
# and a function compiled cold, then the function again with inputs of
# another shape, then of another dtype) replayed through a mount in the
# order Inductor wrote them, each probed (a miss) before it is written.
# tcfs why FKEY compares each with the graphs cached before its miss and
# names the inputs that set it apart.  Entries that are no pickle, cut
# short, lying about a length, or of a PyTorch that records no inputs
# are said to be so; nothing is unpickled.
set -u
. "$(dirname "$0")/lib.sh"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
S=$T_TMP/store
M=$T_TMP/mnt
FX=$(fixture inductor-2.11-fxgraph.tgz)
mkdir -p "$M"
tcfs mount --store "$S" "$M"
check_rc "mount" 0
at_exit "fusermount3 -uz '$M' 2>/dev/null"

FL=fflgbexqicida7ikvccssp3scqymdrsqsjvb7qjfpnjwzjgw525d	# the model
SC=fscydmk757gposoalwgdiiv7u6ttvovejt4ffvnlm43em2zsrztd	# fn(128x1024 f32)
HR=fhrmdmeqxj6tphbvtcmo3qetsqx7epv6uad4t6rpqvrxbk2lqp5q	# 128x512
PY=fpy73mxa43ouavwkh6vl4a4zjwyb3ergu3ao3zinav5jiq6sczvc	# f16

# put GRAPHDIR ENTRYFILE: as Inductor does, a probe (a miss), then the
# entry written to a temp name and renamed into place.
put() {
	local rel=$1 src=$2
	stat "$M/$rel" >/dev/null 2>&1
	mkdir -p "$M/$rel"
	cp "$src" "$M/$rel/.tmp.$$" && mv "$M/$rel/.tmp.$$" "$M/$rel/${src##*/}"
}
for f in $(cd "$FX" && find fxgraph -type f -printf '%T@ %p\n' | sort -n | cut -d' ' -f2); do
	put "${f%/*}" "$FX/$f"
	sleep 0.01
done

why() {	# why NAME FKEY [ARGS]: tcfs why, its JSON in $T_TMP/NAME.json
	local name=$1 g=$2
	shift 2
	run "$TCFS" why --store "$S" --json "$@" "$g"
	cp "$OUT" "$T_TMP/$name.json"
}

why hr "$HR"
check_rc "why of a graph: exit 0" 0
check_eq "its entry found" "fxgraph/hr/$HR/5o4tleck64d5mbjikqsyc5e7tvz5xe2owujjawna4l5nuyhw5zk" "$(json_get "$T_TMP/hr.json" entry)"
check_eq "its inputs read" "ok 540" "$(json_eval "$T_TMP/hr.json" "'%s %d' % (d['details'], d['inputs'])")"
check_eq "compared with the two graphs cached before it" 2 "$(json_get "$T_TMP/hr.json" compared)"
check_eq "nearest: the same function at the first shape" "$SC" "$(json_get "$T_TMP/hr.json" nearest)"
check_eq "differs in its inputs' shapes and strides, no more" \
	"example_inputs[0]: shape=torch.Size([128, 1024]), stride=(1024, 1) -> shape=torch.Size([128, 512]), stride=(512, 1)|example_inputs[1]: shape=torch.Size([128, 1024]), stride=(1024, 1) -> shape=torch.Size([128, 512]), stride=(512, 1)" \
	"$(json_eval "$T_TMP/hr.json" "'|'.join('%s: %s -> %s' % (c['input'], c['from'], c['to']) for c in d['differences'])")"

# An FX graph's key typed short (issue 31), in either case, as a kernel's.
run "$TCFS" why --store "$S" --json "${HR:0:7}"
check_eq "why ${HR:0:7}: the graph it begins" "0 $HR" \
	"$RC $(json_eval "$OUT" 'd["graph"]')"
run "$TCFS" why --store "$S" --json "$(echo "${HR:0:7}" | tr a-z A-Z)"
check_eq "... and in upper case" "0 $HR" "$RC $(json_eval "$OUT" 'd["graph"]')"
run "$TCFS" why --store "$S" f
check_eq "why f: it begins every graph: ambiguous, exit 2" 2 "$RC"

why py "$PY"
check_eq "another dtype: nearest the first" "$SC" "$(json_get "$T_TMP/py.json" nearest)"
check_eq "differs in its inputs' dtypes and the graph's code" \
	"gm example_inputs[0]:dtype=torch.float16 example_inputs[1]:dtype=torch.float16" \
	"$(json_eval "$T_TMP/py.json" "' '.join(c['input'] + (':' + c['to'] if c['input'] != 'gm' else '') for c in d['differences'])")"
check_grep "the code's first line that differs" "^line 9: .*convert_element_type" \
	<(json_get "$T_TMP/py.json" differences.0.to)

why sc "$SC"
check_eq "only graphs cached before its miss are compared: the model" \
	"$FL 1" "$(json_eval "$T_TMP/sc.json" "'%s %d' % (d['nearest'], d['compared'])")"
why fl "$FL"
check_eq "the first graph has no nearest" "None 0 None" \
	"$(json_eval "$T_TMP/fl.json" "'%s %d %s' % (d['nearest'], d['compared'], d['differences'])")"

run "$TCFS" why --store "$S" "$HR"
check_grep_fixed "text: the nearest" "nearest  $SC (of 2 compared)" "$OUT"
check_grep "text: an input that differs" "^  example_inputs\[0\]$" "$OUT"
check_grep_fixed "text: from" "    shape=torch.Size([128, 1024]), stride=(1024, 1)" "$OUT"
check_grep_fixed "text: to" "    -> shape=torch.Size([128, 512]), stride=(512, 1)" "$OUT"
run "$TCFS" why --store "$S" "$FL"
check_grep "text: no nearest" "^nearest  none: no other graph was cached before it missed" "$OUT"

# Hostile entries: said to be so, never a crash, the others unharmed.
bad() {	# bad NAME FKEY: writes $T_TMP/NAME.bin as FKEY's entry
	mkdir -p "$M/fxgraph/${2:1:2}/$2"
	cp "$T_TMP/$1.bin" "$M/fxgraph/${2:1:2}/$2/.tmp" &&
		mv "$M/fxgraph/${2:1:2}/$2/.tmp" "$M/fxgraph/${2:1:2}/$2/entry"
}
G1=fggggggggggggggggggggggggggggggggggggggggggggggggggg
G2=fhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh
G3=fiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii
G4=fjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj
head -c 20000 "$FX/fxgraph/hr/$HR/"* >"$T_TMP/cut.bin"
printf '\x80\x04X\xff\xff\xff\xff[abc' >"$T_TMP/lying.bin"
python3 -c 'import pickle, sys; sys.stdout.buffer.write(pickle.dumps({"cache_key": "x", "source_code": "y"}, protocol=4))' >"$T_TMP/old.bin"
python3 -c 'import pickle, sys; sys.stdout.buffer.write(pickle.dumps(["[%s] example_inputs[0]: T(a=1)" % ("a" * 51), "[%s] gm: x" % ("b" * 51)], protocol=2))' >"$T_TMP/proto2.bin"
bad cut "$G1"
bad lying "$G2"
bad old "$G3"
bad proto2 "$G4"
why cut "$G1"
check_eq "an entry cut short: unreadable" "unreadable None" "$(json_eval "$T_TMP/cut.json" "'%s %s' % (d['details'], d['nearest'])")"
why lying "$G2"
check_eq "a string length past the end: unreadable" "unreadable" "$(json_get "$T_TMP/lying.json" details)"
why old "$G3"
check_eq "a pickle that records no inputs: said so" "no inputs recorded 0" "$(json_eval "$T_TMP/old.json" "'%s %d' % (d['details'], d['inputs'])")"
run "$TCFS" why --store "$S" "$G3"
check_grep "text: what would be needed" "_fx_graph_cache_debug_lines" "$OUT"
why proto2 "$G4"
check_eq "protocol 2 strings are read too" "ok 2" "$(json_eval "$T_TMP/proto2.json" "'%s %d' % (d['details'], d['inputs'])")"
why hr2 "$HR"
check_eq "the hostile entries, cached after, change nothing" "$SC 2" "$(json_eval "$T_TMP/hr2.json" "'%s %d' % (d['nearest'], d['compared'])")"

run "$TCFS" why --store "$S" fnothere
check_rc "neither kernel nor graph: exit 1" 1
check_grep "the error names the key" "fnothere: no kernel or FX graph with this key" "$ERR"

# A graph that missed and was never written: its miss is in the log
# once the mount has written it (at the latest when it stops).
NONE=fabcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrs
mkdir -p "$M/fxgraph/ab"
stat "$M/fxgraph/ab/$NONE" >/dev/null 2>&1
tcfs umount "$M"
check_rc "umount" 0
why none "$NONE"
check_rc "a graph that only missed: exit 0" 0
check_eq "it has no entry" "no entry None" "$(json_eval "$T_TMP/none.json" "'%s %s' % (d['details'], d['entry'])")"
run "$TCFS" why --store "$S" "$NONE"
check_grep "text: no entry" "^entry    none: it missed and no entry was written" "$OUT"
why offline "$HR"
check_eq "offline, the same answer" "$(json_eval "$T_TMP/hr.json" 'd')" "$(json_eval "$T_TMP/offline.json" 'd')"

# --- across the fleet (issue 30): tcfs why FKEY --remote ----------------------
# Node A publishes two graphs that differ in one input (a path); node B
# compiled a third, A's first but for a device index.  B's why --remote
# names A's first and that input from the sidecars alone; sidecars
# unsigned or forged are refused under the key, counted.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	skip "the fleet part: no redis-server or redis-cli"
	exit 0
fi
redis_start
KEYF=$T_TMP/fleet.key
printf 'fleet-key\n' >"$KEYF"
chmod 0600 "$KEYF"
SIGNED="remote=redis://127.0.0.1:$RPORT,remote_inductor=signed,remote_key_file=$KEYF"
mkdir -p "$T_TMP/g"
# graph DEVICE PATH: an entry of four debug lines into $T_TMP/g, its name
# (PyTorch's sha256_hash of its bytes) printed.
graph() {
	python3 - "$1" "$2" "$T_TMP/g" <<'PY'
import base64, hashlib, pickle, sys
h = lambda b: base64.b32encode(hashlib.sha256(b).digest())[:51].decode().lower()
dev, path, out = sys.argv[1:]
ins = [("example_inputs[0]", "TensorMetadata(dtype=torch.float32, device=device(type='cuda', index=%s))" % dev),
       ("fx_kwargs[cpp_wrapper]", "False"),
       ("pg_name", "default_pg"),
       ("inductor_config[cache_dir]", path)]
data = pickle.dumps(["[%s] %s: %s" % (h((n + v).encode()), n, v) for n, v in ins], protocol=4)
name = h(data)
open("%s/%s" % (out, name), "wb").write(data)
print(name)
PY
}
GX=fxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
GY=fyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy
GZ=fzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz
EX=$(graph 0 /cache/a)
EY=$(graph 0 /cache/b)
EZ=$(graph 1 /cache/a)
put_in() {	# put_in MNT FKEY ENTRY: as Inductor writes it
	mkdir -p "$1/fxgraph/${2:1:2}/$2"
	cp "$T_TMP/g/$3" "$1/fxgraph/${2:1:2}/$2/.tmp.$$" &&
		mv "$1/fxgraph/${2:1:2}/$2/.tmp.$$" "$1/fxgraph/${2:1:2}/$2/$3"
}
mount_node a "$SIGNED"
put_in "$M_a" "$GX" "$EX"
put_in "$M_a" "$GY" "$EY"
for _ in $(seq 100); do
	[ "$(rcli --scan --pattern 'pt2:fx-graph-v1::*:c1:tcfs' | wc -l)" -ge 2 ] && break
	sleep 0.1
done
check_grep_fixed "A's sidecar carries the inputs' names and hashes" \
	'"inputs": [["example_inputs[0]", "' <(rcli get "pt2:fx-graph-v1::$GX:c1:tcfs")
mount_node b ""
put_in "$M_b" "$GZ" "$EZ"

run "$TCFS" why --store "$S_b" --remote -o "$SIGNED" --json "$GZ"
check_rc "why --remote: exit 0" 0
cp "$OUT" "$T_TMP/remote.json"
check_eq "nearest: A's graph of the same device path, 1 input apart, then the other" \
	"$GX 1 $GY 2" "$(json_eval "$T_TMP/remote.json" "' '.join('%s %d' % (g['graph'], g['differ']) for g in d['nearest'])")"
check_eq "the input that differs: the device index, its value here" \
	"example_inputs[0] TensorMetadata(dtype=torch.float32, device=device(type='cuda', index=1))" \
	"$(json_eval "$T_TMP/remote.json" "' '.join('%s %s' % (c['input'], c['local']) for c in d['differences'])")"
check_eq "the remote side: the nearest's hash of it" \
	"$(rcli get "pt2:fx-graph-v1::$GX:c1:tcfs" | python3 -c 'import json, sys; print(json.load(sys.stdin)["inputs"][0][1])')" \
	"$(json_get "$T_TMP/remote.json" differences.0.remote)"
check_eq "compared 2, none refused" "2 0" "$(json_eval "$T_TMP/remote.json" "'%d %d' % (d['compared'], d['refused'])")"
run "$TCFS" why --store "$S_b" --remote -o "$SIGNED" "$GZ"
check_grep_fixed "text: the nearest" "nearest  $GX (1 input differ)" "$OUT"
check_grep_fixed "text: the value here" "    here    TensorMetadata(dtype=torch.float32, device=device(type='cuda', index=1))" "$OUT"
check_grep_fixed "text: the next nearest" "then     $GY (2 differ)" "$OUT"

# Sidecars naming Z's own inputs exactly (0 apart): one unsigned, one
# with a forged HMAC.  Under the key both are refused; without a key
# (nothing asks a signature) both are taken, 0 apart.
zin=$(rcli get "pt2:fx-graph-v1::$GX:c1:tcfs" |
	python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["inputs"]))')
side() {	# side FKEY [HMAC]: a sidecar with the inputs of Z's entry
	python3 - "$1" "${2:-}" "$zin" <<'PY'
import base64, hashlib, json, sys
g, mac, ins = sys.argv[1:]
ins = json.loads(ins)	# X's: Z's but for the device
dev = "example_inputs[0]TensorMetadata(dtype=torch.float32, device=device(type='cuda', index=1))"
ins[0][1] = base64.b32encode(hashlib.sha256(dev.encode()).digest())[:51].decode().lower()
d = {"tcfs": 1, "key": g, "name": "e" * 51, "kind": "file",
     "files": [{"name": "e" * 51, "size": 1, "sha256": "0" * 64}], "inputs": ins}
if mac:
	d["hmac"] = mac
print(json.dumps(d))
PY
}
GU=fuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu
GF=ffffffffffffffffffffffffffffffffffffffffffffffffffff
rcli set "pt2:fx-graph-v1::$GU:c1:tcfs" "$(side "$GU")" >/dev/null
rcli set "pt2:fx-graph-v1::$GF:c1:tcfs" "$(side "$GF" "$(printf 'ab%.0s' $(seq 32))")" >/dev/null
run "$TCFS" why --store "$S_b" --remote -o "$SIGNED" --json "$GZ"
check_eq "under the key: the unsigned and the forged refused, A's still the nearest" \
	"2 $GX" "$(json_eval "$OUT" "'%d %s' % (d['refused'], d['nearest'][0]['graph'])")"
run "$TCFS" why --store "$S_b" --remote -o "remote=redis://127.0.0.1:$RPORT" --json "$GZ"
check_eq "no key: both taken, 0 apart, then A's" \
	"0 4 0 0 $GX" "$(json_eval "$OUT" "'%d %d %d %d %s' % (d['refused'], d['compared'], d['nearest'][0]['differ'], d['nearest'][1]['differ'], d['nearest'][2]['graph'])")"

run "$TCFS" why --store "$S_b" --remote -o "$SIGNED" fnothere
check_rc "--remote, no such graph here: exit 1" 1
check_grep "the error names the key" "fnothere: no FX graph entry with this key" "$ERR"
rcli flushall >/dev/null
run "$TCFS" why --store "$S_b" --remote -o "$SIGNED" "$GZ"
check_rc "--remote, nothing in the remote: exit 1" 1
check_grep "and says so" "no FX graph in the remote to compare with" "$ERR"
run "$TCFS" why --store "$S_b" -o "$SIGNED" "$GZ"
check_rc "-o without --remote: a usage error" 2
