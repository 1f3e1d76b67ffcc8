/* schema: versioned migrations, atomic steps, foreign and newer files refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "index/store/db.h"
#include "index/base/err.h"
#include "index/store/schema.h"
#include "tap.h"

static int user_version(struct tcfs_db *db)
{
	sqlite3_stmt *st;
	int v = -1;

	sqlite3_prepare_v2(tcfs_db_handle(db), "PRAGMA user_version", -1, &st,
			   NULL);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int count_rows(struct tcfs_db *db, const char *sql)
{
	sqlite3_stmt *st;
	int v = -1;

	if (sqlite3_prepare_v2(tcfs_db_handle(db), sql, -1, &st, NULL))
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* 1 if SQLite's plan for sql sorts its rows itself (a temp b-tree). */
static int plan_sorts(struct tcfs_db *db, const char *sql)
{
	char eqp[256];
	sqlite3_stmt *st;
	int sorts = 0;

	snprintf(eqp, sizeof(eqp), "EXPLAIN QUERY PLAN %s", sql);
	if (sqlite3_prepare_v2(tcfs_db_handle(db), eqp, -1, &st, NULL))
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW)
		if (strstr((const char *)sqlite3_column_text(st, 3),
			   "TEMP B-TREE"))
			sorts = 1;
	sqlite3_finalize(st);
	return sorts;
}

/* How many temp tables SQLite's program for sql builds as it runs. */
static int temp_tables(struct tcfs_db *db, const char *sql)
{
	char explain[512];
	sqlite3_stmt *st;
	int n = 0;

	snprintf(explain, sizeof(explain), "EXPLAIN %s", sql);
	if (sqlite3_prepare_v2(tcfs_db_handle(db), explain, -1, &st, NULL))
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW)
		n += strcmp((const char *)sqlite3_column_text(st, 1),
			    "OpenEphemeral") == 0;
	sqlite3_finalize(st);
	return n;
}

/* Empties a fresh index and makes it anew with this build's first
 * `version` steps: an index as an older tcfs left it. */
static int at_version(struct tcfs_db *db, int version)
{
	int n;
	const struct tcfs_migration *steps = tcfs_schema_steps(&n);

	sqlite3_exec(tcfs_db_handle(db),
		     "DROP TABLE events; DROP TABLE kernels; DROP TABLE nodes;"
		     "DROP TABLE unsynced; DROP TABLE probe_counts;"
		     "DROP TABLE config; DROP TABLE counters; DROP TABLE evicted;"
		     "DELETE FROM sqlite_sequence; PRAGMA user_version = 0;",
		     NULL, NULL, NULL);
	return tcfs_schema_apply(db, steps, version);
}

/* An index made again at version, with a dir and a file, upgraded to
 * this one. */
static struct tcfs_db *with_dir_and_file(const char *dir, int version)
{
	char path[512];
	struct tcfs_db *db = NULL;

	snprintf(path, sizeof(path), "%s/v%d.db", dir, version);
	tap_eq(tcfs_schema_open(path, 1, &db), 0, "a fresh index");
	tap_eq(at_version(db, version), 0, "made again at an older version");
	tap_eq(sqlite3_exec(tcfs_db_handle(db),
			    "INSERT INTO nodes (ino, parent, name, kind, mode,"
			    " mtime, ctime, blob) VALUES"
			    " (2, 1, 'K', 'd', 493, 5, 5, NULL),"
			    " (3, 2, 'f', 'f', 420, 6, 6, 'h1');",
			    NULL, NULL, NULL),
	       SQLITE_OK, "with a dir and a file");
	tap_eq(tcfs_schema_upgrade(db), 0, "it upgrades");
	tap_eq(user_version(db), tcfs_schema_version(), "to this version");
	return db;
}

/* Version 14 keeps atime apart from mtime: NULL for every row from
 * before (read as its mtime), so the step rewrites no row. */
