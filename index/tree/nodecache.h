/*
 * nodecache: the writer's memory of the nodes table.
 *
 * Every SQLite statement takes and drops the index's file locks (several
 * fcntl calls), which made most of the cost of a mount's lookup.  The
 * writer is the only process that changes the nodes table while it holds
 * the store, so it may keep rows in memory, and SQLite itself keeps them
 * right: its update hook drops a row whenever the row changes, whoever
 * changes it.  Rows read inside a transaction are kept too (a mount's
 * changes stay uncommitted for a while, db.h), so a rollback that undoes
 * changes empties the cache: a row read after a change it undid is no
 * longer true.  (The update hook misses only
 * WITHOUT ROWID tables, REPLACE conflicts and DELETE without WHERE, none of
 * which the nodes table sees.)
 *
 * get, lookup and put are called with the db lock held, as the update
 * hook always runs under it; attach and free take the lock themselves.
 */
#ifndef TCFS_NODECACHE_H
#define TCFS_NODECACHE_H

#include <stdint.h>

#include "index/tree/nsread.h"

struct tcfs_db;
struct tcfs_nodecache;

/* Creates a cache kept right by db's hooks (db must outlive it).  *out is
 * owned by the caller: tcfs_nodecache_free, before the db is closed. */
int tcfs_nodecache_attach(struct tcfs_db *db, struct tcfs_nodecache **out);
void tcfs_nodecache_free(struct tcfs_nodecache *c);

/* 1 with *out filled when the node is kept, else 0.  Nodes are rows as
 * they are (a hard link's too), kept by their entry: get takes a rowid. */
int tcfs_nodecache_get(struct tcfs_nodecache *c, uint64_t ino,
		       struct tcfs_node *out);
int tcfs_nodecache_lookup(struct tcfs_nodecache *c, uint64_t parent,
			  const char *name, struct tcfs_node *out);

/* Keeps a row just read from the index, as it is (not resolved), or
 * just written, as a read would find it. */
void tcfs_nodecache_put(struct tcfs_nodecache *c, const struct tcfs_node *n);

#endif
