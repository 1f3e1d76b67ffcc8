/* schema: the tables of index.db, version by version. */
#include "index/store/schema.h"

#include <assert.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>

#include "index/store/db.h"
#include "index/base/err.h"
#include "index/base/name.h"
#include "index/base/text.h"

/*
 * Version 1.
 *
 * nodes: one row per directory entry.  ino is AUTOINCREMENT so an inode
 * number is never reused, even after its row is gone: dlopen and the
 * kernel's caches tell files apart by it.  blob is the XXH3-128 hex of the
 * content (files only); fmt 1 marks a group file stored as a key-relative
 * template.  size is the size as written (for a group file, with the child
 * paths it was written with).  mtime is in nanoseconds.
 *
 * kernels: one row per group file, i.e. per compiled kernel; its key is the
 * name of the group file's directory, so renaming a key directory needs no
 * update here.  Every metadata field may be NULL: third-party and old files
 * lack fields, and meta says whether NAME.json parsed at all.
 *
 * events: the probe log the mount fills, hit or miss per probe.
 */
static const char schema_v1[] =
	"CREATE TABLE nodes ("
	"  ino    INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  parent INTEGER NOT NULL,"
	"  name   TEXT NOT NULL,"
	"  kind   TEXT NOT NULL CHECK (kind IN ('d', 'f')),"
	"  mode   INTEGER NOT NULL,"
	"  size   INTEGER NOT NULL DEFAULT 0,"
	"  mtime  INTEGER NOT NULL,"
	"  blob   TEXT,"
	"  fmt    INTEGER NOT NULL DEFAULT 0,"
	"  UNIQUE (parent, name),"
	"  CHECK ((kind = 'f') = (blob IS NOT NULL))"
	");"
	"CREATE INDEX nodes_blob ON nodes(blob) WHERE blob IS NOT NULL;"
	"INSERT INTO nodes (ino, parent, name, kind, mode, mtime)"
	"  VALUES (1, 0, '', 'd', 493, CAST((julianday('now') - 2440587.5) * 86400e9 AS INTEGER));"
	"CREATE TABLE kernels ("
	"  grp_ino        INTEGER PRIMARY KEY"
	"                 REFERENCES nodes(ino) ON DELETE CASCADE,"
	"  name           TEXT NOT NULL,"
	"  meta           TEXT NOT NULL CHECK (meta IN ('ok', 'missing', 'invalid')),"
	"  backend        TEXT,"
	"  arch           TEXT,"
	"  warp_size      INTEGER,"
	"  num_warps      INTEGER,"
	"  num_stages     INTEGER,"
	"  num_ctas       INTEGER,"
	"  triton_version TEXT,"
	"  total_bytes    INTEGER NOT NULL,"
	"  binary_bytes   INTEGER NOT NULL,"
	"  ir_bytes       INTEGER NOT NULL,"
	"  created        INTEGER NOT NULL"
	");"
	"CREATE INDEX kernels_name ON kernels(name);"
	"CREATE TABLE events ("
	"  id    INTEGER PRIMARY KEY,"
	"  time  INTEGER NOT NULL,"
	"  pid   INTEGER NOT NULL,"
	"  comm  TEXT NOT NULL,"
	"  key   TEXT NOT NULL,"
	"  name  TEXT,"
	"  kind  TEXT NOT NULL CHECK (kind IN ('kernel', 'module')),"
	"  hit   INTEGER NOT NULL CHECK (hit IN (0, 1))"
	");"
	"CREATE INDEX events_time ON events(time);";

/*
 * Version 2.
 *
 * unsynced: blobs that rows name but that may not be on the disk yet, each
 * with the flush generation it was noted in (durable.h).
 */
static const char schema_v2[] =
	"CREATE TABLE unsynced ("
	"  blob TEXT PRIMARY KEY,"
	"  gen  INTEGER NOT NULL"
	") WITHOUT ROWID;";

/*
 * Version 3.
 *
 * probe_counts: every probe the log ever had, counted per kernel (or
 * module) and key: the raw events are trimmed to a bound (config), these
 * stay.  last_hit is 0 for a kernel never hit.
 *
 * config: the settings tcfs config sets (config.h); counters: running
 * counts kept across mounts, such as the probe events dropped while the
 * disk was full.
 */