static void test_v14(const char *dir)
{
	struct tcfs_db *db = with_dir_and_file(dir, 13);

	tap_eq(count_rows(db, "SELECT count(*) FROM nodes WHERE atime IS NULL"),
	       3, "every row's atime is NULL, the root's too (no row "
		  "rewritten)");
	tap_eq(count_rows(db, "SELECT sum(coalesce(atime, mtime)) FROM nodes"
			  " WHERE ino > 1"),
	       11, "and reads as its mtime");
	tcfs_db_close(db);
}

/* Version 7 rebuilds nodes: rows, kernels, inode numbers and counts. */
/* Version 11 gives nodes owners: every row from before is -1, whoever
 * mounts, as is a row written without naming one. */
static void test_v11(const char *dir)
{
	struct tcfs_db *db = with_dir_and_file(dir, 10);

	tap_eq(count_rows(db, "SELECT count(*) FROM nodes"
			  " WHERE uid = -1 AND gid = -1"),
	       3, "every row, the root's too, is owned by whoever mounts");
	tap_eq(sqlite3_exec(tcfs_db_handle(db),
			    "INSERT INTO nodes (parent, name, kind, mode, mtime,"
			    " ctime) VALUES (1, 'L', 'd', 493, 7, 7);",
			    NULL, NULL, NULL),
	       SQLITE_OK, "a row that names no owner");
	tap_eq(count_rows(db, "SELECT uid + gid FROM nodes WHERE name = 'L'"),
	       -2, "is whoever mounts' too");
	tcfs_db_close(db);
}

/* Version 15: the kernels in users' own dirs are the unshared ones. */
static void test_v15(const char *dir)
{
	char path[4096];
	struct tcfs_db *db;

	snprintf(path, sizeof(path), "%s/v13.db", dir);
	tap_eq(tcfs_schema_open(path, 1, &db), 0, "a fresh index");
	tap_eq(at_version(db, 13), 0, "made again at version 13");
	sqlite3_exec(tcfs_db_handle(db),
		     "INSERT INTO nodes (ino, parent, name, kind, mode, mtime,"
		     " ctime, blob) VALUES"
		     " (10, 1, '.tcfs-private-5', 'd', 448, 0, 0, NULL),"
		     " (11, 10, 'K', 'd', 493, 0, 0, NULL),"
		     " (12, 11, '__grp__a.json', 'f', 420, 0, 0, 'b'),"
		     " (13, 1, 'L', 'd', 493, 0, 0, NULL),"
		     " (14, 13, '__grp__a.json', 'f', 420, 0, 0, 'b');"
		     "INSERT INTO kernels (grp_ino, name, meta, total_bytes,"
		     " binary_bytes, ir_bytes, created) VALUES"
		     " (12, 'a', 'ok', 0, 0, 0, 0), (14, 'a', 'ok', 0, 0, 0, 0);",
		     NULL, NULL, NULL);
	tap_eq(tcfs_schema_upgrade(db), 0, "an index at version 13 upgrades");
	tap_eq(count_rows(db, "SELECT count(*) FROM kernels WHERE"
			  " (grp_ino = 12 AND shared = 0) OR"
			  " (grp_ino = 14 AND shared = 1)"),
	       2, "a user's own kernel is not shared, the others are");
	tap_eq(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE"
			  " type = 'index' AND name = 'nodes_private'"),
	       1, "users' own dirs are indexed");
	tap_eq(count_rows(db, "SELECT count(*) FROM nodes INDEXED BY"
			  " nodes_private WHERE parent > 0 AND"
			  " name GLOB '.tcfs-private-*'"),
	       1, "... an index their query can use");
	tcfs_db_close(db);
}

/* Version 16: the probe log's kind is checked in C, not by SQL, so a
 * kind a later tcfs adds needs no migration; the rows from before stay,
 * and so does the trigger on them. */
/* Version 19 writes the CHECKs on nodes.kind and kernels.meta so that
 * an insert builds no temp table, and they hold as before. */
