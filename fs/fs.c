/*
 * fs: mounting a store, serving it, and coming down cleanly.
 *
 * Without -f the command forks: the child opens the store, mounts and
 * tells the parent through a pipe that the mount serves (or why it could
 * not), so `tcfs mount` returns only once the mount works, and any error
 * reaches the caller's terminal.  The store is opened in the child because
 * SQLite's locks do not survive a fork.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "fs.h"
#include "index/base/addr.h"
#include "index/blob/cas.h"
#include "index/store/config.h"
#include "index/base/err.h"
#include "index/base/text.h"
#include "index/model/group.h"
#include "index/model/kernel.h"
#include "index/maint/recover.h"
#include "index/store/store.h"
#include "index/base/utf8.h"
#include "index/remote/config.h"
#include "index/remote/option.h"
#include "index/remote/settings.h"
#include "priv.h"

/* The index dropped changes already answered for (it could not commit
 * them: a full disk despite the room blobs leave it, cas.c).  The
 * kernel's caches still show them, so going on would serve a tree that is
 * not there: stop as if killed, which keeps every kernel that had landed
 * (renames commit, dir.c), and leave the mount dead (ENOTCONN until
 * fusermount3 -u) rather than unmount it: a cache that silently became
 * the empty directory beneath would take writes that nobody keeps. */
static void fs_lost(void *ctx, int rc)
{
	struct tcfs_fs *fs = ctx;

	syslog(LOG_CRIT, "tcfs: %s: uncommitted changes lost (%s): "
	       "stopping the mount", fs->root, strerror(-rc));
	fs->failed = 1;
	if (!fs->se)
		return;
	fuse_session_exit(fs->se);
	/* libfuse 3.14's loop sleeps until one of its workers leaves or a
	 * signal comes, and this may be neither (the busy-poll reader, the
	 * flusher): wake it as its own handler would. */
	if (atomic_load(&fs->looping) && !pthread_equal(pthread_self(), fs->loop))
		pthread_kill(fs->loop, SIGTERM);
}

/* Where errors and warnings go: the caller's terminal until the mount
 * serves, then syslog (the daemon has no terminal).  The pipe carries a
 * line for each, and "ok" last when the mount serves. */
struct report {
	int fd;			/* pipe to the waiting parent, or -1 */
};

