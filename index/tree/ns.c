/* ns: changing the namespace, one row per directory entry; files, dirs,
 * symlinks and the names that files have beside their own (hard links). */
#include "index/tree/ns.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/store/db.h"
#include "index/blob/durable.h"
#include "index/tree/nodecache.h"
#include "index/model/kernel.h"
#include "index/store/store.h"

static const char sql_insert[] =
	"INSERT INTO nodes (parent, name, kind, mode, size, mtime, blob, fmt,"
	" ctime, nlink, target, inode, uid, gid) VALUES (?, ?, ?, ?, ?, ?, ?,"
	" ?, ?, ?, ?, ?, ?, ?)";
static const char sql_touch[] =
	"UPDATE nodes SET mtime = ?1, ctime = ?1 WHERE ino = ?2";
/* An atime that followed mtime (NULL) keeps the value it showed. */
static const char sql_set_mtime[] =
	"UPDATE nodes SET atime = coalesce(atime, mtime), mtime = ?, ctime = ?"
	" WHERE ino = ?";
static const char sql_set_atime[] =
	"UPDATE nodes SET atime = ?, ctime = ? WHERE ino = ?";
static const char sql_changed[] =
	"UPDATE nodes SET ctime = ? WHERE ino = ?";
static const char sql_content[] =
	"UPDATE nodes SET blob = ?1, size = ?2, fmt = ?3, mtime = ?4, ctime = ?4"
	" WHERE ino = ?5";
static const char sql_mode[] =
	"UPDATE nodes SET mode = ?, ctime = ? WHERE ino = ?";
static const char sql_uid[] =
	"UPDATE nodes SET uid = ?, ctime = ? WHERE ino = ?";
static const char sql_gid[] =
	"UPDATE nodes SET gid = ?, ctime = ? WHERE ino = ?";
static const char sql_nlink[] =
	"UPDATE nodes SET nlink = nlink + ?, ctime = ? WHERE ino = ?";
/* A dir made in dir ?3: one more link, and a change of its entries. */
static const char sql_subdir_made[] =
	"UPDATE nodes SET nlink = nlink + 1, mtime = ?1, ctime = ?1"
	" WHERE ino = ?2";
static const char sql_other_name[] =
	"SELECT ino, parent, name FROM nodes WHERE inode = ? ORDER BY ino"
	" LIMIT 1";
static const char sql_move[] =
	"UPDATE nodes SET parent = ?, name = ? WHERE ino = ?";
static const char sql_delete[] =
	"DELETE FROM nodes WHERE ino = ?";
static const char sql_to_limbo[] =
	"UPDATE nodes SET parent = -parent, name = CAST(ino AS TEXT),"
	" nlink = 0, ctime = ? WHERE ino = ?";
static const char sql_unindex[] =
	"DELETE FROM kernels WHERE grp_ino = ?";
static const char sql_forget[] =
	"DELETE FROM nodes WHERE ino = ? AND parent < 0";
static const char sql_purge[] =
	"DELETE FROM nodes WHERE parent < 0";
static const char sql_has_child[] =
	"SELECT 1 FROM nodes WHERE parent = ? LIMIT 1";

/* The directory an entry is added to or removed from must exist. */
static int get_dir(struct tcfs_store *s, uint64_t ino, struct tcfs_node *dir)
{
	int rc = tcfs_ns_get(s, ino, dir);

	if (rc < 0)
		return rc;
	return dir->kind == TCFS_DIR ? 0 : -ENOTDIR;
}

/* Adds delta to ino's links (a dir's: its subdirs), a change of the
 * inode at now. */
static int add_links(struct tcfs_store *s, uint64_t ino, int delta,
		     int64_t now)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_nlink, "dii", delta, now,
			      (int64_t)ino);

	return rc < 0 ? rc : 0;
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