static const char schema_v3[] =
	"CREATE TABLE probe_counts ("
	"  key      TEXT NOT NULL,"
	"  name     TEXT NOT NULL,"
	"  kind     TEXT NOT NULL CHECK (kind IN ('kernel', 'module')),"
	"  hits     INTEGER NOT NULL,"
	"  misses   INTEGER NOT NULL,"
	"  first    INTEGER NOT NULL,"
	"  last     INTEGER NOT NULL,"
	"  last_hit INTEGER NOT NULL,"
	"  PRIMARY KEY (key, name, kind)"
	") WITHOUT ROWID;"
	"INSERT INTO probe_counts"
	"  SELECT key, coalesce(name, ''), kind, sum(hit), sum(1 - hit),"
	"         min(time), max(time),"
	"         coalesce(max(CASE WHEN hit THEN time END), 0)"
	"  FROM events GROUP BY key, coalesce(name, ''), kind;"
	"CREATE TABLE config ("
	"  key   TEXT PRIMARY KEY,"
	"  value INTEGER NOT NULL"
	") WITHOUT ROWID;"
	"CREATE TABLE counters ("
	"  name  TEXT PRIMARY KEY,"
	"  value INTEGER NOT NULL"
	") WITHOUT ROWID;";

/*
 * Version 4.
 *
 * kernels_target: kernels by target and name, for browsing by target (the
 * mount's by-arch/ view) without a scan of every kernel.
 */
static const char schema_v4[] =
	"CREATE INDEX kernels_target ON kernels(backend, arch, name);";

/*
 * Version 5.
 *
 * events.view: the view of the mount a probe came through ("" for the
 * cache itself, "binary-only").
 */
static const char schema_v5[] =
	"ALTER TABLE events ADD COLUMN view TEXT NOT NULL DEFAULT '';";

/*
 * Version 6.
 *
 * nodes_parent: kids of a dir in inode order, for readdir pages.
 */
static const char schema_v6[] =
	"CREATE INDEX nodes_parent ON nodes(parent, ino);";

/*
 * Version 7: a plain file system for the other caches beside Triton's.
 *
 * nodes is rebuilt, as its CHECKs change (SQLite alters no CHECK), with
 * two more kinds: 'l', a symlink, whose target holds what it points to
 * (size is its length); and 'h', another name of a file (a hard link),
 * whose inode is the row that holds the file.  That row is one of the
 * file's names itself, so a file with one name, the common case, is one
 * row and a lookup one read; the file moves to another of its names when
 * its row's name goes.  nlink is kept, never counted at a stat: the names
 * of a file or symlink, 2 + the subdirs of a dir, 0 in limbo.  ctime
 * (ns) is the last change of the inode: content, mode, times, a name.
 */
static const char schema_v7[] =
	"CREATE TABLE nodes_v7 ("
	"  ino    INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  parent INTEGER NOT NULL,"
	"  name   TEXT NOT NULL,"
	"  kind   TEXT NOT NULL CHECK (kind IN ('d', 'f', 'l', 'h')),"
	"  mode   INTEGER NOT NULL,"
	"  size   INTEGER NOT NULL DEFAULT 0,"
	"  mtime  INTEGER NOT NULL,"
	"  blob   TEXT,"
	"  fmt    INTEGER NOT NULL DEFAULT 0,"
	"  ctime  INTEGER NOT NULL,"
	"  nlink  INTEGER NOT NULL DEFAULT 1,"
	"  target TEXT,"
	"  inode  INTEGER,"
	"  UNIQUE (parent, name),"
	"  CHECK ((kind = 'f') = (blob IS NOT NULL)),"
	"  CHECK ((kind = 'l') = (target IS NOT NULL)),"
	"  CHECK ((kind = 'h') = (inode IS NOT NULL))"
	");"
	"INSERT INTO nodes_v7"
	"  (ino, parent, name, kind, mode, size, mtime, blob, fmt, ctime, nlink)"
	"  SELECT ino, parent, name, kind, mode, size, mtime, blob, fmt, mtime,"
	"    CASE WHEN parent < 0 THEN 0"
	"         WHEN kind = 'd' THEN 2 + (SELECT count(*) FROM nodes c"
	"                                   WHERE c.parent = n.ino"
	"                                   AND c.kind = 'd')"
	"         ELSE 1 END"
	"  FROM nodes n;"
	/* Inode numbers are never reused: the old high-water mark stays. */
	"UPDATE sqlite_sequence SET seq = max(seq, (SELECT seq FROM"
	"  sqlite_sequence WHERE name = 'nodes')) WHERE name = 'nodes_v7';"
	"DROP TABLE nodes;"
	"ALTER TABLE nodes_v7 RENAME TO nodes;"
	"CREATE INDEX nodes_blob ON nodes(blob) WHERE blob IS NOT NULL;"
	"CREATE INDEX nodes_parent ON nodes(parent, ino);"
	"CREATE INDEX nodes_inode ON nodes(inode) WHERE inode IS NOT NULL;";