static void test_v19(const char *dir)
{
	static const char node[] =
		"INSERT INTO nodes (parent, name, kind, mode, mtime, ctime,"
		" blob) VALUES (2, 'g', 'f', 420, 7, 7, 'h2')";
	static const char kernel[] =
		"INSERT INTO kernels (grp_ino, name, meta, total_bytes,"
		" binary_bytes, ir_bytes, created) VALUES (3, 'k', 'ok', 1, 0,"
		" 0, 1)";
	struct tcfs_db *db = with_dir_and_file(dir, 18);

	tap_eq(temp_tables(db, node) + temp_tables(db, kernel), 0,
	       "an insert of a node or a kernel builds no temp table");
	tap_eq(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE"
			  " sql LIKE '%kind = ''h'')%'"
			  " OR sql LIKE '%meta = ''invalid'')%'"),
	       2, "both tables say so in their text");
	tap_eq(sqlite3_exec(tcfs_db_handle(db), node, NULL, NULL, NULL),
	       SQLITE_OK, "a file is inserted");
	tap_eq(sqlite3_exec(tcfs_db_handle(db), kernel, NULL, NULL, NULL),
	       SQLITE_OK, "and its kernel");
	tap_ok(sqlite3_exec(tcfs_db_handle(db),
			    "INSERT INTO nodes (parent, name, kind, mode, mtime,"
			    " ctime) VALUES (2, 'x', 'q', 420, 7, 7)",
			    NULL, NULL, NULL) != SQLITE_OK,
	       "a kind the schema does not know is refused");
	tap_ok(sqlite3_exec(tcfs_db_handle(db),
			    "UPDATE kernels SET meta = 'maybe'", NULL, NULL,
			    NULL) != SQLITE_OK,
	       "so is a meta it does not know");
	tap_eq(count_rows(db, "SELECT count(*) FROM nodes WHERE ino IN (2, 3)"
			  " AND parent IN (1, 2)"),
	       2, "the rows from before are as they were");
	tap_eq(count_rows(db, "SELECT count(*) FROM pragma_integrity_check"
			  " WHERE integrity_check = 'ok'"),
	       1, "and the index is whole");
	tcfs_db_close(db);
}

static void test_v16(const char *dir)
{
	char path[4096];
	struct tcfs_db *db;

	snprintf(path, sizeof(path), "%s/v15.db", dir);
	tap_eq(tcfs_schema_open(path, 1, &db), 0, "a fresh index");
	tap_eq(at_version(db, 15), 0, "made again at version 15");
	tap_eq(sqlite3_exec(tcfs_db_handle(db),
			    "INSERT INTO events (time, pid, comm, key, name, kind,"
			    " hit) VALUES (1, 2, 'p', 'K', 'n', 'fxgraph', 1);"
			    "INSERT INTO probe_counts (key, name, kind, hits,"
			    " misses, first, last, last_hit) VALUES"
			    " ('K', 'n', 'vllm', 1, 0, 1, 1, 1);",
			    NULL, NULL, NULL),
	       SQLITE_OK, "with an event and a count");
	tap_ok(sqlite3_exec(tcfs_db_handle(db),
			    "INSERT INTO events (time, pid, comm, key, name, kind,"
			    " hit) VALUES (1, 2, 'p', 'K', 'n', 'newkind', 1);",
			    NULL, NULL, NULL) != SQLITE_OK,
	       "version 15 refuses a kind it does not list");
	tap_eq(tcfs_schema_upgrade(db), 0, "an index at version 15 upgrades");
	tap_eq(count_rows(db, "SELECT count(*) FROM events WHERE kind ="
			  " 'fxgraph'") +
		       count_rows(db, "SELECT count(*) FROM probe_counts WHERE"
				  " kind = 'vllm'"),
	       2, "its rows stay");
	tap_eq(sqlite3_exec(tcfs_db_handle(db),
			    "INSERT INTO events (time, pid, comm, key, name, kind,"
			    " hit) VALUES (1, 2, 'p', 'K', 'n', 'newkind', 1);"
			    "INSERT INTO probe_counts (key, name, kind, hits,"
			    " misses, first, last, last_hit) VALUES"
			    " ('K', 'n', 'newkind', 1, 0, 1, 1, 1);",
			    NULL, NULL, NULL),
	       SQLITE_OK, "a new kind needs no migration");
	tap_eq(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE"
			  " type = 'trigger' AND name = 'evicted_requested'") +
		       count_rows(db, "SELECT count(*) FROM sqlite_master WHERE"
				  " type = 'index' AND name IN ('events_time',"
				  " 'events_uid')"),
	       3, "the trigger and indexes on events are there");
	tcfs_db_close(db);
}

