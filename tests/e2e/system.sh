#!/bin/bash
# tcfs in the system: what meson install installs (the binary, the man
# page, the bash completion, the systemd user unit), that they and --help
# and doc/reference.md name the same commands and options, the completion
# itself, an fstab line mounted by mount(8) through mount.fuse3, and the
# user unit's commands mounting and unmounting the default store.
. "$(dirname "$0")/lib.sh"
: "${BUILD_ROOT:?BUILD_ROOT must name the meson build dir}"
: "${SRC_ROOT:?SRC_ROOT must name the source tree}"

KEY=0123456789abcdef0123456789abcdef	# a key dir, as Triton names them

# --- meson install ----------------------------------------------------------

DEST=$T_TMP/dest
run meson install -C "$BUILD_ROOT" --destdir "$DEST" --no-rebuild --quiet
check_rc "meson install --destdir installs" 0
installed() {	# installed PATTERN: the one installed file matching it
	find "$DEST" -path "$DEST$1" -type f | head -n 1
}
BIN=$(installed '*/bin/tcfs')
MAN=$(installed '*/man1/tcfs.1')
COMP=$(installed '*/bash-completion/completions/tcfs')
UNIT=$(installed '*/systemd/user/tcfs.service')
for f in BIN MAN COMP UNIT; do
	check "meson install installs $f (${!f#"$DEST"})" test -n "${!f}"
done
run "$BIN" --version
check_rc "the installed tcfs runs" 0

# --- the man page, the completion, --help and the reference agree ----------

# roff_text MAN: the text of a man page without man(1), for a machine
# that has none: section titles as lines, escapes and fonts dropped.
roff_text() {
	sed -e '/^\.S[HS] /{s/^\.S[HS] //;s/"//g;b}' -e '/^\./d' \
		-e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/\\-/-/g' \
		-e 's/\\\\/\\/g' "$1"
}
MANTXT=$T_TMP/man.txt
if command -v man >/dev/null; then
	MANWIDTH=200 man -l "$MAN" 2>/dev/null | col -b >"$MANTXT"
else
	roff_text "$MAN" >"$MANTXT"
fi
check_grep "the man page renders, with its NAME" '^ *tcfs - ' "$MANTXT"
for sect in "EXIT STATUS" FILES ENVIRONMENT FSTAB SYSTEMD "MOUNT OPTIONS"; do
	check_grep_fixed "the man page has a section $sect" "$sect" "$MANTXT"
done

# shellcheck source=tools/completion/tcfs
. "$COMP"
"$TCFS" --help >"$T_TMP/help" 2>&1
CMDS=$(sed -n 's/^  \([a-z]\+\) .*/\1/p' "$T_TMP/help")
lost=
for c in $CMDS; do
	grep -q "^ *$c .*" "$MANTXT" || lost="$lost man:$c"
	_tcfs_opts "$c" >/dev/null || lost="$lost completion:$c"
	grep -q "^| \`tcfs $c" "$SRC_ROOT/doc/reference.md" || lost="$lost reference:$c"
	# Every option the command's --help names.
	for o in $("$TCFS" "$c" --help | grep -oE '^ {2,6}(-[a-zA-Z], )?--[a-z-]+' |
		grep -oE -- '--[a-z-]+'); do
		grep -qE -- "$o\b" "$MANTXT" || lost="$lost man:$c$o"
		[[ " $(_tcfs_opts "$c" | tr '\n' ' ') " == *" $o "* ]] ||
			lost="$lost completion:$c$o"
	done
done
check_eq "every command and option of --help is in the man page, the completion and doc/reference.md" \
	"" "$lost"