/*
 * Version 8.
 *
 * evicted: kernels the size limit evicted (config max-size), by key, until
 * one of that key lands again.  A miss logged for such a key counts in
 * counters.evicted_requested: the limit cost a compile (ccache's "evicted,
 * then requested again").  Triggers keep both, whoever writes the rows.
 */
static const char schema_v8[] =
	"CREATE TABLE evicted ("
	"  key  TEXT PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  time INTEGER NOT NULL"
	") WITHOUT ROWID;"
	"CREATE TRIGGER evicted_requested AFTER INSERT ON events"
	"  WHEN NEW.hit = 0 AND NEW.kind = 'kernel'"
	"   AND EXISTS (SELECT 1 FROM evicted WHERE key = NEW.key)"
	"  BEGIN"
	"    INSERT INTO counters (name, value) VALUES ('evicted_requested', 1)"
	"      ON CONFLICT (name) DO UPDATE SET value = value + 1;"
	"  END;"
	"CREATE TRIGGER evicted_back AFTER INSERT ON kernels"
	"  BEGIN"
	"    DELETE FROM evicted WHERE key ="
	"      (SELECT d.name FROM nodes g JOIN nodes d ON d.ino = g.parent"
	"       WHERE g.ino = NEW.grp_ino);"
	"  END;";

/*
 * Version 9.
 *
 * events.uid, probe_counts.uid: the user whose process probed (for
 * probe_counts, the first probe of the row); -1 when logged before.  A
 * process list shows other users' processes only to root and the mount's
 * owner, and probes of names never there are folded per user (event.h),
 * so one user's flood folds only its own rows.
 */
static const char schema_v9[] =
	"ALTER TABLE events ADD COLUMN uid INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE probe_counts ADD COLUMN uid INTEGER NOT NULL DEFAULT -1;";

/*
 * Version 10: the fleet tier.
 *
 * kernels.origin: where a kernel came from, "here" (written through the
 * mount), "import", "unpack" or "remote" (fetched from the fleet tier);
 * "" for kernels that landed before.  A kernel from the remote is never
 * published again.  events.remote: a hit the remote served (fetched on the
 * local miss, landed, then answered).
 */
static const char schema_v10[] =
	"ALTER TABLE kernels ADD COLUMN origin TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE events ADD COLUMN remote INTEGER NOT NULL DEFAULT 0;";

/*
 * Version 11: owners.
 *
 * nodes.uid, nodes.gid: who owns a file, dir or symlink, as the process
 * that made it through the mount was (or chown set).  -1 is whoever
 * mounts the store, shown as the mount's owner: every row from before, and
 * every row that a command writes without a mount (import, unpack, the
 * fleet tier's fetch), as it has no other user to name.  A hard link's row
 * keeps -1: the file's owner is on the file's row, as its mode is.
 */
static const char schema_v11[] =
	"ALTER TABLE nodes ADD COLUMN uid INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE nodes ADD COLUMN gid INTEGER NOT NULL DEFAULT -1;";

/*
 * Version 12.
 *
 * events_uid: each user's events in order (the rowid, id, closes every
 * index entry), so the log is trimmed per user (event.h) by ranges of
 * this index, never by a scan of the table.
 */
static const char schema_v12[] =
	"CREATE INDEX events_uid ON events(uid);";

/*
 * Version 13: Inductor's probes (torch.compile's caches above Triton's:
 * FX graphs, AOTAutograd entries, compiled modules, autotune results) and
 * vLLM's (its compiled artifacts, per rank) are
 * kinds of their own in events and probe_counts (event.h).  Both tables
 * are rebuilt, as SQLite alters no CHECK; the list of kinds is the one of
 * this version, as every step is a snapshot.
 */
#define KINDS_V13                                                           \
	"('kernel', 'module', 'fxgraph', 'aotautograd', 'pycode',"          \
	" 'best_config', 'vllm')"
