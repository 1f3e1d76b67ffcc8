#!/usr/bin/env bash
# tcfs list and tcfs why: the inventory of kernels with their use, and
# what sets a recompiled kernel apart from its nearest cached sibling.
set -u
. "$(dirname "$0")/lib.sh"

SRC=$(fixture_top triton-3.6-multitarget.tgz big)
S=$T_TMP/store
KERNELS=154

# A variant of a fixture kernel that is the only one of its name and
# target: the same files under a new key, with other warps and stages.
VAR_SRC=$T_TMP/variant
python3 - "$SRC" "$VAR_SRC" >"$T_TMP/variant.out" <<'PY'
import collections, json, os, shutil, sys
src, dst = sys.argv[1:]
seen = collections.Counter()
meta = {}
for key in sorted(os.listdir(src)):
    for f in os.listdir(os.path.join(src, key)):
        if f.startswith("__grp__"):
            name = f[7:-5]
            t = json.load(open(os.path.join(src, key, name + ".json")))["target"]
            seen[(name, t["backend"], str(t["arch"]))] += 1
            meta[(name, t["backend"], str(t["arch"]))] = key
key, name = next((meta[k], k[0]) for k, n in sorted(seen.items()) if n == 1)
new = "VARIANT" + key[7:]
os.makedirs(os.path.join(dst, new))
for f in os.listdir(os.path.join(src, key)):
    shutil.copy(os.path.join(src, key, f), os.path.join(dst, new, f))
m = json.load(open(os.path.join(dst, new, name + ".json")))
m["num_warps"] = m["num_warps"] * 2
m["num_stages"] = m["num_stages"] + 1
json.dump(m, open(os.path.join(dst, new, name + ".json"), "w"))
g = os.path.join(dst, new, "__grp__" + name + ".json")
kids = json.load(open(g))["child_paths"]
json.dump({"child_paths": {c: os.path.join(dst, new, c) for c in kids}}, open(g, "w"))
print(key, new, name)
PY
read -r ORIG VAR NAME <"$T_TMP/variant.out"
check "a variant of a kernel alone of its name and target was made" test -n "${VAR:-}"

tcfs import --store "$S" "$SRC"
check_rc "import the fixture" 0

echo "# --- tcfs list"
tcfs list --json --store "$S"
check_eq "list --json: one row per kernel" "$KERNELS" "$(json_eval "$OUT" 'len(d)')"
check_eq "... with every field" \
	"arch backend created files hits key last_hit misses name num_stages num_warps origin root size target visibility writer" \
	"$(json_eval "$OUT" '" ".join(sorted(d[0]))')"
check_eq "... each from its origin: the import" "import" \
	"$(json_eval "$OUT" '" ".join(sorted(set(k["origin"] for k in d)))')"
check_eq "... never hit yet: last_hit null, hits 0" "0 None" \
	"$(json_eval "$OUT" '"%d %s" % (sum(r["hits"] for r in d), set(r["last_hit"] for r in d).pop())')"
check_eq "... files and size as in the fixture's key dir" \
	"$(ls "$SRC/$ORIG" | wc -l) $(find "$SRC/$ORIG" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')" \
	"$(json_eval "$OUT" "[('%d' % r['files']) + ' ' + ('%d' % r['size']) for r in d if r['key'] == '$ORIG'][0]")" 
tcfs list --store "$S"
check_eq "list: a header and one line per kernel" $((KERNELS + 1)) "$(wc -l <"$OUT")"
check_grep "... sizes in human units" " KiB " "$OUT"
tcfs list --name 'matmul*' --arch gfx942 --json --store "$S"
check_eq "list --name GLOB --arch A: only those" "true" \
	"$(json_eval "$OUT" 'bool(d) and all(r["name"].startswith("matmul") and r["target"] == "hip-gfx942" for r in d)')"
tcfs list --sort size --json --store "$S"
check_eq "list --sort size: the biggest first" "true" \
	"$(json_eval "$OUT" 'all(a["size"] >= b["size"] for a, b in zip(d, d[1:]))')"
