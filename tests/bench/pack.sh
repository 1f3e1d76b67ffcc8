#!/usr/bin/env bash
# tcfs pack and unpack against tar, on the same cache in the same run
# (page cache warm for both sides):
#   pack         tcfs pack -s STORE DIR:TAG    vs  tar czf of the cache dir
#   unpack       tcfs unpack into a new store  vs  tar xzf (+ sync: unpack
#                                                  syncs the store)
#   unpack, mnt  tcfs unpack into a fresh store while it is mounted
#                                              vs  tar xzf (+ sync)
#   size         the image's layer  vs  the tarball  vs  the logical bytes
#   delta        pack --base DIR:full of the cache plus extra kernels: the
#                delta layer against the :full image's layer
#   working set  pack --used-since 10m after a third of the kernels were
#                probed through a mount (stat, then cat of the group file,
#                as Triton does): its layer and kernels against the whole
#                cache's image
# Each time is the median of RUNS runs (3), each after a sync.  Throughput
# is in MiB/s of logical cache bytes; a ratio is tcfs / tar (time or size).
#
#   tests/bench/pack.sh [TCFS_BINARY] [CACHE_DIR]
#
# Without CACHE_DIR the cache is the fixtures' three caches together (cA
# is a subset of big): cA and big are the base, big2 is the extra for the
# delta; the timed cache holds all three.  With CACHE_DIR (a Triton cache:
# key dirs at its top), the last quarter of its key dirs is the extra.
# SCALE=N copies every key dir N times under fresh keys (JSON files get the
# new key and hash, other files a marker of the copy appended: files alike
# in the fixtures stay alike within a copy, so dedup stays what it was).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tcfs=${1:-$top/build-release/tools/tcfs}
cache_arg=${2:-}
runs=${RUNS:-3}
scale=${SCALE:-1}
fixtures=${FIXTURES:-$top/tests/fixtures}
[ -x "$tcfs" ] || { echo "no tcfs binary at $tcfs (build first)" >&2; exit 1; }
tcfs=$(cd "$(dirname "$tcfs")" && pwd)/$(basename "$tcfs")
[ -z "$cache_arg" ] || [ -d "$cache_arg" ] || { echo "no cache dir $cache_arg" >&2; exit 1; }
[[ $scale =~ ^[1-9][0-9]*$ ]] || { echo "SCALE must be a positive integer" >&2; exit 1; }
# No GPU tools run (unpack would ask nvidia-smi and rocminfo).
export TCFS_GPUS=