static void test_v7(const char *dir)
{
	char path[512];
	struct tcfs_db *db;

	snprintf(path, sizeof(path), "%s/v5.db", dir);
	tap_eq(tcfs_schema_open(path, 1, &db), 0, "a fresh index");
	tap_eq(at_version(db, 5), 0, "made again at version 5");
	tap_eq(sqlite3_exec(tcfs_db_handle(db),
			    "INSERT INTO nodes (ino, parent, name, kind, mode,"
			    " mtime, blob) VALUES"
			    " (2, 1, 'K', 'd', 493, 5, NULL),"
			    " (3, 2, '__grp__a.json', 'f', 292, 6, 'h1'),"
			    " (4, 2, 'sub', 'd', 493, 7, NULL),"
			    " (5, 1, 'L', 'd', 493, 8, NULL),"
			    " (6, -2, '6', 'f', 292, 9, 'h2'),"
			    " (50, 1, 'gone', 'd', 493, 9, NULL);"
			    "DELETE FROM nodes WHERE ino = 50;"
			    "INSERT INTO kernels (grp_ino, name, meta,"
			    " total_bytes, binary_bytes, ir_bytes, created)"
			    " VALUES (3, 'a', 'ok', 1, 1, 0, 6);",
			    NULL, NULL, NULL),
	       SQLITE_OK, "with a tree, a kernel and a node in limbo");
	tap_eq(tcfs_schema_upgrade(db), 0, "upgrades to this version");
	tap_eq(user_version(db), tcfs_schema_version(), "at this version");
	tap_eq(count_rows(db, "SELECT count(*) FROM kernels WHERE grp_ino = 3"),
	       1, "the kernel survived the rebuild (no cascade)");
	tap_eq(count_rows(db, "PRAGMA foreign_keys"), 1,
	       "foreign keys are on again");
	tap_eq(count_rows(db, "SELECT nlink FROM nodes WHERE ino = 1"), 4,
	       "the root's nlink: 2 + its 2 subdirs");
	tap_eq(count_rows(db, "SELECT nlink FROM nodes WHERE ino = 2"), 3,
	       "a key dir's: 2 + 1");
	tap_eq(count_rows(db, "SELECT nlink FROM nodes WHERE ino = 3"), 1,
	       "a file's: 1");
	tap_eq(count_rows(db, "SELECT nlink FROM nodes WHERE ino = 6"), 0,
	       "a node in limbo's: 0");
	tap_eq(count_rows(db, "SELECT count(*) FROM nodes WHERE ctime = mtime"),
	       6, "ctime starts as mtime");
	tap_eq(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE"
			  " name IN ('nodes_parent', 'nodes_blob',"
			  " 'nodes_inode')"),
	       3, "with its indexes");
	sqlite3_exec(tcfs_db_handle(db),
		     "INSERT INTO nodes (parent, name, kind, mode, mtime,"
		     " ctime, target) VALUES (1, 'ln', 'l', 511, 1, 1, 'K');",
		     NULL, NULL, NULL);
	tap_eq(count_rows(db, "SELECT ino FROM nodes WHERE name = 'ln'"), 51,
	       "no inode number is used again, and symlinks go in");
	tcfs_db_close(db);
}