static const char schema_v13[] =
	"CREATE TABLE events_v13 ("
	"  id     INTEGER PRIMARY KEY,"
	"  time   INTEGER NOT NULL,"
	"  pid    INTEGER NOT NULL,"
	"  comm   TEXT NOT NULL,"
	"  key    TEXT NOT NULL,"
	"  name   TEXT,"
	"  kind   TEXT NOT NULL CHECK (kind IN " KINDS_V13 "),"
	"  hit    INTEGER NOT NULL CHECK (hit IN (0, 1)),"
	"  view   TEXT NOT NULL DEFAULT '',"
	"  uid    INTEGER NOT NULL DEFAULT -1,"
	"  remote INTEGER NOT NULL DEFAULT 0"
	");"
	"INSERT INTO events_v13 SELECT id, time, pid, comm, key, name, kind,"
	"  hit, view, uid, remote FROM events;"
	"DROP TABLE events;"
	"ALTER TABLE events_v13 RENAME TO events;"
	"CREATE INDEX events_time ON events(time);"
	"CREATE INDEX events_uid ON events(uid);"
	"CREATE TRIGGER evicted_requested AFTER INSERT ON events"
	"  WHEN NEW.hit = 0 AND NEW.kind = 'kernel'"
	"   AND EXISTS (SELECT 1 FROM evicted WHERE key = NEW.key)"
	"  BEGIN"
	"    INSERT INTO counters (name, value) VALUES ('evicted_requested', 1)"
	"      ON CONFLICT (name) DO UPDATE SET value = value + 1;"
	"  END;"
	"CREATE TABLE probe_counts_v13 ("
	"  key      TEXT NOT NULL,"
	"  name     TEXT NOT NULL,"
	"  kind     TEXT NOT NULL CHECK (kind IN " KINDS_V13 "),"
	"  hits     INTEGER NOT NULL,"
	"  misses   INTEGER NOT NULL,"
	"  first    INTEGER NOT NULL,"
	"  last     INTEGER NOT NULL,"
	"  last_hit INTEGER NOT NULL,"
	"  uid      INTEGER NOT NULL DEFAULT -1,"
	"  PRIMARY KEY (key, name, kind)"
	") WITHOUT ROWID;"
	"INSERT INTO probe_counts_v13 SELECT key, name, kind, hits, misses,"
	"  first, last, last_hit, uid FROM probe_counts;"
	"DROP TABLE probe_counts;"
	"ALTER TABLE probe_counts_v13 RENAME TO probe_counts;";

/*
 * Version 14.
 *
 * nodes.atime (ns): the last access a utimensat set, apart from mtime;
 * NULL is "as mtime", every row from before and every row whose atime was
 * never set, so the step rewrites no row.  Reads leave it (the mount is
 * noatime, doc/mount.md); setting mtime alone keeps the atime it had.
 */
static const char schema_v14[] =
	"ALTER TABLE nodes ADD COLUMN atime INTEGER;";

/*
 * Version 15: what is shared is decided by the writer, never the path.
 *
 * kernels.shared: 1 when every file of the kernel's key dir was written by
 * a user the mount trusted (fs/users.c), or `tcfs trust promote` made it
 * so; 0 for a user's own kernel.  Publishing, export, pack and the views
 * read it, offline too.  Before, the dir a kernel sat in decided: the
 * kernels in users' own dirs are the unshared ones.
 *
 * nodes_private: those own dirs (.tcfs-private-UID), found without a scan
 * of every node (fs/users.c refuses to move a dir that holds one).
 */
static const char schema_v15[] =
	"ALTER TABLE kernels ADD COLUMN shared INTEGER NOT NULL DEFAULT 1;"
	"UPDATE kernels SET shared = 0 WHERE grp_ino IN"
	"  (SELECT g.ino FROM nodes g JOIN nodes d ON d.ino = g.parent"
	"   JOIN nodes r ON r.ino = d.parent"
	"   WHERE r.name GLOB '" TCFS_NAME_PRIVATE_PREFIX "*');"
	"CREATE INDEX nodes_private ON nodes(name)"
	"  WHERE name GLOB '" TCFS_NAME_PRIVATE_PREFIX "*';";

/*
 * Version 16: the kind of a probe is checked in C (index/model/entry.h,
 * event.c), no longer by a CHECK that named every kind: a new kind is a
 * row of that table, with no migration.  events and probe_counts are
 * rebuilt as version 13 made them, less the CHECK on kind.
 */
