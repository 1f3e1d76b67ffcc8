#!/usr/bin/env bash
# What a new user trips on (issue 31), each with the command the user
# typed: the redirect example of the docs (tcfs export --flat of a name
# several kernels share, then -o redirect=NAME:DIR), and pack's and
# unpack's messages.  The commands find the store as the user's do, from
# TCFS_STORE (lib.sh points it into the test's temp dir), and ~ is a home
# of the test's own.
. "$(dirname "$0")/lib.sh"

# No GPU tool is asked: there is no GPU here, as on a build box.
export TCFS_GPUS=
export HOME=$T_TMP/home
mkdir -p "$HOME"
BIG=$(fixture_top triton-3.6-multitarget.tgz big) || exit 1

tcfs import -q "$BIG"
check_rc "the multitarget fixture in the user's store" 0
N=$(info_field "$TCFS_STORE" kernels)

echo "# --- tcfs export --flat of a shared name, then -o redirect"
tcfs export --flat --name layernorm_kernel ~/tuned
check_rc "tcfs export --flat --name layernorm_kernel ~/tuned" 0
KEYS=$(cd "$HOME/tuned" && ls -d -- */ | tr -d /)
NKEYS=$(printf '%s\n' "$KEYS" | grep -c .)
check_num "... a name many kernels share: in KEY dirs, none at the top" "$NKEYS" -gt 1
check "... (no layernorm_kernel.json at the top)" test ! -e "$HOME/tuned/layernorm_kernel.json"
check_grep_fixed "... says so, and how a redirect names one" \
	"layernorm_kernel, a name $NKEYS kernels share, is in their KEY dirs (give one as DIR in -o redirect=layernorm_kernel:DIR):" "$OUT"
check_eq "... and names each KEY dir it wrote, with its target" \
	"$(for k in $KEYS; do
		python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["target"]
print("  %s  %s %s" % (sys.argv[2], t["backend"], t["arch"]))' \
			"$HOME/tuned/$k/layernorm_kernel.json" "$HOME/tuned/$k"
	done)" "$(grep '^  /' "$OUT")"
tcfs export --flat --json --name layernorm_kernel ~/tuned
check_eq "... --json: key_dirs, each {name, dir}" \
	"$(for k in $KEYS; do echo "layernorm_kernel $HOME/tuned/$k"; done)" \
	"$(json_eval "$OUT" '"\n".join(e["name"] + " " + e["dir"] for e in d["key_dirs"])')"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip "tcfs mount -o redirect=layernorm_kernel:~/tuned" "no /dev/fuse or fusermount3"
else
	M=$HOME/.triton/cache
	mkdir -p "$M" "$HOME/empty"
	at_exit "fusermount3 -uz '$M'"
	tcfs mount -o redirect=layernorm_kernel:~/tuned ~/.triton/cache
	check_rc "tcfs mount -o redirect=layernorm_kernel:~/tuned ~/.triton/cache: it mounts" 0
	check_grep_fixed "... warning that the redirect matches no kernel in DIR" \
		"tcfs mount: warning: redirect layernorm_kernel:$HOME/tuned: no layernorm_kernel kernel in $HOME/tuned (it holds KEY dirs of it" "$ERR"
	check_grep_fixed "... and what to give instead: redirect=NAME:DIR/KEY" \
		"give redirect=layernorm_kernel:$HOME/tuned/KEY, e.g. redirect=layernorm_kernel:$HOME/tuned/" "$ERR"
	K=$(sed -n 's/.*e\.g\. redirect=layernorm_kernel:[^)]*\/\([A-Z0-9]*\))$/\1/p' "$ERR")
	check "... the KEY dir it names is one export wrote" \
		test -n "$K" -a -f "$HOME/tuned/$K/layernorm_kernel.json"
	tcfs umount ~/.triton/cache
	tcfs mount -o redirect=layernorm_kernel:~/tuned/"$K" -o redirect=add_kernel:~/empty ~/.triton/cache
	check_rc "tcfs mount -o redirect=layernorm_kernel:~/tuned/KEY (as said)" 0
	check "... no warning for it" sh -c "! grep -q 'redirect layernorm_kernel' '$ERR'"
	check_grep_fixed "a DIR without the name's files: warned too" \
		"tcfs mount: warning: redirect add_kernel:$HOME/empty: no add_kernel kernel in $HOME/empty (no add_kernel.json, add_kernel.hsaco nor add_kernel.cubin): it redirects nothing until one is put there" "$ERR"
	check_eq "... the group file of KEY names the files in ~/tuned/KEY" \
		"$HOME/tuned/$K/layernorm_kernel.json" \
		"$(json_eval "$M/$K/__grp__layernorm_kernel.json" 'd["child_paths"]["layernorm_kernel.json"]')"
	tcfs umount ~/.triton/cache
