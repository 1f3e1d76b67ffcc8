#!/usr/bin/env bash
# What an untrusted user writes stays that user's own (issue 29, items 1
# and 2), on a mount many users share (-o allow_other, a 1777 root) with
# the fleet tier on a real redis-server:
# - no rename or hard link takes a user's own dir, a dir that holds one,
#   or anything in one out of it, by anyone, nested roots included;
# - whether a kernel is shared is the mark its writer left (kernels.shared),
#   read by publishing, export, pack, list and the views, never the path:
#   a user's kernel is never published, plain or signed with the node's
#   key, and a second node never loads it;
# - every probe kind is routed as Triton's key dirs are: an untrusted
#   user's FX graph, AOTAutograd entry, compiled module, autotune result
#   and vLLM artifact, written as Inductor writes them, are that user's
#   own; a rename onto a shared entry's name makes the user's own, never
#   replaces the shared one; an entry an untrusted user made under a name
#   that became an entry's later is never loaded by root.
set -u
. "$(dirname "$0")/lib.sh"

require_other_users
require_cmds redis-server redis-cli

UA=2201 UB=2202
chmod 755 "$T_TMP"
SRC=$(fixture_top triton-3.6-h200-small.tgz cA)
chmod -R a+rX "$T_TMP/fixtures"
mapfile -t KEYS < <(ls "$SRC" | grep -E '^[A-Z2-7]{52}$' | head -8)

# put_kernel UID DIR KEY: KEY's files of the fixture into DIR/KEY as
# Triton writes them (the key dir made, each file under a temp name then
# renamed into place, the group file last).
put_kernel() {
	local uid=$1 dir=$2 key=$3 f
	as_uid "$uid" sh -c '
		set -e
		mkdir -p "$2/$3"
		for f in $(ls "$1/$3" | grep -v "^__grp__") \
			 $(ls "$1/$3" | grep "^__grp__"); do
			cp "$1/$3/$f" "$2/$3/$f.tmp.pid_$$_1"
			mv "$2/$3/$f.tmp.pid_$$_1" "$2/$3/$f"
		done' sh "$SRC" "$dir" "$key"
}

redis_start
printf 'fleet-key\n' >"$T_TMP/fleet.key"
chmod 0600 "$T_TMP/fleet.key"

# in_redis KEY: how many of Redis's keys name KEY.
in_redis() {
	rcli --scan --pattern "*$1*" | wc -l
}

