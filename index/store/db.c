/* db: the store's SQLite connection, its transactions and statements. */
#include "index/store/db.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"
#include "index/base/hash.h"
#include "index/base/vec.h"

#define DB_STMT_CACHE 96
/* Nesting deeper than this (never seen) treats every rollback as undoing
 * changes. */
#define DB_DEPTH_MAX 16

struct db_cached {
	const char *sql;	/* identity: the caller's string literal */
	sqlite3_stmt *st;
};

/* A thread's own address, by which it is told from the others. */
static _Thread_local char db_me;

struct tcfs_db {
	sqlite3 *conn;
	char *path;
	pthread_mutex_t mu;
	_Atomic(const char *) owner;	/* whose db_me holds mu, else NULL */
	int held;		/* how often the owner took mu */
	int depth;		/* nesting of begin/end */
	int64_t changes_at[DB_DEPTH_MAX];	/* total changes at each begin */
	int deferred;		/* top-level ends leave COMMIT to tcfs_db_sync */
	int open;		/* the deferred transaction is open */
	int whole;		/* depth of a tcfs_db_begin_whole, else 0 */
	int doomed;		/* the first error of a transaction in it */
	void (*undo)(void *ctx);	/* see tcfs_db_on_undo */
	void *undo_ctx;
	void (*lost)(void *ctx, int rc);	/* see tcfs_db_defer */
	void *lost_ctx;
	int (*tight)(void *ctx);	/* see tcfs_db_commit_alone_when */
	void *tight_ctx;
	int (*before)(void *ctx);	/* see tcfs_db_before_commit */
	void *before_ctx;
	struct db_cached cache[DB_STMT_CACHE];
	int ncache;
};

int tcfs_db_error(struct tcfs_db *db, int src)
{
	const char *msg = db && db->conn ? sqlite3_errmsg(db->conn)
					 : sqlite3_errstr(src);
	const char *path = db ? db->path : "index.db";
	int sys = db && db->conn ? sqlite3_system_errno(db->conn) : 0;
	int rc;

	switch (src & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		rc = -EBUSY;
		break;
	case SQLITE_FULL:
		rc = -ENOSPC;
		break;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		rc = -EUCLEAN;
		break;
	case SQLITE_READONLY:
		rc = -EROFS;
		break;
	case SQLITE_NOMEM:
		rc = -ENOMEM;
		break;
	case SQLITE_CONSTRAINT:
		rc = -EEXIST;
		break;
	case SQLITE_TOOBIG:
		rc = -EFBIG;
		break;
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR:
		rc = sys > 0 ? -sys : -EIO;
		break;
	default:
		rc = -EIO;
	}
	return tcfs_err_set(rc, "%s: %s", path, msg);
}

int tcfs_db_configure(struct tcfs_db *db)
{
	/* NORMAL in WAL mode: a killed process never loses a commit; a power
	 * cut may lose the last ones but never corrupts the index.  Blobs are
	 * fsynced before any row names them. */
	static const char *const sql =
		"PRAGMA journal_mode=WAL;"
		"PRAGMA synchronous=NORMAL;"
		"PRAGMA foreign_keys=ON;"
		"PRAGMA busy_timeout=10000;"
		/* A savepoint inside a batch (the mount's deferred commits,
		 * an import's) journals each page it changes, for its
		 * rollback: in temp files, 200,000 writes of 4 KiB for an
		 * import of 3,000 kernels.  In memory they cost no write
		 * (an import keeps them in bigger pieces: tcfs_store_bulk). */
		"PRAGMA temp_store=MEMORY;";
	int src = sqlite3_exec(db->conn, sql, NULL, NULL, NULL);

	return src == SQLITE_OK ? 0 : tcfs_db_error(db, src);
}

/* SQLite's global settings, which it takes only before it starts.
 * It counts every allocation under a global mutex for
 * sqlite3_memory_used, which tcfs never asks: two locks an allocation,
 * a tenth of the instructions of an import's own thread.  A savepoint's
 * journal with temp_store FILE stays in memory up to DB_STMT_SPILL
 * bytes, in one piece (see tcfs_store_bulk). */
