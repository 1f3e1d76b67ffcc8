/* cli: what the subcommands share: options, errors, sizes, times, JSON. */
#include "cli.h"

#include <assert.h>
#include <errno.h>
#include <pwd.h>
#include <libmount.h>
#include <limits.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/base/json.h"
#include "index/maint/recover.h"
#include "index/model/report.h"
#include "index/store/store.h"
#include "index/base/utf8.h"
#include "progress.h"

/* "tcfs CMD: MESSAGE" with the message made printable: it names files
 * from caches that anyone may have written. */
__attribute__((format(printf, 2, 0))) static void err_line(const char *cmd,
							   const char *fmt,
							   va_list ap)
{
	char msg[4096], shown[4 * sizeof(msg)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	progress_clear_line();	/* the message takes the line */
	fprintf(stderr, "tcfs %s: %s\n", cmd,
		tcfs_utf8_printable(msg, shown, sizeof(shown)));
}

void cli_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_line(cmd, fmt, ap);
	va_end(ap);
}

void cli_lib_err(const char *cmd, int rc, const char *what)
{
	const char *msg = tcfs_err_msg();

	if (msg[0])
		cli_err(cmd, "%s", msg);
	else
		cli_err(cmd, "%s: %s", what, strerror(-rc));
	tcfs_err_clear();
}

int cli_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_line(cmd, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'tcfs %s --help'.\n", cmd);
	return CLI_USAGE;
}

double cli_parse_wait(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || v < 0 || v > 86400)
		return -1;
	return v;
}

const char *cli_opt_seconds(void *value, const char *arg)
{
	double v = cli_parse_wait(arg);

	if (v < 0)
		return "not a number of seconds";
	*(double *)value = v;
	return NULL;
}

const char *cli_opt_time(void *value, const char *arg)
{
	int64_t v = cli_parse_since(arg);

	if (v < 0)
		return "not a time (90s, 30m, 2h, 7d, YYYY-MM-DD[ HH:MM[:SS]], "
		       "@SECONDS)";
	*(int64_t *)value = v;
	return NULL;
}

const char *cli_opt_count(void *value, const char *arg)
{
	return cli_parse_count(arg, value) < 0 ? "not a count" : NULL;
}

/* Whether dir holds a store: what a missing one is told from. */
static int store_there(const char *dir)
{
	char path[PATH_MAX + 16];
	struct stat st;

	snprintf(path, sizeof(path), "%s/index.db", dir);
	return stat(path, &st) == 0;
}

/* What a writer does while another process holds the store's lock.
 * A mount holds it until unmounted, so waiting for one is no use: the
 * command fails at once, naming the mount point.  Any other holder is
 * waited for, saying so at once: a wait in silence looks hung. */
struct busy {
	const char *cmd, *store;
	double wait_s;
};

static int busy(void *ctx, const char *holder)
{
	const struct busy *b = ctx;
	char store[PATH_MAX], point[PATH_MAX];

	if (cli_find_mount(b->store, NULL, store, point) == 0)
		return tcfs_err_set(-EBUSY, "store %s is mounted at %s, and "
				    "its daemon is the store's writer until "
				    "tcfs umount", store, point);
	tcfs_err_clear();	/* another user's mount proves nothing */
	if (b->wait_s > 0)
		cli_err(b->cmd, "%s: waiting up to %.0f s for another writer, "
			"%s", b->store, b->wait_s, holder);
	return 0;
}

const char *cli_human(uint64_t bytes, char *buf, size_t len)
{
	return tcfs_report_bytes(bytes, buf, len);
}

int cli_print_json(cJSON *doc)
{
	if (tcfs_json_print(doc, stdout) < 0) {
		fprintf(stderr, "tcfs: out of memory building JSON\n");
		return CLI_FAIL;
	}
	return CLI_OK;
}

int cli_mount_sync(struct tcfs_store *s, char *mount)
{
	char store[PATH_MAX], point[PATH_MAX], path[PATH_MAX + 16];
	struct stat st;
	int rc = cli_find_mount(tcfs_store_path(s), NULL, store, point);

	if (rc < 0)
		point[0] = '\0';
	if (mount)
		snprintf(mount, PATH_MAX, "%s", point);
	if (!point[0])
		return rc == -EPERM ? rc : 0;
	/* A stat of .tcfs/sync commits what the mount holds (an older mount,
	 * without it, commits at a stat of .tcfs/stats, which it renders). */
	snprintf(path, sizeof(path), "%s/.tcfs/sync", point);
	if (stat(path, &st) < 0) {
		snprintf(path, sizeof(path), "%s/.tcfs/stats", point);
		(void)stat(path, &st);
	}
	return 0;
}

