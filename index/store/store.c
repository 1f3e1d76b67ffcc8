/* store: opening a store directory and handing out its parts. */
#include "index/store/store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/store/db.h"
#include "index/blob/durable.h"
#include "index/base/err.h"
#include "index/store/lock.h"
#include "index/tree/nodecache.h"
#include "index/store/schema.h"
#include "index/blob/space.h"

struct tcfs_store {
	char *path;
	int dirfd;
	int lockfd;		/* -1 for a reader */
	int keep_unlinked;
	const char *origin;	/* of kernels landing now: static */
	tcfs_store_trust_fn *trust;	/* NULL: every writer */
	void *trust_ctx;
	struct tcfs_db *db;
	struct tcfs_cas *cas;
	struct tcfs_nodecache *nodes;	/* a writer's only, else NULL */
	struct tcfs_durable *durable;	/* a batching writer's, else NULL */
	struct tcfs_durable_report recovered;
	_Atomic int64_t roomy_until_ns;	/* see tcfs_store_tight */
};

int tcfs_store_default_dir(char *buf, size_t len)
{
	const char *v = getenv("TCFS_STORE");
	int n;

	if (v && *v)
		n = snprintf(buf, len, "%s", v);
	else if ((v = getenv("XDG_DATA_HOME")) && *v)
		n = snprintf(buf, len, "%s/tcfs", v);
	else if ((v = getenv("HOME")) && *v)
		n = snprintf(buf, len, "%s/.local/share/tcfs", v);
	else
		return tcfs_err_set(-ENOENT, "no store: give --store DIR or "
				    "set TCFS_STORE");
	if (n < 0 || (size_t)n >= len)
		return tcfs_err_set(-ENAMETOOLONG, "%s: store path too long",
				    v);
	return 0;
}

/* mkdir -p with mode 0700 for what it creates: the store holds private
 * data, the parents are the user's usual ~/.local/share. */
static int make_dirs(const char *path)
{
	char *p = strdup(path);
	int rc = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			rc = -errno;
		*s = '/';
		if (rc < 0)
			break;
	}
	if (rc == 0 && mkdir(p, 0700) < 0 && errno != EEXIST)
		rc = -errno;
	free(p);
	return rc < 0 ? tcfs_err_errno(rc, "%s", path) : 0;
}

static int open_dir(const struct tcfs_store_opts *o)
{
	struct stat st;
	int fd, rc;

	if (o->create) {
		rc = make_dirs(o->dir);
		if (rc < 0)
			return rc;
	}
	fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return tcfs_err_set(-ENOENT, "%s: no tcfs store here (create "
				    "one with tcfs import)", o->dir);
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s", o->dir);
	if (!o->create && fstatat(fd, "index.db", &st, 0) < 0) {
		close(fd);
		return tcfs_err_set(-ENOENT, "%s: no tcfs store here (no "
				    "index.db; create one with tcfs import)",
				    o->dir);
	}
	return fd;
}

/* The index names every file of the cache and logs which process ran
 * what: only its owner may read it, whatever the umask or the mode of the
 * store dir (which may be shared).  SQLite gives the WAL and shm files the
 * mode of the database, so a new index is made 0600 before SQLite opens
 * it, and a writer narrows one that an older tcfs left wider. */
