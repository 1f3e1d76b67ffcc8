#!/usr/bin/env bash
# tcfs setup: install what is missing, build, install, and start using the
# default store.  Run from anywhere; idempotent.
#
#   tools/setup.sh            build into build/, install to /usr/local
#
# Afterwards the default store (see tcfs --help) holds your existing Triton
# cache (~/.triton/cache or $TRITON_CACHE_DIR), if you have one.
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
if [ -d "$cache" ]; then
	"$tcfs" import "$cache"
else
	echo "tcfs: no Triton cache at $cache yet; the store starts empty"
	empty=$(mktemp -d)
	"$tcfs" import --quiet "$empty"
	rmdir "$empty"
fi
"$tcfs" info
