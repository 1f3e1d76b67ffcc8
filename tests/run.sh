#!/usr/bin/env bash
# Every test of tcfs: installs what is missing, builds with ASan+UBSan and
# runs the whole suite on it, checks that gcc and clang build the release
# warning-free, and ends with the line 'N passed, N failed, N skipped'.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# shellcheck source=tools/deps.sh
. tools/deps.sh
tcfs_deps "${TCFS_BUILD_DEPS[@]}" "${TCFS_RUN_DEPS[@]}" "${TCFS_TEST_DEPS[@]}" ||
	exit 1

broken=0	# builds that failed: each counts as a failed check
build() {	# build DIR [meson options...]
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || {
			cat "$dir.setup.log"
			return 1
		}
	fi
	meson compile -C "$dir" >"$dir.compile.log" 2>&1 || {
		cat "$dir.compile.log"
		return 1
	}
}

# Warning-free with both compilers (-Werror is on by default).
build build-release || broken=$((broken + 1))
CC=clang build build-clang || broken=$((broken + 1))

# The suite, under the sanitizers.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
build build-asan -Db_sanitize=address,undefined -Dbuildtype=debug || {
	echo "0 passed, $((broken + 1)) failed, 0 skipped"
	exit 1
}
meson test -C build-asan --print-errorlogs "$@" | tail -n 40
python3 tests/summary.py --failed "$broken" \
	build-asan/meson-logs/testlog.json || exit 1
exit 0