# published_wait KEY: waits (10 s at most) until KEY's group is in Redis.
published_wait() {
	for _ in $(seq 100); do
		rcli --scan --pattern "*$1*__grp__*" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# --- item 1, plain and signed ----------------------------------------------

# attack NAME OPTS: a fresh store and node A (and node B sharing its Redis
# with OPTS_B) under the issue's reproducer.
attack() {
	local name=$1 opts=$2 optsb=$3
	local S=$T_TMP/$name-store M=$T_TMP/$name-mnt
	local SB=$T_TMP/$name-storeb MB=$T_TMP/$name-mntb
	local K=${KEYS[0]} KR=${KEYS[1]} K2=${KEYS[2]} K3=${KEYS[3]}
	local G

	echo "# --- $name: an untrusted user's kernel never becomes shared"
	rcli flushall >/dev/null
	mkdir -p "$M" "$MB"
	tcfs mount --store "$S" -o "allow_other,remote=redis://127.0.0.1:$RPORT,remote_miss_ttl=0,$opts" "$M"
	check_rc "$name: mount with allow_other and a remote" 0
	at_exit "fusermount3 -uz '$M' 2>/dev/null"
	chmod 1777 "$M"

	put_kernel "$UA" "$M" "$K"
	check "$name: A wrote K as Triton does (its own)" \
		as_uid "$UA" test -f "$M/$K/$(ls "$SRC/$K" | grep '^__grp__' | head -1)"
	check_eq "$name: root reaches no file of A's K" "" \
		"$(find "$M/$K" -type f 2>/dev/null)"

	run as_uid "$UA" mv "$M/.tcfs-private-$UA" "$M/zzz"
	check_grep "$name: A's rename of its own dir: EPERM" \
		"Operation not permitted" "$ERR"
	run mv "$M/.tcfs-private-$UA" "$M/zzz"
	check "$name: root's rename of it: refused too" [ "$RC" != 0 ]
	run as_uid "$UA" mv "$M/$K" "$M/zzz"
	check_grep "$name: A's rename of its key dir out of its own dir: EPERM" \
		"Operation not permitted" "$ERR"
	G=$(ls "$SRC/$K" | grep cubin | head -1)
	run as_uid "$UA" ln "$M/$K/$G" "$M/hard"
	check_grep "$name: a hard link out of it: EPERM" \
		"Operation not permitted" "$ERR"
	run as_uid "$UA" mv "$M/$K/$G" "$M/moved"
	check_grep "$name: a file moved out of it: EPERM" \
		"Operation not permitted" "$ERR"
	check_eq "$name: nothing of A's at a shared name" "" \
		"$(find "$M" -path "$M/by-*" -prune -o -path "$M/binary-only" -prune -o -type f -print)"

	as_uid "$UA" mkdir "$M/nest"
	put_kernel "$UA" "$M/nest" "$K2"
	run as_uid "$UA" mv "$M/nest" "$M/nest2"
	check_grep "$name: a nested root that holds A's own dir: A's rename, EPERM" \
		"Operation not permitted" "$ERR"
	run mv "$M/nest" "$M/nest3"
	check_grep "$name: ... root's rename of it, EPERM" \
		"Operation not permitted" "$ERR"
	as_uid "$UA" mkdir "$M/plain"
	run as_uid "$UA" mv "$M/plain" "$M/$K3"
	check_rc "$name: A's dir renamed to a key's name: allowed" 0
	check_eq "$name: ... as A's own: root does not see it" "" \
		"$(find "$M" -maxdepth 1 -name "$K3" -user "$UA")"

	put_kernel 0 "$M" "$KR"
	check "$name: root's kernel is published" published_wait "$KR"
	check_eq "$name: A's kernels are not (FIFO: they were queued first)" \
		"0 0" "$(in_redis "$K") $(in_redis "$K2")"

	mkdir -p "$MB"
	tcfs mount --store "$SB" -o "remote=redis://127.0.0.1:$RPORT,$optsb" "$MB"
	check_rc "$name: node B mounts on the same Redis" 0
	at_exit "fusermount3 -uz '$MB' 2>/dev/null"
	mkdir -p "$MB/$KR" "$MB/$K"
	check "$name: B loads root's kernel from the fleet" \
		test -s "$MB/$KR/$(ls "$SRC/$KR" | grep '^__grp__' | head -1)"
	check "$name: B never loads A's" \
		test ! -e "$MB/$K/$(ls "$SRC/$K" | grep '^__grp__' | head -1)"

	tcfs list --json --store "$S"
	check_eq "$name: list: A's kernels are A's, root's shared" \
		"0:shared $UA:$UA $UA:$UA" \
		"$(json_eval "$OUT" '" ".join(sorted("%s:%s" % (k["writer"] or 0, k["visibility"]) for k in d))')"
	tcfs export --store "$S" "$T_TMP/$name-export"
	check_eq "$name: export: root's kernel alone" "$KR" \
		"$(cd "$T_TMP/$name-export" && find . -name '__grp__*' | cut -d/ -f2 | sort -u | tr '\n' ' ' | sed 's/ $//')"
	check_eq "$name: by-name/ names no key of A's" "" \
		"$(ls "$M"/by-name/*/ | grep -x -e "$K" -e "$K2")"

	tcfs trust promote --store "$S" --user "$UA"
	check_rc "$name: tcfs trust promote --user A" 0
	check "$name: root now sees A's K" test -d "$M/$K"
	check_eq "$name: promoted: the mount's, writable by none but it" \
		"0 -rw-r--r--" "$(stat -c '%u %A' "$M/$K/$G")"
	run as_uid "$UA" sh -c "echo evil >> '$M/$K/$G'"
	check "$name: A cannot change what it had written, now shared" [ "$RC" != 0 ]
	tcfs list --json --store "$S"
	check_eq "$name: list: K shared now" "shared" \
		"$(json_eval "$OUT" "' '.join(sorted(set(str(k['visibility']) for k in d if k['key'] == '$K')))")"
	fusermount3 -u "$MB"
	fusermount3 -u "$M"
}

attack plain "" "remote_publish=off"
attack signed "remote_key_file=$T_TMP/fleet.key" \
	"remote_key_file=$T_TMP/fleet.key,remote_trust=signed,remote_publish=off"

# --- item 2: every probe kind ----------------------------------------------

echo "# --- Inductor's and vLLM's entries: an untrusted user's are its own"
S=$T_TMP/ind-store
M=$T_TMP/ind-mnt
mkdir -p "$M"
tcfs mount --store "$S" -o allow_other "$M"
check_rc "mount an Inductor cache with allow_other" 0
at_exit "fusermount3 -uz '$M' 2>/dev/null"
chmod 1777 "$M"

FK=fab$(printf 'c%.0s' $(seq 49))
AK=a$(printf 'd%.0s' $(seq 51))
CK=czq$(printf 'e%.0s' $(seq 49)).py
VL=torch_compile_cache/h1/rank_0_0/backbone
# Each entry as PATH-OF-DIR NAME-IN-IT ENTRY-FILE (the file read back).
ENTRIES=("fxgraph/ab $FK e1" "aotautograd $AK e1" "zq $CK -"
	"zq x1234567890abcdef.best_config -"
	"$VL artifact_compile_range_1_8192 -")

# write_entry UID DIR NAME FILE TEXT: as Inductor writes (makedirs, a temp
# file beside, then a rename onto the name).
write_entry() {
	as_uid "$1" sh -c '
		set -e
		mkdir -p "$1"
		if [ "$3" = - ]; then
			printf %s "$4" >"$1/.$$.tmp"
			mv "$1/.$$.tmp" "$1/$2"
		else
			mkdir -p "$1/$2"
			printf %s "$4" >"$1/$2/.$$.tmp"
			mv "$1/$2/.$$.tmp" "$1/$2/$3"
		fi' sh "$M/$2" "$3" "$4" "$5"
}
# read_entry UID DIR NAME FILE: what that user reads there ("-" for none).
read_entry() {
	local p=$M/$2/$3
	[ "$4" = - ] || p=$p/$4
	as_uid "$1" cat "$p" 2>/dev/null || echo -
}

for e in "${ENTRIES[@]}"; do
	read -r d n f <<<"$e"
	write_entry "$UA" "$d" "$n" "$f" "A's $n"
done
for e in "${ENTRIES[@]}"; do
	read -r d n f <<<"$e"
	check_eq "${n:0:24}: A reads its own" "A's $n" "$(read_entry "$UA" "$d" "$n" "$f")"
	check_eq "${n:0:24}: root does not load A's" "-" "$(read_entry 0 "$d" "$n" "$f")"
	check_eq "${n:0:24}: B does not load A's" "-" "$(read_entry "$UB" "$d" "$n" "$f")"
done
for e in "${ENTRIES[@]}"; do
	read -r d n f <<<"$e"
	write_entry 0 "$d" "$n" "$f" "root's $n"
done
for e in "${ENTRIES[@]}"; do
	read -r d n f <<<"$e"
	check_eq "${n:0:24}: root reads root's" "root's $n" "$(read_entry 0 "$d" "$n" "$f")"
	check_eq "${n:0:24}: B reads root's" "root's $n" "$(read_entry "$UB" "$d" "$n" "$f")"
	check_eq "${n:0:24}: A still its own" "A's $n" "$(read_entry "$UA" "$d" "$n" "$f")"
done

# zq/ is A's (A made it first): A may rename in it, but a rename onto
# root's compiled module makes A's own, never replaces root's.
CK2=czq$(printf 'f%.0s' $(seq 49)).py
write_entry 0 zq "$CK2" - "root's $CK2"
as_uid "$UA" sh -c "printf evil > '$M/zq/.x.tmp' && mv '$M/zq/.x.tmp' '$M/zq/$CK2'"
check_eq "A's rename onto root's module: root's stays" "root's $CK2" \
	"$(read_entry 0 zq "$CK2" -)"
check_eq "... B loads root's" "root's $CK2" "$(read_entry "$UB" zq "$CK2" -)"

# A name that becomes an entry's only when a dir above it is renamed: what
# A wrote there is never loaded by root, whatever the path says.
CK3=cqq$(printf 'g%.0s' $(seq 49)).py
as_uid "$UA" sh -c "mkdir '$M/q' && printf evil > '$M/q/$CK3' && mv '$M/q' '$M/qq'"
check_eq "A's file under a dir renamed to make it an entry: A reads it" \
	"evil" "$(read_entry "$UA" qq "$CK3" -)"
check_eq "... root does not load it" "-" "$(read_entry 0 qq "$CK3" -)"
as_uid "$UA" sh -c "mkdir -p '$M/r/h/x' && printf evil > '$M/r/h/x/artifact_compile_range_9' && mv '$M/r/h/x' '$M/r/h/rank_0_0'"
check_eq "... nor a vLLM artifact whose dir became a rank's" "-" \
	"$(read_entry 0 r/h/rank_0_0 artifact_compile_range_9 -)"
check_eq "... which A still reads" "evil" \
	"$(read_entry "$UA" r/h/rank_0_0 artifact_compile_range_9 -)"
fusermount3 -u "$M"

# --- entries through the fleet tier: only the trusted writers' ----------------

echo "# --- Inductor's and vLLM's entries: only trusted writers' are published"
S=$T_TMP/indr-store
M=$T_TMP/indr-mnt
mkdir -p "$M"
tcfs mount --store "$S" -o "allow_other,remote=redis://127.0.0.1:$RPORT,remote_inductor=any" "$M"
check_rc "mount an Inductor cache with allow_other and remote_inductor=any" 0
at_exit "fusermount3 -uz '$M' 2>/dev/null"
chmod 1777 "$M"
# hashed TEXT: the name Inductor gives an entry of TEXT.
hashed() {
	printf %s "$1" | python3 -c 'import base64, hashlib, sys; print(base64.b32encode(hashlib.sha256(sys.stdin.buffer.read()).digest())[:51].decode().lower())'
}
FA=fab$(printf 'a%.0s' $(seq 49))
FR=fab$(printf 'r%.0s' $(seq 49))
write_entry "$UA" fxgraph/ab "$FA" "$(hashed "A's graph")" "A's graph"
write_entry 0 fxgraph/ab "$FR" "$(hashed "root's graph")" "root's graph"
write_entry "$UA" torch_compile_cache/0123abcd/rank_0_1 computation_graph.py - "A's rank"
write_entry 0 torch_compile_cache/0123abcd/rank_0_0 computation_graph.py - "root's rank"
for _ in $(seq 100); do
	[ "$(in_redis 'pt2:fx-graph-v1::')" -ge 2 ] &&
		[ "$(in_redis 'tcfs:vllm:')" -ge 2 ] && break
	sleep 0.1
done
sleep 1
check_eq "root's FX graph entry is published, with its sidecar" "2" "$(in_redis "$FR")"
check_eq "A's is not" "0" "$(in_redis "$FA")"
check_eq "root's vLLM rank dir is published" "2" "$(in_redis rank_0_0)"
check_eq "A's is not" "0" "$(in_redis rank_0_1)"
fusermount3 -u "$M"

done_testing
