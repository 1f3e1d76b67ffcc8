/*
 * opt: one declarative option table per command, in the spirit of git's
 * parse-options.h and libfuse's fuse_opt.  Each option is written once
 * (its names, its argument, its help line, what it sets); opt_parse reads
 * argv against the table and prints --help from it, so the parser, the
 * help and the tests that hold the man page and the completion to the
 * help cannot drift apart.
 *
 * A command's table lives in its entry point, pointing at its locals:
 *
 *	struct opt opts[] = {
 *		OPT_FLAG('r', "repair", &repair, "repair what is safe"),
 *		CLI_OPTS_COMMON(&co, "print {problems, ...}"),
 *		OPT_END(),
 *	};
 *
 * The table and everything it points at belong to the caller.
 */
#ifndef TCFS_OPT_H
#define TCFS_OPT_H

#include <stdio.h>

enum opt_type {
	OPT_T_END,	/* ends a table */
	OPT_T_FLAG,	/* int *value: set to 1 */
	OPT_T_STRING,	/* const char **value: the argument, in argv */
	OPT_T_FN,	/* fn(value, arg): parses the argument, or acts */
	OPT_T_HELP,	/* prints the help; the command exits 0 */
};

/* Takes arg (NULL for an option without one) into value: NULL, or what
 * is wrong with arg ("not a number of seconds"), for the usage error. */
typedef const char *opt_fn(void *value, const char *arg);

struct opt {
	enum opt_type type;
	int short_name;		/* 'q', or 0 */
	const char *long_name;	/* "quiet", or NULL for a short one only */
	const char *arg;	/* "DIR" when it takes one, else NULL */
	void *value;		/* what it sets, as type says */
	opt_fn *fn;		/* OPT_T_FN's */
	const char *help;	/* one sentence; wrapped when printed */
};

/* The (1 ? v : (T *)0) has the compiler check v's type. */
#define OPT_FLAG(s, l, v, h)                                                 \
	{ OPT_T_FLAG, s, l, NULL, (1 ? (v) : (int *)0), NULL, h }
#define OPT_STRING(s, l, a, v, h)                                            \
	{ OPT_T_STRING, s, l, a, (1 ? (v) : (const char **)0), NULL, h }
#define OPT_FN(s, l, a, v, f, h) { OPT_T_FN, s, l, a, v, f, h }
#define OPT_HELP()                                                           \
	{ OPT_T_HELP, 'h', "help", NULL, NULL, NULL, "show this help" }
#define OPT_END() { OPT_T_END, 0, NULL, NULL, NULL, NULL, NULL }

/* What a command says of itself, around its options (static text). */
struct opt_cmd {
	const char *name;	/* "export": in the usage and every error */
	const char *args;	/* its operands for the usage line: "DEST" */
	int min_args, max_args;	/* how many it takes; max -1: no limit */
	const char *missing;	/* the usage error for too few */
	const char *about;	/* the prose above the options */
	void (*more)(FILE *f);	/* more prose after it, or NULL */
	const char *status;	/* the exit status, below the options */
};

/* Parses argv (argv[0] the command's name) against opts, options and
 * operands in any order ("--" ends the options), and checks the number of
 * operands.  Returns that number, with *args pointing at them (in argv,
 * which it permutes); or -1 when the command is to exit with *code: after
 * --help (CLI_OK) or a usage error, said on stderr (CLI_USAGE). */
int opt_parse(const struct opt_cmd *c, const struct opt *opts, int argc,
	      char **argv, char ***args, int *code);

/* The help: usage, about, the options (from the table), exit status. */
void opt_help(const struct opt_cmd *c, const struct opt *opts, FILE *f);

/* One row of a help's table: label ("  -q, --quiet"), then help wrapped
 * from the column the options' help starts at (on a line of its own when
 * the label reaches it). */
void opt_row(FILE *f, const char *label, const char *help);

/* Writes text, words wrapped to 79 columns, each line but the first
 * indented by indent columns (the first starts at column col). */
void opt_wrap(FILE *f, const char *text, int col, int indent);

#endif
