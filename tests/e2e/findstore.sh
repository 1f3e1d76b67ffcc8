#!/usr/bin/env bash
# What a new user trips on (issue 31): the store found from the mount
# (--store before the command or after it, a store or a mount point;
# $TCFS_STORE; the mount that holds the working directory; the one
# TRITON_CACHE_DIR names), and the command line's conventions: tcfs help
# CMD, tcfs version, tcfs mount at TRITON_CACHE_DIR, usage errors exit 2.
# Each check runs the command the user typed.
set -u
. "$(dirname "$0")/lib.sh"

require_other_users

U=2231
others_copy
NU=$T_TMP/nu
mkdir -p "$NU/cache" "$T_TMP/elsewhere"
SRC=$(fixture_top triton-3.6-h200-small.tgz cA)
tcfs import --quiet --store "$NU/store" "$SRC"
check_rc "a store of kernels imported" 0
KERNELS=$(info_field "$NU/store" kernels)
check_num "... some" "$KERNELS" -gt 0
# user_run DIR [VAR=VALUE...] CMD...: CMD run from DIR as a user who set
# none of the variables that name a store or a cache but those given.
user_run() {
	local dir=$1
	shift
	run env -C "$dir" -u TCFS_STORE -u TRITON_CACHE_DIR \
		-u TORCHINDUCTOR_CACHE_DIR HOME="$T_TMP/home" "$@"
}
# user_tcfs DIR ARGS...: tcfs ARGS so run.
user_tcfs() {
	local dir=$1
	shift
	user_run "$dir" "$TCFS" "$@"
}
# The one line that names the store found, and nothing else on stderr.
SAID="tcfs: store $NU/store (mounted at $NU/cache)"

echo "# --- the store of the mount (issue 31, item 1)"
at_exit "fusermount3 -uz '$NU/cache'"
tcfs mount --store "$NU/store" "$NU/cache"
check_rc "tcfs mount --store $NU/store $NU/cache" 0
user_run "$T_TMP/elsewhere" TRITON_CACHE_DIR="$NU/cache" "$TCFS" stats
check_rc "TRITON_CACHE_DIR=$NU/cache tcfs stats: found the store" 0
check_grep_fixed "... its store, named on stdout" "$NU/store" "$OUT"
check_eq "... and said on stderr, alone" "$SAID" "$(cat "$ERR")"
user_tcfs "$NU/cache" stats --json
check_rc "tcfs stats run from inside the mount: found the store" 0
check_eq "... its store" "$NU/store" "$(json_get "$OUT" store)"
check_eq "... said on stderr, never on stdout (--json stays clean)" \
	"$SAID" "$(cat "$ERR")"
mkdir -p "$NU/cache/sub/dir"
user_tcfs "$NU/cache/sub/dir" info --json
check_eq "tcfs info from a dir below the mount point: its kernels" \
	"$KERNELS" "$(json_get "$OUT" kernels)"
user_run "$T_TMP/elsewhere" TORCHINDUCTOR_CACHE_DIR="$NU/cache" \
	"$TCFS" info --json
check_eq "TORCHINDUCTOR_CACHE_DIR=MOUNT tcfs info: its kernels" \
	"$KERNELS" "$(json_get "$OUT" kernels)"
user_run "$T_TMP/elsewhere" TRITON_CACHE_DIR="$NU/cache/binary-only" \
	"$TCFS" info --json
check_eq "TRITON_CACHE_DIR=MOUNT/binary-only tcfs info: its kernels" \
	"$KERNELS" "$(json_get "$OUT" kernels)"
user_run "$T_TMP" TRITON_CACHE_DIR=./elsewhere/../nu/cache \
	"$TCFS" info --json
check_eq "a relative TRITON_CACHE_DIR with .. in it: its kernels" \
	"$KERNELS" "$(json_get "$OUT" kernels)"
user_tcfs "$T_TMP/elsewhere" --store "$NU/store" info --json
check_rc "tcfs --store DIR info: --store before the command" 0
check_eq "... its kernels" "$KERNELS" "$(json_get "$OUT" kernels)"
check_eq "... nothing said of an explicit --store" "" "$(cat "$ERR")"
user_tcfs "$T_TMP/elsewhere" --store="$NU/cache" info --json
check_eq "tcfs --store=MOUNTPOINT info: the mount's store" \
	"$KERNELS" "$(json_get "$OUT" kernels)"
user_tcfs "$T_TMP/elsewhere" info --json -s "$NU/cache"
check_eq "tcfs info -s MOUNTPOINT: the mount's store" \
	"$KERNELS" "$(json_get "$OUT" kernels)"
tcfs --store "$T_TMP/none" info --store "$NU/store"
check_rc "the command's own --store wins over one before it" 0
user_tcfs "$T_TMP/elsewhere" --store
check_rc "tcfs --store, without its DIR: a usage error" 2
check_grep_fixed "... naming the option" "'--store' needs a value" "$ERR"

echo "# --- the order: --store, \$TCFS_STORE, the mount, the default"
tcfs import --quiet --store "$T_TMP/other" "$SRC"
run env -C "$NU/cache" TCFS_STORE="$T_TMP/other" "$TCFS" stats --json
check_eq "\$TCFS_STORE wins over the mount" \
	"$T_TMP/other" "$(json_get "$OUT" store)"
check_eq "... and is said" "tcfs: store $T_TMP/other (from \$TCFS_STORE)" \
	"$(cat "$ERR")"
