#!/usr/bin/env bash
# tcfs pack and unpack: OCI images of the store, checked with the tools
# people use on them (skopeo, umoci) and against Red Hat MCV's format:
# round trips byte-exact, the same digest every time, deltas on a base,
# a job's working set, the GPU check, unpack while mounted, and every
# kind of hostile image refused with the store left as it was.
. "$(dirname "$0")/lib.sh"

GEN=$(dirname "$0")/oci_gen.py
require_cmds skopeo umoci
# pack and unpack stage under TMPDIR: what they leave there is checked.
export TMPDIR=$T_TMP/tmp
mkdir -p "$TMPDIR"
# No GPU tool is asked unless a check says otherwise.
export TCFS_GPUS=

BIG=$(fixture_top triton-3.6-multitarget.tgz big) || exit 1
BIG2=$(fixture_top triton-3.6-multitarget-fpfusion.tgz big2) || exit 1
SMALL=$(fixture_top triton-3.6-h200-small.tgz cA) || exit 1
S=$T_TMP/store
I=$T_TMP/img

kernels_of() {
	info_field "$1" kernels
}
# The key dirs of a tree (a cache dir, an export).
keydirs() {
	find "$1" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort
}
# export_as STORE DIR: exports STORE to DIR, always at the same path,
# so that two stores' exports compare byte for byte (group files name
# their destination).
export_as() {
	rm -rf "$T_TMP/exp" "$2"
	"$TCFS" export -q --store "$1" "$T_TMP/exp" && mv "$T_TMP/exp" "$2"
}
staged_left() {
	find "$TMPDIR" -mindepth 1 -maxdepth 1 | wc -l
}

# --- pack -------------------------------------------------------------------
tcfs import -q --store "$T_TMP/s-small" "$SMALL"
NSMALL=$(kernels_of "$T_TMP/s-small")
tcfs import -q --store "$S" "$SMALL" "$BIG"
check_rc "a store from the CUDA and AMD fixtures" 0
N=$(kernels_of "$S")
tcfs pack --store "$S" --json "$I:v1"
check_rc "pack it into an image layout" 0
D1=$(json_get "$OUT" digest)
check_eq "the summary counts every kernel" "$N" "$(json_get "$OUT" kernels)"
check_eq "every blob readable by all, as skopeo writes them" "" \
	"$(find "$I/blobs" -type f ! -perm -0444 | sed -n 1p)"
tcfs pack --store "$S" --json "$I:again"
check_eq "packed again: the same digest" "$D1" "$(json_get "$OUT" digest)"
tcfs pack --store "$S" --json "oci-archive:$T_TMP/a.tar"
check_rc "pack into an oci-archive" 0
check_eq "an oci-archive of the same content: the same digest" "$D1" \
	"$(json_get "$OUT" digest)"

run skopeo inspect "oci:$I:v1"
check_rc "skopeo inspect reads the image" 0
cp "$OUT" "$T_TMP/inspect.json"
check_eq "label entry-count: every kernel" "$N" \
	"$(json_eval "$T_TMP/inspect.json" 'd["Labels"]["cache.triton.image/entry-count"]')"
check_eq "label summary: the targets of the fixtures" \
	"cuda-80-32 cuda-90-32 hip-gfx90a-64 hip-gfx942-64" \
	"$(json_eval "$T_TMP/inspect.json" '" ".join(sorted("%s-%s-%d" % (t["backend"], t["arch"], t["warp_size"]) for t in __import__("json").loads(d["Labels"]["cache.triton.image/summary"])["targets"]))')"
check_num "label cache-size-bytes: the cache's bytes" \
	"$(json_eval "$T_TMP/inspect.json" 'd["Labels"]["cache.triton.image/cache-size-bytes"]')" -gt 1000000
run skopeo inspect "oci-archive:$T_TMP/a.tar"
check_rc "skopeo inspect reads the oci-archive" 0

