/* durable: new blobs made durable in batches, and checked after a crash. */
#include "index/blob/durable.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/store/db.h"
#include "index/base/err.h"
#include "index/base/hash.h"

/* gen orders notes and flushes: a note carries the gen it read, under
 * the db lock, after its blob was written; a flush advances gen under the
 * same lock and then syncs, so every blob noted with a gen below the new
 * one is durable when the sync returns. */
static const char sql_note[] =
	"INSERT OR REPLACE INTO unsynced (blob, gen) VALUES (?, ?)";
static const char sql_forget[] = "DELETE FROM unsynced WHERE gen <= ?";
static const char sql_noted[] = "SELECT blob FROM unsynced";

struct tcfs_durable {
	int storefd;		/* borrowed, as are: */
	const char *path;
	struct tcfs_db *db;
	_Atomic uint64_t gen;
	pthread_mutex_t flush_mu;	/* one flush at a time; guards: */
	int64_t synced;		/* the db's change count made durable */
	int failed;		/* a sync's error: sticky */
	int sync_first;		/* see tcfs_durable_sync_first */
};

int tcfs_durable_new(int storefd, const char *path, struct tcfs_db *db,
		     struct tcfs_durable **out)
{
	struct tcfs_durable *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->storefd = storefd;
	d->path = path;
	d->db = db;
	d->synced = -1;
	pthread_mutex_init(&d->flush_mu, NULL);
	*out = d;
	return 0;
}

void tcfs_durable_free(struct tcfs_durable *d)
{
	if (!d)
		return;
	/* What the db commits later is the flush's forgetting, no row. */
	if (d->sync_first)
		tcfs_db_before_commit(d->db, NULL, NULL);
	pthread_mutex_destroy(&d->flush_mu);
	free(d);
}

int tcfs_durable_note(struct tcfs_durable *d, const struct tcfs_hash *h)
{
	int rc;

	if (!d || d->sync_first)
		return 0;
	rc = tcfs_db_exec(d->db, sql_note, "hi", h,
			  (int64_t)atomic_load(&d->gen));
	return rc < 0 ? rc : 0;
}

/* Since Linux 5.8 syncfs reports the writeback errors of the file
 * system, once per descriptor. */
static int sync_store(const char *path, int fd)
{
	return syncfs(fd) < 0 ? tcfs_err_errno(-errno, "%s: syncfs", path)
			      : 0;
}

/* Before a commit of a writer that syncs first.  A failed sync fails
 * every later commit too: a later syncfs would succeed without the lost
 * writes, which later rows may name (a blob stored once, named again). */
static int sync_before_commit(void *ctx)
{
	struct tcfs_durable *d = ctx;
	int rc = d->failed;

	if (rc == 0)
		rc = sync_store(d->path, d->storefd);
	if (rc < 0)
		d->failed = rc;
	return rc;
}

void tcfs_durable_sync_first(struct tcfs_durable *d)
{
	if (!d)
		return;
	d->sync_first = 1;
	tcfs_db_before_commit(d->db, sync_before_commit, d);
}

/* Forgets notes in their own transaction (within a batch, db.h, they go
 * with the store's next sync); returns how many. */
static int forget(struct tcfs_db *db, uint64_t upto)
{
	int rc = tcfs_db_begin(db);

	if (rc < 0)
		return rc;
	rc = tcfs_db_exec(db, sql_forget, "i",
			  upto > INT64_MAX ? INT64_MAX : (int64_t)upto);
	return tcfs_db_end(db, rc);
}

