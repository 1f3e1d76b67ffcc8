#!/bin/bash
# The commands' options, from their one table each (tools/opt.h): every
# option a --help lists is in the man page and the bash completion; options
# may follow operands and "--" ends them; -n is --name wherever it is taken
# (gc's dry run is --dry-run only); usage errors name the command; config
# lists every setting; a missing store says what creates one; stats with no
# probes says so.
. "$(dirname "$0")/lib.sh"

SRC_ROOT=${SRC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
MAN=$SRC_ROOT/doc/tcfs.1.scd
COMPLETION=$SRC_ROOT/tools/completion/tcfs

# --- every option of every --help: in the man page and the completion -------

tcfs --help
CMDS=$(sed -n '/^Commands:/,/^$/s/^  \([a-z]*\) .*/\1/p' "$OUT")
check "tcfs --help lists the commands" [ -n "$CMDS" ]

# help_opts CMD: the options CMD's --help lists, one a line: "-X --long ARG"
# (fields "-" when there is none).
help_opts() {
	"$TCFS" "$1" --help | sed -n '/^Options:/,/^$/p' | sed -nE \
		-e 's/^  -(.), --([a-z-]+)( ([A-Z][^ ]*))?( .*)?$/-\1 --\2 \4/p' \
		-e 's/^      --([a-z-]+)( ([A-Z][^ ]*))?( .*)?$/- --\1 \3/p' \
		-e 's/^  -(.) ([^ ]+)( .*)?$/-\1 - \2/p'
}

# man_section CMD: CMD's paragraphs under COMMANDS, and the common options.
man_section() {
	awk -v cmd="*$1*" '
		/^# / { common = ($0 == "# COMMON OPTIONS") }
		/^\*/ { in_cmd = (index($0, cmd) == 1) }
		/^#/ { in_cmd = 0 }
		common || in_cmd' "$MAN"
}

# has WORD TEXT: TEXT holds the option WORD, not as part of a longer one.
has() {
	grep -Eq -- "(^|[^A-Za-z0-9-])$1([^A-Za-z0-9-]|$)" <<<"$2"
}

# shellcheck source=tools/completion/tcfs
. "$COMPLETION"
for c in $CMDS; do
	opts=$(help_opts "$c")
	nman="" ncomp="" narg=""
	sect=$(man_section "$c")
	comp=" $(_tcfs_opts "$c" | tr '\n' ' ') "
	argcomp=" $(_tcfs_argopts "$c" | tr '\n' ' ') "
	extra=
	for w in $comp; do
		has "$w" "$opts" || extra="$extra $w"
	done
	while read -r short long arg; do
		for w in "$short" "$long"; do
			[ "$w" != - ] || continue
			has "$w" "$sect" || nman="$nman $w"
			[[ $comp == *" $w "* ]] || ncomp="$ncomp $w"
			[ -z "$arg" ] || [[ $argcomp == *" $w "* ]] ||
				narg="$narg $w"
		done
	done <<<"$opts"
	check "tcfs $c --help lists its options" [ -n "$opts" ]
	check_eq "every option of tcfs $c --help is in tcfs.1.scd" "" "$nman"
	check_eq "every option of tcfs $c --help is in the completion" "" "$ncomp"
	check_eq "the completion offers no option tcfs $c --help lacks" "" \
		"$extra"
	check_eq "the completion knows which of tcfs $c's options take a value" \
		"" "$narg"
done

# --- tcfs mount --help names every -o option the mount parses ----------------

# The -o names in the parsers' own tables: fs/fs.c's own_specs, the
# remote's (remote=, index/remote/option.c), the options every engine
# shares (index/remote/config.c's options[]) and Redis's own
# (tcfs_redis_set).
parsed_opts() {
	sed -n '/own_specs\[\] = {/,/^};/p' "$SRC_ROOT/fs/fs.c" |
		grep -oE '"[a-z_]+' | tr -d '"'
	echo remote
	sed -n '/} options\[\] = {/,/^};/p' "$SRC_ROOT/index/remote/config.c" |
		grep -oE '\{ \{ "[a-z_]+"' | sed -E 's/.*"([a-z_]+)"/remote_\1/'
	sed -n '/^int tcfs_redis_set(/,/^}/p' "$SRC_ROOT/index/remote/redis_url.c" |
		grep -oE 'strcmp\(name, "[a-z_]+"' | sed -E 's/.*"([a-z_]+)"/remote_\1/'
}
PARSED=$(parsed_opts | sort -u)
"$TCFS" mount --help >"$OUT"
HELP_O=$(sed -n '/^Mount options/,/^$/p' "$OUT" | sed -nE 's/^  ([a-z_]+)[= ].*/\1/p;s/^  ([a-z_]+)$/\1/p')
MAN_O=$(sed -n '/^# MOUNT OPTIONS/,/^# /p' "$MAN" | sed 's/\\_/_/g')
COMP_O=$(sed -n '/^\t-o)/,/return ;;/p' "$COMPLETION")
missing="" nman="" ncomp=""
for o in $PARSED; do
	grep -qx "$o" <<<"$HELP_O" || missing="$missing $o"
done
for o in $HELP_O; do
	grep -qE "\*$o(=|\*)" <<<"$MAN_O" || nman="$nman $o"
	grep -qE "(\s|\")$o(=|\s|$)" <<<"$COMP_O" || ncomp="$ncomp $o"
done
check "the mount's parsers take -o options ($(wc -w <<<"$PARSED"))" \
	[ "$(wc -w <<<"$PARSED")" -gt 20 ]
check_eq "tcfs mount --help names every -o option the mount parses" "" \
	"$missing"
check_eq "every -o option of tcfs mount --help is in tcfs.1.scd's MOUNT OPTIONS" \
	"" "$nman"
check_eq "every -o option of tcfs mount --help is in the completion of -o" \
	"" "$ncomp"

# --- a store to work on ------------------------------------------------------

SMALL=$(fixture_top triton-3.6-h200-small.tgz cA) || {
	echo "Bail out! cannot extract triton-3.6-h200-small.tgz"
	exit 1
}
S=$T_TMP/store
tcfs import --quiet --store "$S" "$SMALL"
check_rc "import the small fixture" 0
tcfs list --json --store "$S"
KEY=$(json_get "$OUT" 0.key)
NAME=$(json_get "$OUT" 0.name)
NKERNELS=$(json_eval "$OUT" 'len(d)')
check "the store holds kernels" [ -n "$KEY" ]

# --- options after operands ---------------------------------------------------

tcfs why "$KEY" --json --store "$S"
if [ "$RC" = 0 ] && [ "$(json_get "$OUT" key)" = "$KEY" ]; then
	ok "why KEY --json --store S: options after the operand"
else
	not_ok "why KEY --json --store S: options after the operand"
	show_run
fi

tcfs export "$T_TMP/ex" --store "$S" -q
if [ "$RC" = 0 ] && [ ! -s "$OUT" ] && [ -d "$T_TMP/ex/$KEY" ]; then
	ok "export DEST --store S -q: options after the operand"
else
	not_ok "export DEST --store S -q: options after the operand"
	show_run
fi

tcfs pack "$T_TMP/img" -q --store "$S"
if [ "$RC" = 0 ] && [ ! -s "$OUT" ] && [ -f "$T_TMP/img/index.json" ]; then
	ok "pack DEST -q --store S: options after the operand"
else
	not_ok "pack DEST -q --store S: options after the operand"
	show_run
fi

tcfs import "$SMALL" --store "$T_TMP/store2" --quiet
check_rc "import SRC --store S --quiet: options after the operand" 0

# --- "--" ends the options ------------------------------------------------------

(cd "$T_TMP" && "$TCFS" export --store "$S" --quiet -- -dest) >"$OUT" 2>"$ERR"
RC=$?
if [ "$RC" = 0 ] && [ -d "$T_TMP/-dest/$KEY" ]; then
	ok "export --store S -- -dest: a DEST starting with '-' after --"
else
	not_ok "export --store S -- -dest: a DEST starting with '-' after --"
	show_run
fi

tcfs why --store "$S" -- --json
if [ "$RC" = 1 ] && grep -q -- "--json: no kernel or FX graph with this key" "$ERR"; then
	ok "why --store S -- --json: after --, --json is the KEY"
else
	not_ok "why --store S -- --json: after --, --json is the KEY"
	show_run
fi

# --- -n is --name; gc's dry run is --dry-run only -------------------------------

for c in list export pack prune; do
	"$TCFS" "$c" --help >"$OUT"
	check_grep "tcfs $c: -n is --name" '^  -n, --name GLOB ' "$OUT"
done
tcfs list -n "$NAME" --json --store "$S"
check_eq "list -n NAME selects by name" "$NAME" \
	"$(json_eval "$OUT" 'sorted(set(k["name"] for k in d))[0] if d else ""')"
tcfs list -n 'no-such-kernel*' --json --store "$S"
check_eq "list -n GLOB matching nothing lists nothing" "[]" "$(tr -d ' \n' <"$OUT")"

tcfs gc -n --store "$S"
if [ "$RC" = 2 ] && grep -q "tcfs gc: unknown option '-n'" "$ERR"; then
	ok "gc -n is a usage error naming it (the dry run is --dry-run)"
else
	not_ok "gc -n is a usage error naming it (the dry run is --dry-run)"
	show_run
fi
tcfs gc --dry-run --store "$S"
if [ "$RC" = 0 ] && grep -q "^would remove 0 unreferenced" "$OUT"; then
	ok "gc --dry-run still says what would go"
else
	not_ok "gc --dry-run still says what would go"
	show_run
fi

# --- usage errors: exit 2, naming the command, nothing on stdout ----------------

usage_case() {
	local desc=$1 want=$2
	shift 2
	tcfs "$@"
	if [ "$RC" = 2 ] && grep -qF -- "$want" "$ERR" && [ ! -s "$OUT" ] &&
		grep -q "^Try 'tcfs $1 --help'" "$ERR"; then
		ok "$desc: exit 2, '$want'"
	else
		not_ok "$desc: exit 2, '$want'"
		show_run
	fi
}
usage_case "an unknown long option" "tcfs why: unknown option '--bogus'" \
	why --bogus --store "$S" "$KEY"
usage_case "an unknown short option" "tcfs info: unknown option '-x'" \
	info -x --store "$S"
usage_case "an option without its value" \
	"tcfs list: option '--sort' needs a value (FIELD)" list --store "$S" --sort
usage_case "a value given to a flag" \
	"tcfs info: option '--json' takes no value" info --json=yes --store "$S"
usage_case "a bad value" "tcfs list: --sort: 'colour' is no field" \
	list --sort colour --store "$S"
usage_case "a bad time" "tcfs stats: --since: 'soon' is not a time" \
	stats --since soon --store "$S"
usage_case "a second operand" "tcfs why: unexpected argument 'extra'" \
	why --store "$S" "$KEY" extra
usage_case "no operand" "tcfs export: no destination given" export --store "$S"
usage_case "a reader takes no --wait" "tcfs info: unknown option '--wait'" \
	info --wait 1 --store "$S"

# --- tcfs config --help lists every setting -------------------------------------

tcfs config --json --store "$S"
KEYS=$(json_eval "$OUT" '" ".join(d)')
tcfs config --help
missing=
for k in $KEYS; do
	grep -Eq "^  $k " "$OUT" || missing="$missing $k"
done
check "config --json has settings ($KEYS)" [ -n "$KEYS" ]
check_eq "config --help lists every setting" "" "$missing"

# --- a store that is not there --------------------------------------------------

for c in config info stats; do
	tcfs "$c" --store "$T_TMP/none"
	if [ "$RC" = 1 ] && grep -q "$T_TMP/none: no tcfs store here" "$ERR" &&
		grep -q "tcfs mount or tcfs import creates one" "$ERR" &&
		[ ! -e "$T_TMP/none" ]; then
		ok "$c on a missing store: exit 1, says tcfs mount or import creates one"
	else
		not_ok "$c on a missing store: exit 1, says tcfs mount or import creates one"
		show_run
	fi
done

# --- stats with no probes --------------------------------------------------------

tcfs stats --store "$S"
if [ "$RC" = 0 ] && grep -q "^kernel probes    no probes yet$" "$OUT" &&
	! grep -q "hit rate" "$OUT"; then
	ok "stats with no probes says 'no probes yet', no hit rate"
else
	not_ok "stats with no probes says 'no probes yet', no hit rate"
	show_run
fi
diag "$NKERNELS kernels in the small fixture"