/* What a new row holds beside its name. */
struct row {
	enum tcfs_kind kind;
	unsigned mode;
	int64_t mtime_ns;
	const struct tcfs_content *c;	/* a file's */
	const char *target;		/* a symlink's */
	uint64_t inode;			/* a hard link's file */
	const struct tcfs_owner *own;	/* NULL: whoever mounts */
};

/* The node a row just inserted reads back as (nsread.c), made here and
 * kept as a read would keep it: a read of every row written cost an
 * import a statement a key dir. */
static void inserted_node(struct tcfs_store *s, uint64_t ino,
			  uint64_t parent, const char *name,
			  const struct row *r, uint64_t size,
			  struct tcfs_node *n)
{
	struct tcfs_nodecache *cache = tcfs_store_nodecache(s);

	memset(n, 0, sizeof(*n));
	n->entry = n->ino = ino;
	n->parent = parent;
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->kind = r->kind;
	n->mode = r->mode & 07777;
	n->uid = r->own ? r->own->uid : (int64_t)TCFS_OWNER_MOUNT;
	n->gid = r->own ? r->own->gid : (int64_t)TCFS_OWNER_MOUNT;
	n->size = size;
	n->mtime_ns = n->atime_ns = n->ctime_ns = r->mtime_ns;
	n->nlink = r->kind == TCFS_DIR ? 2 : 1;
	if (r->c) {
		n->blob = r->c->blob;
		n->fmt = r->c->fmt;
	}
	if (cache)
		tcfs_nodecache_put(cache, n);
}

static int insert_node(struct tcfs_store *s, uint64_t parent, const char *name,
		       const struct row *r, struct tcfs_node *out)
{
	struct tcfs_db *db = tcfs_store_db(s);
	char kindstr[2] = { (char)r->kind, '\0' };
	const struct tcfs_content *c = r->c;
	uint64_t size = c ? c->size : 0;
	struct tcfs_node dir, n;
	int rc = tcfs_name_check(name);

	if (rc < 0)
		return rc;
	if (r->target)
		size = strlen(r->target);
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
	rc = tcfs_db_exec(db, sql_insert, "ittdiihdidtnii", (int64_t)parent,
			  name, kindstr, (int)(r->mode & 07777), (int64_t)size,
			  r->mtime_ns, c ? &c->blob : NULL, c ? (int)c->fmt : 0,
			  r->mtime_ns, r->kind == TCFS_DIR ? 2 : 1, r->target,
			  r->inode ? (int64_t)r->inode : (int64_t)-1,
			  r->own ? r->own->uid : (int64_t)TCFS_OWNER_MOUNT,
			  r->own ? r->own->gid : (int64_t)TCFS_OWNER_MOUNT);
	if (rc >= 0 && c)
		rc = tcfs_durable_note(tcfs_store_durable(s), &c->blob);
	if (rc >= 0 && r->inode)
		rc = add_links(s, r->inode, 1, r->mtime_ns);
	if (rc < 0)
		goto out;
	/* A hard link reads back as its file (nsread.c's resolve). */
	rc = 0;
	if (r->kind == TCFS_HARDLINK)
		rc = tcfs_ns_get(s, (uint64_t)tcfs_db_last_rowid(db), &n);
	else
		inserted_node(s, (uint64_t)tcfs_db_last_rowid(db), parent,
			      name, r, size, &n);
	if (rc == 0 && r->kind == TCFS_DIR)
		rc = tcfs_db_exec(db, sql_subdir_made, "ii", r->mtime_ns,
				  (int64_t)parent);
	else if (rc == 0)
		rc = dir_changed(s, parent, r->kind, r->mtime_ns);
	rc = rc < 0 ? rc : 0;
	if (rc == 0 && out)
		*out = n;
out:
	return tcfs_db_end(db, rc);
}

int tcfs_ns_mkdir(struct tcfs_store *s, uint64_t parent, const char *name,
		  unsigned mode, int64_t mtime_ns,
		  const struct tcfs_owner *own, struct tcfs_node *out)
{
	struct row r = { .kind = TCFS_DIR, .mode = mode, .mtime_ns = mtime_ns,
			 .own = own };

	return insert_node(s, parent, name, &r, out);
}