# Where man(1) runs, roff_text, which stands in for it elsewhere, must
# find the NAME line, every command (at the start of a line) and every
# option too.
if command -v man >/dev/null; then
	roff_text "$MAN" >"$T_TMP/roff.txt"
	lacks=
	grep -q '^ *tcfs - ' "$T_TMP/roff.txt" || lacks=" NAME"
	for c in $CMDS; do
		grep -q "^ *$c .*" "$T_TMP/roff.txt" || lacks="$lacks $c"
		for o in $("$TCFS" "$c" --help | grep -oE '^ {2,6}(-[a-zA-Z], )?--[a-z-]+' |
			grep -oE -- '--[a-z-]+'); do
			grep -qE -- "$o\b" "$T_TMP/roff.txt" || lacks="$lacks $c$o"
		done
	done
	check_eq "without man(1), the page's text has its NAME, every command and option" \
		"" "$lacks"
fi

# complete WORD...: what the completion offers for the last word.
complete_words() {
	COMP_WORDS=(tcfs "$@")
	COMP_CWORD=$#
	COMPREPLY=()
	_tcfs
	echo "${COMPREPLY[*]}"
}
check_eq "completion: commands" "mount" "$(complete_words mou)"
check_eq "completion: a command's options" "--repair" \
	"$(complete_words fsck --rep)"
check_eq "completion: config keys" "log-max-events log-max-age max-size user-max-size metrics remote remote-auth-file remote-key-file remote-publish remote-trust remote-modules remote-inductor remote-key-format remote-ttl" \
	"$(complete_words config '')"
check_eq "completion: remote's actions" "status push pull" \
	"$(complete_words remote '')"
check_eq "completion: -o's tcfs options, after a comma" \
	"allow_other,noviews" "$(complete_words mount -o allow_other,nov)"
mkdir -p "$T_TMP/dirs/mnt-a"
check_eq "completion: directories for --store" "$T_TMP/dirs/mnt-a" \
	"$(complete_words mount --store "$T_TMP/dirs/mn")"
check_eq "completion: directories for the mount point" "$T_TMP/dirs/mnt-a" \
	"$(complete_words mount -f "$T_TMP/dirs/mn")"

# --- fstab ------------------------------------------------------------------

# mount_ns SCRIPT: runs SCRIPT (bash) as mount(8) would run tcfs from
# fstab: in a mount namespace of its own, with tcfs in /usr/local/sbin,
# the first directory of the fixed PATH that mount(8) gives helpers.
# The namespace keeps that, and the mounts, from the rest of the machine.
mount_ns() {
	mkdir -p "$T_TMP/sbin" && ln -sf "$TCFS" "$T_TMP/sbin/tcfs"
	timeout 120 unshare -m --propagation private bash -c \
		"mount --bind '$T_TMP/sbin' /usr/local/sbin && $1" \
		>"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# store_has STORE FILE: STORE holds FILE's bytes as a blob, once its
# daemon has exited (it holds the lock until then).
store_has() {
	flock -w 30 "$1/lock" true && test -f "$(blob_path "$1" "$2")"
}

echo "tcfs through fstab" >"$T_TMP/payload"
if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ] ||
	! command -v mount.fuse3 >/dev/null || ! unshare -m true 2>/dev/null; then
	for d in "mount -T" "mount -a -T" "tcfs STORE MOUNTPOINT -o"; do
		skip "fstab: $d" "needs root, /dev/fuse, mount.fuse3, unshare -m"
	done