/* An error (LOG_ERR) or a warning (LOG_WARNING), said where r says. */
__attribute__((format(printf, 3, 4))) static void say_at(struct report *r,
							 int prio,
							 const char *fmt,
							 ...)
{
	char raw[1200], msg[4 * sizeof(raw)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* It names paths that may hold anything a terminal acts on. */
	tcfs_utf8_printable(raw, msg, sizeof(msg));
	/* In the foreground syslog copies what it logs to stderr too
	 * (LOG_PERROR): the terminal gets the line once, as from the
	 * commands. */
	if (r->fd >= 0)
		dprintf(r->fd, "tcfs mount: %s\n", msg);
	else
		fprintf(stderr, "tcfs mount: %s\n", msg);
	/* A warning stays in the log of the mount that goes on serving
	 * (in the foreground, LOG_PERROR's copy is the terminal's line). */
	if (r->fd >= 0 && prio == LOG_WARNING)
		syslog(prio, "%s", msg);
}

#define say(r, ...) say_at(r, LOG_ERR, __VA_ARGS__)

static int check_mountpoint(const char *mp, const char *store, char *root,
			    int nonempty, struct report *r)
{
	struct stat st;
	int fd;

	if (!realpath(mp, root) || stat(root, &st) < 0) {
		say(r, "%s: %s", mp, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		say(r, "%s: not a directory", mp);
		return -1;
	}
	/* Group files name their children by path, in UTF-8 JSON. */
	if (tcfs_group_root_ok(root) < 0) {
		say(r, "%s: the mount point's path is not valid UTF-8, so group "
		       "files could not name the files under it", mp);
		return -1;
	}
	/* Mounted over, the store would be hidden, and its files written
	 * through the mount into itself. */
	if (fs_lies_within(store, root)) {
		say(r, "%s: the store %s lies inside the mount point; keep it "
		       "elsewhere (--store DIR)", mp, store);
		return -1;
	}
	fd = open(root, O_RDONLY | O_DIRECTORY);
	if (fd >= 0 && !nonempty) {
		DIR *d = fdopendir(fd);
		struct dirent *de;
		int empty = 1;

		while (d && (de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				empty = 0;
		if (d)
			closedir(d);
		else
			close(fd);
		if (!empty) {
			say(r, "%s: mount point is not empty (its files would "
			       "be hidden; import them with tcfs import, or "
			       "pass -o nonempty)", mp);
			return -1;
		}
	} else if (fd >= 0) {
		close(fd);
	}
	return 0;
}

/* Whether a temp name in dir is a put cut off: Triton's tmp.pid_* in a
 * key dir, or Inductor's tmp.* in a cache root (the mount root, or a dir
 * holding key dirs). */
static int cut_off(struct tcfs_fs *fs, const struct tcfs_node *t)
{
	struct tcfs_node dir, *kids = NULL;
	int key = 0, root = t->parent == TCFS_ROOT_INO;
	size_t nk = 0;

	if (!root && tcfs_ns_get(fs->store, t->parent, &dir) == 0 &&
	    tcfs_kernel_key_dir_at(fs->store, dir.parent, dir.name, &key) < 0)
		key = 0;
	if (key)
		return tcfs_name_is_temp(t->name, 0);
	/* A few kids tell a cache root: its key dirs sort among them. */
	if (!root && tcfs_ns_list(fs->store, t->parent, 0, 64, &kids, &nk) == 0)
		for (size_t i = 0; !root && i < nk; i++)
			root = kids[i].kind == TCFS_DIR &&
			       tcfs_name_is_key(kids[i].name);
	free(kids);
	return root && tcfs_name_is_temp(t->name, 1);
}

/* Temp entries of puts cut off when the last daemon stopped or died:
 * nobody can finish them, and nothing half-written may stay visible. */
static void recover(struct tcfs_fs *fs)
{
	struct tcfs_node *temps = NULL;
	size_t n = 0;

	if (tcfs_ns_temps(fs->store, &temps, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (cut_off(fs, &temps[i]))
			tcfs_ns_remove_tree(fs->store, temps[i].parent,
					    temps[i].name);
	free(temps);
}

/* Another process holds the store's lock: the caller's hook may give
 * up at once (a mount holds it); else the wait is said as it starts. */
struct opening {
	const struct tcfs_fs_opts *o;
	struct report *r;
};

static int busy(void *ctx, const char *holder)
{
	const struct opening *op = ctx;
	const struct tcfs_fs_opts *o = op->o;
	int rc = o->busy ? o->busy(o->busy_ctx, holder) : 0;

	if (rc == 0 && o->wait_s > 0)
		say(op->r, "%s: waiting up to %.0f s for another writer, %s",
		    o->store, o->wait_s, holder);
	return rc;
}

static int open_store(struct tcfs_fs *fs, const struct tcfs_fs_opts *o,
		      struct report *r)
{
	struct opening op = { o, r };
	struct tcfs_store_opts so = { o->store, 1, 1, o->wait_s, 1,
				      o->no_fsync ? TCFS_DURABLE_NONE
						  : TCFS_DURABLE_BATCH,
				      tcfs_recover, busy, &op };
	const struct tcfs_durable_report *rec;
	int rc;

	tcfs_err_clear();
	rc = tcfs_store_open(&so, &fs->store);
	if (rc == 0) {
		rec = tcfs_store_recovery(fs->store);
		if (rec->lost)
			syslog(LOG_WARNING, "%s: the last writer did not stop "
			       "cleanly, and %llu of its newest blobs are "
			       "missing or damaged: removed the %llu files "
			       "that named them (their kernels will be "
			       "recompiled)", o->store,
			       (unsigned long long)rec->lost,
			       (unsigned long long)rec->dropped);
		if (rec->unreadable)
			syslog(LOG_WARNING, "%s: %llu of the newest blobs "
			       "cannot be read; see tcfs fsck", o->store,
			       (unsigned long long)rec->unreadable);
	}
	if (rc == 0)
		rc = tcfs_cas_put_buf(tcfs_store_cas(fs->store), "", 0,
				      &fs->empty, NULL);
	if (rc < 0) {
		say(r, "%s", tcfs_err_msg()[0] ? tcfs_err_msg()
					       : strerror(-rc));
		return -1;
	}
	recover(fs);
	tcfs_store_defer(fs->store, fs_lost, fs);
	return 0;
}

/* tcfs's own -o options, taken out before libfuse sees the rest. */
struct own_opts {
	int noviews;
	int binary_only;
	int store_binary_only;
	char *max_size;		/* -o max_size=SIZE (fuse_opt's copy) */
	char *trust;		/* -o trust=USER:...:@GROUP (its copy) */
	int others;		/* -o allow_other: many users */
	char *user_max_size;	/* -o user_max_size=SIZE (the same) */
	const char *root;	/* the mount point, for -o redirect */
	struct fs_redirects *redirects;	/* -o redirect=NAME:DIR, each */
	int bad_redirect;	/* one was refused (tcfs_err_msg says why) */
	char *metrics;		/* -o metrics=[ADDR:]PORT (its copy) */
	struct tcfs_addr metrics_at;	/* it read, or the store's */
	int has_metrics;
	struct tcfs_remote_cfg remote;	/* -o remote=URL, remote_* */
	int has_remote;
	char *rest;		/* the -o items that are not the remote's */
};

enum { OWN_REDIRECT };

static const struct fuse_opt own_specs[] = {
	{ "noviews", offsetof(struct own_opts, noviews), 1 },
	{ "binary_only", offsetof(struct own_opts, binary_only), 1 },
	{ "store_binary_only", offsetof(struct own_opts, store_binary_only), 1 },
	{ "max_size=%s", offsetof(struct own_opts, max_size), 0 },
	{ "trust=%s", offsetof(struct own_opts, trust), 0 },
	{ "user_max_size=%s", offsetof(struct own_opts, user_max_size), 0 },
	{ "metrics=%s", offsetof(struct own_opts, metrics), 0 },
	FUSE_OPT_KEY("redirect=", OWN_REDIRECT),
	FUSE_OPT_KEY("redirect", OWN_REDIRECT),	/* with no value: refused */
	FUSE_OPT_END,
};

/* What tcfs mount --help says of each of own_specs (tcfs_fs_opt_doc),
 * in the order it lists them. */
static const struct {
	const char *name, *arg, *help;
} own_docs[] = {
	{ "noviews", NULL, "the root lists only the cache's own entries, no "
	  "by-name/, by-arch/ or binary-only/ (.tcfs/ still answers)" },
	{ "binary_only", NULL, "the root is the binary-only view: the cache "
	  "without its IR files" },
	{ "store_binary_only", NULL, "IR files written are dropped as they "
	  "land, never stored" },
	{ "max_size", "SIZE", "as tcfs config max-size, for this mount" },
	{ "user_max_size", "SIZE", "as tcfs config user-max-size, for this "
	  "mount" },
	{ "redirect", "NAME:DIR", "group files of kernel NAME name "
	  "DIR/NAME.json and DIR/NAME.hsaco or .cubin, those DIR has when "
	  "read, as AMD aiter's redirect; once per name, DIR made absolute; "
	  "one whose DIR holds none of NAME's files is warned of" },
	{ "metrics", "[ADDR:]PORT", "serve GET /metrics over HTTP, the bytes "
	  "of .tcfs/metrics.prom, for Prometheus to scrape, on ADDR "
	  "(127.0.0.1 unless given; as tcfs config metrics, for this "
	  "mount)" },
	{ "trust", "USER[:USER...][:@GROUP...]", "with allow_other: the users "
	  "and groups whose kernels are shared, beside root and the mount's "
	  "owner" },
};
#define NOWN_DOCS (sizeof(own_docs) / sizeof(own_docs[0]))

int tcfs_fs_opt_doc(size_t i, char *name, size_t len, const char **arg,
		    const char **help)
{
	if (i >= NOWN_DOCS)
		return tcfs_remote_opt_doc(i - NOWN_DOCS, name, len, arg, help);
	snprintf(name, len, "%s", own_docs[i].name);
	*arg = own_docs[i].arg;
	*help = own_docs[i].help;
	return 0;
}

/* Whether every option of own_specs has its line in own_docs: the help is
 * printed from those, the parsing done with these. */
static int own_documented(void)
{
	for (const struct fuse_opt *o = own_specs; o->templ; o++) {
		size_t n = strcspn(o->templ, "="), i = 0;

		while (i < NOWN_DOCS && (strlen(own_docs[i].name) != n ||
					 strncmp(own_docs[i].name, o->templ, n)))
			i++;
		if (i == NOWN_DOCS)
			return 0;
	}
	return 1;
}

/* fuse_opt's callback: -o redirect may come many times (a template would
 * keep only the last), and its DIR is made absolute now, from the
 * caller's working directory.  Every other option goes to libfuse. */
static int own_opt(void *data, const char *arg, int key,
		   struct fuse_args *outargs)
{
	struct own_opts *own = data;
	const char *spec = arg + strlen("redirect");

	(void)outargs;
	if (key != OWN_REDIRECT)
		return 1;
	spec += *spec == '=';
	if (fs_redirects_add(&own->redirects, spec, own->root) < 0) {
		own->bad_redirect = 1;
		return -1;
	}
	return 0;
}

/* -o max_size=SIZE (or user_max_size), spelled as tcfs config key
 * takes it.  0, or -1 after saying why not. */
static int size_of(const char *opt, const char *key, const char *text,
		   int64_t *out, struct report *r)
{
	if (!text ||
	    tcfs_config_parse(tcfs_config_find(key), text, out) == 0)
		return 0;
	say(r, "-o %s=%s: %s", opt, text, tcfs_err_msg());
	return -1;
}

/* The first of -o suid and -o dev in opts (comma-separated, a backslash
 * escaping the next byte), or NULL.  Files of the mount belong to whoever
 * made them: with suid, any user could run one as its owner, root
 * included; with dev, open a device through a node of their own. */
static const char *unsafe_opt(const char *opts)
{
	const char *start = opts, *p = opts;

	for (; opts && *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p != ',')
			continue;
		if (p - start == 4 && strncmp(start, "suid", 4) == 0)
			return "suid";
		if (p - start == 3 && strncmp(start, "dev", 3) == 0)
			return "dev";
		start = p + 1;
	}
	if (opts && strcmp(start, "suid") == 0)
		return "suid";
	return opts && strcmp(start, "dev") == 0 ? "dev" : NULL;
}

static int build_args(const struct tcfs_fs_opts *o, struct fuse_args *args,
		      struct own_opts *own)
{
	int others = o->fuse_opts && strstr(o->fuse_opts, "allow_other");

	own->others = others;

	/* Without allow_other FUSE lets only the mounting user in, and the
	 * modes need no checking by the kernel, which would otherwise fetch
	 * a directory's attributes again after every change in it (a
	 * GETATTR per path walk, most of a cold compile's requests).  With
	 * allow_other, other users come in: the kernel checks modes.
	 * nosuid and nodev are libfuse's defaults, said all the same. */
	if (fuse_opt_add_arg(args, "tcfs") || fuse_opt_add_arg(args, "-o") ||
	    fuse_opt_add_arg(args, others ? "default_permissions,subtype=tcfs,"
					    "nosuid,nodev"
					  : "subtype=tcfs,nosuid,nodev"))
		return -1;
	if (own->rest[0] && (fuse_opt_add_arg(args, "-o") ||
			     fuse_opt_add_arg(args, own->rest)))
		return -1;
	if (o->debug && fuse_opt_add_arg(args, "-d"))
		return -1;
	assert(own_documented());
	return fuse_opt_parse(args, own, own_specs, own_opt);
}

/* Pending writes and open blobs take descriptors: use all we may. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* A redirect whose DIR holds none of its kernel's files (a DIR of KEY
 * dirs, as export --flat writes a shared name) would move nothing, and
 * say nothing: said now, though the mount goes on, as the files may yet
 * be put there. */
static void warn_redirects(const struct tcfs_fs *fs, struct report *r)
{
	char why[1024];

	for (size_t i = 0; i < fs_redirects_count(fs->redirects); i++)
		if (fs_redirect_unmatched(fs->redirects, i, why, sizeof(why)))
			say_at(r, LOG_WARNING, "warning: %s", why);
}

/* The mount's options: tcfs's own taken out of -o (own), the rest for
 * libfuse (args), checked before anything changes.  0, or the exit
 * status after saying why not. */
static int parse_opts(const struct tcfs_fs_opts *o, struct tcfs_fs *fs,
		      struct fuse_args *args, struct own_opts *own,
		      struct fs_limits *lim, struct report *r)
{
	int bad;

	/* Before the store is opened, so that a wrong option changes
	 * nothing; and before chdir, as -o redirect's DIR is the caller's. */
	own->root = fs->root;
	tcfs_err_clear();
	if (unsafe_opt(o->fuse_opts)) {
		say(r, "-o %s: refused, a tcfs mount is always nosuid,nodev "
		       "(see tcfs mount --help)", unsafe_opt(o->fuse_opts));
		return 2;
	}
	if (tcfs_remote_cfg_opts(&own->remote, o->fuse_opts,
				 &own->has_remote, &own->rest) < 0) {
		say(r, "%s (see tcfs mount --help)", tcfs_err_msg()[0]
				? tcfs_err_msg() : strerror(ENOMEM));
		return 2;
	}
	bad = build_args(o, args, own) < 0;
	fs->redirects = own->redirects;
	if (bad && own->bad_redirect) {
		say(r, "%s (see tcfs mount --help)", tcfs_err_msg()[0]
				? tcfs_err_msg() : strerror(ENOMEM));
		return 2;
	}
	if (bad) {
		say(r, "bad mount options: %s", o->fuse_opts ? o->fuse_opts : "");
		return 2;
	}
	if (own->metrics &&
	    tcfs_addr_parse(own->metrics, &own->metrics_at) < 0) {
		say(r, "-o metrics: %s (see tcfs mount --help)", tcfs_err_msg());
		return 2;
	}
	own->has_metrics = own->metrics != NULL;
	if (size_of("max_size", TCFS_CONFIG_MAX_SIZE, own->max_size,
		    &lim->max_size, r) < 0 ||
	    size_of("user_max_size", TCFS_CONFIG_USER_MAX_SIZE,
		    own->user_max_size, &lim->user_max_size, r) < 0)
		return 2;
	fs->binary_only = own->binary_only;
	fs->store_binary_only = own->store_binary_only;
	if (own->trust && !own->others) {
		say(r, "-o trust: only with -o allow_other, which lets other "
		       "users in (see tcfs mount --help)");
		return 2;
	}
	/* Others let in: who may write shared kernels, and each other
	 * user's own (users.c). */
	if (own->others && fs_users_new(own->trust, fs->uid, &fs->users) < 0) {
		say(r, "%s (see tcfs mount --help)", tcfs_err_msg());
		return 2;
	}
	warn_redirects(fs, r);
	return 0;
}

/* GET /metrics listening, on -o metrics's address or else the store's
 * (tcfs config metrics), before the mount: a port in use refuses it.
 * 0 or -1 (said). */
static int metrics_listen(struct tcfs_fs *fs, struct own_opts *own,
			  struct report *r)
{
	char text[256];
	int set = 0;

	if (!own->has_metrics &&
	    (tcfs_config_get_text(fs->store, TCFS_CONFIG_METRICS, text,
				  sizeof(text), &set) < 0 ||
	     (set && tcfs_addr_parse(text, &own->metrics_at) < 0))) {
		say(r, "tcfs config metrics: %s", tcfs_err_msg());
		return -1;
	}
	if ((own->has_metrics || set) &&
	    fs_http_listen(fs, &own->metrics_at) < 0) {
		say(r, "%s", tcfs_err_msg());
		return -1;
	}
	return 0;
}

/* The store opened, and the mount's tables made.  0 or -1 (said). */
static int prepare(const struct tcfs_fs_opts *o, struct tcfs_fs *fs,
		   struct own_opts *own, struct report *r)
{
	if (open_store(fs, o, r) < 0)
		return -1;
	/* The kernels a trusted user writes are shared (kernels.shared). */
	if (fs->users)
		tcfs_store_set_trust(fs->store, fs_users_trust, fs);
	/* With no -o remote, the one the store names (tcfs config remote);
	 * read before chdir, as its secret files may be relative. */
	if (!own->has_remote &&
	    tcfs_remote_cfg_from_store(fs->store, &own->remote,
				       &own->has_remote) < 0) {
		say(r, "%s", tcfs_err_msg());
		return -1;
	}
	if (metrics_listen(fs, own, r) < 0)
		return -1;
	/* Only now, with the paths resolved: a daemon must not keep the
	 * caller's working directory busy. */
	if (!o->foreground && chdir("/") < 0) {
		say(r, "/: %s", strerror(errno));
		return -1;
	}
	fs->start_ns = tcfs_ns_now();
	snprintf(fs->bin_root, sizeof(fs->bin_root), "%s/binary-only",
		 fs->root);
	if (fs_views_new(!own->noviews, &fs->views) < 0 ||
	    fs_probes_new(&fs->probes) < 0 ||
	    fs_inodes_new(&fs->inodes) < 0 || fs_groups_new(&fs->groups) < 0 ||
	    fs_dirties_new(&fs->dirties) < 0 ||
	    fs_checked_new(&fs->checked) < 0) {
		say(r, "out of memory");
		return -1;
	}
	return 0;
}

/* The mount's own threads: events (with the ticks of probe.c and
 * dirty.c), flusher, evictor, control socket.  0 or -1 (said). */
static int start_threads(struct tcfs_fs *fs, const struct tcfs_fs_opts *o,
			 const struct own_opts *own,
			 const struct fs_limits *lim, struct report *r)
{
	static fs_tick_fn *const ticks[] = { fs_probes_tick, fs_dirty_tick,
					     fs_remote_tick };

	if (fs_events_start(fs, ticks, sizeof(ticks) / sizeof(ticks[0])) < 0 ||
	    fs_flusher_start(fs, o->sync_s) < 0 ||
	    fs_evict_start(fs, lim) < 0) {
		say(r, "cannot start the event log, flusher or evictor thread");
		return -1;
	}
	if (own->has_remote && fs_remote_start(fs, &own->remote) < 0) {
		say(r, "-o remote: cannot start: %s", tcfs_err_msg()[0]
				? tcfs_err_msg() : strerror(ENOMEM));
		return -1;
	}
	if (fs_ctl_start(fs) < 0) {
		say(r, "%s/ctl.sock: cannot listen: %s",
		    tcfs_store_path(fs->store), strerror(errno));
		return -1;
	}
	if (fs_http_start(fs) < 0) {
		say(r, "metrics: cannot start its thread");
		return -1;
	}
	return 0;
}

/* Tells the waiting caller the mount serves, and serves until it is
 * unmounted: 0, or 1 when the session loop failed. */
static int loop(struct tcfs_fs *fs, const struct tcfs_fs_opts *o,
		struct report *r)
{
	struct fuse_loop_config *cfg;
	int rc;

	if (r->fd >= 0) {	/* the mount serves: let the caller go */
		dprintf(r->fd, "ok\n");
		close(r->fd);
		r->fd = -1;
	}
	syslog(LOG_INFO, "serving %s at %s (%zu %s redirected)",
	       tcfs_store_path(fs->store), fs->root,
	       fs_redirects_count(fs->redirects),
	       TCFS_NOUN(fs_redirects_count(fs->redirects), "kernel"));
	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_max_threads(cfg, 16);
	/* Under -d the one thread reads the session's descriptor itself,
	 * blocking. */
	if (!o->debug && fs_busypoll_start(fs, o->busy_poll_us) < 0)
		syslog(LOG_WARNING, "tcfs: no busy-poll thread: requests are "
		       "answered, a little slower");
	fs->loop = pthread_self();
	atomic_store(&fs->looping, 1);
	rc = o->debug ? fuse_session_loop(fs->se)
		      : fuse_session_loop_mt(fs->se, cfg);
	atomic_store(&fs->looping, 0);
	fs_busypoll_stop(fs);
	fuse_loop_cfg_destroy(cfg);
	return rc < 0;	/* a signal's number is a clean stop */
}

/* Stops the threads and commits what is left; rc, or 1 when the index
 * lost changes (the mount is then left dead, not unmounted). */
static int stop_threads(struct tcfs_fs *fs, int rc)
{
	fs_http_stop(fs);
	fs_ctl_stop(fs);
	fs_evict_stop(fs);
	fs_events_stop(fs);
	fs_remote_stop(fs);
	fs_flusher_stop(fs);
	if (tcfs_store_sync(fs->store) < 0)
		syslog(LOG_ERR, "tcfs: %s", tcfs_err_msg());
	fs_evict_free(fs);
	/* Only with every thread joined and the last commit made is it
	 * known whether the index lost changes. */
	if (fs->failed)
		return 1;
	fuse_session_unmount(fs->se);
	return rc;
}

static void free_state(struct tcfs_fs *fs)
{
	fs_http_stop(fs);	/* listening, when the mount failed after */
	fs_probes_free(fs->probes);
	fs_inodes_free(fs->inodes);
	fs_groups_free(fs->groups);
	fs_dirties_free(fs->dirties);
	fs_checked_free(fs->checked);
	fs_views_free(fs->views);
	fs_redirects_free(fs->redirects);
	fs_users_free(fs->users);
	tcfs_store_close(fs->store);
}

/* Mounts, serves until unmounted, and returns the exit status. */
static int serve(const struct tcfs_fs_opts *o, struct report *r)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct tcfs_fs fs = { 0 };
	struct own_opts own = { 0 };
	struct fs_limits lim = { -1, -1 };	/* the store's settings */
	int nonempty = o->fuse_opts && strstr(o->fuse_opts, "nonempty");
	int rc = 1;

	fs.uid = getuid();
	fs.gid = getgid();
	raise_fd_limit();
	if (check_mountpoint(o->mountpoint, o->store, fs.root, nonempty, r) < 0)
		goto out;
	rc = parse_opts(o, &fs, &args, &own, &lim, r);
	if (rc != 0)
		goto out;
	rc = 1;
	if (prepare(o, &fs, &own, r) < 0)
		goto out;
	fs.se = fuse_session_new(&args, &fs_fuse_ops, sizeof(fs_fuse_ops), &fs);
	if (!fs.se) {
		/* libfuse refuses an option it does not know: a usage error */
		say(r, "bad mount options: %s", o->fuse_opts ? o->fuse_opts : "");
		rc = 2;
		goto out;
	}
	if (fuse_set_signal_handlers(fs.se) < 0 ||
	    fuse_session_mount(fs.se, fs.root) < 0) {
		say(r, "%s: cannot mount (is /dev/fuse there, and fusermount3 "
		       "installed?)", fs.root);
		goto out_session;
	}
	if (start_threads(&fs, o, &own, &lim, r) == 0)
		rc = loop(&fs, o, r);
	rc = stop_threads(&fs, rc);
	fuse_remove_signal_handlers(fs.se);
out_session:
	fuse_session_destroy(fs.se);
	fs.se = NULL;	/* fs_lost may yet run, from tcfs_store_close */
out:
	free_state(&fs);
	fuse_opt_free_args(&args);
	free(own.max_size);
	free(own.trust);
	free(own.user_max_size);
	free(own.metrics);
	free(own.rest);
	explicit_bzero(&own.remote, sizeof(own.remote));	/* secrets */
	return rc;
}

/* The parent's side: pass the warnings and errors on, then exit with
 * 0 when "ok" came last, else the child's status. */
static int wait_for_child(pid_t child, int fd)
{
	FILE *in = fdopen(fd, "r");
	char line[8192];
	int ok = 0, said = 0, status;

	while (in && fgets(line, sizeof(line), in)) {
		ok = strcmp(line, "ok\n") == 0;
		if (!ok) {
			fputs(line, stderr);
			said = 1;
		}
	}
	if (in)
		fclose(in);
	else
		close(fd);
	if (ok)
		return 0;
	if (waitpid(child, &status, 0) == child && WIFEXITED(status) &&
	    WEXITSTATUS(status) != 0)
		return WEXITSTATUS(status);
	if (!said)
		fprintf(stderr, "tcfs mount: the daemon died while mounting\n");
	return 1;
}

int tcfs_fs_mount(const struct tcfs_fs_opts *o)
{
	struct report r = { -1 };
	int p[2], null;
	pid_t child;

	/* In the foreground the log goes to the terminal as well. */
	openlog("tcfs", LOG_PID | (o->foreground ? LOG_PERROR : 0), LOG_USER);
	if (o->foreground)
		return serve(o, &r);
	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("tcfs mount: pipe");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("tcfs mount: fork");
		return 1;
	}
	if (child > 0) {
		close(p[1]);
		return wait_for_child(child, p[0]);
	}
	close(p[0]);
	r.fd = p[1];
	setsid();
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	_exit(serve(o, &r));
}
