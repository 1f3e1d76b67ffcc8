/*
 * cli: what every tcfs subcommand shares: exit codes, error lines, the
 * common options, opening the store, human sizes, JSON output.
 */
#ifndef TCFS_CLI_H
#define TCFS_CLI_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "index/store/store.h"
#include "index/base/utf8.h"
#include "opt.h"

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

/* What most commands take: --store, --wait (writers), --json, --since. */
struct cli_common {
	struct cli_store_opts store;
	int json;
	int64_t since_ns;	/* --since, for the commands that take it */
};

#define CLI_COMMON_INIT { { NULL, TCFS_STORE_WAIT_S }, 0, 0 }

/* The shared fragments of the commands' option tables (opt.h), each
 * option written here once.  Every command ends its table with
 * CLI_OPTS_COMMON: --store, --json (its help says what the JSON holds)
 * and --help. */
#define CLI_OPTS_COMMON(co, json_help)                                       \
	CLI_OPT_STORE(co), OPT_FLAG(0, "json", &(co)->json, json_help),      \
	OPT_HELP()
#define CLI_OPT_STORE(co)                                                    \
	CLI_OPT_STORE_AS(co, "the store, or the mount point of one "         \
			 "(default: $TCFS_STORE, else that of your tcfs "    \
			 "mount you are in, or TRITON_CACHE_DIR is in, else "\
			 "$XDG_DATA_HOME/tcfs, else ~/.local/share/tcfs)")
#define CLI_OPT_STORE_AS(co, help)                                           \
	OPT_STRING('s', "store", "DIR", &(co)->store.dir, help)
/* The commands that write the store: how long to wait for its lock. */
#define CLI_OPT_WAIT(co)                                                     \
	OPT_FN('w', "wait", "SECS", &(co)->store.wait_s, cli_opt_seconds,    \
	       "wait this long for another writer (default 10)")
#define CLI_OPT_SINCE(co, help)                                              \
	OPT_FN(0, "since", "T", &(co)->since_ns, cli_opt_time, help)
#define CLI_OPT_QUIET(q) OPT_FLAG('q', "quiet", q, "print nothing but errors")
/* The kernel filters of the commands that select kernels. */
#define CLI_OPTS_FILTER(f)                                                   \
	OPT_STRING('n', "name", "GLOB", &(f)->name,                          \
		   "kernels whose name matches GLOB"),                       \
	OPT_STRING('b', "backend", "NAME", &(f)->backend,                    \
		   "kernels for this backend (cuda, hip, ...)"),             \
	OPT_STRING('a', "arch", "ARCH", &(f)->arch,                          \
		   "kernels for this arch (90, sm90, gfx942, ...), or this "  \
		   "target as list shows it (cuda-90, hip-gfx942)")

/* opt_fn parsers (opt.h) for the tables.  seconds: a double >= 0 (as
 * --wait); time: an int64_t, as cli_parse_since; count: a uint64_t, as
 * cli_parse_count. */
const char *cli_opt_seconds(void *value, const char *arg);
const char *cli_opt_time(void *value, const char *arg);
const char *cli_opt_count(void *value, const char *arg);

/* "tcfs CMD: MESSAGE" on stderr, the message made printable
 * (tcfs_utf8_printable): it may name anything a cache holds. */
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

/* --store DIR given before the command (tcfs --store DIR CMD): the store
 * of every command that names none of its own.  dir stays the caller's. */
void cli_store_first(const char *dir);
/* The store the command line names (its own --store, else the one before
 * the command), or NULL: for mount, which takes no mount point for one. */
const char *cli_store_named(const struct cli_store_opts *o);

/* The store's directory into dir (PATH_MAX bytes), found in this order:
 * --store (a store, or a tcfs mount point: its store); $TCFS_STORE; the
 * caller's (or root's) tcfs mount that holds the working directory, else
 * the one TRITON_CACHE_DIR or TORCHINDUCTOR_CACHE_DIR is in; the default
 * (tcfs_store_default_dir).  One found by $TCFS_STORE or a mount is
 * named on stderr.  0, or a negative errno with a message (tcfs_err). */
int cli_store_dir(const struct cli_store_opts *o, char *dir);

/* Opens the store cli_store_dir finds, reporting failure; returns CLI_OK
 * or CLI_FAIL. */
int cli_open_store(const char *cmd, const struct cli_store_opts *o,
		   int create, int writer, struct tcfs_store **out);

/* "12.3 MiB"; buf needs 16 bytes. */
const char *cli_human(uint64_t bytes, char *buf, size_t len);
/* Prints printable text s, then spaces to width columns (utf8.h), as
 * printf's %-*s would were every character one byte. */
void cli_pad(const char *s, int width);
/* The columns of the terminal stdout is, or 0 when it is none (a pipe,
 * a file: rows are then never cut).  $COLUMNS first, as ls takes it. */
int cli_term_width(void);

/* Prints a JSON document on stdout and frees it; CLI_FAIL if it could not
 * be built (out of memory). */
int cli_print_json(cJSON *doc);

/* --since: "90s", "30m", "2h", "7d" ago, or "YYYY-MM-DD[ HH:MM[:SS]]"
 * local time, or "@SECONDS" since the epoch.  -1 when unparsable. */
int64_t cli_parse_since(const char *arg);

/* A user's uid by name: 0, or -ENOENT. */
int cli_user_uid(const char *name, int64_t *uid);
/* opt_fn for --user: a user's name or a uid, into an int64_t. */
const char *cli_opt_user(void *value, const char *arg);

/* A count: decimal digits only.  0, or -EINVAL. */
int cli_parse_count(const char *arg, uint64_t *out);

/* Finds a tcfs mount in /proc/self/mountinfo by its store or by its mount
 * point (give one, the other NULL) and writes both, absolute, into store
 * and point (PATH_MAX bytes each).  Only a mount made by root or by the
 * store's owner (its user_id) counts.  -ENOENT when there is none,
 * -EPERM (with a message naming the mount and its user) when the only
 * ones are another user's. */
int cli_find_mount(const char *want_store, const char *want_point,
		   char *store, char *point);

/* When a mount serves store s, has it commit the probes and the writes
 * it holds (a stat of its .tcfs/stats), so that what is read next counts
 * every probe answered so far and sees every file closed.  Writes the mount point into mount (PATH_MAX bytes;
 * "" when not mounted) unless it is NULL.  0, or -EPERM (with a message)
 * when only another user's mount claims the store (cli_find_mount). */
int cli_mount_sync(struct tcfs_store *s, char *mount);

/* dir/name into buf (len bytes): 0, or -ENAMETOOLONG with a message. */
int cli_path_join(char *buf, size_t len, const char *dir, const char *name);

/* Where commands stage what they unpack or pack: $TMPDIR, else /var/tmp
 * (a disk, where an image's gigabytes fit better than in a tmpfs). */
const char *cli_tmp_dir(void);

/* Nanoseconds since the epoch as "2026-11-21 19:15:02" local time. */
const char *cli_time(int64_t ns, char *buf, size_t len);

#endif
