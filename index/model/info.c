/* info: what a store holds: files, bytes, blobs, kernels by target. */
#include "index/model/info.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/blob/census.h"
#include "index/store/db.h"
#include "index/store/store.h"

static const char sql_nodes[] =
	"SELECT count(*) FILTER (WHERE kind = 'f'),"
	" count(*) FILTER (WHERE kind = 'd') - 1,"
	" coalesce(sum(size), 0),"
	" count(*) FILTER (WHERE kind = 'f' AND name GLOB '*.so')"
	" FROM nodes WHERE parent >= 0";
static const char sql_targets[] =
	"SELECT coalesce(backend, ''), coalesce(arch, ''), count(*),"
	" sum(total_bytes) FROM kernels GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2";

static int count_nodes(struct tcfs_db *db, struct tcfs_info *info)
{
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_nodes, "");
	if (rc == 1) {
		info->files = (uint64_t)sqlite3_column_int64(st, 0);
		info->dirs = (uint64_t)sqlite3_column_int64(st, 1);
		info->logical_bytes = (uint64_t)sqlite3_column_int64(st, 2);
		info->modules = (uint64_t)sqlite3_column_int64(st, 3);
		tcfs_db_reset(st);
		rc = 0;
	}
	tcfs_db_unlock(db);
	return rc;
}

/* ctx: the info, whose kernels the targets add up to. */
static int fill_target(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_info *info = ctx;
	struct tcfs_info_target *t = elem;

	snprintf(t->backend, sizeof(t->backend), "%s",
		 tcfs_db_text(st, 0, NULL));
	snprintf(t->arch, sizeof(t->arch), "%s", tcfs_db_text(st, 1, NULL));
	t->kernels = (uint64_t)sqlite3_column_int64(st, 2);
	t->bytes = (uint64_t)sqlite3_column_int64(st, 3);
	info->kernels += t->kernels;
	return 0;
}

int tcfs_info_get(struct tcfs_store *s, struct tcfs_info *out)
{
	struct tcfs_census blobs = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	rc = count_nodes(tcfs_store_db(s), out);
	if (rc == 0)
		rc = tcfs_db_collect(tcfs_store_db(s), sizeof(*out->targets),
				     fill_target, out, &out->targets,
				     &out->ntargets, sql_targets, "");
	if (rc == 0)
		rc = tcfs_census_objects(tcfs_store_path(s), 0, &blobs);
	out->blobs = blobs.files;
	out->stored_bytes = blobs.bytes;
	if (rc < 0)
		tcfs_info_free(out);
	return rc;
}

void tcfs_info_free(struct tcfs_info *info)
{
	free(info->targets);
	info->targets = NULL;
	info->ntargets = 0;
}
