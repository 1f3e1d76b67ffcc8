/* gc: deleting the blobs that no file references. */
#include "index/maint/gc.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "index/base/hash.h"
#include "index/blob/cas.h"
#include "index/store/db.h"
#include "index/store/store.h"

static const char sql_ref[] = "SELECT 1 FROM nodes WHERE blob = ? LIMIT 1";
static const char sql_live[] =
	"SELECT 1 FROM nodes WHERE blob = ? AND parent > 0 LIMIT 1";

struct gc_walk {
	struct tcfs_store *s;
	int dry_run;
	void (*cb)(void *, const char *, uint64_t);
	void *ctx;
	const struct tcfs_progress *prog;
	struct tcfs_gc_result *res;
};

static int any_row(struct tcfs_store *s, const char *sql,
		   const struct tcfs_hash *h)
{
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql, "h", h);
	if (rc == 1)
		tcfs_db_reset(st);
	tcfs_db_unlock(db);
	return rc;
}

/* The empty blob is the mount's own: it puts it at every start, and every
 * file it creates names it before a row does (fs.c, tcfs_cas_free).  Were
 * it unreferenced, fsck would count it and gc remove it, only for the
 * next mount to put it back. */
static int is_empty_blob(const struct tcfs_hash *h)
{
	struct tcfs_hash empty;

	tcfs_hash_buf("", 0, &empty);
	return tcfs_hash_equal(h, &empty);
}

int tcfs_gc_referenced(struct tcfs_store *s, const struct tcfs_hash *h)
{
	return is_empty_blob(h) ? 1 : any_row(s, sql_ref, h);
}

int tcfs_gc_live(struct tcfs_store *s, const struct tcfs_hash *h)
{
	return any_row(s, sql_live, h);
}

static int gc_one(void *ctx, const struct tcfs_cas_entry *e)
{
	struct gc_walk *w = ctx;
	int rc;

	if (!e->h)
		return 0;	/* not a blob: fsck reports it */
	tcfs_progress_report(w->prog, "blobs checked",
			     w->res->kept + w->res->removed + 1, 0);
	rc = tcfs_gc_referenced(w->s, e->h);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		w->res->kept++;
		w->res->kept_bytes += e->size;
		return 0;
	}
	if (!w->dry_run) {
		rc = tcfs_cas_remove(tcfs_store_cas(w->s), e->h);
		if (rc < 0)
			return rc;
	}
	w->res->removed++;
	w->res->freed_bytes += e->size;
	if (w->cb)
		w->cb(w->ctx, e->relpath, e->size);
	return 0;
}

int tcfs_gc_run(struct tcfs_store *s, int dry_run,
		void (*cb)(void *ctx, const char *relpath, uint64_t size),
		void *ctx, const struct tcfs_progress *prog,
		struct tcfs_gc_result *res)
{
	struct gc_walk w = { s, dry_run, cb, ctx, prog, res };

	memset(res, 0, sizeof(*res));
	return tcfs_cas_foreach(tcfs_store_cas(s), gc_one, &w);
}

cJSON *tcfs_gc_result_json(const struct tcfs_gc_result *res, int dry)
{
	const struct {
		const char *name;
		uint64_t v;
	} f[] = {
		{ "removed", res->removed }, { "freed_bytes", res->freed_bytes },
		{ "kept", res->kept }, { "kept_bytes", res->kept_bytes },
		{ "recent", res->recent },
		{ "recent_bytes", res->recent_bytes },
	};
	cJSON *o = cJSON_CreateObject();
	int ok = o && cJSON_AddBoolToObject(o, "dry_run", dry);

	for (size_t i = 0; ok && i < sizeof(f) / sizeof(f[0]); i++)
		ok = cJSON_AddNumberToObject(o, f[i].name, (double)f[i].v) !=
		     NULL;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