int main(void)
{
	static const struct tcfs_migration v1[] = {
		{ 1, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (7);" },
	};
	static const struct tcfs_migration v2[] = {
		{ 1, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (7);" },
		{ 2, "ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x';" },
	};
	static const struct tcfs_migration v3_broken[] = {
		{ 1, "" },
		{ 2, "" },
		{ 3, "CREATE TABLE u (a); INSERT INTO nosuch VALUES (1);" },
	};
	static const struct tcfs_migration v3_edit_broken[] = {
		{ 1, "" },
		{ 2, "" },
		{ 3, "UPDATE sqlite_master SET sql = 'x' WHERE name = 't';"
		     "INSERT INTO nosuch VALUES (1);", .edits_schema = 1 },
	};
	static const struct tcfs_migration v3_edit[] = {
		{ 1, "" },
		{ 2, "" },
		{ 3, "UPDATE sqlite_master SET sql = replace(sql,"
		     " 'DEFAULT ''x''', 'DEFAULT ''y''') WHERE name = 't';",
		     .edits_schema = 1 },
	};
	char *dir = tap_tmpdir(), path[512];
	struct tcfs_db *db;
	int fd;

	/* The real schema on a fresh file. */
	snprintf(path, sizeof(path), "%s/index.db", dir);
	tap_eq(tcfs_schema_open(path, 1, &db), 0, "a fresh index opens");
	tap_eq(user_version(db), tcfs_schema_version(),
	       "and is at this build's version");
	tap_eq(count_rows(db, "SELECT count(*) FROM nodes"), 1,
	       "with the root directory");
	tap_eq(count_rows(db, "PRAGMA journal_mode = WAL"), 0,
	       "in WAL mode");
	tcfs_db_close(db);

	/* The migration path, with steps of our own on a side file. */
	snprintf(path, sizeof(path), "%s/m.db", dir);
	sqlite3 *raw;
	sqlite3_open(path, &raw);
	sqlite3_close(raw);
	tap_eq(tcfs_schema_open(path, 0, &db), -EUCLEAN,
	       "an existing empty database is not taken for a new index");
	tap_ok(strstr(tcfs_err_msg(), "empty") != NULL,
	       "the message says it is empty");
	tap_eq(tcfs_schema_open(path, 1, &db), 0, "opened as fresh, it is");
	sqlite3_exec(tcfs_db_handle(db),
		     "DROP TABLE events; DROP TABLE kernels; DROP TABLE nodes;"
		     "DELETE FROM sqlite_sequence; PRAGMA user_version = 0;",
		     NULL, NULL, NULL);
	tap_eq(tcfs_schema_apply(db, v1, 1), 0, "apply version 1");
	tap_eq(user_version(db), 1, "at version 1");
	tap_eq(tcfs_schema_apply(db, v2, 2), 0, "migrate to version 2");
	tap_eq(user_version(db), 2, "at version 2");
	tap_eq(count_rows(db, "SELECT count(*) FROM t WHERE a = 7 AND b = 'x'"),
	       1, "the row of version 1 survived the migration");
	tap_eq(tcfs_schema_apply(db, v2, 2), 0, "applying again is a no-op");
	tap_ok(tcfs_schema_apply(db, v3_broken, 3) < 0,
	       "a failing step reports an error");
	tap_eq(user_version(db), 2, "and leaves the version where it was");
	tap_eq(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE name = 'u'"),
	       0, "with nothing of the failed step left");
	tap_ok(tcfs_schema_apply(db, v3_edit_broken, 3) < 0,
	       "a failing edit of the schema reports an error");
	tap_eq(user_version(db), 2, "and leaves the version where it was");
	tap_ok(sqlite3_exec(tcfs_db_handle(db),
			    "UPDATE sqlite_master SET sql = sql", NULL, NULL,
			    NULL) != SQLITE_OK,
	       "with sqlite_master read-only again");
	tap_eq(tcfs_schema_apply(db, v3_edit, 3), 0, "an edit of the schema");
	tap_eq(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE"
			  " sql LIKE '%DEFAULT ''y''%'"),
	       1, "changes the table's text");
	tap_eq(count_rows(db, "INSERT INTO t (a) VALUES (8) RETURNING b = 'y'"),
	       1, "and this connection uses it at once");
	tap_eq(tcfs_schema_apply(db, v1, 1), -EPROTONOSUPPORT,
	       "an index newer than the build is refused");
	tap_ok(strstr(tcfs_err_msg(), "newer tcfs") != NULL,
	       "with a message saying so");
	tcfs_db_close(db);

	/* Version 3 counts the probes of an older log per kernel. */
	snprintf(path, sizeof(path), "%s/v2.db", dir);
	tap_eq(tcfs_schema_open(path, 1, &db), 0, "a fresh index");
	tap_eq(at_version(db, 2), 0, "made again at version 2");
	sqlite3_exec(tcfs_db_handle(db),
		     "INSERT INTO events (time, pid, comm, key, name, kind, hit)"
		     " VALUES (10, 1, 'p', 'K1', 'add', 'kernel', 0),"
		     " (20, 1, 'p', 'K1', 'add', 'kernel', 1),"
		     " (30, 2, 'p', 'K1', 'add', 'kernel', 1),"
		     " (40, 2, 'p', 'K2', 'x.so', 'module', 0);",
		     NULL, NULL, NULL);
	tap_eq(tcfs_schema_upgrade(db), 0, "an index at version 2 upgrades");
	tap_eq(user_version(db), tcfs_schema_version(), "to this version");
	tap_eq(count_rows(db, "SELECT count(*) FROM probe_counts WHERE"
			  " key = 'K1' AND name = 'add' AND kind = 'kernel'"
			  " AND hits = 2 AND misses = 1 AND first = 10"
			  " AND last = 30 AND last_hit = 30"),
	       1, "its log's probes are counted per kernel");
	tap_eq(count_rows(db, "SELECT count(*) FROM probe_counts WHERE"
			  " key = 'K2' AND hits = 0 AND misses = 1"
			  " AND last_hit = 0"),
	       1, "a module never hit has last_hit 0");
	tcfs_db_close(db);

	/* Version 6 indexes a directory's kids by inode, so a readdir
	 * page is a range, not a sort of the whole directory. */
	snprintf(path, sizeof(path), "%s/v5b.db", dir);
	tap_eq(tcfs_schema_open(path, 1, &db), 0, "a fresh index");
	tap_eq(at_version(db, 5), 0, "made again at version 5");
	sqlite3_exec(tcfs_db_handle(db),
		     "INSERT INTO nodes (parent, name, kind, mode, mtime)"
		     " VALUES (1, 'a', 'd', 493, 0);",
		     NULL, NULL, NULL);
	tap_eq(tcfs_schema_upgrade(db), 0, "an index at version 5 upgrades");
	tap_eq(user_version(db), tcfs_schema_version(), "to this version");
	tap_eq(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE"
			  " type = 'index' AND name = 'nodes_parent'"),
	       1, "with nodes_parent");
	tap_eq(count_rows(db, "SELECT count(*) FROM nodes WHERE parent = 1"
			  " AND name = 'a'"),
	       1, "and its rows kept");
	tap_eq(plan_sorts(db, "SELECT ino FROM nodes WHERE parent = 1"
			  " AND ino > 0 ORDER BY ino LIMIT 10"),
	       0, "a readdir page sorts nothing");
	tcfs_db_close(db);
	test_v7(dir);
	test_v11(dir);
	test_v14(dir);
	test_v15(dir);
	test_v16(dir);
	test_v19(dir);

	/* Some other program's database. */
	snprintf(path, sizeof(path), "%s/other.db", dir);
	sqlite3_open(path, &raw);
	sqlite3_exec(raw, "CREATE TABLE users (id);", NULL, NULL, NULL);
	sqlite3_close(raw);
	tap_eq(tcfs_schema_open(path, 0, &db), -EUCLEAN,
	       "another program's database is refused");

	/* Not a database at all. */
	snprintf(path, sizeof(path), "%s/garbage.db", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	tap_ok(write(fd, "this is not sqlite, not at all; 0123456789abcdef"
			 "0123456789abcdef0123456789abcdef", 80) == 80,
	       "wrote a garbage file");
	close(fd);
	tap_eq(tcfs_schema_open(path, 0, &db), -EUCLEAN,
	       "a garbage file is EUCLEAN");
	tap_ok(strstr(tcfs_err_msg(), "garbage.db") != NULL,
	       "and the message names the file");
	tap_rmtree(dir);
	return tap_done();
}