int tcfs_durable_flush(struct tcfs_durable *d)
{
	struct tcfs_db *db;
	uint64_t upto = 0;
	int64_t changes;
	int rc;

	if (!d)
		return 0;
	db = d->db;
	/* Inside a transaction of this thread the sync could not commit
	 * it, yet the flush would count its changes as durable. */
	assert(!tcfs_db_held(db));
	pthread_mutex_lock(&d->flush_mu);
	rc = d->failed;
	tcfs_db_lock(db);
	changes = tcfs_db_changes(db);
	if (rc == 0 && changes != d->synced) {
		upto = atomic_fetch_add(&d->gen, 1);
		rc = tcfs_db_sync(db);
	}
	tcfs_db_unlock(db);
	if (rc < 0 || changes == d->synced)
		goto out;
	rc = sync_store(d->path, d->storefd);
	if (rc < 0) {
		/* The error is reported once: a later sync would succeed
		 * without the lost writes, so no note may go from now on. */
		d->failed = rc;
		goto out;
	}
	rc = forget(db, upto);
	if (rc >= 0) {	/* its own deletions need no sync */
		d->synced = changes + rc;
		rc = 0;
	}
out:
	pthread_mutex_unlock(&d->flush_mu);
	return rc;
}

/* A note that names no blob (a damaged row) leaves nothing to check;
 * ctx counts the rows, parseable or not. */
static int fill_noted(void *ctx, void *elem, sqlite3_stmt *st)
{
	++*(uint64_t *)ctx;
	return tcfs_db_hash(st, 0, elem) < 0 ? 1 : 0;
}

/* What one recovery works on. */
struct check {
	struct tcfs_db *db;
	struct tcfs_cas *cas;
	tcfs_durable_lost_cb *lost;
	void *ctx;
	struct tcfs_durable_report r;
};

/* A lost blob: its files go (with their kernels' group files), and so do
 * whatever bytes are left under its name, which can only mislead. */
static int drop_lost(struct check *c, const struct tcfs_hash *h)
{
	int rc = c->lost(c->ctx, h, &c->r.dropped);

	if (rc < 0)
		return rc;
	rc = tcfs_cas_remove(c->cas, h);
	c->r.lost++;
	return rc == -ENOENT ? 0 : rc;
}

/* Checks one noted blob; 1 when it is to stay noted. */
static int check(struct check *c, const struct tcfs_hash *h)
{
	int rc = tcfs_cas_verify(c->cas, h);

	c->r.checked++;
	if (rc == -ENOENT || rc == -EBADMSG)
		return drop_lost(c, h);
	if (rc < 0) {	/* no verdict: the files stay, fsck will say */
		c->r.unreadable++;
		return 1;
	}
	return 0;
}

/* Replaces every note with those of the kept blobs, beyond any flush's
 * reach: only a writer's check drops them. */
static int renote(struct tcfs_db *db, const struct tcfs_hash *kept,
		  size_t n)
{
	int rc = tcfs_db_begin(db);

	if (rc < 0)
		return rc;
	rc = forget(db, UINT64_MAX);
	for (size_t i = 0; rc >= 0 && i < n; i++)
		rc = tcfs_db_exec(db, sql_note, "hi", &kept[i],
				  (int64_t)INT64_MAX);
	return tcfs_db_end(db, rc < 0 ? rc : 0);
}

int tcfs_durable_recover(struct tcfs_db *db, struct tcfs_cas *cas,
			 int storefd, const char *path,
			 tcfs_durable_lost_cb *lost, void *ctx,
			 struct tcfs_durable_report *out)
{
	struct check c = { db, cas, lost, ctx, { 0 } };
	struct tcfs_hash *noted = NULL;
	size_t n = 0, kept = 0;
	uint64_t rows = 0;
	int rc;

	rc = tcfs_db_collect(db, sizeof(*noted), fill_noted, &rows, &noted,
			     &n, sql_noted, "");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = check(&c, &noted[i]);
		if (rc == 1) {
			noted[kept++] = noted[i];
			rc = 0;
		}
	}
	/* What survived is whole, but maybe only in the page cache (the
	 * writer was killed, the machine did not stop): durable before the
	 * notes go. */
	if (rc == 0 && rows)
		rc = sync_store(path, storefd);
	if (rc == 0 && rows)
		rc = renote(db, noted, kept);
	assert(c.r.lost + c.r.unreadable <= c.r.checked);
	free(noted);
	if (out)
		*out = c.r;
	return rc;
}