int tcfs_ns_create(struct tcfs_store *s, uint64_t parent, const char *name,
		   unsigned mode, int64_t mtime_ns,
		   const struct tcfs_content *c, const struct tcfs_owner *own,
		   struct tcfs_node *out)
{
	struct row r = { .kind = TCFS_FILE, .mode = mode, .mtime_ns = mtime_ns,
			 .c = c, .own = own };

	return insert_node(s, parent, name, &r, out);
}

int tcfs_ns_create_files(struct tcfs_store *s, uint64_t dir,
			 const struct tcfs_ns_file *f, size_t n)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_node d;
	int rc;

	if (n == 0)
		return 0;
	rc = tcfs_db_begin(db);
	if (rc < 0)
		return rc;
	rc = get_dir(s, dir, &d);
	for (size_t i = 0; rc >= 0 && i < n; i++) {
		rc = tcfs_name_check(f[i].name);
		if (rc == 0)
			rc = tcfs_db_exec(db, sql_insert, "ittdiihdidtnii",
					  (int64_t)dir, f[i].name, "f",
					  (int)(f[i].mode & 07777),
					  (int64_t)f[i].c.size, f[i].mtime_ns,
					  &f[i].c.blob, (int)f[i].c.fmt,
					  f[i].mtime_ns, 1, NULL, (int64_t)-1,
					  (int64_t)TCFS_OWNER_MOUNT,
					  (int64_t)TCFS_OWNER_MOUNT);
		if (rc >= 0)
			rc = tcfs_durable_note(tcfs_store_durable(s),
					       &f[i].c.blob);
	}
	if (rc >= 0)
		rc = tcfs_db_exec(db, sql_touch, "ii", f[n - 1].mtime_ns,
				  (int64_t)dir);
	/* d as read before: what a refresh reads of it did not change. */
	if (rc >= 0)
		rc = tcfs_kernel_dir_files_changed(s, &d);
	return tcfs_db_end(db, rc < 0 ? rc : 0);
}

int tcfs_ns_symlink(struct tcfs_store *s, uint64_t parent, const char *name,
		    const char *target, int64_t mtime_ns,
		    const struct tcfs_owner *own, struct tcfs_node *out)
{
	struct row r = { .kind = TCFS_SYMLINK, .mode = 0777,
			 .mtime_ns = mtime_ns, .target = target, .own = own };
	size_t len = strlen(target);

	if (len == 0)
		return -ENOENT;
	if (len > TCFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	return insert_node(s, parent, name, &r, out);
}

int tcfs_ns_link(struct tcfs_store *s, uint64_t ino, uint64_t newparent,
		 const char *newname, struct tcfs_node *out)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct row r = { .kind = TCFS_HARDLINK, .mtime_ns = tcfs_ns_now() };
	struct tcfs_node n;
	int rc = tcfs_db_begin(db);

	if (rc < 0)
		return rc;
	rc = tcfs_ns_get(s, ino, &n);
	if (rc == 0 && n.kind == TCFS_DIR)
		rc = -EPERM;
	if (rc == 0 && tcfs_ns_in_limbo(n.parent, NULL))
		rc = -ENOENT;
	if (rc == 0) {
		r.inode = n.ino;
		rc = insert_node(s, newparent, newname, &r, out);
	}
	return tcfs_db_end(db, rc);
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
		rc = n.kind == TCFS_DIR ? -EISDIR : -EINVAL;
	if (rc == 0)
		rc = tcfs_db_exec(db, sql_content, "hidii", &c->blob,
				  (int64_t)c->size, (int)c->fmt, mtime_ns,
				  (int64_t)n.ino);
	if (rc >= 0)
		rc = tcfs_durable_note(tcfs_store_durable(s), &c->blob);
	if (rc >= 0)
		rc = tcfs_kernel_files_changed(s, n.parent);
	return tcfs_db_end(db, rc);
}

