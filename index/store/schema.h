/*
 * schema: the tables of index.db and the migrations between versions.
 *
 * The version is PRAGMA user_version; application_id marks the file as a
 * tcfs index.  Each migration runs in its own transaction together with the
 * version bump, so a failed upgrade leaves the index at the older version.
 */
#ifndef TCFS_SCHEMA_H
#define TCFS_SCHEMA_H

struct tcfs_db;

/* 'TCFS' */
#define TCFS_SCHEMA_APP_ID 0x54434653

struct tcfs_migration {
	int version;		/* the version this step produces */
	const char *sql;	/* statements, run as one script */
	int rebuilds;		/* drops a table that others refer to: runs
				 * with foreign keys off (checked at its end) */
	int edits_schema;	/* rewrites rows of sqlite_master, which only
				 * an edit that leaves every row as it is may
				 * do: runs with writable_schema on */
};

/* Opens the index at path and brings its schema up to date.  With create a
 * missing file is created; without it the file must already be a tcfs
 * index (an empty or foreign file is -EUCLEAN, never initialized, so a
 * damaged index is not mistaken for a new one).  *out is owned by the
 * caller: tcfs_db_close. */
int tcfs_schema_open(const char *path, int create, struct tcfs_db **out);

/* The version this build writes. */
int tcfs_schema_version(void);

/* This build's steps (*n of them; static, not to be freed), for tests that
 * make an index of an older version. */
const struct tcfs_migration *tcfs_schema_steps(int *n);

/* Checks, reading only, that an existing database is a tcfs index with a
 * schema: -EUCLEAN for an empty or foreign file, which must never be
 * initialized over (that would take a damaged index for an empty store). */
int tcfs_schema_check(struct tcfs_db *db);

/* Brings the index to tcfs_schema_version(); -EPROTONOSUPPORT for an index
 * written by a newer tcfs, -EUCLEAN for a database that is not a tcfs index. */
int tcfs_schema_upgrade(struct tcfs_db *db);

/* Applies steps[0..n) above the current version: the mechanism behind
 * tcfs_schema_upgrade, exposed for tests of the migration path. */
int tcfs_schema_apply(struct tcfs_db *db, const struct tcfs_migration *steps,
		      int n);

#endif
