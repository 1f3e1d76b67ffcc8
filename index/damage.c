/* damage: the files and kernels a lost or damaged blob takes with it. */
#include "damage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "db.h"
#include "hash.h"
#include "name.h"
#include "ns.h"
#include "store.h"
#include "vec.h"

static const char sql_users[] =
	"SELECT parent, name FROM nodes WHERE blob = ?";
static const char sql_groups_in[] =
	"SELECT parent, name FROM nodes WHERE parent = ? AND kind = 'f'"
	" AND name GLOB '__grp__*.json'";

struct entry {
	uint64_t parent;
	char name[TCFS_NAME_MAX + 1];
};

struct entry_list {
	struct entry *v;
	size_t n, cap;
};

static int add_entry(void *ctx, sqlite3_stmt *st)
{
	struct entry_list *l = ctx;
	struct entry *e = tcfs_vec_push(&l->v, &l->n, &l->cap, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->parent = (uint64_t)sqlite3_column_int64(st, 0);
	snprintf(e->name, sizeof(e->name), "%s", tcfs_db_text(st, 1, NULL));
	return 0;
}

/* Removes one entry; 1 when it was there, 0 when it was gone already. */
static int drop(struct tcfs_store *s, uint64_t parent, const char *name,
		tcfs_damage_cb *cb, void *ctx)
{
	int rc = tcfs_ns_unlink(s, parent, name);

	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	if (cb)
		cb(ctx, parent, name);
	return 1;
}

int tcfs_damage_drop_file(struct tcfs_store *s, uint64_t parent,
			  const char *name, tcfs_damage_cb *cb, void *ctx,
			  uint64_t *dropped)
{
	struct entry_list groups = { 0 };
	int rc = tcfs_store_begin(s);

	if (rc < 0)
		return rc;
	rc = drop(s, parent, name, cb, ctx);
	if (rc == 1 && dropped)
		(*dropped)++;
	if (rc >= 0)
		rc = tcfs_db_each(tcfs_store_db(s), add_entry, &groups,
				  sql_groups_in, "i", (int64_t)parent);
	for (size_t i = 0; rc >= 0 && i < groups.n; i++)
		rc = drop(s, parent, groups.v[i].name, cb, ctx);
	free(groups.v);
	return tcfs_store_end(s, rc < 0 ? rc : 0);
}

int tcfs_damage_drop_users(struct tcfs_store *s, const struct tcfs_hash *h,
			   tcfs_damage_cb *cb, void *ctx, uint64_t *dropped)
{
	struct entry_list users = { 0 };
	int rc = tcfs_store_begin(s);

	if (rc < 0)
		return rc;
	rc = tcfs_db_each(tcfs_store_db(s), add_entry, &users, sql_users, "h",
			  h);
	for (size_t i = 0; rc == 0 && i < users.n; i++)
		rc = tcfs_damage_drop_file(s, users.v[i].parent,
					   users.v[i].name, cb, ctx, dropped);
	free(users.v);
	return tcfs_store_end(s, rc);
}