/* The owner half of tcfs_ns_setattr, in its transaction. */
static int set_owner(struct tcfs_db *db, uint64_t ino, int mask,
		     const struct tcfs_owner *own, int64_t now)
{
	int rc = 0;

	if (mask & TCFS_SET_UID)
		rc = tcfs_db_exec(db, sql_uid, "iii", own->uid, now,
				  (int64_t)ino);
	if (rc >= 0 && (mask & TCFS_SET_GID))
		rc = tcfs_db_exec(db, sql_gid, "iii", own->gid, now,
				  (int64_t)ino);
	return rc < 0 ? rc : 0;
}

int tcfs_ns_setattr(struct tcfs_store *s, uint64_t ino, int mask,
		    const struct tcfs_attrs *a)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int64_t now = tcfs_ns_now();
	struct tcfs_node n;
	int rc = tcfs_db_begin(db);

	if (rc < 0)
		return rc;
	rc = tcfs_ns_get(s, ino, &n);
	if (rc == 0 && (mask & TCFS_SET_MODE))
		rc = tcfs_db_exec(db, sql_mode, "dii", (int)(a->mode & 07777),
				  now, (int64_t)n.ino);
	/* atime first: mtime's statement keeps an atime already set. */
	if (rc >= 0 && (mask & TCFS_SET_ATIME))
		rc = tcfs_db_exec(db, sql_set_atime, "iii", a->atime_ns, now,
				  (int64_t)n.ino);
	if (rc >= 0 && (mask & TCFS_SET_MTIME))
		rc = tcfs_db_exec(db, sql_set_mtime, "iii", a->mtime_ns, now,
				  (int64_t)n.ino);
	if (rc >= 0)
		rc = set_owner(db, n.ino, mask, &a->own, now);
	return tcfs_db_end(db, rc < 0 ? rc : 0);
}

/* Takes a node out of the tree: gone, or kept in limbo for the mount. */
static int drop_node(struct tcfs_store *s, uint64_t ino, int keep,
		     int64_t now)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc;

	if (!keep)
		return tcfs_db_exec(db, sql_delete, "i", (int64_t)ino);
	rc = tcfs_db_exec(db, sql_unindex, "i", (int64_t)ino);
	if (rc >= 0)
		rc = tcfs_db_exec(db, sql_to_limbo, "ii", now, (int64_t)ino);
	return rc;
}

static int move_node(struct tcfs_store *s, uint64_t ino, uint64_t parent,
		     const char *name)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_move, "iti",
			      (int64_t)parent, name, (int64_t)ino);

	return rc < 0 ? rc : 0;
}

/* The row of another name of file (a hard link): its number and place. */
static int other_name(struct tcfs_store *s, uint64_t file, uint64_t *row,
		      uint64_t *parent, char *name)
{
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_other_name, "i", (int64_t)file);
	if (rc == 1) {
		*row = (uint64_t)sqlite3_column_int64(st, 0);
		*parent = (uint64_t)sqlite3_column_int64(st, 1);
		snprintf(name, TCFS_NAME_MAX + 1, "%s",
			 tcfs_db_text(st, 2, NULL));
		tcfs_db_reset(st);
	}
	tcfs_db_unlock(db);
	return rc == 1 ? 0 : rc == 0 ? -EUCLEAN : rc;
}

/* Takes the name n (as tcfs_ns_lookup returned it) out of the tree.  A
 * file goes only with its last name (to limbo with keep, see drop_node);
 * while it has others, its row takes the place of one of them, keeping
 * its inode number, and its kernels follow it there. */