fi

echo "# --- tcfs pack docker://..."
tcfs pack docker://quay.io/me/triton-cache:v1
check_rc "tcfs pack docker://quay.io/me/triton-cache:v1: usage error (2)" 2
check_grep_fixed "... the hint pushes what pack wrote: skopeo copy oci:DIR:TAG docker://..." \
	"skopeo copy oci:DIR:TAG docker://quay.io/me/triton-cache:v1" "$ERR"
check "... never the other way (docker:// first is a pull)" \
	sh -c "! grep -q 'skopeo copy docker://' '$ERR'"
check_grep_fixed "... and says what pack writes" "pack to oci:DIR:TAG (or oci-archive:FILE:TAG)" "$ERR"
tcfs unpack docker://quay.io/me/triton-cache:v1
check_rc "tcfs unpack docker://...: usage error (2)" 2
check_grep_fixed "... the hint pulls first: skopeo copy docker://... oci:DIR:TAG" \
	"skopeo copy docker://quay.io/me/triton-cache:v1 oci:DIR:TAG" "$ERR"

echo "# --- tcfs pack oci-archive:FILE:TAG"
mkdir -p "$T_TMP/nu"
tcfs pack "oci-archive:$T_TMP/nu/a.tar:v1"
check_rc "tcfs pack oci-archive:/tmp/nu/a.tar:v1" 0
check_grep "... names the image with its oci-archive: prefix" \
	"^packed $N kernels, .* into oci-archive:$T_TMP/nu/a\.tar:v1 \(layer " "$OUT"
tcfs pack "$T_TMP/nu/layout:v1"
check_grep "a layout DIR:TAG: named oci:DIR:TAG, as skopeo takes it" \
	"^packed $N kernels, .* into oci:$T_TMP/nu/layout:v1 \(layer " "$OUT"
if command -v skopeo >/dev/null; then
	ref=$(sed -n 's/^packed .* into \([^ ]*\) (layer .*/\1/p' "$OUT")
	run skopeo inspect "$ref"
	check_rc "... a reference skopeo reads as printed ($ref)" 0
else
	skip "... a reference skopeo reads as printed" "no skopeo"
fi

echo "# --- tcfs unpack --no-gpu-check"
export TCFS_STORE=$T_TMP/store2
tcfs unpack --no-gpu-check "oci-archive:$T_TMP/nu/a.tar:v1"
check_rc "tcfs unpack --no-gpu-check IMAGE, no GPU here" 0
check "... says nothing of targets not checked: it was told not to" \
	sh -c "! grep -q 'no GPU found here\|targets not checked' '$OUT' '$ERR'"
check_grep "... and what it unpacked" "^unpacked $N kernels, " "$OUT"

echo "# --- tcfs unpack again"
tcfs unpack "oci-archive:$T_TMP/nu/a.tar:v1"
check_rc "the same unpack again: no error" 0
check_grep "... says the kernels were there already, none new" \
	"^unpacked 0 new kernels \($N already in the store\), 0 files, 0 B from " "$OUT"
check_grep "... and that their files were kept" "^[0-9]+ files were there already and were kept" "$OUT"
check_grep "without --no-gpu-check it still says the targets went unchecked" \
	"^no GPU found here .*targets not checked" "$OUT"
tcfs unpack --json "oci-archive:$T_TMP/nu/a.tar:v1"
check_eq "--json: kernels 0, kept_kernels $N, files 0, bytes 0" "0 $N 0 0" \
	"$(json_eval "$OUT" '"%d %d %d %d" % (d["kernels"], d["kept_kernels"], d["files"], d["bytes"])')"

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip "tcfs unpack again, into the mounted store" "no /dev/fuse or fusermount3"
	exit 0
fi
mkdir -p "$HOME/.triton/cache"
at_exit "fusermount3 -uz '$HOME/.triton/cache'"
tcfs mount ~/.triton/cache
check_rc "mount the store unpacked into" 0
tcfs unpack "oci-archive:$T_TMP/nu/a.tar:v1"
check_rc "the same unpack again, now through the mount" 0
check_grep "... says the kernels were there already, none new" \
	"^unpacked 0 new kernels \($N already in the store\), 0 files, 0 B from .*\(mounted\)" "$OUT"
tcfs umount ~/.triton/cache