else
	S1=$T_TMP/fstab-store
	M1=$T_TMP/fstab-mnt
	mkdir -p "$M1"
	at_exit "kill \$(cat '$S1/lock')"
	echo "$S1 $M1 fuse.tcfs defaults,allow_other 0 0" >"$T_TMP/fstab"
	mount_ns "mount -T '$T_TMP/fstab' '$M1' &&
		findmnt -rn -o FSTYPE,SOURCE,OPTIONS -M '$M1' &&
		mkdir '$M1/$KEY' && cp '$T_TMP/payload' '$M1/$KEY/f.txt' &&
		'$TCFS' umount '$M1'"
	check_rc "fstab: mount -T FSTAB MOUNTPOINT mounts, a file is written, tcfs umount" 0
	check_grep "fstab: the mount is fuse.tcfs of the store, allow_other" \
		"^fuse.tcfs $S1 .*allow_other" "$OUT"
	# mount(8) hands dev,suid from "defaults": dropped, not refused.
	check_grep "fstab: ... nosuid,nodev all the same" \
		"^fuse.tcfs $S1 .*nosuid,nodev" "$OUT"
	check "fstab: the file landed in the store" store_has "$S1" "$T_TMP/payload"

	# mount -a, with options mount(8) keeps to itself and one of tcfs's.
	S2=$T_TMP/fstab-a-store
	M2=$T_TMP/fstab-a-mnt
	mkdir -p "$M2"
	at_exit "kill \$(cat '$S2/lock')"
	echo "$S2 $M2 fuse.tcfs rw,nofail,noviews,comment=tcfs 0 0" \
		>"$T_TMP/fstab-a"
	mount_ns "mount -a -T '$T_TMP/fstab-a' &&
		ls '$M2' && cp '$T_TMP/payload' '$M2/payload' ; umount '$M2'"
	check_rc "fstab: mount -a -T FSTAB mounts, and umount unmounts" 0
	check_eq "fstab: -o noviews reached the mount (no by-name/ at the root)" \
		"" "$(grep -x 'by-name' "$OUT")"
	check "fstab: the file landed in the store" store_has "$S2" "$T_TMP/payload"

	# The helper form by hand: the generic options mount(8) strips are
	# dropped by tcfs too, for helpers that hand them on.
	S3=$T_TMP/helper-store
	M3=$T_TMP/helper-mnt
	mkdir -p "$M3"
	at_exit "fusermount3 -uz '$M3'"
	tcfs "$S3" "$M3" -o defaults,noauto,user,_netdev,x-systemd.automount,noviews
	check_rc "tcfs STORE MOUNTPOINT -o defaults,noauto,... mounts" 0
	check_eq "tcfs STORE MOUNTPOINT: the store is STORE" "$S3" \
		"$(findmnt -rn -o SOURCE -M "$M3")"
	tcfs umount "$M3"
	check_rc "tcfs umount unmounts it" 0
fi
tcfs nostore-command mnt
check_rc "a word with no '/' is still an unknown command" 2

# --- the systemd user unit --------------------------------------------------

# The unit as installed, with its tcfs the one staged under DEST.
bindir=$(sed -n 's#^ExecStart=\(/.*\)/tcfs .*#\1#p' "$UNIT")
check "the unit runs the installed tcfs ($bindir/tcfs)" test -x "$DEST$bindir/tcfs"
STAGED=$T_TMP/unit/tcfs.service
mkdir -p "$T_TMP/unit" "$T_TMP/run"
chmod 700 "$T_TMP/run"
sed "s#$bindir/tcfs#$DEST$bindir/tcfs#" "$UNIT" >"$STAGED"

HOME_T=$T_TMP/home
mkdir -p "$HOME_T"
# unit_env CMD...: CMD as the user manager runs it: its own HOME, no
# TCFS_STORE, so the store is the default one.
unit_env() {
	env -u TCFS_STORE -u XDG_DATA_HOME HOME="$HOME_T" "$@"
}
# unit_lines KEY: the unit's KEY= command lines, %h made the test's HOME,
# their prefixes (-, @, +, !, :) dropped.
unit_lines() {
	sed -n "s/^$1=[-@+!:]*//p" "$STAGED" | sed "s#%h#$HOME_T#g"
}
run_lines() {	# run_lines KEY: runs each line of KEY; fails at the first
	local line args
	while IFS= read -r line; do
		read -ra args <<<"$line"
		unit_env "${args[@]}" </dev/null >>"$OUT" 2>>"$ERR" || return 1
	done < <(unit_lines "$1")
}
MNT_U=$HOME_T/.triton/cache
write_payload() {	# write_payload MOUNT: the payload into a key dir there
	mkdir -p "$1/$KEY" && cp "$T_TMP/payload" "$1/$KEY/f.txt"
}
STORE_U=$HOME_T/.local/share/tcfs