run umoci unpack --rootless --image "$I:v1" "$T_TMP/bundle"
check_rc "umoci unpack of a tcfs image" 0
R=$T_TMP/bundle/rootfs
check_eq "the layer holds the key dirs under io.triton.cache/" \
	"$({ keydirs "$SMALL"; keydirs "$BIG"; } | sort -u)" \
	"$(keydirs "$R/io.triton.cache")"
check_eq "io.triton.manifest/manifest.json lists every kernel, MCV's way" "$N" \
	"$(json_eval "$R/io.triton.manifest/manifest.json" 'len(d["triton"])')"
check_eq "each entry has MCV's fields" "ok" \
	"$(json_eval "$R/io.triton.manifest/manifest.json" '"ok" if all(set(e) >= {"hash", "backend", "arch", "warp_size", "dummy_key"} and len(e["dummy_key"]) == 64 for e in d["triton"]) else "bad"')"
G=$(find "$R/io.triton.cache" -name '__grp__*.json' | sed -n 1p)
check_eq "group files name their children relative to .triton/cache" "ok" \
	"$(json_eval "$G" '"ok" if all(v.startswith(".triton/cache/") for v in d["child_paths"].values()) else "bad"')"
check_eq "... and only in their own key dir" "ok" \
	"$(python3 -c 'import json,os,sys; g=sys.argv[1]; k=os.path.basename(os.path.dirname(g)); print("ok" if all(v == ".triton/cache/%s/%s" % (k, c) for c, v in json.load(open(g))["child_paths"].items()) else "bad")' "$G")"

# --- round trips ------------------------------------------------------------
S2=$T_TMP/store2
tcfs unpack --store "$S2" "$I:v1"
check_rc "unpack into a new store" 0
check_grep "it says what it added" "unpacked $N kernels" "$OUT"
export_as "$S" "$T_TMP/e1"
export_as "$S2" "$T_TMP/e2"
check "pack, unpack, export: byte-exact, group files too" \
	diff -r "$T_TMP/e1" "$T_TMP/e2"
check_eq "nothing is left in TMPDIR" 0 "$(staged_left)"
tcfs unpack --store "$S2" --json "$I:v1"
check_rc "unpacking again is no error" 0
check_eq "... and adds nothing" 0 "$(json_get "$OUT" files)"
run "$TCFS" fsck --store "$S2"
check_rc "the unpacked store checks clean" 0

run skopeo copy "oci:$I:v1" "docker-archive:$T_TMP/d.tar:tcfs/test:v1"
check_rc "skopeo copy to a docker-archive" 0
tcfs unpack --store "$T_TMP/s-docker" "docker-archive:$T_TMP/d.tar"
check_rc "unpack the docker-archive" 0
check_eq "... every kernel" "$N" "$(kernels_of "$T_TMP/s-docker")"
tcfs unpack --store "$T_TMP/s-bare" "$T_TMP/d.tar"
check_rc "a bare FILE is recognised as a docker-archive" 0
run skopeo copy "oci:$I:v1" "oci-archive:$T_TMP/b.tar"
tcfs unpack --store "$T_TMP/s-ociarch" "oci-archive:$T_TMP/b.tar"
check_rc "unpack skopeo's oci-archive" 0
check_eq "... every kernel" "$N" "$(kernels_of "$T_TMP/s-ociarch")"
tcfs unpack --store "$T_TMP/s-ourarch" "$T_TMP/a.tar"
check_rc "unpack tcfs's own oci-archive as a bare FILE" 0
check_eq "... every kernel" "$N" "$(kernels_of "$T_TMP/s-ourarch")"
# Paths relative to the working directory, as a user types them.
cd "$T_TMP" || exit 1
tcfs unpack --store "$T_TMP/s-rel1" a.tar
check_rc "unpack of a relative FILE" 0
tcfs unpack --store "$T_TMP/s-rel2" oci-archive:b.tar
check_rc "unpack of a relative oci-archive:" 0
tcfs unpack --store "$T_TMP/s-rel3" img:v1
check_rc "unpack of a relative layout" 0
check_eq "... every kernel" "$N" "$(kernels_of "$T_TMP/s-rel3")"
tcfs pack --store "$S" --base oci-archive:a.tar img:relbase
check_grep "pack --base reads a relative oci-archive:" \
	"the base holds every kernel selected" "$ERR"
