/*
 * cli: what every tcfs subcommand shares: exit codes, error lines, opening
 * the store, human sizes, JSON output.
 */
#ifndef TCFS_CLI_H
#define TCFS_CLI_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

struct tcfs_store;

enum {
	CLI_OK = 0,	/* did what was asked */
	CLI_FAIL = 1,	/* an error, or (fsck) damage found */
	CLI_USAGE = 2,	/* bad command line */
};

/* Options every command that touches a store takes. */
struct cli_store_opts {
	const char *dir;	/* --store, NULL for the default */
	double wait_s;		/* --wait */
};

/* "tcfs CMD: MESSAGE" on stderr. */
void cli_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Reports a failed library call: its recorded message (which names the
 * file), else what, and strerror(-rc). */
void cli_lib_err(const char *cmd, int rc, const char *what);

/* Usage error: the message, then a pointer to --help; returns CLI_USAGE. */
int cli_usage_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parses --wait's argument; -1 when it is not a number of seconds >= 0. */
double cli_parse_wait(const char *arg);

/* Opens the store, reporting failure; returns CLI_OK or CLI_FAIL. */
int cli_open_store(const char *cmd, const struct cli_store_opts *o,
		   int create, int writer, struct tcfs_store **out);

/* "12.3 MiB"; buf needs 16 bytes. */
const char *cli_human(uint64_t bytes, char *buf, size_t len);

/* Prints a JSON document on stdout and frees it; CLI_FAIL if it could not
 * be built (out of memory). */
int cli_print_json(cJSON *doc);

/* Nanoseconds since the epoch as "2026-11-21 19:15:02" local time. */
const char *cli_time(int64_t ns, char *buf, size_t len);

#endif
