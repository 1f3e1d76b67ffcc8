#!/usr/bin/env bash
# tcfs setup: install what is missing, build, install, and mount the
# default store at Triton's cache directory.  Idempotent.
#
#   tools/setup.sh
#
# The cache directory is $TRITON_CACHE_DIR, else $TRITON_HOME/.triton/cache,
# else ~/.triton/cache.  A cache already there is imported into the store
# first and kept, untouched, as <cache>.pre-tcfs; then the (now empty)
# directory becomes the mount point.  Unmount with: tcfs umount <cache>
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# shellcheck source=tools/deps.sh
. tools/deps.sh
tcfs_deps "${TCFS_BUILD_DEPS[@]}" "${TCFS_RUN_DEPS[@]}"

[ -f build/build.ninja ] || meson setup build --prefix=/usr/local >/dev/null
meson compile -C build >/dev/null
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo meson install -C build --no-rebuild --quiet
tcfs=/usr/local/bin/tcfs
echo "tcfs: installed $("$tcfs" --version) as $tcfs"

cache=${TRITON_CACHE_DIR:-${TRITON_HOME:-$HOME}/.triton/cache}
if findmnt -rn -t fuse.tcfs -M "$(realpath -m "$cache")" >/dev/null; then
	echo "tcfs: already mounted at $cache"
	exec "$tcfs" stats
fi
mkdir -p "$cache"
if [ -n "$(ls -A "$cache")" ]; then
	"$tcfs" import "$cache"
	mv "$cache" "$cache.pre-tcfs"
	mkdir "$cache"
	echo "tcfs: your cache is imported; the original stays in $cache.pre-tcfs"
fi
"$tcfs" mount "$cache"
echo "tcfs: mounted at $cache (Triton's default; or export TRITON_CACHE_DIR=$cache)"
"$tcfs" info
