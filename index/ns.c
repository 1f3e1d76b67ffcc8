/* ns: the namespace, one row per directory entry. */
#include "ns.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "durable.h"
#include "err.h"
#include "kernel.h"
#include "nodecache.h"
#include "store.h"

#define NODE_COLS "ino, parent, name, kind, mode, size, mtime, blob, fmt"

static const char sql_get[] =
	"SELECT " NODE_COLS " FROM nodes WHERE ino = ?";
static const char sql_lookup[] =
	"SELECT " NODE_COLS " FROM nodes WHERE parent = ? AND name = ?";
static const char sql_insert[] =
	"INSERT INTO nodes (parent, name, kind, mode, size, mtime, blob, fmt)"
	" VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
static const char sql_touch[] =
	"UPDATE nodes SET mtime = ? WHERE ino = ?";
static const char sql_content[] =
	"UPDATE nodes SET blob = ?, size = ?, fmt = ?, mtime = ? WHERE ino = ?";
static const char sql_mode[] =
	"UPDATE nodes SET mode = ? WHERE ino = ?";
static const char sql_move[] =
	"UPDATE nodes SET parent = ?, name = ? WHERE ino = ?";
static const char sql_delete[] =
	"DELETE FROM nodes WHERE ino = ?";
static const char sql_to_limbo[] =
	"UPDATE nodes SET parent = -parent, name = CAST(ino AS TEXT)"
	" WHERE ino = ?";
static const char sql_unindex[] =
	"DELETE FROM kernels WHERE grp_ino = ?";
static const char sql_forget[] =
	"DELETE FROM nodes WHERE ino = ? AND parent < 0";
static const char sql_purge[] =
	"DELETE FROM nodes WHERE parent < 0";
static const char sql_has_child[] =
	"SELECT 1 FROM nodes WHERE parent = ? LIMIT 1";
static const char sql_list[] =
	"SELECT " NODE_COLS " FROM nodes WHERE parent = ? AND ino > ?"
	" ORDER BY ino LIMIT ?";
/* The names tcfs_name_is_temp knows, at the root and one level down: in
 * one statement, since a query per key dir made a mount of 100,000
 * kernels take a second. */
static const char sql_temps[] =
	"SELECT " NODE_COLS " FROM nodes WHERE parent = 1 AND name GLOB 'tmp.*'"
	" UNION ALL"
	" SELECT k.ino, k.parent, k.name, k.kind, k.mode, k.size, k.mtime,"
	" k.blob, k.fmt FROM nodes d JOIN nodes k ON k.parent = d.ino"
	" WHERE d.parent = 1 AND d.kind = 'd'"
	" AND (k.name GLOB 'tmp.pid_*' OR k.name GLOB '*.tmp.pid_*')";

int64_t tcfs_ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void node_from_row(sqlite3_stmt *st, struct tcfs_node *n)
{
	size_t len;
	const char *name = tcfs_db_text(st, 2, &len);

	memset(n, 0, sizeof(*n));
	n->ino = (uint64_t)sqlite3_column_int64(st, 0);
	n->parent = (uint64_t)sqlite3_column_int64(st, 1);
	if (len > TCFS_NAME_MAX)
		len = TCFS_NAME_MAX;
	memcpy(n->name, name, len);
	n->kind = *tcfs_db_text(st, 3, NULL) == 'd' ? TCFS_DIR : TCFS_FILE;
	n->mode = (unsigned)sqlite3_column_int(st, 4);
	n->size = (uint64_t)sqlite3_column_int64(st, 5);
	n->mtime_ns = sqlite3_column_int64(st, 6);
	if (n->kind == TCFS_FILE)
		tcfs_db_hash(st, 7, &n->blob);
	n->fmt = sqlite3_column_int(st, 8) == 1 ? TCFS_FMT_GROUP : TCFS_FMT_RAW;
}

/* Runs a one-row node query; 0, -ENOENT, or an error. */
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

int tcfs_ns_get(struct tcfs_store *s, uint64_t ino, struct tcfs_node *out)
{
	return node_query(s, out, sql_get, ino, NULL);
}

int tcfs_ns_lookup(struct tcfs_store *s, uint64_t parent, const char *name,
		   struct tcfs_node *out)
{
	int rc = tcfs_name_check(name);

	if (rc < 0)
		return rc == -EINVAL ? -ENOENT : rc;
	return node_query(s, out, sql_lookup, parent, name);
}

/* The directory an entry is added to or removed from must exist. */
static int get_dir(struct tcfs_store *s, uint64_t ino, struct tcfs_node *dir)
{
	int rc = tcfs_ns_get(s, ino, dir);

	if (rc < 0)
		return rc;
	return dir->kind == TCFS_DIR ? 0 : -ENOTDIR;
}

