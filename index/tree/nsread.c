/* nsread: the namespace as it is, read a node at a time: the half of ns
 * that kernel.c may read through while ns.c changes the tree. */
#include "index/tree/nsread.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/store/db.h"
#include "index/tree/nodecache.h"
#include "index/store/store.h"

#define NODE_COLS                                                           \
	"ino, parent, name, kind, mode, size, mtime, blob, fmt, ctime, nlink," \
	" inode, uid, gid, coalesce(atime, mtime)"

static const char sql_get[] =
	"SELECT " NODE_COLS " FROM nodes WHERE ino = ?";
static const char sql_lookup[] =
	"SELECT " NODE_COLS " FROM nodes WHERE parent = ? AND name = ?";
static const char sql_readlink[] =
	"SELECT target FROM nodes WHERE ino = ? AND kind = 'l'";
static const char sql_list[] =
	"SELECT " NODE_COLS " FROM nodes WHERE parent = ? AND ino > ?"
	" ORDER BY ino LIMIT ?";
static const char sql_entries[] =
	"SELECT ino, name, kind, inode FROM nodes WHERE parent = ? AND ino > ?"
	" ORDER BY ino LIMIT ?";
/* The names tcfs_name_is_temp knows, at the root and one level down: in
 * one statement, since a query per key dir made a mount of 100,000
 * kernels take a second. */
static const char sql_temps[] =
	"SELECT " NODE_COLS " FROM nodes WHERE parent > 0"
	" AND (name GLOB 'tmp.*' OR name GLOB '*.tmp.pid_*')";

static const char sql_named[] =
	"SELECT " NODE_COLS " FROM nodes WHERE parent > 0 AND name GLOB ?";

int64_t tcfs_ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A row's kind column (schema.c: 'd', 'f', 'l' or 'h'). */
static enum tcfs_kind kind_of(const char *k)
{
	switch (*k) {
	case 'd':
		return TCFS_DIR;
	case 'l':
		return TCFS_SYMLINK;
	case 'h':
		return TCFS_HARDLINK;
	default:
		return TCFS_FILE;
	}
}

static void node_from_row(sqlite3_stmt *st, struct tcfs_node *n)
{
	size_t len;
	const char *name = tcfs_db_text(st, 2, &len);

	memset(n, 0, sizeof(*n));
	n->entry = n->ino = (uint64_t)sqlite3_column_int64(st, 0);
	n->parent = (uint64_t)sqlite3_column_int64(st, 1);
	if (len > TCFS_NAME_MAX)
		len = TCFS_NAME_MAX;
	memcpy(n->name, name, len);
	n->kind = kind_of(tcfs_db_text(st, 3, NULL));
	if (n->kind == TCFS_HARDLINK)
		n->ino = (uint64_t)sqlite3_column_int64(st, 11);
	n->mode = (unsigned)sqlite3_column_int(st, 4);
	n->size = (uint64_t)sqlite3_column_int64(st, 5);
	n->mtime_ns = sqlite3_column_int64(st, 6);
	if (n->kind == TCFS_FILE)
		tcfs_db_hash(st, 7, &n->blob);
	n->fmt = sqlite3_column_int(st, 8) == 1 ? TCFS_FMT_GROUP : TCFS_FMT_RAW;
	n->ctime_ns = sqlite3_column_int64(st, 9);
	n->nlink = (uint32_t)sqlite3_column_int64(st, 10);
	n->uid = sqlite3_column_int64(st, 12);
	n->gid = sqlite3_column_int64(st, 13);
	n->atime_ns = sqlite3_column_int64(st, 14);
}

/* Runs a one-row node query, for the row as it is (a hard link's too);
 * 0, -ENOENT, or an error. */
static int node_query(struct tcfs_store *s, struct tcfs_node *out,
		      const char *sql, uint64_t a, const char *name)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_nodecache *cache = tcfs_store_nodecache(s);
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	if (cache && (name ? tcfs_nodecache_lookup(cache, a, name, out)
			   : tcfs_nodecache_get(cache, a, out))) {
		tcfs_db_unlock(db);
		return 0;
	}
	if (name)
		rc = tcfs_db_row(db, &st, sql, "it", (int64_t)a, name);
	else
		rc = tcfs_db_row(db, &st, sql, "i", (int64_t)a);
	if (rc == 1) {
		node_from_row(st, out);
		tcfs_db_reset(st);
		if (cache)
			tcfs_nodecache_put(cache, out);
		rc = 0;
	} else if (rc == 0) {
		rc = -ENOENT;
	}
	tcfs_db_unlock(db);
	return rc;
}

/* A hard link's row shows its file: the file's node, under the link's
 * name.  Both rows come from the node cache on a mount's hot path. */
static int resolve(struct tcfs_store *s, struct tcfs_node *n)
{
	struct tcfs_node f;
	int rc;

	if (n->kind != TCFS_HARDLINK)
		return 0;
	rc = node_query(s, &f, sql_get, n->ino, NULL);
	if (rc < 0)
		return rc == -ENOENT ? -EUCLEAN : rc;
	assert(f.kind != TCFS_HARDLINK && f.kind != TCFS_DIR);
	f.entry = n->entry;
	f.parent = n->parent;
	memcpy(f.name, n->name, sizeof(f.name));
	*n = f;
	return 0;
}

