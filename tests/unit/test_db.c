/* db: deferred commits, as the mount makes them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "index/store/db.h"
#include "index/tree/nodecache.h"
#include "index/tree/ns.h"
#include "index/maint/recover.h"
#include "index/store/store.h"
#include "tap.h"

struct lost {
	int calls;
	int rc;
};

static void on_lost(void *ctx, int rc)
{
	struct lost *l = ctx;

	l->calls++;
	l->rc = rc;
}

/* Whether a second connection (another process's view) sees parent/name. */
static int seen_by_reader(const char *dir, const char *name)
{
	struct tcfs_store_opts r = { .dir = dir };
	struct tcfs_store *rd;
	struct tcfs_node n;
	int rc;

	if (tcfs_store_open(&r, &rd) < 0)
		return -1;
	rc = tcfs_ns_lookup(rd, TCFS_ROOT_INO, name, &n) == 0;
	tcfs_store_close(rd);
	return rc;
}

static int tight_now;

static int tight(void *ctx)
{
	(void)ctx;
	return tight_now;
}

/* Near a full disk each change commits alone: one that cannot be
 * committed fails by itself, and nothing answered before is lost. */
static void commit_alone(const char *dir)
{
	struct tcfs_store_opts w = { .dir = dir, .writer = 1,
				     .recover = tcfs_recover };
	struct lost lost = { 0 };
	struct tcfs_store *s;
	struct tcfs_node m;
	struct tcfs_db *db;

	tap_eq(tcfs_store_open(&w, &s), 0, "open the writer again");
	db = tcfs_store_db(s);
	tcfs_store_defer(s, on_lost, &lost);
	tcfs_db_commit_alone_when(db, tight, NULL);
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "F", 0755, 1, NULL, &m), 0,
	       "mkdir F, deferred");
	tap_eq(seen_by_reader(dir, "F"), 0, "not committed yet");
	tight_now = 1;
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "G", 0755, 1, NULL, &m), 0,
	       "tight: mkdir G");
	tap_eq(seen_by_reader(dir, "F"), 1, "F was committed before G began");
	tap_eq(seen_by_reader(dir, "G"), 1, "and G is committed at its end");
	tap_ok(tcfs_db_exec(db, "PRAGMA defer_foreign_keys = ON", "") >= 0,
	       "defer foreign key checks to COMMIT");
	tap_eq(tcfs_store_begin(s), 0, "tight: a change whose COMMIT fails");
	tcfs_ns_mkdir(s, TCFS_ROOT_INO, "H", 0755, 1, NULL, &m);
	tcfs_db_exec(db, "INSERT INTO kernels (grp_ino, name, meta,"
		     " total_bytes, binary_bytes, ir_bytes, created)"
		     " VALUES (999999, 'x', 'ok', 0, 0, 0, 0)", "");
	tap_eq(tcfs_store_end(s, 0), -EEXIST, "fails by itself, with its error");
	tap_eq(lost.calls, 0, "and loses nothing else: lost is not called");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "H", &m), -ENOENT,
	       "its mkdir is undone");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "G", &m), 0, "G stays");
	tight_now = 0;
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "I", 0755, 1, NULL, &m), 0,
	       "with room again, mkdir I is deferred");
	tap_eq(seen_by_reader(dir, "I"), 0, "not committed yet");
	tcfs_store_close(s);
	tap_eq(seen_by_reader(dir, "I"), 1, "until the close");
}

/* A whole transaction (an import's key dir) opens no savepoint per
 * operation in it, yet still lands whole or not at all: an operation in
 * it that fails fails it, even when its caller goes on. */
static void whole(const char *dir)
{
	struct tcfs_store_opts w = { .dir = dir, .writer = 1,
				     .recover = tcfs_recover };
	struct lost lost = { 0 };
	struct tcfs_store *s;
	struct tcfs_node m;

	tap_eq(tcfs_store_open(&w, &s), 0, "open the writer for whole ones");
	tcfs_store_defer(s, on_lost, &lost);
	tap_eq(tcfs_store_begin_whole(s), 0, "begin a whole transaction");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "W1", 0755, 1, NULL, &m), 0,
	       "mkdir W1 in it");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "W1", 0755, 1, NULL, &m),
	       -EEXIST, "mkdir W1 again fails");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "W2", 0755, 1, NULL, &m),
	       -EEXIST, "nothing more begins in it: the first error");
	tap_eq(tcfs_store_end(s, 0), -EEXIST, "its end fails with that error");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "W1", &m), -ENOENT,
	       "W1 is undone, from the cache too");
	tap_eq(tcfs_store_begin_whole(s), 0, "begin another");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "W3", 0755, 1, NULL, &m), 0,
	       "mkdir W3 in it");
	tap_eq(tcfs_store_begin(s), 0, "a transaction inside it");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "W4", 0755, 1, NULL, &m), 0,
	       "mkdir W4 in that");
	tap_eq(tcfs_store_end(s, 0), 0, "which ends");
	tap_eq(tcfs_store_end(s, 0), 0, "and so does the whole one");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "W4", &m), 0, "W4 is there");
	tap_eq(tcfs_store_begin_whole(s), 0, "a third, failed by its caller");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "W5", 0755, 1, NULL, &m), 0,
	       "mkdir W5 in it");
	tap_eq(tcfs_store_end(s, -EIO), -EIO, "ends with the caller's error");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "W5", &m), -ENOENT,
	       "W5 is undone");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "W6", 0755, 1, NULL, &m), 0,
	       "after them an operation has its own savepoint again");
	tap_eq(lost.calls, 0, "nothing deferred was lost");
	tcfs_store_close(s);
	tap_eq(seen_by_reader(dir, "W3"), 1, "W3 committed at the close");
	tap_eq(seen_by_reader(dir, "W6"), 1, "W6 too");
	tap_eq(seen_by_reader(dir, "W1"), 0, "W1 never was");
}