/* An entry of a directory, of the given kind, came or went: its mtime
 * follows, and its kernels when a file did (kernels count only files). */
static int dir_changed(struct tcfs_store *s, uint64_t dir,
		       enum tcfs_kind kind, int64_t now)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_touch, "ii", now,
			      (int64_t)dir);

	if (rc < 0 || kind != TCFS_FILE)
		return rc < 0 ? rc : 0;
	return tcfs_kernel_files_changed(s, dir);
}

static int insert_node(struct tcfs_store *s, uint64_t parent, const char *name,
		       enum tcfs_kind kind, unsigned mode, int64_t mtime_ns,
		       const struct tcfs_content *c, struct tcfs_node *out)
{
	struct tcfs_db *db = tcfs_store_db(s);
	char kindstr[2] = { (char)kind, '\0' };
	struct tcfs_node dir, n;
	int rc = tcfs_name_check(name);

	if (rc < 0)
		return rc;
	rc = tcfs_db_begin(db);
	if (rc < 0)
		return rc;
	rc = get_dir(s, parent, &dir);
	if (rc < 0)
		goto out;
	if (tcfs_ns_lookup(s, parent, name, &n) == 0) {
		rc = -EEXIST;
		goto out;
	}
	rc = tcfs_db_exec(db, sql_insert, "ittdiihd", (int64_t)parent, name,
			  kindstr, (int)(mode & 07777),
			  (int64_t)(c ? c->size : 0), mtime_ns,
			  c ? &c->blob : NULL, c ? (int)c->fmt : 0);
	if (rc >= 0 && c)
		rc = tcfs_durable_note(s, &c->blob);
	if (rc < 0)
		goto out;
	rc = tcfs_ns_get(s, (uint64_t)tcfs_db_last_rowid(db), &n);
	if (rc == 0)
		rc = dir_changed(s, parent, kind, mtime_ns);
	if (rc == 0 && out)
		*out = n;
out:
	return tcfs_db_end(db, rc);
}

int tcfs_ns_mkdir(struct tcfs_store *s, uint64_t parent, const char *name,
		  unsigned mode, int64_t mtime_ns, struct tcfs_node *out)
{
	return insert_node(s, parent, name, TCFS_DIR, mode, mtime_ns, NULL,
			   out);
}

int tcfs_ns_create(struct tcfs_store *s, uint64_t parent, const char *name,
		   unsigned mode, int64_t mtime_ns,
		   const struct tcfs_content *c, struct tcfs_node *out)
{
	return insert_node(s, parent, name, TCFS_FILE, mode, mtime_ns, c, out);
}

int tcfs_ns_set_content(struct tcfs_store *s, uint64_t ino,
			const struct tcfs_content *c, int64_t mtime_ns)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_node n;
	int rc = tcfs_db_begin(db);

	if (rc < 0)
		return rc;
	rc = tcfs_ns_get(s, ino, &n);
	if (rc == 0 && n.kind != TCFS_FILE)
		rc = -EISDIR;
	if (rc == 0)
		rc = tcfs_db_exec(db, sql_content, "hidii", &c->blob,
				  (int64_t)c->size, (int)c->fmt, mtime_ns,
				  (int64_t)ino);
	if (rc >= 0)
		rc = tcfs_durable_note(s, &c->blob);
	if (rc >= 0)
		rc = tcfs_kernel_files_changed(s, n.parent);
	return tcfs_db_end(db, rc);
}

int tcfs_ns_setattr(struct tcfs_store *s, uint64_t ino, int mask,
		    unsigned mode, int64_t mtime_ns)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_node n;
	int rc = tcfs_db_begin(db);

	if (rc < 0)
		return rc;
	rc = tcfs_ns_get(s, ino, &n);
	if (rc == 0 && (mask & TCFS_SET_MODE))
		rc = tcfs_db_exec(db, sql_mode, "di", (int)(mode & 07777),
				  (int64_t)ino);
	if (rc >= 0 && (mask & TCFS_SET_MTIME))
		rc = tcfs_db_exec(db, sql_touch, "ii", mtime_ns, (int64_t)ino);
	return tcfs_db_end(db, rc < 0 ? rc : 0);
}

/* Takes a node out of the tree: gone, or kept in limbo for the mount. */
static int drop_node(struct tcfs_store *s, uint64_t ino)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc;

	if (!tcfs_store_keeps_unlinked(s))
		return tcfs_db_exec(db, sql_delete, "i", (int64_t)ino);
	rc = tcfs_db_exec(db, sql_unindex, "i", (int64_t)ino);
	if (rc >= 0)
		rc = tcfs_db_exec(db, sql_to_limbo, "i", (int64_t)ino);
	return rc;
}

