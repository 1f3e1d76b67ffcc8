/* opt: the one option parser and --help printer of every command (opt.h). */
#include "opt.h"

#include <assert.h>
#include <getopt.h>
#include <string.h>

#include "cli.h"

/* Options in one table, at most: more would be a command to split. */
#define OPT_MAX 32
/* getopt_long's value of an option with no short name: past any char. */
#define OPT_LONG_BASE 0x100
/* Where help lines start, and where they end. */
#define OPT_HELP_COL 24
#define OPT_WIDTH 79

static int count(const struct opt *opts)
{
	int n = 0;

	while (opts[n].type != OPT_T_END)
		n++;
	assert(n <= OPT_MAX);
	return n;
}

/* getopt_long's tables for opts: longs (n + 1 entries) and shorts (its
 * optstring, 3 bytes an option and 2 more).  A leading ':' has a missing
 * argument told apart from an unknown option. */
static void getopt_tables(const struct opt *opts, int n, struct option *longs,
			  char *shorts)
{
	int nl = 0, ns = 0;

	shorts[ns++] = ':';
	for (int i = 0; i < n; i++) {
		int val = opts[i].short_name ? opts[i].short_name
					     : OPT_LONG_BASE + i;

		assert(opts[i].short_name || opts[i].long_name);
		if (opts[i].long_name)
			longs[nl++] = (struct option){
				opts[i].long_name,
				opts[i].arg ? required_argument : no_argument,
				NULL, val
			};
		if (!opts[i].short_name)
			continue;
		shorts[ns++] = (char)opts[i].short_name;
		if (opts[i].arg)
			shorts[ns++] = ':';
	}
	longs[nl] = (struct option){ NULL, 0, NULL, 0 };
	shorts[ns] = '\0';
}

/* The table entry getopt_long's value c stands for, or -1. */
static int find(const struct opt *opts, int n, int c)
{
	if (c >= OPT_LONG_BASE && c < OPT_LONG_BASE + n)
		return c - OPT_LONG_BASE;
	for (int i = 0; i < n; i++)
		if (opts[i].short_name && opts[i].short_name == c)
			return i;
	return -1;
}

/* "--wait", or "-o" for an option with no long name. */
static const char *shown(const struct opt *o, char *buf, size_t len)
{
	if (o->long_name)
		snprintf(buf, len, "--%s", o->long_name);
	else
		snprintf(buf, len, "-%c", o->short_name);
	return buf;
}

/* The usage error for getopt_long's '?' or ':' (c), opterr being off. */
static int getopt_err(const char *cmd, const struct opt *opts, int n, int c,
		      char **argv)
{
	int i = optopt ? find(opts, n, optopt) : -1;
	char name[64];

	if (i >= 0 && c == ':')
		return cli_usage_err(cmd, "option '%s' needs a value (%s)",
				     shown(&opts[i], name, sizeof(name)),
				     opts[i].arg);
	if (i >= 0)
		return cli_usage_err(cmd, "option '%s' takes no value",
				     shown(&opts[i], name, sizeof(name)));
	if (optopt)
		return cli_usage_err(cmd, "unknown option '-%c'", optopt);
	return cli_usage_err(cmd, "unknown option '%s'", argv[optind - 1]);
}

/* Takes option o: 1 to go on, else the command exits with *code. */
static int take(const struct opt_cmd *c, const struct opt *opts, int i,
		int *code)
{
	const struct opt *o = &opts[i];
	const char *why;
	char name[64];

	switch (o->type) {
	case OPT_T_FLAG:
		*(int *)o->value = 1;
		return 1;
	case OPT_T_STRING:
		*(const char **)o->value = optarg;
		return 1;
	case OPT_T_FN:
		why = o->fn(o->value, o->arg ? optarg : NULL);
		if (!why)
			return 1;
		*code = cli_usage_err(c->name, "%s: '%s' is %s",
				      shown(o, name, sizeof(name)),
				      optarg ? optarg : "", why);
		return 0;
	case OPT_T_HELP:
		opt_help(c, opts, stdout);
		*code = CLI_OK;
		return 0;
	case OPT_T_END:
		break;
	}
	assert(!"an option of no type");
	return 0;
}

/* The operands' count against the command's: 1 when it fits. */
static int check_args(const struct opt_cmd *c, int n, char **args,
		      int *code)
{
	if (n < c->min_args) {
		*code = cli_usage_err(c->name, "%s", c->missing);
		return 0;
	}
	if (c->max_args >= 0 && n > c->max_args) {
		*code = cli_usage_err(c->name, "unexpected argument '%s'",
				      args[c->max_args]);
		return 0;
	}
	return 1;
}

int opt_parse(const struct opt_cmd *c, const struct opt *opts, int argc,
	      char **argv, char ***args, int *code)
{
	struct option longs[OPT_MAX + 1];
	char shorts[3 * OPT_MAX + 2];
	int n = count(opts), ch;

	getopt_tables(opts, n, longs, shorts);
	/* 0, not 1: glibc starts afresh, as a second parse in one process
	 * (cmd_mount_fstab's) needs. */
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		int i = ch == '?' || ch == ':' ? -1 : find(opts, n, ch);

		if (i < 0) {
			*code = getopt_err(c->name, opts, n, ch, argv);
			return -1;
		}
		if (!take(c, opts, i, code))
			return -1;
	}
	*args = argv + optind;
	if (!check_args(c, argc - optind, *args, code))
		return -1;
	return argc - optind;
}

void opt_wrap(FILE *f, const char *text, int col, int indent)
{
	const char *p = text;

	while (*p) {
		size_t len = strcspn(p, " ");

		if (col > indent && col + 1 + (int)len > OPT_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, len, f);
		col += (int)len;
		p += len;
		p += strspn(p, " ");
	}
	fputc('\n', f);
}

/* "  -s, --store DIR   the store ...": the option's names, then its help
 * from OPT_HELP_COL on (on a line of its own when the names reach it). */
static void help_row(const struct opt *o, FILE *f)
{
	char label[96];
	int len;

	if (o->short_name && o->long_name)
		len = snprintf(label, sizeof(label), "  -%c, --%s",
			       o->short_name, o->long_name);
	else if (o->long_name)
		len = snprintf(label, sizeof(label), "      --%s",
			       o->long_name);
	else
		len = snprintf(label, sizeof(label), "  -%c", o->short_name);
	if (o->arg)
		snprintf(label + len, sizeof(label) - (size_t)len, " %s",
			 o->arg);
	opt_row(f, label, o->help);
}

void opt_row(FILE *f, const char *label, const char *help)
{
	int len = (int)strlen(label);

	fputs(label, f);
	if (len + 2 > OPT_HELP_COL) {
		fputc('\n', f);
		len = 0;
	}
	fprintf(f, "%*s", OPT_HELP_COL - len, "");
	opt_wrap(f, help, OPT_HELP_COL, OPT_HELP_COL);
}

void opt_help(const struct opt_cmd *c, const struct opt *opts, FILE *f)
{
	fprintf(f, "Usage: tcfs %s [OPTIONS]%s%s\n\n", c->name,
		c->args[0] ? " " : "", c->args);
	fputs(c->about, f);
	if (c->more)
		c->more(f);
	fputs("\nOptions:\n", f);
	for (const struct opt *o = opts; o->type != OPT_T_END; o++)
		help_row(o, f);
	fprintf(f, "\n%s", c->status);
}