const char *cli_time(int64_t ns, char *buf, size_t len)
{
	return tcfs_report_time(ns, buf, len);
}

int cli_parse_count(const char *arg, uint64_t *out)
{
	char *end;

	if (!arg[0] || arg[0] < '0' || arg[0] > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(arg, &end, 10);
	return *end || errno ? -EINVAL : 0;
}

int64_t cli_parse_since(const char *arg)
{
	static const struct {
		char unit;
		int64_t seconds;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	struct tm tm = { 0 };
	const char *end;
	char *num_end;
	double v;

	if (arg[0] == '@') {
		v = strtod(arg + 1, &num_end);
		return num_end != arg + 1 && !*num_end && v >= 0
			       ? (int64_t)(v * 1e9) : -1;
	}
	v = strtod(arg, &num_end);
	if (num_end != arg && v >= 0 && num_end[0] && !num_end[1]) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (num_end[0] == units[i].unit)
				return (int64_t)time(NULL) * 1000000000 -
				       (int64_t)(v * (double)units[i].seconds *
						 1e9);
		return -1;
	}
	tm.tm_isdst = -1;
	end = strptime(arg, "%Y-%m-%d %H:%M:%S", &tm);
	if (!end || *end) {
		memset(&tm, 0, sizeof(tm));
		tm.tm_isdst = -1;
		end = strptime(arg, "%Y-%m-%d %H:%M", &tm);
	}
	if (!end || *end) {
		memset(&tm, 0, sizeof(tm));
		tm.tm_isdst = -1;
		end = strptime(arg, "%Y-%m-%d", &tm);
	}
	if (!end || *end)
		return -1;
	return (int64_t)mktime(&tm) * 1000000000;
}

/* The mount table as the kernel has it: libmount decodes the octal
 * escapes (\040 for a space, \134 for a backslash, ...) that mountinfo
 * writes.  Read from /proc/self/mountinfo itself, not by way of
 * mnt_table_parse_mtab, which would take a regular /etc/mtab (or
 * $LIBMOUNT_MTAB) instead: a mount missing there is still a mount. */
static int mount_table(struct libmnt_table **tb)
{
	int rc;

	*tb = mnt_new_table();
	if (!*tb)
		return -ENOMEM;
	rc = mnt_table_parse_file(*tb, "/proc/self/mountinfo");
	return rc < 0 ? rc : 0;
}

/* The uid that made a fuse mount (its user_id option), or -1. */
static long long mount_user(struct libmnt_fs *fs)
{
	const char *opts = mnt_fs_get_fs_options(fs);
	char num[24], *v, *end;
	size_t n;
	long long uid;

	if (!opts || mnt_optstr_get_option(opts, "user_id", &v, &n) != 0 ||
	    n == 0 || n >= sizeof(num))
		return -1;
	memcpy(num, v, n);
	num[n] = '\0';
	uid = strtoll(num, &end, 10);
	return *end || num[0] == '-' ? -1 : uid;
}

/* Whether a fuse.tcfs mount of src at dst may be tcfs's mount of that
 * store: any user may mount a FUSE file system of that type with any
 * source (-o fsname=), but only root and the store's owner can serve the
 * store.  A mount found by where the caller is (callers) must be the
 * caller's or root's too: another user's mount over a path the caller
 * walks into is no reason to use that user's store.  0, or -EPERM with a
 * message naming the mount and its user. */
static int mount_trusted(struct libmnt_fs *fs, const char *src,
			 const char *dst, int callers)
{
	long long uid = mount_user(fs);
	struct stat st;

	if (callers && uid != 0 && uid != (long long)getuid())
		return tcfs_err_set(-EPERM, "%s: a mount of %s by uid %lld, "
				    "neither root nor you: its store is not "
				    "taken for yours", dst, src, uid);
	if (uid == 0 || (uid > 0 && stat(src, &st) == 0 &&
			 (long long)st.st_uid == uid))
		return 0;
	return tcfs_err_set(-EPERM, "%s: a mount of %s by uid %lld, which is "
			    "neither root nor the store's owner: not tcfs's "
			    "mount of that store, left alone", dst, src, uid);
}

/* How a mount of store src at dst answers a search (want): below 0 not
 * at all, else the higher the better. */
typedef long mount_score(const char *src, const char *dst, const char *want);

/* The trusted fuse.tcfs mount that scores best (the first of equals)
 * into store and point (PATH_MAX bytes each).  An impostor's mount is
 * passed over: the store's own may follow.  0, -ENOENT, or -EPERM (with
 * the message of the last impostor) when only impostors matched. */
static int mount_search(mount_score *score, const char *want, int callers,
			char *store, char *point)
{
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_table *tb;
	struct libmnt_fs *fs;
	int rc = mount_table(&tb), impostor = 0;
	long best = -1;

	if (rc == 0)
		rc = it ? -ENOENT : -ENOMEM;
	while (rc == -ENOENT && mnt_table_next_fs(tb, it, &fs) == 0) {
		const char *type = mnt_fs_get_fstype(fs);
		const char *src = mnt_fs_get_source(fs);
		const char *dst = mnt_fs_get_target(fs);
		long sc;

		if (!type || !src || !dst || strcmp(type, "fuse.tcfs") != 0 ||
		    strlen(src) >= PATH_MAX || strlen(dst) >= PATH_MAX)
			continue;
		sc = score(src, dst, want);
		if (sc <= best)
			continue;
		if (mount_trusted(fs, src, dst, callers) < 0) {
			impostor = 1;
			continue;
		}
		best = sc;
		memcpy(store, src, strlen(src) + 1);
		memcpy(point, dst, strlen(dst) + 1);
	}
	mnt_free_iter(it);
	mnt_unref_table(tb);
	if (rc != -ENOENT)
		return rc;
	if (best >= 0)
		tcfs_err_clear();	/* an impostor's message, now moot */
	return best >= 0 ? 0 : impostor ? -EPERM : -ENOENT;
}

static long store_is(const char *src, const char *dst, const char *want)
{
	(void)dst;
	return strcmp(src, want) == 0 ? 0 : -1;
}

static long point_is(const char *src, const char *dst, const char *want)
{
	(void)src;
	return strcmp(dst, want) == 0 ? 0 : -1;
}

/* A mount point at or above want: the deepest (a mount within a mount
 * holds what is below it). */
static long point_holds(const char *src, const char *dst, const char *want)
{
	size_t n = strlen(dst);

	(void)src;
	if (strcmp(dst, "/") == 0)
		return 1;
	return strncmp(dst, want, n) == 0 &&
	       (want[n] == '/' || want[n] == '\0') ? (long)n : -1;
}

int cli_find_mount(const char *want_store, const char *want_point,
		   char *store, char *point)
{
	const char *w = want_store ? want_store : want_point;
	char want[PATH_MAX];

	assert(w);
	if (!w)
		return -EINVAL;
	if (!realpath(w, want))
		snprintf(want, sizeof(want), "%s", w);
	return mount_search(want_store ? store_is : point_is, want, 0, store,
			    point);
}

/* --store given before the command (tcfs --store DIR CMD, as git -C);
 * a command's own --store comes later and wins. */
static const char *store_first;

void cli_store_first(const char *dir)
{
	store_first = dir;
}

const char *cli_store_named(const struct cli_store_opts *o)
{
	return o->dir ? o->dir : store_first;
}

/* path made absolute (against the working directory) and clean of "//",
 * "." and ".." by its text alone: a stat of each part would be a request
 * to the mount that holds it.  0, or -ENAMETOOLONG. */
static int path_clean(const char *path, char *out)
{
	char buf[PATH_MAX], *save;
	size_t used = 0;

	if (path[0] == '/')
		snprintf(buf, sizeof(buf), "%s", path);
	else if (!getcwd(buf, sizeof(buf)) ||
		 strlen(buf) + 1 + strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	else
		strcat(strcat(buf, "/"), path);
	for (char *p = strtok_r(buf, "/", &save); p;
	     p = strtok_r(NULL, "/", &save)) {
		if (strcmp(p, ".") == 0)
			continue;
		if (strcmp(p, "..") == 0) {
			while (used > 0 && out[--used] != '/')
				;
			continue;
		}
		used += (size_t)snprintf(out + used, PATH_MAX - used, "/%s", p);
		if (used >= PATH_MAX)
			return -ENAMETOOLONG;
	}
	if (used == 0)
		out[used++] = '/';
	out[used] = '\0';
	return 0;
}

/* The store of the caller's (or root's) mount at or above path, by the
 * mount table; path's symlinks resolved only when its text names none. */
static int mount_holding(const char *path, char *store, char *point)
{
	char want[PATH_MAX];

	if (path_clean(path, want) == 0 &&
	    mount_search(point_holds, want, 1, store, point) == 0)
		return 0;
	if (realpath(path, want) &&
	    mount_search(point_holds, want, 1, store, point) == 0)
		return 0;
	return -ENOENT;
}

/* The store of the mount the caller works in: the one that holds the
 * working directory, else the one Triton's (or Inductor's) cache dir
 * names, as the program the caller runs would use it. */
static int store_of_mount(char *store, char *point)
{
	static const char *const vars[] = { "TRITON_CACHE_DIR",
					    "TORCHINDUCTOR_CACHE_DIR" };
	char cwd[PATH_MAX];
	int rc = -ENOENT;

	if (getcwd(cwd, sizeof(cwd)))
		rc = mount_holding(cwd, store, point);
	for (size_t i = 0; rc < 0 && i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && v[0])
			rc = mount_holding(v, store, point);
	}
	tcfs_err_clear();	/* another user's mount, passed over */
	return rc;
}

/* --store DIR: a store, or the mount point of one (the caller's, root's
 * or the store owner's: cli_find_mount). */
static int store_given(const char *given, char *dir)
{
	char point[PATH_MAX];
	int rc = cli_find_mount(NULL, given, dir, point);

	if (rc == -EPERM && !store_there(given))
		return rc;
	tcfs_err_clear();
	if (rc < 0 && strlen(given) >= PATH_MAX)
		return tcfs_err_set(-ENAMETOOLONG, "%s: path too long", given);
	if (rc < 0)
		snprintf(dir, PATH_MAX, "%s", given);
	return 0;
}

int cli_store_dir(const struct cli_store_opts *o, char *dir)
{
	const char *given = cli_store_named(o);
	const char *env = getenv("TCFS_STORE");
	char point[PATH_MAX];
	int rc = 0;

	if (given) {
		rc = store_given(given, dir);
	} else if (env && env[0]) {
		rc = tcfs_store_default_dir(dir, PATH_MAX);
		if (rc == 0)
			fprintf(stderr, "tcfs: store %s (from $TCFS_STORE)\n",
				dir);
	} else if (store_of_mount(dir, point) == 0) {
		fprintf(stderr, "tcfs: store %s (mounted at %s)\n", dir,
			point);
	} else {
		rc = tcfs_store_default_dir(dir, PATH_MAX);
	}
	return rc;
}

int cli_open_store(const char *cmd, const struct cli_store_opts *o,
		   int create, int writer, struct tcfs_store **out)
{
	struct tcfs_store_opts so = { 0 };
	struct busy b = { cmd, NULL, o->wait_s };
	char dir[PATH_MAX];
	int rc;

	tcfs_err_clear();
	rc = cli_store_dir(o, dir);
	if (rc < 0) {
		cli_lib_err(cmd, rc, "store");
		return CLI_FAIL;
	}
	so.dir = dir;
	so.create = create;
	so.writer = writer;
	so.wait_s = o->wait_s;
	so.recover = tcfs_recover;
	b.store = dir;
	so.busy = busy;
	so.busy_ctx = &b;
	rc = tcfs_store_open(&so, out);
	if (rc == -ENOENT && !create && !store_there(dir)) {
		tcfs_err_clear();
		cli_err(cmd, "%s: no tcfs store here: tcfs mount or tcfs import "
			"creates one", dir);
		return CLI_FAIL;
	}
	if (rc < 0) {
		cli_lib_err(cmd, rc, dir);
		return CLI_FAIL;
	}
	return CLI_OK;
}

int cli_path_join(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= len)
		return tcfs_err_set(-ENAMETOOLONG, "%s/%s: path too long", dir,
				    name);
	return 0;
}

const char *cli_tmp_dir(void)
{
	const char *t = getenv("TMPDIR");

	return t && t[0] ? t : "/var/tmp";
}

int cli_user_uid(const char *name, int64_t *uid)
{
	const struct passwd *p = getpwnam(name);

	if (!p)
		return -ENOENT;
	*uid = p->pw_uid;
	return 0;
}

const char *cli_opt_user(void *value, const char *arg)
{
	int64_t *uid = value;
	uint64_t n;

	if (cli_parse_count(arg, &n) == 0 && n <= UINT32_MAX) {
		*uid = (int64_t)n;
		return NULL;
	}
	return cli_user_uid(arg, uid) == 0 ? NULL : "no such user";
}

void cli_pad(const char *s, int width)
{
	size_t w = tcfs_utf8_width(s);

	fputs(s, stdout);
	for (; (int)w < width; w++)
		putchar(' ');
}

int cli_term_width(void)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;
	char *end;
	long v;

	if (!isatty(STDOUT_FILENO))
		return 0;
	if (env && *env) {
		v = strtol(env, &end, 10);
		if (!*end && v > 0 && v < 10000)
			return (int)v;
	}
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}