int tcfs_ns_forget(struct tcfs_store *s, uint64_t ino)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc = tcfs_db_begin(db);	/* joins deferred commits (db.h) */

	if (rc < 0)
		return rc;
	rc = tcfs_db_exec(db, sql_forget, "i", (int64_t)ino);
	return tcfs_db_end(db, rc < 0 ? rc : 0);
}

int tcfs_ns_purge_unlinked(struct tcfs_store *s)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_purge, "");

	return rc < 0 ? rc : 0;
}

/* 1 when dir is node or lies below it. */
static int is_within(struct tcfs_store *s, uint64_t dir, uint64_t node)
{
	struct tcfs_node n;

	while (dir != 0) {
		if (dir == node)
			return 1;
		if (tcfs_ns_get(s, dir, &n) < 0)
			return 0;
		dir = n.parent;
	}
	return 0;
}

static int has_children(struct tcfs_store *s, uint64_t dir)
{
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_has_child, "i", (int64_t)dir);
	if (rc == 1)
		tcfs_db_reset(st);
	tcfs_db_unlock(db);
	return rc;
}

static int move_node(struct tcfs_store *s, uint64_t ino, uint64_t parent,
		     const char *name)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_move, "iti",
			      (int64_t)parent, name, (int64_t)ino);

	return rc < 0 ? rc : 0;
}

/* Whether src may take dst's place (dst may be absent: dst->ino == 0). */
static int check_replace(struct tcfs_store *s, const struct tcfs_node *src,
			 const struct tcfs_node *dst, uint64_t newparent)
{
	int rc;

	if (src->kind == TCFS_DIR && is_within(s, newparent, src->ino))
		return -EINVAL;
	if (dst->ino == 0)
		return 0;
	if (src->kind == TCFS_FILE)
		return dst->kind == TCFS_DIR ? -EISDIR : 0;
	if (dst->kind != TCFS_DIR)
		return -ENOTDIR;
	rc = has_children(s, dst->ino);
	return rc == 1 ? -ENOTEMPTY : rc;
}

static int rename_exchange(struct tcfs_store *s, const struct tcfs_node *a,
			   const struct tcfs_node *b)
{
	int rc;

	if ((a->kind == TCFS_DIR && is_within(s, b->parent, a->ino)) ||
	    (b->kind == TCFS_DIR && is_within(s, a->parent, b->ino)))
		return -EINVAL;
	/* UNIQUE(parent, name) forbids a direct swap: park a first under a
	 * parent no real node has (inode numbers are positive). */
	rc = move_node(s, a->ino, (uint64_t)-(int64_t)a->ino, a->name);
	if (rc == 0)
		rc = move_node(s, b->ino, a->parent, a->name);
	if (rc == 0)
		rc = move_node(s, a->ino, b->parent, b->name);
	return rc;
}