cd - >/dev/null || exit 1

# --- images others made -----------------------------------------------------
# manifest.json and the summary label, byte for byte as MCV writes them
# (oci_gen.py's were checked against MCV's Go code).
layer_file() {
	python3 - "$1" "$2" <<'EOF'
import json, sys, tarfile
lay, name = sys.argv[1:]
d = json.load(open(lay + "/index.json"))["manifests"][0]["digest"][7:]
man = json.load(open(lay + "/blobs/sha256/" + d))
t = tarfile.open(lay + "/blobs/sha256/" + man["layers"][-1]["digest"][7:])
sys.stdout.write(t.extractfile(name).read().decode())
cfg = json.load(open(lay + "/blobs/sha256/" + man["config"]["digest"][7:]))
print(cfg["config"]["Labels"]["cache.triton.image/summary"])
EOF
}
tcfs pack --store "$T_TMP/s-small" "$T_TMP/ours"
run python3 "$GEN" cache "$SMALL" "$T_TMP/theirs"
check_eq "manifest.json and the summary label: MCV's bytes" \
	"$(layer_file "$T_TMP/theirs" io.triton.manifest/manifest.json)" \
	"$(layer_file "$T_TMP/ours" io.triton.manifest/manifest.json)"
run python3 "$GEN" cache "$SMALL" "$T_TMP/mcv"
check_rc "an image as MCV writes it (oci_gen.py)" 0
tcfs unpack --store "$T_TMP/s-mcv" "$T_TMP/mcv"
check_rc "unpack MCV's image" 0
check_eq "... every kernel" "$NSMALL" \
	"$(kernels_of "$T_TMP/s-mcv")"
run "$TCFS" export -q --store "$T_TMP/s-mcv" "$T_TMP/e-mcv"
G=$(find "$T_TMP/e-mcv" -name '__grp__*.json' | sed -n 1p)
check_eq "MCV's relative child paths point into the destination" "ok" \
	"$(python3 -c 'import json,os,sys; g=sys.argv[1]; d=os.path.dirname(g); print("ok" if all(v == os.path.join(d, c) and os.path.exists(v) for c, v in json.load(open(g))["child_paths"].items()) else "bad")' "$G")"
run python3 "$GEN" cache --variant compat "$SMALL" "$T_TMP/compat"
tcfs unpack --store "$T_TMP/s-compat" "$T_TMP/compat"
check_rc "unpack a compat image (a plain cache dir as its layer)" 0
check_eq "... every kernel" "$NSMALL" \
	"$(kernels_of "$T_TMP/s-compat")"

# umoci builds an image from a plain cache directory.
U=$T_TMP/umoci
run umoci init --layout "$U"
run umoci new --image "$U:cache"
run umoci unpack --rootless --image "$U:cache" "$T_TMP/ubundle"
cp -a "$SMALL"/. "$T_TMP/ubundle/rootfs/"
run umoci repack --image "$U:cache" "$T_TMP/ubundle"
check_rc "umoci makes an image of a plain cache dir" 0
tcfs unpack --store "$T_TMP/s-umoci" "$U:cache"
check_rc "tcfs unpacks umoci's image" 0
check_eq "... every kernel" "$NSMALL" \
	"$(kernels_of "$T_TMP/s-umoci")"

# --- the GPU check ----------------------------------------------------------
tcfs pack --store "$S" --backend cuda --json "$I:cuda"
check_rc "pack only the CUDA kernels" 0
NC=$(json_get "$OUT" kernels)
TCFS_GPUS=cuda:90:32 tcfs unpack --store "$T_TMP/s-gpu" "$I:v1"
check_rc "unpack where an H100 is" 0
check_grep "it says how many kernels fit the GPUs here" \
	"of the image's $N kernels fit the GPUs here: cuda 90" "$OUT"