static const char schema_v16[] =
	"CREATE TABLE events_v16 ("
	"  id     INTEGER PRIMARY KEY,"
	"  time   INTEGER NOT NULL,"
	"  pid    INTEGER NOT NULL,"
	"  comm   TEXT NOT NULL,"
	"  key    TEXT NOT NULL,"
	"  name   TEXT,"
	"  kind   TEXT NOT NULL,"
	"  hit    INTEGER NOT NULL CHECK (hit IN (0, 1)),"
	"  view   TEXT NOT NULL DEFAULT '',"
	"  uid    INTEGER NOT NULL DEFAULT -1,"
	"  remote INTEGER NOT NULL DEFAULT 0"
	");"
	"INSERT INTO events_v16 SELECT id, time, pid, comm, key, name, kind,"
	"  hit, view, uid, remote FROM events;"
	"DROP TABLE events;"
	"ALTER TABLE events_v16 RENAME TO events;"
	"CREATE INDEX events_time ON events(time);"
	"CREATE INDEX events_uid ON events(uid);"
	"CREATE TRIGGER evicted_requested AFTER INSERT ON events"
	"  WHEN NEW.hit = 0 AND NEW.kind = 'kernel'"
	"   AND EXISTS (SELECT 1 FROM evicted WHERE key = NEW.key)"
	"  BEGIN"
	"    INSERT INTO counters (name, value) VALUES ('evicted_requested', 1)"
	"      ON CONFLICT (name) DO UPDATE SET value = value + 1;"
	"  END;"
	"CREATE TABLE probe_counts_v16 ("
	"  key      TEXT NOT NULL,"
	"  name     TEXT NOT NULL,"
	"  kind     TEXT NOT NULL,"
	"  hits     INTEGER NOT NULL,"
	"  misses   INTEGER NOT NULL,"
	"  first    INTEGER NOT NULL,"
	"  last     INTEGER NOT NULL,"
	"  last_hit INTEGER NOT NULL,"
	"  uid      INTEGER NOT NULL DEFAULT -1,"
	"  PRIMARY KEY (key, name, kind)"
	") WITHOUT ROWID;"
	"INSERT INTO probe_counts_v16 SELECT key, name, kind, hits, misses,"
	"  first, last, last_hit, uid FROM probe_counts;"
	"DROP TABLE probe_counts;"
	"ALTER TABLE probe_counts_v16 RENAME TO probe_counts;";

/*
 * Version 17: nodes_dirs, the dirs by name, so that a key typed short
 * (tcfs why LFF4I7) finds the key dirs it begins without a read of every
 * node: a range of this index (tcfs_kernel_resolve).  Dirs only: a key
 * dir is one, and the files, most of the nodes, need no entry.
 */
static const char schema_v17[] =
	"CREATE INDEX nodes_dirs ON nodes(name) WHERE kind = 'd';";

/*
 * Version 18: kernels.files, the files of the kernel's key dir, kept
 * with its sizes (index/model/kernel.c) where list and prune counted
 * them per kernel: 900,000 node reads at 100,000 kernels, half of what
 * list --json took.
 */
static const char schema_v18[] =
	"ALTER TABLE kernels ADD COLUMN files INTEGER NOT NULL DEFAULT 0;"
	"UPDATE kernels SET files = (SELECT count(*) FROM nodes f"
	"  WHERE f.parent = (SELECT g.parent FROM nodes g"
	"                    WHERE g.ino = kernels.grp_ino)"
	"  AND f.kind = 'f');";

/*
 * Version 19: the CHECKs on nodes.kind and kernels.meta as comparisons
 * joined by OR.  SQLite 3.40 tests an IN list of three or more in a
 * CHECK against a temp table it builds and drops at every INSERT: 4 us
 * an insert, a quarter of an import's own thread.  The constraints are
 * the same, so is every row, and the table's text is all that changes:
 * SQLite's recipe for that edits sqlite_master (lang_altertable.html,
 * "other kinds of table schema changes"; tcfs_migration.edits_schema).
 */
static const char schema_v19[] =
	"UPDATE sqlite_master SET sql = replace(sql,"
	"  'CHECK (kind IN (''d'', ''f'', ''l'', ''h''))',"
	"  'CHECK (kind = ''d'' OR kind = ''f'' OR kind = ''l'' OR"
	" kind = ''h'')')"
	"  WHERE type = 'table' AND name = 'nodes';"
	"UPDATE sqlite_master SET sql = replace(sql,"
	"  'CHECK (meta IN (''ok'', ''missing'', ''invalid''))',"
	"  'CHECK (meta = ''ok'' OR meta = ''missing'' OR"
	" meta = ''invalid'')')"
	"  WHERE type = 'table' AND name = 'kernels';";