user_tcfs "$NU/cache" --store "$T_TMP/other" stats --json
check_eq "--store wins over the mount" \
	"$T_TMP/other" "$(json_get "$OUT" store)"
user_run "$NU/cache" TRITON_CACHE_DIR="$T_TMP/elsewhere" \
	"$TCFS" stats --json
check_eq "the mount that holds the working directory wins over TRITON_CACHE_DIR" \
	"$NU/store" "$(json_get "$OUT" store)"
user_run "$T_TMP/elsewhere" TRITON_CACHE_DIR="$T_TMP/elsewhere" \
	"$TCFS" stats
check_rc "no mount anywhere: the default store, missing" 1
check_eq "... named, and no store line" \
	"tcfs stats: $T_TMP/home/.local/share/tcfs: no tcfs store here: tcfs mount or tcfs import creates one" \
	"$(cat "$ERR")"

echo "# --- uid $U's mount counts for uid $U only"
UD=$T_TMP/u
mkdir -p "$UD/store" "$UD/mnt"
chown -R "$U:$U" "$UD"
at_exit "fusermount3 -uz '$UD/mnt'"
run as_uid "$U" --inh-caps=+sys_admin,+dac_override \
	--ambient-caps=+sys_admin,+dac_override \
	"$OTHERS_TCFS" mount --store "$UD/store" "$UD/mnt"
check_rc "uid $U mounts a store of its own" 0
run as_uid "$U" env -C "$UD/mnt" -u TCFS_STORE HOME="$UD" \
	"$OTHERS_TCFS" stats --json
check_eq "uid $U's tcfs stats in its mount: its store" \
	"$UD/store" "$(json_get "$OUT" store)"
user_run "$T_TMP/elsewhere" TRITON_CACHE_DIR="$UD/mnt" "$TCFS" stats
check_rc "root's TRITON_CACHE_DIR=uid $U's mount: not that store" 1
check_grep_fixed "... but the default" "$T_TMP/home/.local/share/tcfs" "$ERR"
fusermount3 -u "$UD/mnt"

echo "# --- tcfs help CMD, tcfs version (issue 31, item 11)"
tcfs help stats
check_rc "tcfs help stats" 0
check_eq "... is tcfs stats --help" "$("$TCFS" stats --help)" "$(cat "$OUT")"
tcfs help
check_rc "tcfs help" 0
check_grep_fixed "... lists the commands" "Commands:" "$OUT"
tcfs help nosuch
check_rc "tcfs help nosuch: a usage error" 2
check_grep_fixed "... naming it" "'nosuch' is not a tcfs command" "$ERR"
tcfs version
check_rc "tcfs version" 0
check_eq "... is tcfs --version" "$("$TCFS" --version)" "$(cat "$OUT")"

echo "# --- tcfs mount at TRITON_CACHE_DIR (issue 31, item 11)"
mkdir -p "$T_TMP/tc"
at_exit "fusermount3 -uz '$T_TMP/tc'"
run env TRITON_CACHE_DIR="$T_TMP/tc" "$TCFS" mount --store "$T_TMP/tcs"
check_rc "TRITON_CACHE_DIR=DIR tcfs mount --store S" 0
check "... mounted at DIR" grep -q " $T_TMP/tc .* fuse.tcfs $T_TMP/tcs " \
	/proc/self/mountinfo
tcfs umount "$T_TMP/tc"
check_rc "... and unmounted" 0
run env -u TRITON_CACHE_DIR "$TCFS" mount --store "$T_TMP/tcs"
check_rc "tcfs mount with no mount point nor TRITON_CACHE_DIR: usage" 2
check_grep_fixed "... saying so" "TRITON_CACHE_DIR is not set" "$ERR"

echo "# --- usage errors exit 2, naming the bad value (issue 31, item 11)"
# usage DESC BAD CMD...: CMD exits 2 with BAD named on stderr.
usage() {
	local desc=$1 bad=$2
	shift 2
	tcfs "$@"
	check_rc "tcfs $desc: exit 2" 2
	check_grep_fixed "... naming '$bad'" "$bad" "$ERR"
}
S=$T_TMP/other
usage "config remote bogus://x" bogus config --store "$S" remote bogus://x
usage "config remote redis://h:99999" 99999 config --store "$S" remote \
	redis://h:99999
usage "remote status -o remote=bogus://x" bogus remote status --store "$S" \
	-o remote=bogus://x
mkdir -p "$T_TMP/m2"
usage "mount -o max_size=12Q" 12Q mount --store "$S" -o max_size=12Q \
	"$T_TMP/m2"
usage "mount -o user_max_size=x" user_max_size=x mount --store "$S" \
	-o user_max_size=x "$T_TMP/m2"
usage "mount -o nosuchopt" nosuchopt mount --store "$S" -o nosuchopt \
	"$T_TMP/m2"
usage "mount --sync-every 0" "'0'" mount --store "$S" --sync-every 0 \
	"$T_TMP/m2"
check "... none of them left a mount" \
	bash -c "! grep -q ' $T_TMP/m2 ' /proc/self/mountinfo"
usage "unpack --max-size x" "'x'" unpack --store "$S" --max-size x docker://x
usage "list --sort nosuch" nosuch list --store "$S" --sort nosuch
usage "log --since soon" soon log --store "$S" --since soon
usage "info --nosuch" --nosuch info --store "$S" --nosuch
usage "export (no destination)" destination export --store "$S"
usage "stats extra" extra stats --store "$S" extra
usage "trust --user nosuchuser" nosuchuser trust --store "$S" \
	--user nosuchuser
usage "nosuch" nosuch nosuch
