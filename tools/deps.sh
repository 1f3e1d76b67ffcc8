# Sourced by tools/setup.sh and tests/run.sh: installs the Debian 12
# packages tcfs needs that are not there yet.  Usage: tcfs_deps PKG...

# tcfs_missing PKG...: prints those of the packages not installed.
tcfs_missing() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || printf '%s ' "$p"
	done
}

tcfs_deps() {
	local missing=() sudo=
	read -ra missing <<<"$(tcfs_missing "$@")"
	((${#missing[@]})) || return 0
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null || {
			echo "tcfs: need root (or sudo) to install: ${missing[*]}" >&2
			return 1
		}
		sudo=sudo
	fi
	echo "tcfs: installing ${missing[*]}" >&2
	$sudo apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
			--no-install-recommends "${missing[@]}" >/dev/null
}

# What building tcfs needs: libarchive and libcrypto (libssl-dev) read and
# write OCI images; libmount reads the mount table; scdoc makes the man
# page; bash-completion's pkg-config file says where completions go.
TCFS_BUILD_DEPS=(gcc pkg-config meson ninja-build libsqlite3-dev
	libxxhash-dev libcjson-dev libfuse3-dev libarchive-dev libssl-dev
	libmount-dev libhiredis-dev scdoc bash-completion)
# What running it needs: fusermount3 mounts and unmounts without root.
TCFS_RUN_DEPS=(sqlite3 fuse3 libarchive13 libssl3 libmount1 libhiredis0.14)
# What the tests need on top: clang to check the build is warning-free
# there too, xxhsum to name blobs independently, util-linux for setpriv
# and flock, procps for pgrep, python3 for JSON checks and the replay,
# and its prometheus_client to parse .tcfs/metrics.prom as Prometheus would;
# skopeo and umoci to check tcfs's OCI images with the tools people use,
# zstd to make zstd layers; man-db and bsdextrautils (col) to read the
# man page as a user does; universal-ctags for the call-cycle check
# (tests/lint/callcycles.py); redis-server for the fleet tier's tests,
# which start their own on a free port, and python3-redis to read and
# write Redis as Triton's RedisRemoteCacheBackend does; prometheus (and
# its promtool) to scrape a mount's -o metrics port as a user's would,
# and curl to ask it by hand.
TCFS_TEST_DEPS=(clang xxhash util-linux procps python3
	python3-prometheus-client skopeo umoci zstd man-db bsdextrautils
	universal-ctags redis-server python3-redis prometheus curl)