static int drop_name(struct tcfs_store *s, const struct tcfs_node *n,
		     int keep, int64_t now)
{
	struct tcfs_db *db = tcfs_store_db(s);
	char name[TCFS_NAME_MAX + 1] = "";
	uint64_t row = 0, parent = 0;
	int rc;

	if (n->entry != n->ino) {
		rc = tcfs_db_exec(db, sql_delete, "i", (int64_t)n->entry);
		return rc < 0 ? rc : add_links(s, n->ino, -1, now);
	}
	if (n->kind == TCFS_DIR || n->nlink <= 1) {
		rc = drop_node(s, n->ino, keep, now);
		return rc < 0 ? rc : 0;
	}
	rc = other_name(s, n->ino, &row, &parent, name);
	if (rc == 0)
		rc = tcfs_db_exec(db, sql_delete, "i", (int64_t)row);
	if (rc >= 0)
		rc = move_node(s, n->ino, parent, name);
	if (rc == 0)
		rc = add_links(s, n->ino, -1, now);
	if (rc == 0 && n->kind == TCFS_FILE)
		rc = tcfs_kernel_files_changed(s, parent);
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

/* Whether src may take dst's place (dst may be absent: dst->ino == 0). */
static int check_replace(struct tcfs_store *s, const struct tcfs_node *src,
			 const struct tcfs_node *dst, uint64_t newparent)
{
	int rc;

	if (src->kind == TCFS_DIR && is_within(s, newparent, src->ino))
		return -EINVAL;
	if (dst->ino == 0)
		return 0;
	if (src->kind != TCFS_DIR)
		return dst->kind == TCFS_DIR ? -EISDIR : 0;
	if (dst->kind != TCFS_DIR)
		return -ENOTDIR;
	rc = has_children(s, dst->ino);
	return rc == 1 ? -ENOTEMPTY : rc;
}

/* A dir that moves from one parent to another is a subdir less there and
 * one more here (their nlink). */
static int dir_moved(struct tcfs_store *s, const struct tcfs_node *n,
		     uint64_t from, uint64_t to, int64_t now)
{
	int rc = 0;

	if (n->kind != TCFS_DIR || from == to)
		return 0;
	rc = add_links(s, from, -1, now);
	return rc < 0 ? rc : add_links(s, to, 1, now);
}

static int rename_exchange(struct tcfs_store *s, const struct tcfs_node *a,
			   const struct tcfs_node *b, int64_t now)
{
	int rc;

	if ((a->kind == TCFS_DIR && is_within(s, b->parent, a->ino)) ||
	    (b->kind == TCFS_DIR && is_within(s, a->parent, b->ino)))
		return -EINVAL;
	/* UNIQUE(parent, name) forbids a direct swap: park a first under a
	 * parent no real node has (inode numbers are positive). */
	rc = move_node(s, a->entry, (uint64_t)-(int64_t)a->entry, a->name);
	if (rc == 0)
		rc = move_node(s, b->entry, a->parent, a->name);
	if (rc == 0)
		rc = move_node(s, a->entry, b->parent, b->name);
	if (rc == 0)
		rc = dir_moved(s, a, a->parent, b->parent, now);
	if (rc == 0)
		rc = dir_moved(s, b, b->parent, a->parent, now);
	if (rc == 0)
		rc = tcfs_db_exec(tcfs_store_db(s), sql_changed, "ii", now,
				  (int64_t)b->ino);
	return rc < 0 ? rc : 0;
}

static int do_rename(struct tcfs_store *s, uint64_t parent, const char *name,
		     uint64_t newparent, const char *newname, unsigned flags,
		     int64_t now)
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
	/* Two names of one file: nothing to do, as rename(2) says. */
	if (dst.ino == src.ino)
		return 0;
	rc = tcfs_db_exec(tcfs_store_db(s), sql_changed, "ii", now,
			  (int64_t)src.ino);
	if (rc < 0)
		return rc;
	if (flags & RENAME_EXCHANGE)
		return dst.ino ? rename_exchange(s, &src, &dst, now) : -ENOENT;
	if (dst.ino && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	rc = check_replace(s, &src, &dst, newparent);
	if (rc == 0 && dst.ino) {
		rc = drop_name(s, &dst, tcfs_store_keeps_unlinked(s), now);
		if (rc == 0 && dst.kind == TCFS_DIR)
			rc = add_links(s, newparent, -1, now);
	}
	if (rc == 0)
		rc = move_node(s, src.entry, newparent, newname);
	if (rc == 0)
		rc = dir_moved(s, &src, parent, newparent, now);
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
		rc = do_rename(s, parent, name, newparent, newname, flags, now);
	/* What comes or goes is a dir only when a dir moves (a dir replaces
	 * only a dir); else files may (a symlink may replace one), and the
	 * kernels of both dirs are looked at again. */
	kind = flags & RENAME_EXCHANGE ? TCFS_FILE
	       : moved.kind == TCFS_DIR ? TCFS_DIR
					: TCFS_FILE;
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
			const char *name, int want_dir)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int64_t now = tcfs_ns_now();
	struct tcfs_node n;
	int rc;

	/* Checked before the write transaction, under the lock that every
	 * change takes: Triton's os.removedirs ends each put with an rmdir
	 * of the key dir that fails, and a failure needs no write lock. */
	tcfs_db_lock(db);
	rc = tcfs_ns_lookup(s, parent, name, &n);
	if (rc == 0 && (n.kind == TCFS_DIR) != want_dir)
		rc = want_dir ? -ENOTDIR : -EISDIR;
	if (rc == 0 && want_dir) {
		rc = has_children(s, n.ino);
		rc = rc == 1 ? -ENOTEMPTY : rc;
	}
	if (rc == 0) {
		rc = tcfs_db_begin(db);
		if (rc == 0) {
			rc = drop_name(s, &n, tcfs_store_keeps_unlinked(s),
				       now);
			if (rc == 0 && want_dir)
				rc = add_links(s, parent, -1, now);
			if (rc == 0)
				rc = dir_changed(s, parent, n.kind, now);
			rc = tcfs_db_end(db, rc);
		}
	}
	tcfs_db_unlock(db);
	return rc;
}