tcfs list --unused-since @0 --store "$S" --json
check_eq "list --unused-since @0: none (all were made since)" 0 "$(json_eval "$OUT" 'len(d)')"
tcfs list --unused-since 0s --json --store "$S"
check_eq "list --unused-since 0s: all, none was ever hit" "$KERNELS" "$(json_eval "$OUT" 'len(d)')"
tcfs list --sort colour --store "$S"
check_rc "list --sort with no such field: usage error (2)" 2
check_grep "... naming the fields there are" "name, key, size" "$ERR"
tcfs list --unused-since yesterday-ish --store "$S"
check_rc "list --unused-since with no time: usage error (2)" 2
tcfs list --store "$T_TMP/no-store"
check_rc "list of a store that is not there: exit 1" 1

if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	M=$T_TMP/mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount --store "$S" "$M"
	G=$(ls "$M/$ORIG" | grep '^__grp__')
	cat "$M/$ORIG/$G" >/dev/null	# one process: one probe
	tcfs list --json --store "$S"
	check_eq "a kernel read through the mount: 1 hit, and a last hit time, at once" "1 True" \
		"$(json_eval "$OUT" "[('%d ' % r['hits']) + str(r['last_hit'] is not None) for r in d if r['key'] == '$ORIG'][0]")"
	tcfs list --unused-since 1h --json --store "$S"
	check_eq "list --unused-since 1h: all but it" $((KERNELS - 1)) "$(json_eval "$OUT" 'len(d)')"
	tcfs umount "$M"
else
	skip "a kernel read through the mount is counted by list" "no /dev/fuse"
	skip "list --unused-since 1h" "no /dev/fuse"
fi

echo "# --- tcfs why"
tcfs why --json --store "$S" "$ORIG"
check_eq "why of a kernel alone of its name and target: nearest null, no differences" \
	"None {}" "$(json_eval "$OUT" '"%s %s" % (d["nearest"], d["differences"])')"
tcfs import --store "$S" "$VAR_SRC"
check_rc "import the variant" 0
tcfs why --json --store "$S" "$VAR"
check_eq "why of the variant: its nearest is the kernel it was made from" "$ORIG" \
	"$(json_eval "$OUT" 'd["nearest"]')"
check_eq "... and the differences are exactly num_stages and num_warps" "num_stages num_warps" \
	"$(json_eval "$OUT" '" ".join(sorted(d["differences"]))')"
check_eq "... each as [nearest's value, this kernel's value]" "true" \
	"$(json_eval "$OUT" 'd["differences"]["num_warps"][1] == 2 * d["differences"]["num_warps"][0]')"
check_eq "... with its name and target" "$NAME" "$(json_eval "$OUT" 'd["name"]')"
tcfs why --store "$S" "$VAR"
check_grep "why (text) lists the fields" "num_warps" "$OUT"
tcfs why --store "$S" NOSUCHKEY
check_rc "why of a key with no kernel: exit 1" 1
check_grep "... saying so" "no kernel or FX graph with this key" "$ERR"
tcfs why --store "$S"
check_rc "why without a key: usage error (2)" 2

echo "# --- metadata tcfs does not control"
# A kernel whose target holds a quote, a backslash, a newline and a byte
# that is not UTF-8, and one whose NAME.json is missing: every listing
# stays printable, and the metrics stay parseable.
ODD=ODDODD${ORIG:6}
NOMETA=NOMETA${ORIG:6}
python3 - "$SRC/$ORIG" "$T_TMP/odd" "$NAME" "$ODD" "$NOMETA" <<'PY'
import json, os, shutil, sys
src, dst, name, odd, nometa = sys.argv[1:]
for key in (odd, nometa):
    shutil.copytree(src, os.path.join(dst, key))
    g = os.path.join(dst, key, "__grp__" + name + ".json")
    kids = json.load(open(g))["child_paths"]
    if key == nometa:
        os.unlink(os.path.join(dst, key, name + ".json"))
        kids = [c for c in kids if c != name + ".json"]
    json.dump({"child_paths": {c: os.path.join(dst, key, c) for c in kids}},
              open(g, "w"))