#define DB_STMT_SPILL (1 << 20)

static void db_configure_once(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, DB_STMT_SPILL);
}

int tcfs_db_open(const char *path, int create, struct tcfs_db **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
		    (create ? SQLITE_OPEN_CREATE : 0);
	struct tcfs_db *db = calloc(1, sizeof(*db));
	pthread_mutexattr_t attr;
	int rc, src;

	if (!db)
		return -ENOMEM;
	db->path = strdup(path);
	if (!db->path) {
		free(db);
		return -ENOMEM;
	}
	pthread_once(&once, db_configure_once);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&db->mu, &attr);
	pthread_mutexattr_destroy(&attr);
	src = sqlite3_open_v2(path, &db->conn, flags, NULL);
	if (src != SQLITE_OK) {
		rc = tcfs_db_error(db, src);
		goto fail;
	}
	sqlite3_extended_result_codes(db->conn, 1);
	*out = db;
	return 0;
fail:
	tcfs_db_close(db);
	return rc;
}

void tcfs_db_close(struct tcfs_db *db)
{
	if (!db)
		return;
	tcfs_db_sync(db);
	for (int i = 0; i < db->ncache; i++)
		sqlite3_finalize(db->cache[i].st);
	sqlite3_close(db->conn);
	pthread_mutex_destroy(&db->mu);
	free(db->path);
	free(db);
}

sqlite3 *tcfs_db_handle(struct tcfs_db *db)
{
	return db->conn;
}

const char *tcfs_db_path(const struct tcfs_db *db)
{
	return db->path;
}

void tcfs_db_lock(struct tcfs_db *db)
{
	pthread_mutex_lock(&db->mu);
	atomic_store_explicit(&db->owner, &db_me, memory_order_relaxed);
	db->held++;
}

void tcfs_db_unlock(struct tcfs_db *db)
{
	assert(tcfs_db_held(db) && db->held > 0);
	if (--db->held == 0)
		atomic_store_explicit(&db->owner, NULL, memory_order_relaxed);
	pthread_mutex_unlock(&db->mu);
}

/* Only this thread ever stores its own db_me: whatever another thread
 * stores meanwhile, the answer for this one is right. */
int tcfs_db_held(struct tcfs_db *db)
{
	return atomic_load_explicit(&db->owner, memory_order_relaxed) ==
	       &db_me;
}

static sqlite3_stmt *db_stmt(struct tcfs_db *db, const char *sql, int *rc);

/* Transaction control runs for every request (a savepoint each), so it is
 * prepared once, like any statement, not parsed anew by sqlite3_exec. */
static int db_simple(struct tcfs_db *db, const char *sql)
{
	sqlite3_stmt *st;
	int rc = 0, src;

	st = db_stmt(db, sql, &rc);
	if (!st)
		return rc;
	src = sqlite3_step(st);
	rc = src == SQLITE_DONE ? 0 : tcfs_db_error(db, src);
	sqlite3_reset(st);
	return rc;
}

void tcfs_db_on_undo(struct tcfs_db *db, void (*undo)(void *ctx), void *ctx)
{
	tcfs_db_lock(db);
	db->undo = undo;
	db->undo_ctx = ctx;
	tcfs_db_unlock(db);
}

void tcfs_db_defer(struct tcfs_db *db, void (*lost)(void *ctx, int rc),
		   void *ctx)
{
	tcfs_db_lock(db);
	db->deferred = 1;
	db->lost = lost;
	db->lost_ctx = ctx;
	tcfs_db_unlock(db);
}

void tcfs_db_commit_alone_when(struct tcfs_db *db, int (*tight)(void *ctx),
			       void *ctx)
{
	tcfs_db_lock(db);
	db->tight = tight;
	db->tight_ctx = ctx;
	tcfs_db_unlock(db);
}