work=$(mktemp -d "${TMPDIR:-/var/tmp}/tcfs-bench.XXXXXX")
daemons=()
cleanup() {
	for m in "$work"/mnt*; do
		if mountpoint -q "$m" 2>/dev/null; then fusermount3 -uz "$m" 2>/dev/null || true; fi
	done
	for p in "${daemons[@]}"; do
		for ((i = 0; i < 100; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	done
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

calc() { awk "BEGIN { printf \"${2:-%.6f}\", $1 }"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mib() { calc "$1 / 1048576" %.2f; }
# timed CMD...: wall seconds of CMD (bash's time), its output dropped;
# its errors shown and the script stopped when it fails
timed() {
	local TIMEFORMAT=%3R t rc=0
	t=$({ time "$@" >/dev/null 2>"$work/err"; } 2>&1) || rc=$?
	if [ $rc != 0 ]; then
		echo "failed ($rc): $*" >&2
		cat "$work/err" >&2
		exit 1
	fi
	echo "$t"
}
untar_sync() { tar -xzf "$1" -C "$2" && sync -f "$2"; }
# The daemon of a mounted store: the holder of its lock (/proc/locks).
daemon_pid() {
	local ino
	ino=$(stat -c %i "$1/lock")
	awk -v ino="$ino" '$2 == "FLOCK" { n = split($6, f, ":"); if (f[n] == ino) print $5 }' /proc/locks | head -1
}
mount_store() {	# STORE MNT
	mkdir -p "$2"
	"$tcfs" mount -s "$1" "$2"
	daemons+=("$(daemon_pid "$1")")
}
# umount_wait STORE MNT: unmounts and waits for the daemon to be gone, so
# the next command finds the store free and the probe log written
umount_wait() {
	local pid
	pid=$(daemon_pid "$1")
	fusermount3 -u "$2"
	for ((i = 0; i < 600; i++)); do
		[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	echo "daemon $pid of $1 still running after unmount" >&2
	exit 1
}
# image DIR TAG: "LAST_LAYER_BYTES LAYERS ENTRY_COUNT" of the tag's manifest
image() {
	python3 - "$1" "$2" <<'EOF'
import json, os, sys
d, tag = sys.argv[1:]
blob = lambda dg: json.load(open(os.path.join(d, "blobs", *dg.split(":"))))
for m in json.load(open(os.path.join(d, "index.json")))["manifests"]:
    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
        man = blob(m["digest"])
        labels = blob(man["config"]["digest"])["config"].get("Labels", {})
        print(man["layers"][-1]["size"], len(man["layers"]),
              labels.get("cache.triton.image/entry-count", "?"))
        break
else:
    sys.exit("no tag %s in %s" % (tag, d))
EOF
}
json_field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
kernels_of() { "$tcfs" info --json -s "$1" | json_field kernels; }

# copy DEST: the entries (paths, one a line on stdin) into DEST, each name
# once, and with SCALE > 1 the key dirs again under fresh keys.
copy() { python3 -c "$copy_py" "$1" "$scale"; }
read -r -d '' copy_py <<'EOF' || true
import base64, hashlib, os, shutil, sys
dest, copies = sys.argv[1], int(sys.argv[2])
os.makedirs(dest, exist_ok=True)
seen = set()
for src in sys.stdin.read().splitlines():
    name = os.path.basename(src)
    if name in seen:
        continue
    seen.add(name)
    if not os.path.isdir(src) or os.path.islink(src):
        shutil.copy2(src, os.path.join(dest, name), follow_symlinks=False)
        continue
    shutil.copytree(src, os.path.join(dest, name), symlinks=True)
    try:	# a key is the base32 of the hash its metadata holds
        old_hex = base64.b32decode(name + "=" * (-len(name) % 8)).hex()
    except ValueError:
        old_hex = None
    for k in range(1, copies):
        digest = hashlib.sha256(b"%s:%d" % (name.encode(), k)).digest()
        new = base64.b32encode(digest).decode().rstrip("=")
        mark = b"\ntcfs-bench copy %d\n" % k
        for root, dirs, files in os.walk(src):
            out = os.path.join(dest, new, os.path.relpath(root, src))
            os.makedirs(out, exist_ok=True)
            for f in files:
                p = os.path.join(root, f)
                to = os.path.join(out, f.replace(name, new))
                if os.path.islink(p):
                    os.symlink(os.readlink(p), to)
                    continue
                data = open(p, "rb").read()
                if f.endswith(".json"):
                    data = data.replace(name.encode(), new.encode())
                    if old_hex:
                        data = data.replace(old_hex.encode(),
                                            digest.hex().encode())
                else:
                    data += mark
                with open(to, "wb") as o:
                    o.write(data)
EOF

# ---- the cache: base + extra, and the union of both ----
echo "pack: making the cache (SCALE=$scale) ..." >&2
if [ -z "$cache_arg" ]; then
	mkdir "$work/fx"
	for f in triton-3.6-h200-small triton-3.6-multitarget triton-3.6-multitarget-fpfusion; do
		tar -xzf "$fixtures/$f.tgz" -C "$work/fx"
	done
	printf '%s\n' "$work"/fx/cA/* "$work"/fx/big/* | copy "$work/base"
	printf '%s\n' "$work"/fx/big2/* | copy "$work/extra"
	what="fixtures cA + big (base) and big2 (extra)"
else
	src=$(cd "$cache_arg" && pwd)
	mapfile -t keys < <(for d in "$src"/*/; do
		d=${d%/}; compgen -G "$d/__grp__*.json" >/dev/null && echo "$d"; done | sort)
	nx=$(((${#keys[@]} + 3) / 4))
	[ "${#keys[@]}" -ge 2 ] || { echo "$src: fewer than 2 key dirs with a group file" >&2; exit 1; }
	extra_keys=("${keys[@]: -$nx}")
	for e in "$src"/* "$src"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		case " ${extra_keys[*]} " in *" $e "*) ;; *) echo "$e" ;; esac
	done | copy "$work/base"
	printf '%s\n' "${extra_keys[@]}" | copy "$work/extra"
	what="$src ($nx key dirs of it as the extra)"
fi
mkdir "$work/cache"
cp -al "$work/base/." "$work/extra/." "$work/cache/"
if [ -z "$(ls "$work/base")" ] || [ -z "$(ls "$work/extra")" ]; then
	echo "no cache made" >&2
	exit 1
fi
bytes=$(find "$work/cache" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
files=$(find "$work/cache" -type f | wc -l)
dirs=$(find "$work/cache" -mindepth 1 -maxdepth 1 -type d | wc -l)
extra_kernels=$(find "$work/extra" -mindepth 2 -maxdepth 2 -name '__grp__*.json' | wc -l)

# ---- the store: the base packed as :full, then the extra added ----
echo "pack: import, pack :full ..." >&2
S=$work/store
"$tcfs" import -q -s "$S" "$work/base"
"$tcfs" pack -q -s "$S" "$work/img:full"
"$tcfs" import -q -s "$S" "$work/extra"
kernels=$(kernels_of "$S")
# warm the page cache, both sides
find "$work/cache" "$S" -type f -exec cat {} + >/dev/null

# Every run writes to new paths, and nothing is removed until the end: on
# a file system mounted with discard (VM disks), the writes that follow a
# big rm -rf run several times slower, whichever tool makes them.

# ---- pack ----
echo "pack: pack vs tar czf ($runs runs) ..." >&2
tar_c=() pack_t=()
for ((r = 0; r < runs; r++)); do
	sync
	tar_c+=("$(timed tar -czf "$work/cache$r.tgz" -C "$work" cache)")
	sync
	pack_t+=("$(timed "$tcfs" pack -q -s "$S" "$work/all$r:all")")
done
tar_c_m=$(median "${tar_c[@]}") pack_m=$(median "${pack_t[@]}")
echo "  tar czf: ${tar_c[*]}; tcfs pack: ${pack_t[*]}" >&2
tgz_file=$work/cache0.tgz all=$work/all0
read -r all_layer _ all_entries < <(image "$all" all)
tgz=$(stat -c %s "$tgz_file")

# ---- unpack ----
echo "pack: unpack vs tar xzf ($runs runs) ..." >&2
tar_x=() unp_t=()
for ((r = 0; r < runs; r++)); do
	mkdir "$work/x$r"
	sync
	tar_x+=("$(timed untar_sync "$tgz_file" "$work/x$r")")
	sync
	unp_t+=("$(timed "$tcfs" unpack -q -s "$work/new$r" "$all:all")")
done
tar_x_m=$(median "${tar_x[@]}") unp_m=$(median "${unp_t[@]}")
echo "  tar xzf + sync: ${tar_x[*]}; tcfs unpack: ${unp_t[*]}" >&2
x_files=$(find "$work/x0" -type f | wc -l)
new_kernels=$(kernels_of "$work/new0")

# ---- unpack through a mount ----
echo "pack: unpack through a mount ($runs runs) ..." >&2
mnt_t=()
for ((r = 0; r < runs; r++)); do
	mount_store "$work/mstore$r" "$work/mnt"
	sync
	mnt_t+=("$(timed "$tcfs" unpack -q -s "$work/mstore$r" "$all:all")")
	umount_wait "$work/mstore$r" "$work/mnt"
done
mnt_m=$(median "${mnt_t[@]}")
echo "  tcfs unpack, mounted: ${mnt_t[*]}" >&2
mnt_kernels=$(kernels_of "$work/mstore0")

# ---- delta: the whole cache on top of :full (the base) ----
echo "pack: delta ..." >&2
delta_t=$(timed "$tcfs" pack -q -s "$S" --base "$work/img:full" "$work/img:delta")
delta_k=$("$tcfs" pack --json -s "$S" --base "$work/img:full" "$work/img:delta" | json_field kernels)
read -r full_layer _ full_entries < <(image "$work/img" full)
read -r delta_layer delta_layers delta_entries < <(image "$work/img" delta)
# the delta with its base layer must give the whole cache back
"$tcfs" unpack -q -s "$work/dstore" "$work/img:delta"
delta_back=$(kernels_of "$work/dstore")

# ---- working set: a third of the kernels probed through a mount ----
echo "pack: working set ..." >&2
mount_store "$S" "$work/mnt"
probed=0 i=0
for d in "$work"/cache/*/; do
	g=$(compgen -G "${d}__grp__*.json" | head -1) || continue
	[ $((i++ % 3)) = 0 ] || continue
	f=$work/mnt/$(basename "$d")/$(basename "$g")
	stat "$f" >/dev/null
	cat "$f" >/dev/null
	probed=$((probed + 1))
done
umount_wait "$S" "$work/mnt"
ws_t=$(timed "$tcfs" pack -q -s "$S" --used-since 10m "$work/img:ws")
ws_k=$("$tcfs" pack --json -s "$S" --used-since 10m "$work/img:ws" | json_field kernels)
read -r ws_layer _ ws_entries < <(image "$work/img" ws)

# ---- the figures ----
rate() { calc "$bytes / 1048576 / $1" %.1f; }
x() { calc "$1 / $2" %.2f; }
warn=()
[ "$all_entries" = "$kernels" ] || warn+=("the image lists $all_entries kernels, the store has $kernels")
[ "$x_files" = "$files" ] || warn+=("tar xzf gave $x_files files, not $files")
[ "$new_kernels" = "$kernels" ] || warn+=("unpack gave a store of $new_kernels kernels, not $kernels")
[ "$mnt_kernels" = "$kernels" ] || warn+=("unpack through the mount gave $mnt_kernels kernels, not $kernels")
[ "$delta_k" = "$extra_kernels" ] ||
	warn+=("the delta layer holds $delta_k kernels, not the $extra_kernels extra ones (image entry-count $delta_entries of $kernels)")
[ "$delta_back" = "$kernels" ] || warn+=("unpack of :delta gave $delta_back kernels, not $kernels")
[ "$ws_k" = "$probed" ] && [ "$ws_entries" = "$probed" ] ||
	warn+=("the working set holds $ws_k kernels (image entry-count $ws_entries), not the $probed probed")

printf 'pack benchmark: %s, SCALE=%d\n' "$what" "$scale"
printf '  cache: %d key dirs, %d kernels, %d files, %d bytes (%s MiB); median of %d runs\n' \
	"$dirs" "$kernels" "$files" "$bytes" "$(mib "$bytes")" "$runs"
printf 'pack: %.3f s (%s MiB/s) vs tar czf %.3f s (%s MiB/s) (%sx)\n' \
	"$pack_m" "$(rate "$pack_m")" "$tar_c_m" "$(rate "$tar_c_m")" "$(x "$pack_m" "$tar_c_m")"
printf 'unpack: %.3f s (%s MiB/s) vs tar xzf + sync %.3f s (%s MiB/s) (%sx)\n' \
	"$unp_m" "$(rate "$unp_m")" "$tar_x_m" "$(rate "$tar_x_m")" "$(x "$unp_m" "$tar_x_m")"
printf 'unpack, mounted: %.3f s (%s MiB/s) vs tar xzf + sync %.3f s (%s MiB/s) (%sx)\n' \
	"$mnt_m" "$(rate "$mnt_m")" "$tar_x_m" "$(rate "$tar_x_m")" "$(x "$mnt_m" "$tar_x_m")"
printf 'size: layer %s MiB vs tar czf %s MiB (%sx); logical %s MiB (layer %sx, tgz %sx of it)\n' \
	"$(mib "$all_layer")" "$(mib "$tgz")" "$(x "$all_layer" "$tgz")" "$(mib "$bytes")" \
	"$(x "$all_layer" "$bytes")" "$(x "$tgz" "$bytes")"
printf 'delta: layer %s MiB, %d kernels (%d expected), %d layers vs :full layer %s MiB, %d kernels (%sx); pack %.3f s\n' \
	"$(mib "$delta_layer")" "$delta_k" "$extra_kernels" "$delta_layers" "$(mib "$full_layer")" \
	"$full_entries" "$(x "$delta_layer" "$full_layer")" "$delta_t"
printf 'working set: layer %s MiB, %d kernels (%d probed) vs whole image %s MiB, %d kernels (%sx size, %sx kernels); pack %.3f s\n' \
	"$(mib "$ws_layer")" "$ws_k" "$probed" "$(mib "$all_layer")" "$all_entries" \
	"$(x "$ws_layer" "$all_layer")" "$(x "$ws_k" "$all_entries")" "$ws_t"

echo
echo "summary (tcfs against tar on the same cache; ratio = tcfs / tar)"
printf '  %-18s %12s %12s %8s\n' "" tcfs tar ratio
printf '  %-18s %11.3fs %11.3fs %7sx\n' "pack (czf)" "$pack_m" "$tar_c_m" "$(x "$pack_m" "$tar_c_m")"
printf '  %-18s %11.3fs %11.3fs %7sx\n' "unpack (xzf)" "$unp_m" "$tar_x_m" "$(x "$unp_m" "$tar_x_m")"
printf '  %-18s %11.3fs %11.3fs %7sx\n' "unpack, mounted" "$mnt_m" "$tar_x_m" "$(x "$mnt_m" "$tar_x_m")"
printf '  %-18s %10sMi %10sMi %7sx\n' "compressed size" "$(mib "$all_layer")" "$(mib "$tgz")" "$(x "$all_layer" "$tgz")"
printf '  %-18s %10sMi %10sMi %7sx\n' "delta / :full" "$(mib "$delta_layer")" "$(mib "$full_layer")" "$(x "$delta_layer" "$full_layer")"
printf '  %-18s %10sMi %10sMi %7sx\n' "working set / all" "$(mib "$ws_layer")" "$(mib "$all_layer")" "$(x "$ws_layer" "$all_layer")"
printf '  (logical %s MiB in %d files; tcfs MiB/s: pack %s, unpack %s, mounted %s; tar: czf %s, xzf %s)\n' \
	"$(mib "$bytes")" "$files" "$(rate "$pack_m")" "$(rate "$unp_m")" "$(rate "$mnt_m")" \
	"$(rate "$tar_c_m")" "$(rate "$tar_x_m")"
for w in "${warn[@]}"; do echo "  WARNING: $w"; done
[ ${#warn[@]} = 0 ]
