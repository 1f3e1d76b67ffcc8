/* nodecache: the writer's nodes in memory, kept right by SQLite's hooks. */
#include "index/tree/nodecache.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "index/store/db.h"

/* Room for every key dir and group file of a cache of 100,000 kernels,
 * each of which a probe reads (with fewer, the cache started again every
 * 65,536 nodes and a probe of such a cache read the index instead, at
 * twice the cost); past this it starts again rather than grow.  About 200
 * bytes a node: its name is kept at its length, not TCFS_NAME_MAX's. */
#define NODECACHE_MAX (1u << 18)
#define NODECACHE_BUCKETS (1u << 18)

/* A node, less the unused end of its name. */
#define NODE_HEAD offsetof(struct tcfs_node, name)
#define NODE_TAIL_AT (NODE_HEAD + sizeof(((struct tcfs_node *)0)->name))
#define NODE_TAIL (sizeof(struct tcfs_node) - NODE_TAIL_AT)

struct entry {
	struct entry *next_ino;	/* chain in by_ino */
	struct entry *next_name;	/* chain in by_name */
	uint64_t entry, parent;		/* the node's, searched by */
	unsigned char head[NODE_HEAD];	/* the node's fields around name */
	unsigned char tail[NODE_TAIL];
	char name[];			/* NUL-terminated */
};

static void node_of(const struct entry *e, struct tcfs_node *out)
{
	size_t len = strlen(e->name);

	memcpy(out, e->head, NODE_HEAD);
	memcpy(out->name, e->name, len);
	memset(out->name + len, 0, sizeof(out->name) - len);
	memcpy((unsigned char *)out + NODE_TAIL_AT, e->tail, NODE_TAIL);
}

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

	while (*link && (*link)->entry != ino)
		link = &(*link)->next_ino;
	if (!(e = *link))
		return;
	*link = e->next_ino;
	link = &c->by_name[name_bucket(e->parent, e->name)];
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
		if (e->entry == ino) {
			node_of(e, out);
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
		if (e->parent == parent && strcmp(e->name, name) == 0) {
			node_of(e, out);
			return 1;
		}
	return 0;
}

void tcfs_nodecache_put(struct tcfs_nodecache *c, const struct tcfs_node *n)
{
	struct entry *e;
	size_t b, len;

	assert(tcfs_db_held(c->db));
	drop(c, n->entry);
	if (c->count >= NODECACHE_MAX)
		clear(c);
	len = strnlen(n->name, sizeof(n->name) - 1);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return;		/* a cache may always forget */
	e->entry = n->entry;
	e->parent = n->parent;
	memcpy(e->head, n, NODE_HEAD);
	memcpy(e->tail, (const unsigned char *)n + NODE_TAIL_AT, NODE_TAIL);
	memcpy(e->name, n->name, len);
	e->name[len] = '\0';
	b = ino_bucket(n->entry);
	e->next_ino = c->by_ino[b];
	c->by_ino[b] = e;
	b = name_bucket(e->parent, e->name);
	e->next_name = c->by_name[b];
	c->by_name[b] = e;
	c->count++;
}