static int do_rename(struct tcfs_store *s, uint64_t parent, const char *name,
		     uint64_t newparent, const char *newname, unsigned flags)
{
	struct tcfs_node src, dst = { 0 }, dir;
	int rc;

	rc = tcfs_ns_lookup(s, parent, name, &src);
	if (rc < 0)
		return rc;
	rc = get_dir(s, newparent, &dir);
	if (rc < 0)
		return rc;
	rc = tcfs_ns_lookup(s, newparent, newname, &dst);
	if (rc == -ENOENT)
		dst.ino = 0;
	else if (rc < 0)
		return rc;
	if (dst.ino == src.ino)
		return 0;
	if (flags & RENAME_EXCHANGE)
		return dst.ino ? rename_exchange(s, &src, &dst) : -ENOENT;
	if (dst.ino && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	rc = check_replace(s, &src, &dst, newparent);
	if (rc == 0 && dst.ino)
		rc = drop_node(s, dst.ino);
	if (rc >= 0)
		rc = move_node(s, src.ino, newparent, newname);
	return rc;
}

int tcfs_ns_rename(struct tcfs_store *s, uint64_t parent, const char *name,
		   uint64_t newparent, const char *newname, unsigned flags)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int64_t now = tcfs_ns_now();
	struct tcfs_node moved = { 0 };
	enum tcfs_kind kind;
	int rc = tcfs_name_check(newname);

	if (rc < 0)
		return rc;
	if ((flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
	    flags == (RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	rc = tcfs_db_begin(db);
	if (rc < 0)
		return rc;
	rc = tcfs_ns_lookup(s, parent, name, &moved);
	if (rc == 0)
		rc = do_rename(s, parent, name, newparent, newname, flags);
	/* What comes or goes is of moved's kind (a file replaces only a file,
	 * a dir only a dir), except in an exchange. */
	kind = flags & RENAME_EXCHANGE ? TCFS_FILE : moved.kind;
	if (rc == 0)
		rc = dir_changed(s, parent, kind, now);
	/* A dir moved into (or out of) the root becomes (or stops being) a
	 * key dir: Inductor lands whole kernels this way. */
	if (rc == 0 && moved.kind == TCFS_DIR)
		rc = tcfs_kernel_refresh_dir(s, moved.ino);
	if (rc == 0 && (flags & RENAME_EXCHANGE) &&
	    tcfs_ns_lookup(s, parent, name, &moved) == 0 &&
	    moved.kind == TCFS_DIR)
		rc = tcfs_kernel_refresh_dir(s, moved.ino);
	if (rc == 0 && newparent != parent)
		rc = dir_changed(s, newparent, kind, now);
	return tcfs_db_end(db, rc);
}

static int remove_entry(struct tcfs_store *s, uint64_t parent,
			const char *name, enum tcfs_kind want)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_node n;
	int rc;

	/* Checked before the write transaction, under the lock that every
	 * change takes: Triton's os.removedirs ends each put with an rmdir
	 * of the key dir that fails, and a failure needs no write lock. */
	tcfs_db_lock(db);
	rc = tcfs_ns_lookup(s, parent, name, &n);
	if (rc == 0 && n.kind != want)
		rc = want == TCFS_DIR ? -ENOTDIR : -EISDIR;
	if (rc == 0 && want == TCFS_DIR) {
		rc = has_children(s, n.ino);
		rc = rc == 1 ? -ENOTEMPTY : rc;
	}
	if (rc == 0) {
		rc = tcfs_db_begin(db);
		if (rc == 0) {
			rc = drop_node(s, n.ino);
			if (rc >= 0)
				rc = dir_changed(s, parent, n.kind,
						 tcfs_ns_now());
			rc = tcfs_db_end(db, rc);
		}
	}
	tcfs_db_unlock(db);
	return rc;
}

int tcfs_ns_unlink(struct tcfs_store *s, uint64_t parent, const char *name)
{
	return remove_entry(s, parent, name, TCFS_FILE);
}

int tcfs_ns_rmdir(struct tcfs_store *s, uint64_t parent, const char *name)
{
	return remove_entry(s, parent, name, TCFS_DIR);
}

static int fill_node(void *ctx, void *elem, sqlite3_stmt *st)
{
	(void)ctx;
	node_from_row(st, elem);
	return 0;
}

/* Children first, so that a node in limbo never holds live ones. */
static int remove_below(struct tcfs_store *s, const struct tcfs_node *n,
			int to_limbo)
{
	struct tcfs_node *kids = NULL;
	size_t nk = 0;
	int rc = 0;

	if (n->kind == TCFS_DIR)
		rc = tcfs_ns_list(s, n->ino, 0, 0, &kids, &nk);
	for (size_t i = 0; rc == 0 && i < nk; i++)
		rc = remove_below(s, &kids[i], to_limbo);
	free(kids);
	if (rc == 0)
		rc = to_limbo ? drop_node(s, n->ino)
			      : tcfs_db_exec(tcfs_store_db(s), sql_delete, "i",
					     (int64_t)n->ino);
	return rc < 0 ? rc : 0;
}

static int remove_tree(struct tcfs_store *s, uint64_t parent,
		       const char *name, int to_limbo)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_node n;
	int rc = tcfs_db_begin(db);

	if (rc < 0)
		return rc;
	rc = tcfs_ns_lookup(s, parent, name, &n);
	if (rc == 0)
		rc = remove_below(s, &n, to_limbo);
	if (rc == 0)
		rc = dir_changed(s, parent, n.kind, tcfs_ns_now());
	return tcfs_db_end(db, rc);
}

int tcfs_ns_remove_tree(struct tcfs_store *s, uint64_t parent,
			const char *name)
{
	return remove_tree(s, parent, name, 0);
}

int tcfs_ns_unlink_tree(struct tcfs_store *s, uint64_t parent,
			const char *name)
{
	return remove_tree(s, parent, name, 1);
}

int tcfs_ns_list(struct tcfs_store *s, uint64_t dir, uint64_t after,
		 size_t max, struct tcfs_node **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_node,
				 NULL, out, n, sql_list, "iii", (int64_t)dir,
				 (int64_t)after,
				 max ? (int64_t)max : (int64_t)-1);

	return rc < 0 ? rc : 0;
}

int tcfs_ns_temps(struct tcfs_store *s, struct tcfs_node **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_node,
				 NULL, out, n, sql_temps, "");

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