p = os.path.join(dst, odd, name + ".json")
m = json.load(open(p))
m["target"]["arch"] = 'x"y\\z\nq\udcff'
open(p, "wb").write(json.dumps(m, ensure_ascii=False).encode("utf-8", "surrogateescape"))
PY
tcfs import --store "$S" "$T_TMP/odd"
check_rc "import a kernel with an odd target and one with no metadata" 0
# Printable: UTF-8, and no control byte but the newlines ending lines.
printable() {
	python3 -c 'import sys; b = open(sys.argv[1], "rb").read(); b.decode("utf-8"); sys.exit(any(c < 32 and c != 10 or c == 127 for c in b))' "$1"
}
tcfs list --name "$NAME" --store "$S"
check "list: the odd target is shown escaped, on one line" printable "$OUT"
check_grep_fixed "... as \\xNN and \\\\ (as tcfs info shows it)" 'x"y\\z\x0aq\xff' "$OUT"
tcfs why --store "$S" "$ODD"
check "why (text) of it: printable too" printable "$OUT"
# JSON parsers refuse bytes that are not UTF-8: every --json output holds
# none, the odd target's 0xFF shown as the text \xff.
strict_json() {
	python3 -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' "$1"
}
tcfs list --json --name "$NAME" --store "$S"
check "list --json of it: valid UTF-8 JSON" strict_json "$OUT"
check_grep_fixed "... the byte as the text \\xff" '\\xff' "$OUT"
tcfs why --json --store "$S" "$ODD"
check "why --json of it: valid UTF-8 JSON" strict_json "$OUT"
tcfs info --json --store "$S"
check "info --json: valid UTF-8 JSON" strict_json "$OUT"
tcfs why --store "$S" "$NOMETA"
check_rc "why of a kernel with no metadata: exit 0" 0
check_grep "... saying its metadata is missing" "nearest  none: its metadata .* is missing" "$OUT"
tcfs why --json --store "$S" "$NOMETA"
check_eq "... and in JSON: nearest null, no differences" "None {}" \
	"$(json_eval "$OUT" '"%s %s" % (d["nearest"], d["differences"])')"

# The metrics offline, by a real parser (python3-prometheus-client, for
# Debian's python3), against tcfs info --json and tcfs stats --json.
tcfs info --json --store "$S"
cp "$OUT" "$T_TMP/info.json"
tcfs stats --json --store "$S"
cp "$OUT" "$T_TMP/stats.json"
tcfs stats --prometheus --store "$S"
check_rc "stats --prometheus" 0
/usr/bin/python3 - "$OUT" "$T_TMP/info.json" "$T_TMP/stats.json" >"$T_TMP/prom.out" 2>&1 <<'PY'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1], encoding="utf-8", errors="strict").read()
fams = {f.name: f for f in text_string_to_metric_families(text)}
info = json.loads(open(sys.argv[2], "rb").read().decode("utf-8", "surrogateescape"))
st = json.loads(open(sys.argv[3], "rb").read().decode("utf-8", "surrogateescape"))
def val(name, **labels):
    return [s.value for s in fams[name].samples
            if all(s.labels.get(k) == v for k, v in labels.items())][0]
bad = []
for m in ("kernels", "modules", "files", "logical_bytes", "stored_bytes", "blobs"):
    if val("tcfs_" + m) != info[m]:
        bad.append("tcfs_%s %s, info says %s" % (m, val("tcfs_" + m), info[m]))
for kind, result, want in (("kernel", "hit", st["hits"]), ("kernel", "miss", st["misses"]),
                           ("module", "hit", st["modules"]["hits"]),
                           ("module", "miss", st["modules"]["misses"])):
    if val("tcfs_probes", kind=kind, result=result) != want:
        bad.append("probes %s %s" % (kind, result))
if fams["tcfs_probes"].type != "counter" or fams["tcfs_probe_events_dropped"].type != "counter":
    bad.append("probes and dropped events must be counters")
if "tcfs_requests" in fams or "tcfs_start_time_seconds" in fams:
    bad.append("offline, no daemon metrics")
targets = {s.labels["target"]: s.value for s in fams["tcfs_kernels_by_target"].samples}
want = {"%s-%s" % (t["backend"], t["arch"]): t["kernels"] for t in info["targets"] if t["backend"]}
want = {k.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"): v
        for k, v in want.items()}
if targets != want:
    bad.append("kernels by target %s, info says %s" % (targets, want))
if targets.get('cuda-x"y\\z\nq\\xff') != 1:
    bad.append("the odd target, unescaped by the parser: %s" % sorted(targets))
print("\n".join(bad) or "all good")
sys.exit(1 if bad else 0)
PY
check "stats --prometheus parses, every value as info and stats say" \
	test "$(cat "$T_TMP/prom.out")" = "all good"
diag "$(cat "$T_TMP/prom.out")"
tcfs stats --since yesterday-ish --store "$S"
check_rc "stats --since with no time: usage error (2)" 2
check_grep "... naming it" "yesterday-ish" "$ERR"

