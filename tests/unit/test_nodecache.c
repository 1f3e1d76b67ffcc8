/* nodecache: a writer's lookups answered from memory, never stale. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "index/store/db.h"
#include "index/tree/nodecache.h"
#include "index/tree/ns.h"
#include "index/maint/recover.h"
#include "index/store/store.h"
#include "tap.h"

/* A cache of 100,000 kernels: a key dir and a group file each, which
 * every probe reads, all kept (the cache started again every 65,536
 * nodes, and a probe of such a cache read the index instead); and each
 * node back as it was put, to its name's last byte. */
static void big(struct tcfs_store *s)
{
	struct tcfs_nodecache *c = tcfs_store_nodecache(s);
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_node n, got, first;
	int all = 1;

	memset(&n, 0, sizeof(n));
	n.kind = TCFS_FILE;
	n.mode = 0644;
	n.uid = 1000;
	n.gid = -1;
	n.size = 12345;
	n.mtime_ns = 1;
	n.ctime_ns = 2;
	n.nlink = 1;
	n.fmt = TCFS_FMT_GROUP;
	tcfs_hash_buf("x", 1, &n.blob);
	tcfs_db_lock(db);
	for (uint64_t i = 0; i < 200000; i++) {
		n.ino = n.entry = 1000000 + i;
		n.parent = 7 + i / 2;
		snprintf(n.name, sizeof(n.name), "%0*llu", i ? 40 : 255,
			 (unsigned long long)i);
		if (i == 0)
			first = n;
		tcfs_nodecache_put(c, &n);
	}
	memset(&got, 0xa5, sizeof(got));
	tap_ok(tcfs_nodecache_get(c, first.ino, &got) &&
		       memcmp(&got, &first, sizeof(got)) == 0,
	       "200,000 nodes kept: the first is still there, as it was put "
	       "(a name of 255 bytes)");
	for (uint64_t i = 1; i < 200000 && all; i += 997) {
		char name[64];

		snprintf(name, sizeof(name), "%040llu", (unsigned long long)i);
		all = tcfs_nodecache_lookup(c, 7 + i / 2, name, &got) &&
		      got.ino == 1000000 + i && got.size == 12345 &&
		      strcmp(got.name, name) == 0;
	}
	tap_ok(all, "each found by name, with its fields");
	tcfs_db_unlock(db);
}

static int cached(struct tcfs_store *s, uint64_t parent, const char *name,
		  struct tcfs_node *n)
{
	struct tcfs_nodecache *c = tcfs_store_nodecache(s);
	struct tcfs_db *db = tcfs_store_db(s);
	int hit;

	tcfs_db_lock(db);
	hit = tcfs_nodecache_lookup(c, parent, name, n);
	tcfs_db_unlock(db);
	return hit;
}