void tcfs_db_before_commit(struct tcfs_db *db, int (*before)(void *ctx),
			   void *ctx)
{
	tcfs_db_lock(db);
	db->before = before;
	db->before_ctx = ctx;
	tcfs_db_unlock(db);
}

static int db_commit(struct tcfs_db *db)
{
	int rc = db->before ? db->before(db->before_ctx) : 0;

	return rc < 0 ? rc : db_simple(db, "COMMIT");
}

static void db_undone(struct tcfs_db *db)
{
	if (db->undo)
		db->undo(db->undo_ctx);
}

/* The deferred transaction is gone with changes already answered for:
 * SQLite rolled it back after an error (a full disk, say), or its COMMIT
 * failed.  Whoever made the promises must hear of it. */
static void db_lost(struct tcfs_db *db, int rc)
{
	db->open = 0;
	db_undone(db);
	if (db->lost)
		db->lost(db->lost_ctx, rc);
}

static int db_commit_deferred(struct tcfs_db *db);

int tcfs_db_begin_whole(struct tcfs_db *db)
{
	int rc = tcfs_db_begin(db);

	if (rc == 0 && !db->whole) {
		db->whole = db->depth;
		db->doomed = 0;
	}
	return rc;
}

int tcfs_db_begin(struct tcfs_db *db)
{
	int rc = 0;

	tcfs_db_lock(db);
	if (db->whole && db->depth >= db->whole) {
		/* Joins it (tcfs_db_begin_whole); after a failure nothing
		 * more may change it, as SQLite may have ended it. */
		if (db->doomed) {
			tcfs_db_unlock(db);
			return db->doomed;
		}
		db->depth++;
		return 0;
	}
	if (db->depth == 0 && db->deferred && db->tight &&
	    db->tight(db->tight_ctx)) {
		/* This one commits alone (tcfs_db_end): not open. */
		rc = db_commit_deferred(db);
	} else if (db->depth == 0 && db->deferred && !db->open) {
		rc = db_simple(db, "BEGIN IMMEDIATE");
		db->open = rc == 0;
	}
	if (rc == 0)
		rc = db_simple(db, db->depth || db->open ? "SAVEPOINT nest"
							 : "BEGIN IMMEDIATE");
	if (rc < 0) {
		tcfs_db_unlock(db);
		return rc;
	}
	if (db->depth < DB_DEPTH_MAX)
		db->changes_at[db->depth] =
			sqlite3_total_changes64(db->conn);
	db->depth++;
	return 0;
}

int tcfs_db_end(struct tcfs_db *db, int rc)
{
	int depth, nested;

	/* Only the thread whose begin took the lock may end it, once. */
	assert(tcfs_db_held(db) && db->depth > 0 && db->held >= db->depth);
	depth = --db->depth;
	if (db->whole && depth >= db->whole) {
		if (rc < 0 && !db->doomed)
			db->doomed = rc;
		tcfs_db_unlock(db);
		return rc;
	}
	if (db->whole && depth == db->whole - 1) {
		db->whole = 0;
		if (rc >= 0 && db->doomed)
			rc = db->doomed;
	}
	nested = depth > 0 || db->open;

	if (rc >= 0) {
		int end = nested ? db_simple(db, "RELEASE nest") : db_commit(db);

		if (end == 0)
			goto out;
		rc = end;
	}
	/* Keep the failing call's message: the rollback's is no news. */
	if (nested)
		sqlite3_exec(db->conn, "ROLLBACK TO nest; RELEASE nest", NULL,
			     NULL, NULL);
	else if (!sqlite3_get_autocommit(db->conn))
		sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
	/* Rows read since the changes now undone may be kept elsewhere. */
	if (depth >= DB_DEPTH_MAX ||
	    sqlite3_total_changes64(db->conn) != db->changes_at[depth])
		db_undone(db);
	if (db->open && sqlite3_get_autocommit(db->conn))
		db_lost(db, rc);
out:
	tcfs_db_unlock(db);
	return rc;
}

