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

# Each step says what it does on one line; its output goes to a log, shown
# only if it fails.  The build shows ninja's progress: in place on a
# terminal, else a dot per tenth of it, so a CI log is not flooded.
log=$(mktemp "${TMPDIR:-/tmp}/tcfs-setup.XXXXXX")
trap 'rm -f "$log"' EXIT
step() {	# step N WHAT: announces step N of 4
	echo "[$1/4] $2"
}
failed() {
	echo "tcfs: setup failed; its output:" >&2
	cat "$log" >&2
	exit 1
}
progress() {	# reads ninja's output, shows [N/M] as it goes
	local line n m tenth=0
	while IFS= read -r line; do
		echo "$line" >>"$log"
		[[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
		n=${BASH_REMATCH[1]} m=${BASH_REMATCH[2]}
		if [ -t 1 ]; then
			printf '\r      %s/%s' "$n" "$m"
		else
			while ((tenth * m < 10 * n)); do
				printf .
				tenth=$((tenth + 1))
			done
		fi
	done
	echo
}

need=$(tcfs_missing "${TCFS_BUILD_DEPS[@]}" "${TCFS_RUN_DEPS[@]}")
need=${need% }
step 1 "installing Debian packages: ${need:-none missing}"
# shellcheck disable=SC2086 # one word per package
[ -z "$need" ] || tcfs_deps $need >>"$log" 2>&1 || failed

step 2 "building in build/"
if [ ! -f build/build.ninja ]; then
	meson setup build --prefix=/usr/local >>"$log" 2>&1 || failed
fi
meson compile -C build 2>&1 | progress || failed

step 3 "installing into /usr/local: tcfs, its man page, bash completion, systemd user unit"
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo meson install -C build --no-rebuild --quiet >>"$log" 2>&1 || failed
tcfs=/usr/local/bin/tcfs
echo "tcfs: installed $("$tcfs" --version) as $tcfs"

step 4 "mounting the default store at Triton's cache directory"
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