static const struct tcfs_migration schema_steps[] = {
	{ 1, schema_v1 },
	{ 2, schema_v2 },
	{ 3, schema_v3 },
	{ 4, schema_v4 },
	{ 5, schema_v5 },
	{ 6, schema_v6 },
	{ 7, schema_v7, 1 },
	{ 8, schema_v8 },
	{ 9, schema_v9 },
	{ 10, schema_v10 },
	{ 11, schema_v11 },
	{ 12, schema_v12 },
	{ 13, schema_v13 },
	{ 14, schema_v14 },
	{ 15, schema_v15 },
	{ 16, schema_v16 },
	{ 17, schema_v17 },
	{ 18, schema_v18 },
	{ 19, schema_v19, .edits_schema = 1 },
};

#define SCHEMA_NSTEPS ((int)(sizeof(schema_steps) / sizeof(schema_steps[0])))

int tcfs_schema_version(void)
{
	return schema_steps[SCHEMA_NSTEPS - 1].version;
}

const struct tcfs_migration *tcfs_schema_steps(int *n)
{
	*n = SCHEMA_NSTEPS;
	return schema_steps;
}

static int pragma_int(struct tcfs_db *db, const char *sql, int *out)
{
	sqlite3_stmt *st;
	int src;

	src = sqlite3_prepare_v2(tcfs_db_handle(db), sql, -1, &st, NULL);
	if (src != SQLITE_OK)
		return tcfs_db_error(db, src);
	src = sqlite3_step(st);
	if (src == SQLITE_ROW)
		*out = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return src == SQLITE_ROW ? 0 : tcfs_db_error(db, src);
}

/* A rebuilt table is dropped, and with foreign keys on a DROP deletes
 * its rows first, cascading to the kernels that name them: SQLite's own
 * recipe turns them off around the step (outside its transaction, where
 * alone the pragma works) and checks them before the commit. */
static int set_foreign_keys(struct tcfs_db *db, int on)
{
	int src = sqlite3_exec(tcfs_db_handle(db),
			       on ? "PRAGMA foreign_keys=ON"
				  : "PRAGMA foreign_keys=OFF",
			       NULL, NULL, NULL);

	return src == SQLITE_OK ? 0 : tcfs_db_error(db, src);
}

static int foreign_keys_hold(struct tcfs_db *db)
{
	int bad = 0, rc;

	rc = pragma_int(db, "SELECT count(*) FROM pragma_foreign_key_check",
			&bad);
	if (rc == 0 && bad)
		rc = tcfs_err_set(-EUCLEAN, "%s: %d %s that %s gone",
				  tcfs_db_path(db), bad,
				  tcfs_plural((unsigned)bad, "row names a row",
					      "rows name rows"),
				  tcfs_plural((unsigned)bad, "is", "are"));
	return rc;
}

/* m's script with sqlite_master writable, then the schema's version
 * bumped, so that other connections read the tables' text again. */
static int edit_schema(struct tcfs_db *db, const struct tcfs_migration *m)
{
	sqlite3 *conn = tcfs_db_handle(db);
	char bump[64];
	int version = 0, src;

	src = pragma_int(db, "PRAGMA schema_version", &version) < 0
		      ? SQLITE_ERROR
		      : sqlite3_exec(conn, "PRAGMA writable_schema=ON", NULL,
				     NULL, NULL);
	if (src == SQLITE_OK)
		src = sqlite3_exec(conn, m->sql, NULL, NULL, NULL);
	if (src == SQLITE_OK) {
		snprintf(bump, sizeof(bump), "PRAGMA schema_version=%d",
			 version + 1);
		src = sqlite3_exec(conn, bump, NULL, NULL, NULL);
	}
	sqlite3_exec(conn, "PRAGMA writable_schema=OFF", NULL, NULL, NULL);
	return src;
}

