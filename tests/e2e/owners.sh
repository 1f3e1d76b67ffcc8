#!/usr/bin/env bash
# Owners on an allow_other mount: what each user makes is that user's in
# stat, and stays so across a remount; chown, chgrp and chmod follow
# POSIX (root gives files away, an owner picks among its own groups,
# nobody else changes a mode); a write, a truncation or a chown by a user
# other than root clears setuid and setgid; the mount is always
# nosuid,nodev, and -o suid or -o dev is refused.
set -u
. "$(dirname "$0")/lib.sh"

if ! is_root; then
	echo "1..0 # SKIP needs root to run as other users (setpriv)"
	exit 0
elif [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 0
fi
S=$T_TMP/store
M=$T_TMP/mnt
mkdir -p "$M"
chmod o+x "$T_TMP"	# for the other users, to reach the mount point
others_copy		# and to run tcfs
at_exit "fusermount3 -uz '$M'"
# as U G [SUPPLEMENTARY,...] CMD...: runs CMD as uid U, gid G.
as() {
	local u=$1 g=$2 groups=$3
	shift 3
	if [ -n "$groups" ]; then
		setpriv --reuid="$u" --regid="$g" --groups="$groups" "$@"
	else
		setpriv --reuid="$u" --regid="$g" --clear-groups "$@"
	fi
}
owner() { stat -c '%u:%g' "$1" 2>&1; }
mode() { stat -c '%a' "$1" 2>&1; }

tcfs mount -o suid,allow_other --store "$S" "$M"
check_rc "-o suid is a usage error" 2
check_grep_fixed "... naming the option" "-o suid" "$ERR"
tcfs mount -o allow_other,dev --store "$S" "$M"
check_rc "-o dev is a usage error" 2
check_grep_fixed "... naming the option" "-o dev" "$ERR"
check "... and neither mounted" eval "! mountpoint -q '$M'"

tcfs mount -o allow_other --store "$S" "$M"
check_rc "mount with allow_other" 0
check_grep "mountinfo shows nosuid and nodev" \
	"[ ,]nosuid,nodev[ ,].*fuse\.tcfs" /proc/self/mountinfo

chmod 1777 "$M"
check_eq "the root dir is root's" "0:0" "$(owner "$M")"
as 1001 1001 "" mkdir "$M/a"
as 1001 1001 "" sh -c "echo hi >'$M/a/f'"
as 1001 1001 "" ln -s f "$M/a/l"
as 1002 1003 "" mkdir "$M/b"
as 1002 1003 "" touch "$M/b/g"
check_eq "a dir made by 1001 is 1001's" "1001:1001" "$(owner "$M/a")"
check_eq "... its file" "1001:1001" "$(owner "$M/a/f")"
check_eq "... its symlink" "1001:1001" "$(stat -c '%u:%g' "$M/a/l")"
check_eq "a dir made by 1002 (gid 1003) is theirs" "1002:1003" "$(owner "$M/b")"
check_eq "... its file" "1002:1003" "$(owner "$M/b/g")"
as 1002 1003 "" ln "$M/b/g" "$M/b/h"
check_eq "a hard link shows its file's owner" "1002:1003" "$(owner "$M/b/h")"
as 1001 1001 "" sh -c "echo more >>'$M/a/f'"
check_eq "the owner writes to its own file" "hi more" "$(tr '\n' ' ' <"$M/a/f" | sed 's/ $//')"
check "another user may not write into its dir (the kernel checks modes)" \
	eval "! as 1002 1003 '' touch '$M/a/x' 2>/dev/null"

# chown and chgrp
check "a user may not give its file away" \
	eval "! as 1001 1001 '' chown 1002 '$M/a/f' 2>/dev/null"
check "nor chgrp it to a group it is not in" \
	eval "! as 1001 1001 '' chgrp 1003 '$M/a/f' 2>/dev/null"
as 1001 1001 "1003" chgrp 1003 "$M/a/f"
check_eq "the owner chgrps to a group of its own" "1001:1003" "$(owner "$M/a/f")"
check "a user may not chgrp another's file" \
	eval "! as 1002 1003 '' chgrp 1003 '$M/a/f' 2>/dev/null"
chown 1002:1002 "$M/a/f"
check_eq "root chowns anything" "1002:1002" "$(owner "$M/a/f")"
chown 1001:1001 "$M/a/f"

# chmod, and setuid/setgid cleared by other users
check "a user may not chmod another's file" \
	eval "! as 1002 1003 '' chmod 666 '$M/a/f' 2>/dev/null"
check_eq "... which keeps its mode" "644" "$(mode "$M/a/f")"
chmod 6775 "$M/a/f"
check_eq "root sets setuid and setgid on a user's file" "6775" "$(mode "$M/a/f")"
as 1001 1001 "" sh -c "echo x >>'$M/a/f'"
check_eq "a write by the (non-root) owner clears them" "775" "$(mode "$M/a/f")"
chmod 6775 "$M/a/f"
echo y >>"$M/a/f"
check_eq "a write by root keeps them" "6775" "$(mode "$M/a/f")"
as 1001 1001 "" truncate -s 0 "$M/a/f"
check_eq "a truncation by the owner clears them" "775" "$(mode "$M/a/f")"
chmod 6775 "$M/a/f"
as 1001 1001 "1003" chgrp 1003 "$M/a/f"
check_eq "so does a chgrp by the owner" "775 1001:1003" \
	"$(mode "$M/a/f") $(owner "$M/a/f")"
as 1001 1001 "" chmod 2755 "$M/a/f"
check_eq "the owner outside the file's group cannot make it setgid" "755" \
	"$(mode "$M/a/f")"
as 1001 1001 "" chmod 4755 "$M/a/f"
check_eq "... but can make it setuid (nosuid makes it harmless)" "4755" \
	"$(mode "$M/a/f")"

# A setgid dir gives its group to what is made in it.
chgrp 1003 "$M/b" && chmod 3777 "$M/b"
as 1001 1001 "" mkdir "$M/b/sub"
as 1001 1001 "" touch "$M/b/file"
check_eq "a file made in a setgid dir takes its group" "1001:1003" \
	"$(owner "$M/b/file")"
check_eq "a dir too, and is setgid" "1001:1003 2755" \
	"$(owner "$M/b/sub") $(mode "$M/b/sub")"

tcfs umount "$M"
check_rc "unmount" 0
tcfs mount -o allow_other --store "$S" "$M"
check_rc "mount again" 0
check_eq "owners survive a remount" \
	"1001:1001 1001:1003 1002:1003 1002:1003 1001:1003" \
	"$(owner "$M/a") $(owner "$M/a/f") $(owner "$M/b/g") $(owner "$M/b/h") $(owner "$M/b/sub")"
tcfs umount "$M"
check_rc "unmount again" 0

# A store filled offline names no owner: whoever mounts owns it all.
mkdir -p "$T_TMP/src/KEY" "$T_TMP/m2"
echo data >"$T_TMP/src/KEY/x.cubin"
tcfs import --store "$T_TMP/store2" "$T_TMP/src"
check_rc "import" 0
chown -R 1001:1001 "$T_TMP/store2" "$T_TMP/m2"
at_exit "fusermount3 -uz '$T_TMP/m2'"
if as 1001 1001 "" "$OTHERS_TCFS" mount --store "$T_TMP/store2" "$T_TMP/m2" \
	>"$OUT" 2>"$ERR"; then
	check_eq "an imported file is the mounting user's" "1001:1001" \
		"$(as 1001 1001 "" stat -c '%u:%g' "$T_TMP/m2/KEY/x.cubin")"
	as 1001 1001 "" "$OTHERS_TCFS" umount "$T_TMP/m2" >/dev/null 2>&1
else
	skip "an imported file is the mounting user's" "uid 1001 cannot mount"
fi
