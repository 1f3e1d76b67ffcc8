/*
 * db: the store's SQLite connection (STORE/index.db, WAL mode).
 *
 * One connection, guarded by a recursive mutex: every public index function
 * holds it for its whole duration, and a transaction holds it from begin to
 * end, so a batch of operations on one thread is never interleaved with
 * another thread's.  Statements are prepared once and cached by their SQL
 * text (string literals owned by the calling module).
 */
#ifndef TCFS_DB_H
#define TCFS_DB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct tcfs_hash;

struct tcfs_db;

/* Opens the connection to the database at path, creating a missing file
 * with create; reads and writes nothing yet.  An index is opened through
 * tcfs_schema_open, which checks what the file is before anything writes
 * to it.  *out is owned by the caller: tcfs_db_close. */
int tcfs_db_open(const char *path, int create, struct tcfs_db **out);
void tcfs_db_close(struct tcfs_db *db);
/* Sets the connection up for tcfs (WAL, foreign keys, timeouts): the
 * journal mode writes to the file, so only once it is known to be ours. */
int tcfs_db_configure(struct tcfs_db *db);

/* The raw connection, for the schema module and tests. */
sqlite3 *tcfs_db_handle(struct tcfs_db *db);
const char *tcfs_db_path(const struct tcfs_db *db);

void tcfs_db_lock(struct tcfs_db *db);
void tcfs_db_unlock(struct tcfs_db *db);
/* Whether the calling thread holds the lock: for asserts of callers that
 * must (a statement of tcfs_db_row read on, a node cache). */
int tcfs_db_held(struct tcfs_db *db);

/* A transaction: the outermost begin is BEGIN IMMEDIATE, inner ones are
 * savepoints.  end commits when rc >= 0 and rolls back otherwise, and returns
 * rc, or the commit's error. */
int tcfs_db_begin(struct tcfs_db *db);
int tcfs_db_end(struct tcfs_db *db, int rc);
/* A transaction that lands whole or not at all, for a bulk writer (an
 * import's key dir).  Transactions begun inside it open no savepoint of
 * their own: each one copies the pages it touches into SQLite's journal,
 * for a rollback that here would undo the whole anyway.  So the first of
 * them to end with an error dooms it: no transaction begins in it any
 * more (begin returns that error), and its own end rolls it all back and
 * returns that error, whatever rc it is given.  Ended by tcfs_db_end. */
int tcfs_db_begin_whole(struct tcfs_db *db);

/*
 * Deferred commits, for the mount: each COMMIT costs far more than the
 * changes it carries (WAL frames, locks, checkpoints), and a mount makes
 * thousands of small changes a second.  After tcfs_db_defer the outermost
 * begin opens one write transaction that stays open across ends (each
 * end releases a savepoint instead), so everything since the last
 * tcfs_db_sync is committed together by the next one; until then other
 * connections do not see it, and a killed process loses it.
 *
 * Should that transaction be lost after all (its COMMIT fails, or SQLite
 * rolls it back after a failing statement: a full disk), lost(ctx, rc) is
 * called with the db lock held: changes already answered for are gone.
 * tcfs_db_close commits what is deferred.
 */
void tcfs_db_defer(struct tcfs_db *db, void (*lost)(void *ctx, int rc),
		   void *ctx);

/* While deferring, whenever tight(ctx) says so (the disk is nearly full,
 * space.h) what is deferred is committed first and each transaction then
 * commits alone at its end: a change the disk cannot take fails by
 * itself, with ENOSPC, and nothing already answered for is lost. */
void tcfs_db_commit_alone_when(struct tcfs_db *db, int (*tight)(void *ctx),
			       void *ctx);
/* before(ctx) runs, db lock held, before every COMMIT; when it fails the
 * transaction is rolled back instead (and lost, when deferred). */
void tcfs_db_before_commit(struct tcfs_db *db, int (*before)(void *ctx),
			   void *ctx);
/* Commits what is deferred: 0, or the commit's error (after lost). */
int tcfs_db_sync(struct tcfs_db *db);

/* undo(ctx) is called, with the db lock held, whenever a rollback (of a
 * transaction or a savepoint) undoes changes: rows read since may have
 * been rows that never were (nodecache.c). */
void tcfs_db_on_undo(struct tcfs_db *db, void (*undo)(void *ctx), void *ctx);

/*
 * Binding formats for exec and row: one letter per '?' in the SQL.
 *   d int        i int64_t      n int64_t, NULL when negative
 *   t const char * (NUL-terminated, NULL = NULL)
 *   s const char *, size_t (text of that length)   h const struct tcfs_hash *
 */

/* Runs a statement to completion; returns the number of rows changed. */
int tcfs_db_exec(struct tcfs_db *db, const char *sql, const char *fmt, ...);

/* Runs a query and steps to its first row: returns 1 with *st positioned on
 * the row (read it, then tcfs_db_next or tcfs_db_reset), 0 when there is no
 * row, or a negative errno.  *st belongs to the cache, so the caller holds
 * tcfs_db_lock from this call until the statement is reset. */
int tcfs_db_row(struct tcfs_db *db, sqlite3_stmt **st, const char *sql,
		const char *fmt, ...);
/* Runs a query and calls row(ctx, st) on each of its rows, holding the
 * lock throughout; a negative return from row stops the query and is
 * returned.  Returns 0 after the last row. */
int tcfs_db_each(struct tcfs_db *db, int (*row)(void *ctx, sqlite3_stmt *st),
		 void *ctx, const char *sql, const char *fmt, ...);

/* Runs a query and collects its rows into a new array of elements of
 * size elem: fill(ctx, elem, st) fills each (zeroed first) and returns 0
 * to keep it, 1 to skip it, or a negative errno that stops the query and
 * is returned.  *out (a pointer to the array's first element: owned by
 * the caller, free(); NULL when no row is kept) holds *n elements.  On
 * failure *out is NULL and *n 0. */
int tcfs_db_collect(struct tcfs_db *db, size_t elem,
		    int (*fill)(void *ctx, void *elem, sqlite3_stmt *st),
		    void *ctx, void *out, size_t *n, const char *sql,
		    const char *fmt, ...);

/* Steps to the next row: 1, 0 at the end (already reset), or -errno. */
int tcfs_db_next(struct tcfs_db *db, sqlite3_stmt *st);
void tcfs_db_reset(sqlite3_stmt *st);

int64_t tcfs_db_last_rowid(struct tcfs_db *db);
/* Rows changed through this connection so far (inserted, updated or
 * deleted, whether committed or not): equal counts mean no change. */
int64_t tcfs_db_changes(struct tcfs_db *db);

/* Turns a SQLite result code into a negative errno with a message. */
int tcfs_db_error(struct tcfs_db *db, int sqlite_rc);

/* Column helpers: text with its length, and a hash column. */
const char *tcfs_db_text(sqlite3_stmt *st, int col, size_t *len);
int tcfs_db_hash(sqlite3_stmt *st, int col, struct tcfs_hash *out);

#endif
