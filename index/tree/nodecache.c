/* nodecache: the writer's nodes in memory, kept right by SQLite's hooks. */
#include "index/tree/nodecache.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "index/store/db.h"

/* A day of lookups in a big cache touches far fewer nodes; past this the
 * cache starts again rather than grow (about 350 bytes a node). */
#define NODECACHE_MAX (1u << 16)
#define NODECACHE_BUCKETS (1u << 16)

struct entry {
	struct tcfs_node n;
	struct entry *next_ino;	/* chain in by_ino */
	struct entry *next_name;	/* chain in by_name */
};

struct tcfs_nodecache {
	struct tcfs_db *db;
	unsigned count;
	struct entry *by_ino[NODECACHE_BUCKETS];
	struct entry *by_name[NODECACHE_BUCKETS];
};

static size_t ino_bucket(uint64_t ino)
{
	return (size_t)(XXH3_64bits(&ino, sizeof(ino)) % NODECACHE_BUCKETS);
}

static size_t name_bucket(uint64_t parent, const char *name)
{
	return (size_t)(XXH3_64bits_withSeed(name, strlen(name), parent) %
			NODECACHE_BUCKETS);
}

static void clear(struct tcfs_nodecache *c)
{
	for (size_t b = 0; b < NODECACHE_BUCKETS; b++) {
		struct entry *e = c->by_ino[b];

		while (e) {
			struct entry *next = e->next_ino;

			free(e);
			e = next;
		}
		c->by_ino[b] = NULL;
		c->by_name[b] = NULL;
	}
	c->count = 0;
}

/* Rows are kept by rowid (a node's entry), the number the update hook
 * gives: a hard link's row names its file by another number. */
static void drop(struct tcfs_nodecache *c, uint64_t ino)
{
	struct entry **link = &c->by_ino[ino_bucket(ino)], *e;

	while (*link && (*link)->n.entry != ino)
		link = &(*link)->next_ino;
	if (!(e = *link))
		return;
	*link = e->next_ino;
	link = &c->by_name[name_bucket(e->n.parent, e->n.name)];
	while (*link != e)
		link = &(*link)->next_name;
	*link = e->next_name;
	free(e);
	c->count--;
}

static void on_update(void *arg, int op, const char *dbname,
		      const char *table, sqlite3_int64 rowid)
{
	(void)op;
	(void)dbname;
	if (strcmp(table, "nodes") == 0)
		drop(arg, (uint64_t)rowid);
}

static void on_undo(void *arg)
{
	clear(arg);
}

int tcfs_nodecache_attach(struct tcfs_db *db, struct tcfs_nodecache **out)
{
	struct tcfs_nodecache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->db = db;
	tcfs_db_lock(db);
	sqlite3_update_hook(tcfs_db_handle(db), on_update, c);
	tcfs_db_on_undo(db, on_undo, c);
	tcfs_db_unlock(db);
	*out = c;
	return 0;
}

void tcfs_nodecache_free(struct tcfs_nodecache *c)
{
	if (!c)
		return;
	tcfs_db_lock(c->db);
	sqlite3_update_hook(tcfs_db_handle(c->db), NULL, NULL);
	tcfs_db_on_undo(c->db, NULL, NULL);
	tcfs_db_unlock(c->db);
	clear(c);
	free(c);
}

int tcfs_nodecache_get(struct tcfs_nodecache *c, uint64_t ino,
		       struct tcfs_node *out)
{
	assert(tcfs_db_held(c->db));
	for (struct entry *e = c->by_ino[ino_bucket(ino)]; e; e = e->next_ino)
		if (e->n.entry == ino) {
			*out = e->n;
			return 1;
		}
	return 0;
}

int tcfs_nodecache_lookup(struct tcfs_nodecache *c, uint64_t parent,
			  const char *name, struct tcfs_node *out)
{
	struct entry *e = c->by_name[name_bucket(parent, name)];

	assert(tcfs_db_held(c->db));
	for (; e; e = e->next_name)
		if (e->n.parent == parent && strcmp(e->n.name, name) == 0) {
			*out = e->n;
			return 1;
		}
	return 0;
}

void tcfs_nodecache_put(struct tcfs_nodecache *c, const struct tcfs_node *n)
{
	struct entry *e;
	size_t b;

	assert(tcfs_db_held(c->db));
	drop(c, n->entry);
	if (c->count >= NODECACHE_MAX)
		clear(c);
	e = malloc(sizeof(*e));
	if (!e)
		return;		/* a cache may always forget */
	e->n = *n;
	b = ino_bucket(n->entry);
	e->next_ino = c->by_ino[b];
	c->by_ino[b] = e;
	b = name_bucket(n->parent, n->name);
	e->next_name = c->by_name[b];
	c->by_name[b] = e;
	c->count++;
}