/* Commits the deferred transaction, if one is open (db lock held, no
 * transaction of this thread inside it). */
static int db_commit_deferred(struct tcfs_db *db)
{
	int rc;

	if (!db->open)
		return 0;
	assert(db->depth == 0);
	rc = db_commit(db);
	if (rc == 0) {
		db->open = 0;
		return 0;
	}
	if (!sqlite3_get_autocommit(db->conn))
		sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
	db_lost(db, rc);
	return rc;
}

int tcfs_db_sync(struct tcfs_db *db)
{
	int rc = 0;

	tcfs_db_lock(db);
	/* Inside a transaction of this thread the commit waits for its end:
	 * the next sync takes it. */
	if (db->depth == 0)
		rc = db_commit_deferred(db);
	tcfs_db_unlock(db);
	return rc;
}

static sqlite3_stmt *db_stmt(struct tcfs_db *db, const char *sql, int *rc)
{
	sqlite3_stmt *st;
	int src;

	assert(tcfs_db_held(db));	/* the cache is the connection's */
	for (int i = 0; i < db->ncache; i++)
		if (db->cache[i].sql == sql)
			return db->cache[i].st;
	src = sqlite3_prepare_v3(db->conn, sql, -1, SQLITE_PREPARE_PERSISTENT,
				 &st, NULL);
	if (src != SQLITE_OK) {
		*rc = tcfs_db_error(db, src);
		return NULL;
	}
	if (db->ncache < DB_STMT_CACHE) {
		db->cache[db->ncache].sql = sql;
		db->cache[db->ncache].st = st;
		db->ncache++;
	}
	/* A full cache is a programming error caught by the tests. */
	return st;
}

static int db_bind(struct tcfs_db *db, sqlite3_stmt *st, const char *fmt,
		   va_list ap)
{
	int src = SQLITE_OK;

	for (int i = 1; *fmt && src == SQLITE_OK; fmt++, i++) {
		switch (*fmt) {
		case 'd':
			src = sqlite3_bind_int(st, i, va_arg(ap, int));
			break;
		case 'i':
			src = sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
			break;
		case 'n': {
			int64_t v = va_arg(ap, int64_t);

			src = v < 0 ? sqlite3_bind_null(st, i)
				    : sqlite3_bind_int64(st, i, v);
			break;
		}
		case 't': {
			const char *s = va_arg(ap, const char *);

			src = s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC)
				: sqlite3_bind_null(st, i);
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			size_t n = va_arg(ap, size_t);

			src = sqlite3_bind_text(st, i, s, (int)n,
						SQLITE_STATIC);
			break;
		}
		case 'h': {
			const struct tcfs_hash *h =
				va_arg(ap, const struct tcfs_hash *);
			char hex[TCFS_HASH_HEXLEN];

			if (!h) {
				src = sqlite3_bind_null(st, i);
				break;
			}
			tcfs_hash_hex(h, hex);
			src = sqlite3_bind_text(st, i, hex, 32,
						SQLITE_TRANSIENT);
			break;
		}
		default:
			abort();
		}
	}
	return src == SQLITE_OK ? 0 : tcfs_db_error(db, src);
}

static sqlite3_stmt *db_prepare(struct tcfs_db *db, const char *sql,
				const char *fmt, va_list ap, int *rc)
{
	sqlite3_stmt *st = db_stmt(db, sql, rc);

	if (!st)
		return NULL;
	*rc = db_bind(db, st, fmt, ap);
	if (*rc < 0) {
		tcfs_db_reset(st);
		return NULL;
	}
	return st;
}

int tcfs_db_exec(struct tcfs_db *db, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int rc = 0, src;

	tcfs_db_lock(db);
	va_start(ap, fmt);
	st = db_prepare(db, sql, fmt, ap, &rc);
	va_end(ap);
	if (st) {
		do
			src = sqlite3_step(st);
		while (src == SQLITE_ROW);
		rc = src == SQLITE_DONE ? sqlite3_changes(db->conn)
					: tcfs_db_error(db, src);
		tcfs_db_reset(st);
	}
	tcfs_db_unlock(db);
	return rc;
}