before=$(info_numbers "$S2")
TCFS_GPUS=hip:gfx1100:32 tcfs unpack --store "$S2" "$I:cuda"
check_rc "an image with no kernel for the GPUs here is refused" 1
check_grep "... saying why, and how to go on" \
	"no kernel of the image is for the GPUs here \(hip gfx1100.*--no-gpu-check" "$ERR"
check_eq "... and the store is as it was" "$before" "$(info_numbers "$S2")"
TCFS_GPUS=hip:gfx1100:32 tcfs unpack --no-gpu-check --store "$T_TMP/s-nogpu" "$I:cuda"
check_rc "--no-gpu-check unpacks it anyway" 0
check_eq "... its CUDA kernels" "$NC" "$(kernels_of "$T_TMP/s-nogpu")"

# --- hostile images ---------------------------------------------------------
# Files outside everything, which some kinds aim at (oci_gen.py victims()):
# each must survive every image.
mkdir -p "$T_TMP/victim" "$T_TMP/victimdir"
echo "must survive" >"$T_TMP/victim/file"
echo "must survive" >"$T_TMP/victimdir/a"
victims_left() {
	cat "$T_TMP/victim/file" "$T_TMP/victimdir/a" 2>/dev/null | tr '\n' ' '
}
before=$(info_numbers "$S2")
nkinds=0
for kind in $(python3 "$GEN" hostile --list); do
	python3 "$GEN" hostile "$kind" "$SMALL" "$T_TMP/h-$kind" >/dev/null 2>&1 ||
		{ not_ok "oci_gen.py makes the $kind image"; continue; }
	# (timeout: a blob read forever must fail here, not hang the suite.)
	run timeout 120 "$TCFS" unpack --store "$S2" "$T_TMP/h-$kind"
	check_rc "hostile image ($kind): refused" 1
	check_grep "... with a message naming the image" "h-$kind" "$ERR"
	check_eq "... and the store is as it was" "$before" "$(info_numbers "$S2")"
	check_eq "... and nothing is written outside" "" \
		"$(ls /etc/tcfs-escape "$T_TMP/outside" "$T_TMP/escape" 2>/dev/null)"
	check_eq "... and nothing outside is removed" \
		"must survive must survive " "$(victims_left)"
	rm -rf "$T_TMP/h-$kind" "$T_TMP/h-$kind.layout"
	nkinds=$((nkinds + 1))
done
diag "$nkinds kinds of hostile image, each refused"
check_eq "nothing is left in TMPDIR after the refusals" 0 "$(staged_left)"
tcfs unpack --store "$S2" --max-size 1M "$I:v1"
check_rc "an image over --max-size is refused" 1
check_grep "... as a possible decompression bomb" "limit on unpacked bytes" "$ERR"
check_eq "... and the store is as it was" "$before" "$(info_numbers "$S2")"

# --- deltas -----------------------------------------------------------------
tcfs import -q --store "$S" "$BIG2"
N2=$(kernels_of "$S")
tcfs pack --store "$S" --base "$I:v1" --json "$I:v2"
check_rc "pack a delta on the first image" 0
check_eq "the delta has only the new kernels" "$((N2 - N))" \
	"$(json_get "$OUT" kernels)"
check_eq "... on the base's one layer" 1 "$(json_get "$OUT" base_layers)"
DELTA=$(json_get "$OUT" layer_bytes)
tcfs pack --store "$S" --json "$I:full2"
FULL=$(json_get "$OUT" layer_bytes)
check_num "the delta's layer is smaller than a full image's" "$DELTA" -lt "$FULL"
diag "delta layer $DELTA bytes, full image layer $FULL bytes"
run skopeo inspect "oci:$I:v2"
check_eq "skopeo sees two layers, the first the base's" \
	"2 $(json_eval "$T_TMP/inspect.json" 'd["Layers"][0]')" \
	"$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["Layers"]), d["Layers"][0])' "$OUT")"