int tcfs_ns_unlink(struct tcfs_store *s, uint64_t parent, const char *name)
{
	return remove_entry(s, parent, name, 0);
}

int tcfs_ns_rmdir(struct tcfs_store *s, uint64_t parent, const char *name)
{
	return remove_entry(s, parent, name, 1);
}

/* Children first, so that a node in limbo never holds live ones.  With
 * to_limbo, each goes as an unlink takes it (drop_name). */
static int remove_below(struct tcfs_store *s, const struct tcfs_node *n,
			int to_limbo, int64_t now)
{
	int keep = to_limbo && tcfs_store_keeps_unlinked(s);
	struct tcfs_node *kids = NULL, cur;
	size_t nk = 0;
	int rc;

	if (n->kind != TCFS_DIR) {
		/* Looked up again: dropping an earlier name of the same file
		 * may have moved the file's row to this one (drop_name). */
		rc = tcfs_ns_lookup(s, n->parent, n->name, &cur);
		return rc < 0 ? rc : drop_name(s, &cur, keep, now);
	}
	rc = tcfs_ns_list(s, n->ino, 0, 0, &kids, &nk);
	for (size_t i = 0; rc == 0 && i < nk; i++)
		rc = remove_below(s, &kids[i], to_limbo, now);
	free(kids);
	if (rc == 0)
		rc = drop_node(s, n->ino, keep, now);
	return rc < 0 ? rc : 0;
}

static int remove_tree(struct tcfs_store *s, uint64_t parent,
		       const char *name, int to_limbo)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int64_t now = tcfs_ns_now();
	struct tcfs_node n;
	int rc = tcfs_db_begin(db);

	if (rc < 0)
		return rc;
	rc = tcfs_ns_lookup(s, parent, name, &n);
	if (rc == 0)
		rc = remove_below(s, &n, to_limbo, now);
	if (rc == 0 && n.kind == TCFS_DIR)
		rc = add_links(s, parent, -1, now);
	if (rc == 0)
		rc = dir_changed(s, parent, n.kind, now);
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
