/* damage: the files and kernels a lost or damaged blob takes with it. */
#include "index/maint/damage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "index/store/db.h"
#include "index/base/hash.h"
#include "index/base/name.h"
#include "index/tree/ns.h"
#include "index/store/store.h"

static const char sql_users[] =
	"SELECT parent, name FROM nodes WHERE blob = ? AND parent >= 0";
static const char sql_groups_in[] =
	"SELECT parent, name FROM nodes WHERE parent = ? AND kind = 'f'"
	" AND name GLOB '__grp__*.json'";

struct entry {
	uint64_t parent;
	char name[TCFS_NAME_MAX + 1];
};

static int fill_entry(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct entry *e = elem;

	(void)ctx;
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
	struct entry *groups = NULL;
	size_t ngroups = 0;
	int rc = tcfs_store_begin(s);

	if (rc < 0)
		return rc;
	rc = drop(s, parent, name, cb, ctx);
	if (rc == 1 && dropped)
		(*dropped)++;
	if (rc >= 0)
		rc = tcfs_db_collect(tcfs_store_db(s), sizeof(*groups),
				     fill_entry, NULL, &groups, &ngroups,
				     sql_groups_in, "i", (int64_t)parent);
	for (size_t i = 0; rc >= 0 && i < ngroups; i++)
		rc = drop(s, parent, groups[i].name, cb, ctx);
	free(groups);
	return tcfs_store_end(s, rc < 0 ? rc : 0);
}

int tcfs_damage_drop_users(struct tcfs_store *s, const struct tcfs_hash *h,
			   tcfs_damage_cb *cb, void *ctx, uint64_t *dropped)
{
	struct entry *users = NULL;
	size_t nusers = 0;
	int rc = tcfs_store_begin(s);

	if (rc < 0)
		return rc;
	/* A file with other names (hard links) moves to one of them when
	 * the name its row has goes (ns.c): the rows are asked again until
	 * none names the blob. */
	do {
		free(users);
		users = NULL;
		rc = tcfs_db_collect(tcfs_store_db(s), sizeof(*users),
				     fill_entry, NULL, &users, &nusers,
				     sql_users, "h", h);
		for (size_t i = 0; rc == 0 && i < nusers; i++)
			rc = tcfs_damage_drop_file(s, users[i].parent,
						   users[i].name, cb, ctx,
						   dropped);
	} while (rc == 0 && nusers > 0);
	free(users);
	return tcfs_store_end(s, rc);
}