int tcfs_ns_get(struct tcfs_store *s, uint64_t ino, struct tcfs_node *out)
{
	int rc = node_query(s, out, sql_get, ino, NULL);

	return rc < 0 ? rc : resolve(s, out);
}

int tcfs_ns_lookup(struct tcfs_store *s, uint64_t parent, const char *name,
		   struct tcfs_node *out)
{
	int rc = tcfs_name_check(name);

	if (rc < 0)
		return rc == -EINVAL ? -ENOENT : rc;
	rc = node_query(s, out, sql_lookup, parent, name);
	return rc < 0 ? rc : resolve(s, out);
}

int tcfs_ns_readlink(struct tcfs_store *s, uint64_t ino, char *buf,
		     size_t len)
{
	struct tcfs_db *db = tcfs_store_db(s);
	const char *target;
	sqlite3_stmt *st;
	size_t n = 0;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_readlink, "i", (int64_t)ino);
	if (rc == 1) {
		target = tcfs_db_text(st, 0, &n);
		rc = n < len ? 0 : -ENAMETOOLONG;
		if (rc == 0)
			memcpy(buf, target, n + 1);
		tcfs_db_reset(st);
	} else if (rc == 0) {
		rc = -EINVAL;
	}
	tcfs_db_unlock(db);
	return rc;
}

static int fill_node(void *ctx, void *elem, sqlite3_stmt *st)
{
	(void)ctx;
	node_from_row(st, elem);
	return 0;
}

int tcfs_ns_list(struct tcfs_store *s, uint64_t dir, uint64_t after,
		 size_t max, struct tcfs_node **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_node,
				 NULL, out, n, sql_list, "iii", (int64_t)dir,
				 (int64_t)after,
				 max ? (int64_t)max : (int64_t)-1);

	for (size_t i = 0; rc >= 0 && i < *n; i++)
		rc = resolve(s, &(*out)[i]);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc < 0 ? rc : 0;
}

static int fill_dirent(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_dirent *d = elem;
	size_t len;
	const char *name = tcfs_db_text(st, 1, &len);

	(void)ctx;
	d->entry = d->ino = (uint64_t)sqlite3_column_int64(st, 0);
	len = len > TCFS_NAME_MAX ? TCFS_NAME_MAX : len;
	memcpy(d->name, name, len);
	d->name[len] = '\0';
	d->kind = kind_of(tcfs_db_text(st, 2, NULL));
	if (d->kind == TCFS_HARDLINK)
		d->ino = (uint64_t)sqlite3_column_int64(st, 3);
	return 0;
}

int tcfs_ns_entries(struct tcfs_store *s, uint64_t dir, uint64_t after,
		    size_t max, struct tcfs_dirent **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_dirent,
				 NULL, out, n, sql_entries, "iii",
				 (int64_t)dir, (int64_t)after,
				 max ? (int64_t)max : (int64_t)-1);

	/* A hard link shows its file's kind (a file or a symlink). */
	for (size_t i = 0; rc >= 0 && i < *n; i++) {
		struct tcfs_node f;

		if ((*out)[i].kind != TCFS_HARDLINK)
			continue;
		rc = tcfs_ns_get(s, (*out)[i].ino, &f);
		rc = rc == -ENOENT ? -EUCLEAN : rc;
		(*out)[i].kind = f.kind;
	}
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc < 0 ? rc : 0;
}

int tcfs_ns_temps(struct tcfs_store *s, struct tcfs_node **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_node,
				 NULL, out, n, sql_temps, "");

	return rc < 0 ? rc : 0;
}

int tcfs_ns_named(struct tcfs_store *s, const char *glob,
		  struct tcfs_node **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_node,
				 NULL, out, n, sql_named, "t", glob);

	return rc < 0 ? rc : 0;
}

/* The GLOB is written out, for SQLite to use the partial index
 * nodes_private (schema v15): a bound one would scan every node. */
static const char sql_private[] =
	"SELECT " NODE_COLS " FROM nodes WHERE parent > 0"
	" AND name GLOB '" TCFS_NAME_PRIVATE_PREFIX "*'";

int tcfs_ns_private_dirs(struct tcfs_store *s, struct tcfs_node **out,
			 size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_node,
				 NULL, out, n, sql_private, "");

	return rc < 0 ? rc : 0;
}

int tcfs_ns_path(struct tcfs_store *s, uint64_t ino, char *buf, size_t len)
{
	size_t pos = len - 1, end = len - 1;
	struct tcfs_node n;
	int rc;

	/* Walking up from the node, names come right to left. */
	buf[pos] = '\0';
	while (ino != TCFS_ROOT_INO) {
		size_t k;

		rc = tcfs_ns_get(s, ino, &n);
		if (rc < 0)
			return rc;
		k = strlen(n.name);
		if (pos < k + (pos != end))
			return -ENAMETOOLONG;
		if (pos != end)
			buf[--pos] = '/';
		pos -= k;
		memcpy(buf + pos, n.name, k);
		ino = n.parent;
	}
	memmove(buf, buf + pos, len - pos);
	return 0;
}
