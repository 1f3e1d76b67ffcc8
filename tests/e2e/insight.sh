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
	"arch backend created files hits key last_hit misses name num_stages num_warps size target" \
	"$(json_eval "$OUT" '" ".join(sorted(d[0]))')"
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
check_grep "... saying so" "no kernel with this key" "$ERR"
tcfs why --store "$S"
check_rc "why without a key: usage error (2)" 2