static int run_step(struct tcfs_db *db, const struct tcfs_migration *m)
{
	sqlite3 *conn = tcfs_db_handle(db);
	char bump[96];
	int rc, src;

	rc = tcfs_db_begin(db);
	if (rc < 0)
		return rc;
	src = m->edits_schema ? edit_schema(db, m)
			      : sqlite3_exec(conn, m->sql, NULL, NULL, NULL);
	if (src == SQLITE_OK && m->rebuilds) {
		rc = foreign_keys_hold(db);
		if (rc < 0)
			return tcfs_db_end(db, rc);
	}
	if (src == SQLITE_OK) {
		snprintf(bump, sizeof(bump),
			 "PRAGMA user_version=%d; PRAGMA application_id=%d;",
			 m->version, TCFS_SCHEMA_APP_ID);
		src = sqlite3_exec(conn, bump, NULL, NULL, NULL);
	}
	if (src != SQLITE_OK)
		rc = tcfs_db_error(db, src);
	return tcfs_db_end(db, rc);
}

static int apply_step(struct tcfs_db *db, const struct tcfs_migration *m)
{
	int rc;

	/* The bump makes other connections read the schema again, not
	 * this one, which set it: RESET does. */
	if (m->edits_schema) {
		rc = run_step(db, m);
		if (rc == 0 && sqlite3_exec(tcfs_db_handle(db),
					    "PRAGMA writable_schema=RESET",
					    NULL, NULL, NULL) != SQLITE_OK)
			rc = tcfs_db_error(db, SQLITE_ERROR);
		return rc;
	}
	if (!m->rebuilds)
		return run_step(db, m);
	rc = set_foreign_keys(db, 0);
	if (rc == 0)
		rc = run_step(db, m);
	if (set_foreign_keys(db, 1) < 0 && rc == 0)
		rc = tcfs_err_set(-EIO, "%s: foreign keys not back on",
				  tcfs_db_path(db));
	return rc;
}

/* A database is ours if it carries our application_id, or is brand new
 * (no id, no tables): anything else is some other program's file. */
static int check_ours(struct tcfs_db *db)
{
	int app = 0, ntables = 0, rc;

	rc = pragma_int(db, "PRAGMA application_id", &app);
	if (rc == 0 && app == 0)
		rc = pragma_int(db, "SELECT count(*) FROM sqlite_master",
				&ntables);
	if (rc < 0)
		return rc;
	if (app == TCFS_SCHEMA_APP_ID || (app == 0 && ntables == 0))
		return 0;
	return tcfs_err_set(-EUCLEAN, "%s: not a tcfs index", tcfs_db_path(db));
}

/* The schema version of a database that check_ours accepts. */
static int our_version(struct tcfs_db *db, int *version)
{
	int rc = check_ours(db);

	return rc < 0 ? rc : pragma_int(db, "PRAGMA user_version", version);
}

int tcfs_schema_apply(struct tcfs_db *db, const struct tcfs_migration *steps,
		      int n)
{
	int version, rc;

	rc = our_version(db, &version);
	if (rc < 0)
		return rc;
	if (n > 0 && version > steps[n - 1].version)
		return tcfs_err_set(-EPROTONOSUPPORT,
				    "%s: written by a newer tcfs (schema "
				    "version %d, this build knows up to %d)",
				    tcfs_db_path(db), version,
				    steps[n - 1].version);
	for (int i = 0; i < n; i++) {
		/* Each step produces the next version: never one twice. */
		assert(i == 0 || steps[i].version > steps[i - 1].version);
		if (steps[i].version <= version)
			continue;
		rc = apply_step(db, &steps[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int tcfs_schema_check(struct tcfs_db *db)
{
	int version, rc;

	rc = our_version(db, &version);
	if (rc < 0)
		return rc;
	if (version == 0)
		return tcfs_err_set(-EUCLEAN, "%s: empty, not a tcfs index "
				    "(damaged? the blobs in objects/ are "
				    "untouched)", tcfs_db_path(db));
	return 0;
}

int tcfs_schema_upgrade(struct tcfs_db *db)
{
	return tcfs_schema_apply(db, schema_steps, SCHEMA_NSTEPS);
}

int tcfs_schema_open(const char *path, int create, struct tcfs_db **out)
{
	struct tcfs_db *db = NULL;
	int rc = tcfs_db_open(path, create, &db);

	if (rc < 0)
		return rc;
	rc = create ? 0 : tcfs_schema_check(db);
	if (rc == 0)
		rc = tcfs_db_configure(db);
	if (rc == 0)
		rc = tcfs_schema_upgrade(db);
	if (rc < 0) {
		tcfs_db_close(db);
		return rc;
	}
	*out = db;
	return 0;
}