int main(void)
{
	char *tmp = tap_tmpdir(), dir[512];
	struct tcfs_store_opts w = { .dir = dir, .create = 1, .writer = 1,
				     .recover = tcfs_recover };
	struct tcfs_store_opts r = { .dir = dir };
	struct tcfs_store *s, *rd;
	struct tcfs_node n, m;
	int rc;

	snprintf(dir, sizeof(dir), "%s/store", tmp);
	tap_eq(tcfs_store_open(&w, &s), 0, "open a writer");
	tap_ok(tcfs_store_nodecache(s) != NULL, "a writer has a node cache");
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "KEY", 0755, 1, NULL, &n), 0, "mkdir");
	tap_ok(cached(s, TCFS_ROOT_INO, "KEY", &m) && m.ino == n.ino,
	       "a node written is kept (read back by the write)");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "KEY", &m), 0, "lookup");
	tap_ok(cached(s, TCFS_ROOT_INO, "KEY", &m) && m.ino == n.ino,
	       "a node read is kept");

	tap_eq(tcfs_ns_setattr(s, n.ino, TCFS_SET_MODE,
			       &(struct tcfs_attrs){ .mode = 0700 }), 0,
	       "chmod through ns");
	tap_ok(!cached(s, TCFS_ROOT_INO, "KEY", &m), "a change drops the node");
	tap_eq(tcfs_ns_get(s, n.ino, &m), 0, "read again");
	tap_eq(m.mode, 0700u, "and the new mode is read");

	tap_eq(tcfs_ns_rename(s, TCFS_ROOT_INO, "KEY", TCFS_ROOT_INO, "KEY2", 0),
	       0, "rename");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "KEY", &m), -ENOENT,
	       "the old name is gone at once");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "KEY2", &m), 0,
	       "the new name is found");

	/* Any change to the table counts, whoever makes it. */
	tcfs_db_exec(tcfs_store_db(s), "UPDATE nodes SET mode = ? WHERE ino = ?",
		     "ii", (int64_t)0711, (int64_t)n.ino);
	tap_eq(tcfs_ns_get(s, n.ino, &m), 0, "read after raw SQL");
	tap_eq(m.mode, 0711u, "a change in plain SQL is seen too");

	/* A rolled back transaction leaves nothing of itself behind. */
	tcfs_store_begin(s);
	tcfs_db_exec(tcfs_store_db(s), "UPDATE nodes SET mode = ? WHERE ino = ?",
		     "ii", (int64_t)0700, (int64_t)n.ino);
	tap_eq(tcfs_ns_get(s, n.ino, &m), 0, "read inside a transaction");
	tap_eq(m.mode, 0700u, "sees the transaction's own change");
	rc = tcfs_store_end(s, -EIO);
	tap_eq(rc, -EIO, "roll it back");
	tap_eq(tcfs_ns_get(s, n.ino, &m), 0, "read after the rollback");
	tap_eq(m.mode, 0711u, "the rolled back mode is never kept");

	/* So does a rolled back savepoint, inside a transaction that goes on
	 * (each operation of a mount's deferred batch is one). */
	tcfs_store_begin(s);
	tcfs_store_begin(s);
	tcfs_db_exec(tcfs_store_db(s), "UPDATE nodes SET mode = ? WHERE ino = ?",
		     "ii", (int64_t)0700, (int64_t)n.ino);
	tap_eq(tcfs_ns_get(s, n.ino, &m), 0, "read inside a savepoint");
	tap_eq(tcfs_store_end(s, -EIO), -EIO, "roll the savepoint back");
	tap_eq(tcfs_ns_get(s, n.ino, &m), 0, "read in the transaction");
	tap_eq(m.mode, 0711u, "the savepoint's mode is never kept");
	tap_eq(tcfs_store_end(s, 0), 0, "commit the transaction");

	/* A failure that changed nothing restores nothing: the cache stays. */
	tap_eq(tcfs_ns_mkdir(s, TCFS_ROOT_INO, "KEY2", 0755, 3, NULL, &m), -EEXIST,
	       "mkdir of an existing name: EEXIST (rolled back)");
	tap_ok(cached(s, TCFS_ROOT_INO, "KEY2", &m),
	       "a rollback that undid nothing keeps the cache");

	tap_eq(tcfs_ns_unlink(s, TCFS_ROOT_INO, "KEY2"), -EISDIR,
	       "unlink of a dir: EISDIR");
	tap_eq(tcfs_ns_rmdir(s, TCFS_ROOT_INO, "KEY2"), 0, "rmdir");
	tap_eq(tcfs_ns_lookup(s, TCFS_ROOT_INO, "KEY2", &m), -ENOENT,
	       "a removed node is not found");

	big(s);

	tap_eq(tcfs_store_open(&r, &rd), 0, "open a reader beside it");
	tap_ok(tcfs_store_nodecache(rd) == NULL,
	       "a reader has none (the writer changes the index under it)");
	tcfs_store_close(rd);
	tcfs_store_close(s);
	tap_rmtree(tmp);
	return tap_done();
}