echo "# --- tcfs stats: why each new kernel missed"
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	# As Triton does it: the key dir, a probe that misses, each file
	# written under a temp name and renamed into place, the group file
	# last.  (A file overwritten in place is committed at its release,
	# which comes after close() returns.)  The kernel differs from the
	# variant only in num_ctas, and from the original in more.
	VAR2=VARTWO${ORIG:6}
	M=$T_TMP/mnt
	mkdir -p "$M"
	tcfs mount --store "$S" "$M"
	check_rc "mount" 0
	python3 - "$VAR_SRC/$VAR" "$M/$VAR2" "$NAME" >"$T_TMP/land.out" 2>&1 <<'PY'
import json, os, sys
src, dst, name = sys.argv[1:]
grp = os.path.join(dst, "__grp__" + name + ".json")
os.mkdir(dst)
assert not os.path.exists(grp)		# the probe: a miss
def put(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
kids = json.load(open(os.path.join(src, "__grp__" + name + ".json")))["child_paths"]
m = json.load(open(os.path.join(src, name + ".json")))
m["num_ctas"] = m.get("num_ctas", 1) + 1
for c in kids:
    if c == name + ".json":
        put(os.path.join(dst, c), json.dumps(m).encode())
    else:
        put(os.path.join(dst, c), open(os.path.join(src, c), "rb").read())
put(grp, json.dumps({"child_paths": {c: os.path.join(dst, c) for c in kids}}).encode())
PY
	check "a kernel missed, then landed through the mount" test $? = 0
	tcfs stats --json --store "$S"
	check_eq "stats --json: it is the one new kernel" "[\"$VAR2\"]" \
		"$(json_eval "$OUT" 'd["new_kernels"]')"
	check_eq "... new_kernels_why: its nearest and what differs" \
		"$VAR [1, 2]" \
		"$(json_eval "$OUT" "'%s %s' % (d['new_kernels_why']['$VAR2']['nearest'], d['new_kernels_why']['$VAR2']['differences']['num_ctas'])")"
	check_eq "... and only that" '["num_ctas"]' \
		"$(json_eval "$OUT" "sorted(d['new_kernels_why']['$VAR2']['differences'])")"
	tcfs stats --store "$S"
	check_grep_fixed "stats: one line saying what differs from its nearest" \
		"  - $VAR2  $NAME  differs from $VAR in num_ctas" "$OUT"
	tcfs umount "$M"
	check_rc "unmount" 0
else
	skip "stats says why each new kernel missed" "no /dev/fuse"
fi

echo "# --- tcfs why: only what was cached before, and the TTIR's differences"
# Four add_kernels of the small fixture, all num_warps 4 but O2PK (8):
# PFF5 f32 BLOCK 1024, PLNG f16 1024, O2PK f32 512, JFZN bf16 2048.  PFF5
# alone keeps its mtime (cached on 2026-11-21); the others come later,
# as copies under new keys (sorting after PFF5's), one import each.
SMALL=$(fixture_top triton-3.6-h200-small.tgz cA)
S2=$T_TMP/store2
OLD=PFF5SGOEPUOPOHLGSXG4DIWUDAUGIFBEMFP7U326OLNBKOHG4WZA
F16=ZHALF${OLD:5}
B512=ZBLOCK${OLD:6}
# copy_kernel SRC_KEY DST_DIR NEW_KEY: the kernel's files under a new
# key, written now, its group file naming them there.
copy_kernel() {
	python3 - "$SMALL/$1" "$2/$3" <<'PY'
import json, os, shutil, sys
src, dst = sys.argv[1:]
os.makedirs(dst, exist_ok=True)
for f in os.listdir(src):
    if not f.startswith("__grp__"):
        shutil.copy(os.path.join(src, f), os.path.join(dst, f))
kids = json.load(open(os.path.join(src, "__grp__add_kernel.json")))["child_paths"]
g = os.path.join(dst, "__grp__add_kernel.json")
with open(g + ".tmp", "w") as f:	# last, whole, as Triton puts it
    json.dump({"child_paths": {c: os.path.join(dst, c) for c in kids}}, f)
os.replace(g + ".tmp", g)
PY
}
mkdir -p "$T_TMP/old" && cp -a "$SMALL/$OLD" "$T_TMP/old/"
copy_kernel PLNGX5LGP6HAECZLBZL37RMFN6XBSZ3OQRSYHU2YNCFUPBE5P5MQ "$T_TMP/new1" "$F16"
copy_kernel O2PKWMUP6TRONRDRBBLU2UTAC53WZ33DEASPVSIDGUVYNJD4MB6A "$T_TMP/new2" "$B512"
tcfs import --store "$S2" "$T_TMP/old" && tcfs import --store "$S2" "$T_TMP/new1" &&
	tcfs import --store "$S2" "$T_TMP/new2"
check_rc "import an add_kernel, then two more, later" 0
tcfs why --json --store "$S2" "$OLD"
check_eq "why of the oldest: no nearest, though later ones of its name are cached" \
	"None None" "$(json_eval "$OUT" '"%s %s" % (d["nearest"], d["source"])')"
tcfs why --store "$S2" "$OLD"
check_grep "... (text) the first of its name and target" "nearest  none: the first of its name and target" "$OUT"
tcfs why --json --store "$S2" "$F16"
check_eq "why of the f16 one: nearest the f32 one, the same metadata" "$OLD {}" \
	"$(json_eval "$OUT" '"%s %s" % (d["nearest"], d["differences"])')"
check_eq "... its source differs in the pointers' types, by argument name" \
	"differs x_ptr,y_ptr,out_ptr !tt.ptr<f32> {tt.divisibility = 16 : i32} !tt.ptr<f16> {tt.divisibility = 16 : i32} []" \
	"$(json_eval "$OUT" '"%s %s %s %s %s" % (d["source"], ",".join(a["name"] for a in d["source_differences"]["arguments"]), d["source_differences"]["arguments"][0]["from"], d["source_differences"]["arguments"][0]["to"], d["source_differences"]["constants"])')"
tcfs why --store "$S2" "$F16"
check_grep_fixed "... (text) one line per argument" \
	"x_ptr  !tt.ptr<f32> {tt.divisibility = 16 : i32} -> !tt.ptr<f16> {tt.divisibility = 16 : i32}" "$OUT"
tcfs why --json --store "$S2" "$B512"
check_eq "why of the BLOCK 512 one: num_warps, and the constant 1024 -> 512" \
	"$OLD num_warps [] 1024 : i32 512 : i32 1" \
	"$(json_eval "$OUT" '"%s %s %s %s %s %d" % (d["nearest"], ",".join(d["differences"]), d["source_differences"]["arguments"], d["source_differences"]["constants"][0]["from"], d["source_differences"]["constants"][0]["to"], len(d["source_differences"]["constants"]))')"
tcfs why --store "$S2" "$B512"
check_grep_fixed "... (text) the constant, by its loc name" \
	"constant offs  1024 : i32 -> 512 : i32" "$OUT"
# A TTIR too big to compare, and one that is not TTIR, in place of F16's.
for kind in big garbage; do
	K=Z${kind^^}${OLD:$((1 + ${#kind}))}
	copy_kernel PLNGX5LGP6HAECZLBZL37RMFN6XBSZ3OQRSYHU2YNCFUPBE5P5MQ "$T_TMP/$kind" "$K"
	if [ $kind = big ]; then
		head -c 600000 /dev/zero | tr '\0' ' ' >>"$T_TMP/$kind/$K/add_kernel.source"
	else
		printf 'tt.func public @add_kernel(%%x: <<<\n' >"$T_TMP/$kind/$K/add_kernel.source"
	fi
	tcfs import --store "$S2" "$T_TMP/$kind" >/dev/null
	tcfs why --json --store "$S2" "$K"
	check_eq "why with a $kind NAME.source: not compared, saying why" \
		"$([ $kind = big ] && echo 'too big' || echo 'not TTIR') None" \
		"$(json_eval "$OUT" '"%s %s" % (d["source"], d["source_differences"])')"
done

# Two matmul_kernels of the multitarget fixture (hip-gfx90a): BLOCK_N
# 64 -> 128 and BLOCK_K 32 -> 64.  Paired by position, tcfs why showed
# 12 constants such as 32 : i32 -> dense<-2147483648> : tensor<1x128xi64>.
MM_OLD=GDP56UOIKYTREATWXZI7T6PZTF7WF2DW3VILE3W4TLBRRC5LI34Q
MM_NEW=KPOJAJ5LWZB2MW3AIBEGLAJRPPX4SIYH4TXODSAIELIP3VJSYANQ
S3=$T_TMP/store3
mkdir -p "$T_TMP/mm_old" "$T_TMP/mm_new"
cp -a "$SRC/$MM_OLD" "$T_TMP/mm_old/" && cp -a "$SRC/$MM_NEW" "$T_TMP/mm_new/"
tcfs import --store "$S3" "$T_TMP/mm_old" >/dev/null &&
	tcfs import --store "$S3" "$T_TMP/mm_new" >/dev/null
check_rc "import two matmul_kernels, one after the other" 0
tcfs why --store "$S3" "$MM_NEW"
check_eq "why KEY of the BLOCK 128x64 matmul: 4 constants changed, the real ones" \
	"4" "$(grep -c '^  constant' "$OUT")"
check_grep_fixed "... BLOCK_K by its names" \
	"constant av, bv, a, b  32 : i32 -> 64 : i32" "$OUT"
check_grep_fixed "... BLOCK_N by its name" "constant rn  64 : i32 -> 128 : i32" "$OUT"
check_eq "... and no constant paired with one of another part" 0 \
	"$(grep -c 'i32 -> dense' "$OUT")"
# 2EPY then GUJZ (cuda-90): divisibilities and three strides of 1 (12
# arguments), and 10 constants: 22 changes, 20 shown.
mkdir -p "$T_TMP/mm_2e" "$T_TMP/mm_gu"
cp -a "$SRC/2EPYYPQHWJNXRP4P3QJDH6NW3R4X2XIBNBEAHNT7SB6NJBVLF66Q" "$T_TMP/mm_2e/"
cp -a "$SRC/GUJZND2CTOIUWHCVMIS5JGYVU7MBR63PURSVCKULE67CQDMFBGBQ" "$T_TMP/mm_gu/"
tcfs import --store "$S3" "$T_TMP/mm_2e" >/dev/null &&
	tcfs import --store "$S3" "$T_TMP/mm_gu" >/dev/null
tcfs why --store "$S3" GUJZND2CTOIUWHCVMIS5JGYVU7MBR63PURSVCKULE67CQDMFBGBQ
check_eq "why past a screenful: 20 changes, then how many more" \
	"20 1" "$(grep -cE '^  (argument|constant) ' "$OUT") $(grep -c '^  and 2 more (--all lists them)$' "$OUT")"
tcfs why --all --store "$S3" GUJZND2CTOIUWHCVMIS5JGYVU7MBR63PURSVCKULE67CQDMFBGBQ
check_eq "why --all: all 22" "22 0" \
	"$(grep -cE '^  (argument|constant) ' "$OUT") $(grep -c 'more' "$OUT")"

if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	# JFZN (bf16, BLOCK 2048) compiled through the mount as Triton does:
	# a miss, then its files.
	NEWK=ZJFZN${OLD:5}
	M2=$T_TMP/mnt2
	mkdir -p "$M2"
	at_exit "fusermount3 -uz '$M2'"
	tcfs mount --store "$S2" "$M2"
	check_rc "mount the second store" 0
	mkdir "$M2/$NEWK"
	test -e "$M2/$NEWK/__grp__add_kernel.json"
	check "a probe of a kernel not there: a miss" test $? = 1
	copy_kernel JFZN62W5PAZ7VPVPXQQSSNULCOTK77V4NFGPSUN77INFOOBG2ITA "$M2" "$NEWK"
	tcfs stats --json --store "$S2"
	check_eq "stats --json: the new kernel's source_differences" \
		"$OLD x_ptr,y_ptr,out_ptr 1024 : i32>2048 : i32" \
		"$(json_eval "$OUT" "(lambda w: '%s %s %s' % (w['nearest'], ','.join(a['name'] for a in w['source_differences']['arguments']), ','.join(c['from'] + '>' + c['to'] for c in w['source_differences']['constants'])))(d['new_kernels_why']['$NEWK'])")"
	tcfs stats --store "$S2"
	check_grep_fixed "stats: its line says what its source changed" \
		"  - $NEWK  add_kernel  same metadata as $OLD; source: x_ptr, y_ptr, out_ptr; 1024 : i32 -> 2048 : i32" "$OUT"
	tcfs umount "$M2"
	check_rc "unmount the second store" 0
else
	skip "stats says what a new kernel's source changed" "no /dev/fuse"
fi
