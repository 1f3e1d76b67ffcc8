#!/usr/bin/env bash
# A key typed short, as git takes an abbreviated hash (issue 31, item 5):
# `tcfs why LFF4I7` said "no kernel".  Every command that takes a kernel
# key (why, trust promote) takes any prefix that begins one key, in
# either case where that is one key; a prefix of several is a usage
# error naming them (exit 2), and one of none says there is no kernel
# (exit 1).
set -u
. "$(dirname "$0")/lib.sh"

SMALL=$(fixture_top triton-3.6-h200-small.tgz cA)
S=$T_TMP/store
tcfs import --store "$S" "$SMALL"
check_rc "import the small fixture" 0

KEYS=$(cd "$SMALL" && for d in *; do [ -e "$d"/__grp__* ] 2>/dev/null && echo "$d"; done | sort)
# A key and the shortest prefix of it that no other key has.
KEY=PFF5SGOEPUOPOHLGSXG4DIWUDAUGIFBEMFP7U326OLNBKOHG4WZA
check_eq "the fixture holds $KEY, and it alone begins with PFF5" \
	"$KEY" "$(echo "$KEYS" | grep '^PFF5')"
# A first character that begins several keys.
AMB=$(echo "$KEYS" | cut -c1 | uniq -d | head -1)
NAMB=$(echo "$KEYS" | grep -c "^$AMB")
check "some first character begins several keys" test "$NAMB" -ge 2

tcfs why --store "$S" PFF5
check_rc "tcfs why PFF5: a prefix of one key" 0
check_grep_fixed "... explains that kernel" "key      $KEY" "$OUT"
tcfs why --json --store "$S" PFF5SG
check_eq "tcfs why --json PFF5SG: the whole key" "$KEY" \
	"$(json_eval "$OUT" 'd["key"]')"
tcfs why --store "$S" pff5sg
check_rc "tcfs why pff5sg: in lower case, the same key" 0
check_grep_fixed "... that kernel" "key      $KEY" "$OUT"
tcfs why --store "$S" "$KEY"
check_rc "tcfs why KEY: the whole key still" 0

tcfs why --store "$S" "$AMB"
check_rc "tcfs why $AMB: a prefix of $NAMB keys: usage error (2)" 2
check_grep_fixed "... saying so" "$AMB: ambiguous, it begins several keys: " "$ERR"
check_eq "... naming them (5 at most)" \
	"$(echo "$KEYS" | grep "^$AMB" | head -5 | tr '\n' ' ')" \
	"$(sed 's/.*keys: //; s/, \.\.\.$//; s/, /\n/g' "$ERR" | tr '\n' ' ')"
check_eq "... and nothing on stdout" 0 "$(wc -c <"$OUT")"

tcfs why --store "$S" ZZZZQQ
check_rc "tcfs why ZZZZQQ: no key begins so: exit 1" 1
check_grep_fixed "... no kernel" "ZZZZQQ: no kernel" "$ERR"

# trust promote takes a prefix too: on a store not mounted it gets as far
# as the mount (before, a prefix was "not a Triton cache key", exit 2).
tcfs trust promote --store "$S" PFF5
check_rc "tcfs trust promote PFF5: taken; not mounted: exit 1" 1
check_grep_fixed "... not mounted" "not mounted" "$ERR"
tcfs trust promote --store "$S" "$AMB"
check_rc "tcfs trust promote $AMB: ambiguous: exit 2" 2
tcfs trust promote --store "$S" not-a-key
check_rc "tcfs trust promote not-a-key: usage error still" 2