check_eq "its entry-count covers base and delta" "$N2" \
	"$(json_get "$OUT" Labels | python3 -c 'import json,sys; print(json.load(sys.stdin)["cache.triton.image/entry-count"])')"
tcfs unpack --store "$T_TMP/s-delta" "$I:v2"
check_rc "unpack the delta image" 0
export_as "$S" "$T_TMP/e1"
export_as "$T_TMP/s-delta" "$T_TMP/e2"
check "... gives the union, byte-exact" diff -r "$T_TMP/e1" "$T_TMP/e2"
tcfs pack --store "$S" --base "$I:full2" "$I:none"
check_rc "a delta with nothing new is refused" 1
check_grep "... saying so" "nothing to pack: the base holds" "$ERR"

# --- the working set and a mount --------------------------------------------
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	M=$T_TMP/mnt
	mkdir -p "$M"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount --store "$S" "$M"
	check_rc "mount the store" 0
	used=0
	for k in $(keydirs "$SMALL" | head -10); do
		for g in "$M/$k"/__grp__*.json; do
			stat "$g" >/dev/null && cat "$g" >/dev/null && used=$((used + 1))
		done
	done
	tcfs umount "$M"
	tcfs pack --store "$S" --used-since 10m --json "$I:ws"
	check_rc "pack the working set (--used-since)" 0
	check_eq "... exactly the kernels probed" "$used" "$(json_get "$OUT" kernels)"
	diag "working set: $(json_get "$OUT" layer_bytes) bytes of layer against $FULL for the cache"
	tcfs pack --store "$T_TMP/s-nogpu" --used-since 10m "$I:ws0"
	check_rc "a store with no probes has no working set" 1

	S4=$T_TMP/store4
	tcfs import -q --store "$S4" "$SMALL"
	M4=$T_TMP/mnt4
	mkdir -p "$M4"
	at_exit "fusermount3 -uz '$M4'"
	tcfs mount --store "$S4" "$M4"
	tcfs unpack --store "$S4" --json "$I:v2"
	check_rc "unpack while the store is mounted" 0
	check_eq "... through the mount" "$M4" "$(json_get "$OUT" mount)"
	check_eq "the mount shows every kernel at once" "$(keydirs "$T_TMP/e1" | wc -l)" \
		"$(find "$M4" -mindepth 1 -maxdepth 1 -type d -name '[A-Z0-9]*' | wc -l)"
	k=$(comm -13 <(keydirs "$SMALL") <(keydirs "$BIG2") | sed -n 1p)
	g=$(ls "$M4/$k"/__grp__*.json | sed -n 1p)
	name=$(basename "$g" .json)
	name=${name#__grp__}
	check "... and its by-name view a new one" test -L "$M4/by-name/$name/$k"
	check_eq "an unpacked group file points into the mount" "ok" \
		"$(python3 -c 'import json,os,sys; g=sys.argv[1]; d=os.path.dirname(g); print("ok" if all(v == os.path.join(d, c) and os.path.exists(v) for c, v in json.load(open(g))["child_paths"].items()) else "bad")' "$g")"
	before=$(ls "$M4" | wc -l)
	python3 "$GEN" hostile duplicate "$BIG" "$T_TMP/h-dup" >/dev/null 2>&1
	tcfs unpack --store "$S4" "$T_TMP/h-dup"
	check_rc "a hostile image while mounted: refused" 1
	check_eq "... and the mount is as it was" "$before" "$(ls "$M4" | wc -l)"
	tcfs umount "$M4"
	run "$TCFS" fsck --store "$S4"
	check_rc "the store unpacked into while mounted checks clean" 0

	S5=$T_TMP/store5
	M5=$T_TMP/mnt5
	mkdir -p "$M5"
	at_exit "fusermount3 -uz '$M5'"
	tcfs mount --store "$S5" "$M5"
	tcfs unpack --store "$S5" --binary-only "$I:v1"
	check_rc "unpack --binary-only while mounted" 0
	check_eq "... no IR file lands in the mount" "" \
		"$(find "$M5" -path "$M5/by-*" -prune -o \( -name '*.ttir' -o -name '*.ttgir' -o -name '*.llir' -o -name '*.ptx' -o -name '*.amdgcn' \) -print | sed -n 1p)"
	g=$(find "$M5" -path "$M5/by-*" -prune -o -name '__grp__*.json' -print | sed -n 1p)
	check_eq "... and its group files list only what is there" "ok" \
		"$(python3 -c 'import json,os,sys; g=sys.argv[1]; d=os.path.dirname(g); print("ok" if all(v == os.path.join(d, c) and os.path.exists(v) and not c.endswith((".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn")) for c, v in json.load(open(g))["child_paths"].items()) else "bad")' "$g")"
	tcfs umount "$M5"
	run "$TCFS" fsck --store "$S5"
	check_rc "... and the store checks clean" 0
else
	skip "no /dev/fuse: the working set and unpack while mounted"
fi

# --- vLLM trees and binary-only ---------------------------------------------
V=$T_TMP/vllm/torch_compile_cache/0123456789/rank_0_0
mkdir -p "$V/triton_cache" "$V/backbone"
cp -a "$SMALL"/. "$V/triton_cache/"
echo '{"code_hash": "x"}' >"$V/backbone/cache_key_factors.json"
tcfs import --tree -q --store "$T_TMP/s-vllm" "$T_TMP/vllm"
check_rc "import --tree of a VLLM_CACHE_ROOT" 0
tcfs pack --store "$T_TMP/s-vllm" "$I:vllm"
check_rc "pack it" 0
run skopeo inspect "oci:$I:vllm"
check_grep "MCV's vLLM labels" "cache.vllm.image/entry-count" "$OUT"
run umoci unpack --rootless --image "$I:vllm" "$T_TMP/vbundle"
check "the tree is under io.vllm.cache/, its files beside the caches too" \
	test -f "$T_TMP/vbundle/rootfs/io.vllm.cache/torch_compile_cache/0123456789/rank_0_0/backbone/cache_key_factors.json"
tcfs unpack --store "$T_TMP/s-vllm2" "$I:vllm"
check_rc "unpack it into a new store" 0
export_as "$T_TMP/s-vllm" "$T_TMP/e1"
export_as "$T_TMP/s-vllm2" "$T_TMP/e2"
check "... and the nested caches come back byte-exact" diff -r "$T_TMP/e1" "$T_TMP/e2"

tcfs pack --store "$S" --binary-only "$I:bin"
check_rc "pack --binary-only" 0
run umoci unpack --rootless --image "$I:bin" "$T_TMP/bbundle"
check_eq "no IR file in the layer" "" \
	"$(find "$T_TMP/bbundle/rootfs" -name '*.ttir' -o -name '*.llir' | sed -n 1p)"
G=$(find "$T_TMP/bbundle/rootfs" -name '__grp__*.json' | sed -n 1p)
check_eq "... nor in its group files" "ok" \
	"$(json_eval "$G" '"ok" if not any(c.endswith((".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn")) for c in d["child_paths"]) else "bad"')"

# --- usage ------------------------------------------------------------------
tcfs pack --store "$S"
check_rc "pack without DEST: usage error" 2
tcfs unpack --store "$S" docker://quay.io/x/y:z
check_rc "unpack of a registry: usage error" 2
check_grep "... pointing at skopeo" "skopeo copy" "$ERR"
tcfs unpack --store "$S" "$T_TMP/nothing-here"
check_rc "unpack of a missing image" 1
check_grep "... naming it" "nothing-here: No such file" "$ERR"
tcfs unpack --store "$S" "$I:nosuchtag"
check_rc "a tag the layout lacks" 1
check_grep "... with the tags there" "no image tagged 'nosuchtag' \(there: " "$ERR"
tcfs pack --store "$S" "docker-archive:$T_TMP/x.tar"
check_rc "pack into a docker-archive: refused, skopeo makes one" 1
