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