static int private_index(struct tcfs_store *s, int fresh)
{
	static const char *const names[] = { "index.db", "index.db-wal",
					     "index.db-shm" };
	struct stat st;
	int fd;

	if (fresh) {
		fd = openat(s->dirfd, "index.db",
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd < 0)
			return tcfs_err_errno(-errno, "%s/index.db", s->path);
		close(fd);
		return 0;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (fstatat(s->dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && (st.st_mode & 077) &&
		    fchmodat(s->dirfd, names[i], 0600, 0) < 0)
			return tcfs_err_errno(-errno, "%s/%s", s->path,
					      names[i]);
	return 0;
}

/* The index, made private first (see private_index). */
static int open_index(struct tcfs_store *s, const struct tcfs_store_opts *o)
{
	char dbpath[4096];
	int rc, fresh;

	snprintf(dbpath, sizeof(dbpath), "%s/index.db", s->path);
	/* Only a store without an index.db is new; an existing empty one is
	 * damage, and must not be taken for a new store with no files. */
	fresh = o->create && faccessat(s->dirfd, "index.db", F_OK, 0) < 0 &&
		errno == ENOENT;
	rc = o->writer || fresh ? private_index(s, fresh) : 0;
	if (rc < 0)
		return rc;
	rc = tcfs_schema_open(dbpath, fresh, &s->db);
	if (rc < 0)
		return rc;
	/* A reader (list, info, stats) reads much of the index once: mapped,
	 * its pages cost no read() each.  Not the mount's, whose memory
	 * would count them. */
	if (!o->writer)
		rc = tcfs_db_exec(s->db, "PRAGMA mmap_size=1073741824", "");
	return rc < 0 ? rc : 0;
}

/* A writer's own parts, once it has recovered: recovery comes before the
 * batch state and the node cache, as it changes the index behind them. */
static int open_writer(struct tcfs_store *s, const struct tcfs_store_opts *o)
{
	int rc = o->recover(s, s->dirfd, &s->recovered);

	if (rc == 0 && o->durability == TCFS_DURABLE_BATCH)
		rc = tcfs_durable_new(s->dirfd, s->path, s->db, &s->durable);
	/* Only the writer's view of the nodes cannot change under it: a
	 * reader must always ask the index. */
	if (rc == 0)
		rc = tcfs_nodecache_attach(s->db, &s->nodes);
	return rc;
}

int tcfs_store_open(const struct tcfs_store_opts *o, struct tcfs_store **out)
{
	struct tcfs_store *s = calloc(1, sizeof(*s));
	int rc;

	assert(!o->writer || o->recover);
	if (!s)
		return -ENOMEM;
	s->dirfd = s->lockfd = -1;
	/* Before recovery, which may write kernel rows. */
	s->origin = TCFS_ORIGIN_HERE;
	s->path = strdup(o->dir);
	if (!s->path) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = open_dir(o);
	if (rc < 0)
		goto fail;
	s->dirfd = rc;
	if (o->writer) {
		rc = tcfs_lock_writer(s->dirfd, s->path, o->wait_s,
				      o->busy, o->busy_ctx);
		if (rc < 0)
			goto fail;
		s->lockfd = rc;
	}
	rc = open_index(s, o);
	if (rc == 0)
		rc = tcfs_cas_open(s->dirfd, s->path, o->create || o->writer,
				   &s->cas);
	if (rc == 0 && o->writer)
		rc = open_writer(s, o);
	if (rc < 0)
		goto fail;
	s->keep_unlinked = o->keep_unlinked;
	*out = s;
	return 0;
fail:
	tcfs_store_close(s);
	return rc;
}

void tcfs_store_close(struct tcfs_store *s)
{
	if (!s)
		return;
	/* A clean stop leaves nothing for the next writer to check. */
	tcfs_durable_flush(s->durable);
	tcfs_durable_free(s->durable);
	s->durable = NULL;
	tcfs_cas_close(s->cas);
	tcfs_nodecache_free(s->nodes);
	tcfs_db_close(s->db);
	if (s->lockfd >= 0)
		close(s->lockfd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->path);
	free(s);
}

int tcfs_store_keeps_unlinked(const struct tcfs_store *s)
{
	return s->keep_unlinked;
}

const char *tcfs_store_origin(const struct tcfs_store *s)
{
	return s->origin;
}

void tcfs_store_set_trust(struct tcfs_store *s, tcfs_store_trust_fn *fn,
			  void *ctx)
{
	s->trust = fn;
	s->trust_ctx = ctx;
}

int tcfs_store_trusts(const struct tcfs_store *s, int64_t uid, int64_t gid)
{
	/* -1 is whoever mounts the store: every command writes as that. */
	if (!s->trust || uid == -1)
		return 1;
	return s->trust(s->trust_ctx, uid, gid);
}

const char *tcfs_store_set_origin(struct tcfs_store *s, const char *origin)
{
	const char *old = s->origin;

	s->origin = origin;
	return old;
}

const char *tcfs_store_path(const struct tcfs_store *s)
{
	return s->path;
}

struct tcfs_db *tcfs_store_db(struct tcfs_store *s)
{
	return s->db;
}

struct tcfs_nodecache *tcfs_store_nodecache(struct tcfs_store *s)
{
	return s->nodes;
}

struct tcfs_cas *tcfs_store_cas(struct tcfs_store *s)
{
	return s->cas;
}

struct tcfs_durable *tcfs_store_durable(struct tcfs_store *s)
{
	return s->durable;
}

const struct tcfs_durable_report *
tcfs_store_recovery(const struct tcfs_store *s)
{
	return &s->recovered;
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* While the disk has room for twice the reserve, the answer holds for
 * the next 10 ms: the index cannot grow by half a reserve in that time,
 * and blobs never take it. */
#define ROOMY_FOR_NS 10000000

int tcfs_store_tight(struct tcfs_store *s)
{
	struct tcfs_space sp;
	int64_t now = monotonic_ns();

	if (now < atomic_load(&s->roomy_until_ns))
		return 0;
	if (tcfs_space_read(s->dirfd, &sp) < 0)
		return 0;	/* the index's own writes will tell */
	if (sp.avail >= 2 * sp.reserve)
		atomic_store(&s->roomy_until_ns, now + ROOMY_FOR_NS);
	return tcfs_space_tight(&sp);
}

static int store_tight(void *ctx)
{
	return tcfs_store_tight(ctx);
}

void tcfs_store_defer(struct tcfs_store *s, void (*lost)(void *ctx, int rc),
		      void *ctx)
{
	tcfs_db_defer(s->db, lost, ctx);
	tcfs_db_commit_alone_when(s->db, store_tight, s);
}

int tcfs_store_bulk(struct tcfs_store *s)
{
	int rc = tcfs_db_exec(s->db, "PRAGMA cache_size=-131072", "");

	if (rc >= 0)
		rc = tcfs_db_exec(s->db, "PRAGMA wal_autocheckpoint=16384", "");
	/* A key dir's savepoint journals every page it changes first: 20 or
	 * so.  temp_store MEMORY keeps them in chunks of 1 KiB, 80 mallocs a
	 * key dir and a tenth of the instructions of an import's own thread;
	 * FILE keeps them in one chunk of 1 MiB (db.c), and only a bigger
	 * key dir's in a temp file. */
	if (rc >= 0)
		rc = tcfs_db_exec(s->db, "PRAGMA temp_store=FILE", "");
	return rc < 0 ? rc : 0;
}

int tcfs_store_sync(struct tcfs_store *s)
{
	return tcfs_db_sync(s->db);
}

int tcfs_store_fsync(struct tcfs_store *s)
{
	int rc = tcfs_db_sync(s->db);

	return rc < 0 ? rc : tcfs_durable_flush(s->durable);
}

int tcfs_store_begin(struct tcfs_store *s)
{
	return tcfs_db_begin(s->db);
}

int tcfs_store_begin_whole(struct tcfs_store *s)
{
	return tcfs_db_begin_whole(s->db);
}

int tcfs_store_end(struct tcfs_store *s, int rc)
{
	return tcfs_db_end(s->db, rc);
}