int tcfs_db_row(struct tcfs_db *db, sqlite3_stmt **out, const char *sql,
		const char *fmt, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int rc = 0;

	tcfs_db_lock(db);
	va_start(ap, fmt);
	st = db_prepare(db, sql, fmt, ap, &rc);
	va_end(ap);
	if (st) {
		*out = st;
		rc = tcfs_db_next(db, st);
	}
	tcfs_db_unlock(db);
	return rc;
}

static int db_veach(struct tcfs_db *db,
		    int (*row)(void *ctx, sqlite3_stmt *st), void *ctx,
		    const char *sql, const char *fmt, va_list ap)
{
	sqlite3_stmt *st;
	int rc = 0;

	tcfs_db_lock(db);
	st = db_prepare(db, sql, fmt, ap, &rc);
	if (st)
		rc = tcfs_db_next(db, st);
	while (rc == 1) {
		rc = row(ctx, st);
		if (rc < 0) {
			tcfs_db_reset(st);
			break;
		}
		rc = tcfs_db_next(db, st);
	}
	tcfs_db_unlock(db);
	return rc;
}

int tcfs_db_each(struct tcfs_db *db, int (*row)(void *ctx, sqlite3_stmt *st),
		 void *ctx, const char *sql, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = db_veach(db, row, ctx, sql, fmt, ap);
	va_end(ap);
	return rc;
}

/* The array tcfs_db_collect grows, and the caller's fill. */
struct collect {
	char *v;
	size_t n, cap, elem;
	int (*fill)(void *ctx, void *elem, sqlite3_stmt *st);
	void *ctx;
};

static int collect_row(void *ctx, sqlite3_stmt *st)
{
	struct collect *c = ctx;
	char *slot = tcfs_vec_push(&c->v, &c->n, &c->cap, c->elem);
	int rc;

	if (!slot)
		return -ENOMEM;
	rc = c->fill(c->ctx, slot, st);
	if (rc == 1)
		c->n--;	/* skipped: the slot is taken again */
	return rc < 0 ? rc : 0;
}

int tcfs_db_collect(struct tcfs_db *db, size_t elem,
		    int (*fill)(void *ctx, void *elem, sqlite3_stmt *st),
		    void *ctx, void *out, size_t *n, const char *sql,
		    const char *fmt, ...)
{
	struct collect c = { .elem = elem, .fill = fill, .ctx = ctx };
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = db_veach(db, collect_row, &c, sql, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		free(c.v);
		c.v = NULL;
		c.n = 0;
	}
	*(void **)out = c.v;
	*n = c.n;
	return rc;
}

int tcfs_db_next(struct tcfs_db *db, sqlite3_stmt *st)
{
	int src;

	assert(tcfs_db_held(db));	/* as from tcfs_db_row on */
	src = sqlite3_step(st);
	if (src == SQLITE_ROW)
		return 1;
	tcfs_db_reset(st);
	return src == SQLITE_DONE ? 0 : tcfs_db_error(db, src);
}

void tcfs_db_reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

int64_t tcfs_db_last_rowid(struct tcfs_db *db)
{
	return sqlite3_last_insert_rowid(db->conn);
}

int64_t tcfs_db_changes(struct tcfs_db *db)
{
	int64_t n;

	tcfs_db_lock(db);
	n = sqlite3_total_changes64(db->conn);
	tcfs_db_unlock(db);
	return n;
}

const char *tcfs_db_text(sqlite3_stmt *st, int col, size_t *len)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	if (len)
		*len = (size_t)sqlite3_column_bytes(st, col);
	return s ? s : "";
}

int tcfs_db_hash(sqlite3_stmt *st, int col, struct tcfs_hash *out)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	return s ? tcfs_hash_parse(s, out) : -ENOENT;
}