# The real thing only where it cannot touch the user's own cache: a user
# manager runs, and ~/.triton/cache is not there or is an empty directory.
user_manager() {
	case $(systemctl --user is-system-running 2>/dev/null) in
	running | degraded) ;;
	*) return 1 ;;
	esac
	[ ! -e "$HOME/.triton/cache" ] ||
		{ [ -z "$(ls -A "$HOME/.triton/cache")" ] &&
			! findmnt -M "$HOME/.triton/cache" >/dev/null; }
}
if [ -n "${XDG_RUNTIME_DIR:-}" ] && user_manager; then
	diag "systemd path: a user manager runs: systemctl --user enable --now"
	MNT_U=$HOME/.triton/cache
	# A runtime drop-in keeps the test off the user's own store.
	DROPIN=$XDG_RUNTIME_DIR/systemd/user/tcfs.service.d
	mkdir -p "$DROPIN"
	printf '[Service]\nEnvironment=TCFS_STORE=%s\n' "$T_TMP/user-store" \
		>"$DROPIN/tcfs-test.conf"
	at_exit "rm -f '$DROPIN/tcfs-test.conf'; systemctl --user daemon-reload"
	at_exit "systemctl --user disable --now tcfs.service"
	run systemctl --user link "$STAGED"
	check_rc "systemctl --user link tcfs.service" 0
	run systemctl --user enable --now tcfs.service
	check_rc "systemctl --user enable --now tcfs.service" 0
	check_eq "the unit mounted the store at ~/.triton/cache" \
		"fuse.tcfs $T_TMP/user-store" \
		"$(findmnt -rn -o FSTYPE,SOURCE -M "$MNT_U")"
	check "a file is written through it" write_payload "$MNT_U"
	run systemctl --user disable --now tcfs.service
	check_rc "systemctl --user disable --now tcfs.service" 0
	check_eq "stopping it unmounted it" "" "$(findmnt -rn -M "$MNT_U")"
	check "the file landed in the store" \
		store_has "$T_TMP/user-store" "$T_TMP/payload"
else
	diag "systemd path: no user manager here: systemd-analyze verify, then the unit's Exec lines run by hand"
	if command -v systemd-analyze >/dev/null; then
		# verify reports a bad line on stderr yet exits 0.
		run env XDG_RUNTIME_DIR="$T_TMP/run" \
			MANPATH="$(dirname "$(dirname "$MAN")")" \
			systemd-analyze --user verify "$STAGED"
		if [ "$RC" = 0 ] && [ ! -s "$ERR" ]; then
			ok "systemd-analyze --user verify: the unit is clean"
		else
			not_ok "systemd-analyze --user verify: the unit is clean"
			show_run
		fi
	else
		skip "systemd-analyze --user verify" "no systemd-analyze"
	fi
	if [ ! -e /dev/fuse ]; then
		skip "the unit's Exec lines mount and unmount" "no /dev/fuse"
	else
		at_exit "fusermount3 -uz '$MNT_U'"
		: >"$OUT"
		: >"$ERR"
		run_lines ExecStartPre && run_lines ExecStart
		RC=$?
		check_rc "ExecStartPre= and ExecStart= run" 0
		check_eq "they mounted the default store at %h/.triton/cache" \
			"fuse.tcfs $STORE_U" \
			"$(findmnt -rn -o FSTYPE,SOURCE -M "$MNT_U")"
		check "a file is written through it" write_payload "$MNT_U"
		run_lines ExecStop
		RC=$?
		check_rc "ExecStop= runs" 0
		check_eq "it unmounted" "" "$(findmnt -rn -M "$MNT_U")"
		check "the file landed in the default store" \
			store_has "$STORE_U" "$T_TMP/payload"
	fi
fi