static int fail_sync(void *ctx)
{
	(void)ctx;
	return -EIO;
}

/* A commit whose hook fails (a sync of the blobs) is rolled back. */
static void before_commit(const char *dir)
{
	struct tcfs_store_opts w = { .dir = dir, .writer = 1,
				     .recover = tcfs_recover };
	struct lost lost = { 0 };
	struct tcfs_store *s;
	struct tcfs_node m;

	tap_eq(tcfs_store_open(&w, &s), 0, "open the writer for hooks");
	tcfs_store_defer(s, on_lost, &lost);
	tcfs_db_before_commit(tcfs_store_db(s), fail_sync, NULL);
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "X1", 0755, 1, NULL, &m), 0,
	       "mkdir X1, deferred");
	tap_eq(tcfs_store_sync(s), -EIO, "its commit fails with the hook's error");
	tap_eq(lost.calls, 1, "and is lost");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "X1", &m), -ENOENT,
	       "X1 is undone");
	tcfs_db_before_commit(tcfs_store_db(s), NULL, NULL);
	tcfs_store_close(s);
	tap_eq(seen_by_reader(dir, "X1"), 0, "X1 never was");
}

int main(void)
{
	char *tmp = tap_tmpdir(), dir[512];
	struct tcfs_store_opts w = { .dir = dir, .create = 1, .writer = 1,
				     .recover = tcfs_recover };
	struct lost lost = { 0 };
	struct tcfs_store *s;
	struct tcfs_node n, m;
	struct tcfs_db *db;

	snprintf(dir, sizeof(dir), "%s/store", tmp);
	tap_eq(tcfs_store_open(&w, &s), 0, "open a writer");
	db = tcfs_store_db(s);
	tcfs_store_defer(s, on_lost, &lost);

	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "A", 0755, 1, NULL, &n), 0, "mkdir A");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "A", &m), 0,
	       "the writer sees A at once");
	tap_eq(seen_by_reader(dir, "A"), 0, "another connection does not yet");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "A", 0755, 1, NULL, &m), -EEXIST,
	       "a failing operation in the batch: EEXIST");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "B", 0755, 1, NULL, &m), 0,
	       "mkdir B after it");
	tap_eq(tcfs_store_sync(s), 0, "sync");
	tap_eq(seen_by_reader(dir, "A"), 1, "then A is committed");
	tap_eq(seen_by_reader(dir, "B"), 1, "and B: a failure undoes only itself");
	tap_eq(tcfs_store_sync(s), 0, "a sync with nothing pending is a no-op");

	/* A sync from inside a transaction waits for its end. */
	tap_eq(tcfs_store_begin(s), 0, "begin a transaction");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "C", 0755, 1, NULL, &m), 0, "mkdir C in it");
	tap_eq(tcfs_store_sync(s), 0, "sync inside it");
	tap_eq(seen_by_reader(dir, "C"), 0, "commits nothing yet");
	tap_eq(tcfs_store_end(s, 0), 0, "end it");
	tap_eq(tcfs_store_sync(s), 0, "sync");
	tap_eq(seen_by_reader(dir, "C"), 1, "C is committed");

	/* A batch whose COMMIT fails is lost, and its owner hears of it: a
	 * foreign key checked at COMMIT stands in for a full disk. */
	tap_ok(tcfs_db_exec(db, "PRAGMA defer_foreign_keys = ON", "") >= 0,
	       "defer foreign key checks to COMMIT");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "D", 0755, 1, NULL, &n), 0, "mkdir D");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "D", &m), 0, "D is cached");
	tap_eq(tcfs_db_exec(db, "INSERT INTO kernels (grp_ino, name, meta,"
			    " total_bytes, binary_bytes, ir_bytes, created)"
			    " VALUES (999999, 'x', 'ok', 0, 0, 0, 0)", ""), 1,
	       "a row that breaks a foreign key, in the batch");
	tap_eq(lost.calls, 0, "nothing lost yet");
	tap_ok(tcfs_store_sync(s) < 0, "sync fails");
	tap_eq(lost.calls, 1, "lost is called once");
	tap_eq(lost.rc, -EEXIST, "with the COMMIT's error");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "D", &m), -ENOENT,
	       "the lost mkdir is gone, from the cache too");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "C", &m), 0,
	       "what was committed before stays");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "E", 0755, 1, NULL, &m), 0,
	       "the next operation opens a new batch");
	tcfs_store_close(s);
	tap_eq(seen_by_reader(dir, "E"), 1, "closing the store commits it");
	tap_eq(seen_by_reader(dir, "D"), 0, "D never was");
	commit_alone(dir);
	whole(dir);
	before_commit(dir);
	tap_rmtree(tmp);
	return tap_done();
}
