/* fsck: checking a store end to end, and mending what is safe to mend. */
#include "index/maint/fsck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/blob/cas.h"
#include "index/maint/damage.h"
#include "index/store/db.h"
#include "index/base/err.h"
#include "index/maint/gc.h"
#include "index/model/kernel.h"
#include "index/tree/ns.h"
#include "index/store/store.h"
#include "index/base/vec.h"

static const char sql_blobs[] =
	"SELECT DISTINCT blob FROM nodes WHERE blob IS NOT NULL";
static const char sql_users[] =
	"SELECT ino, parent, name FROM nodes WHERE blob = ?";
static const char sql_files[] =
	"SELECT count(*) FROM nodes WHERE kind = 'f'";
static const char sql_no_kernel[] =
	"SELECT g.ino, g.parent, g.name FROM nodes g"
	" LEFT JOIN kernels k ON k.grp_ino = g.ino"
	" WHERE g.kind = 'f' AND g.name GLOB '__grp__*.json'"
	" AND k.grp_ino IS NULL";

struct fsck {
	struct tcfs_store *s;
	int repair;
	void (*cb)(void *, const struct tcfs_fsck_report *);
	void *ctx;
	const struct tcfs_progress *prog;
	uint64_t looked;	/* blobs looked for (check_missing) */
	struct tcfs_fsck_result *res;
	struct bad {
		struct tcfs_hash h;
		int missing;	/* else damaged */
	} *bad;			/* blobs that files use but cannot have */
	size_t nbad, badcap;
};

static void report(struct fsck *f, enum tcfs_fsck_problem what,
		   const char *path, const char *detail, int repaired)
{
	struct tcfs_fsck_report r = { what, path, detail, repaired };

	f->res->problems++;
	f->res->repaired += repaired != 0;
	if (f->cb)
		f->cb(f->ctx, &r);
}

static int remember_bad(struct fsck *f, const struct tcfs_hash *h,
			int missing)
{
	struct bad *b = tcfs_vec_push(&f->bad, &f->nbad, &f->badcap, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->h = *h;
	b->missing = missing;
	return 0;
}

static int check_index(struct fsck *f)
{
	sqlite3 *conn = tcfs_db_handle(tcfs_store_db(f->s));
	sqlite3_stmt *st;
	int src, clean = 1;

	src = sqlite3_prepare_v2(conn, "PRAGMA integrity_check", -1, &st, NULL);
	if (src != SQLITE_OK)
		return tcfs_db_error(tcfs_store_db(f->s), src);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		const char *msg = (const char *)sqlite3_column_text(st, 0);

		if (msg && strcmp(msg, "ok") != 0) {
			report(f, TCFS_FSCK_INDEX, "index.db", msg, 0);
			clean = 0;
		}
	}
	sqlite3_finalize(st);
	if (src != SQLITE_DONE)
		return tcfs_db_error(tcfs_store_db(f->s), src);
	return clean ? 0 : -EUCLEAN;
}

static int check_object(void *ctx, const struct tcfs_cas_entry *e)
{
	struct fsck *f = ctx;
	struct tcfs_cas *cas = tcfs_store_cas(f->s);
	char where[600];
	int rc, ref;

	snprintf(where, sizeof(where), "objects/%s", e->relpath);
	if (!e->h) {
		rc = f->repair ? tcfs_cas_remove_stray(cas, e->relpath) : 0;
		report(f, TCFS_FSCK_STRAY, where,
		       f->repair && rc == 0 ? "not a blob; removed" : "not a blob",
		       f->repair && rc == 0);
		return 0;
	}
	f->res->blobs++;
	tcfs_progress_report(f->prog, "blobs verified", f->res->blobs, 0);
	ref = tcfs_gc_referenced(f->s, e->h);
	if (ref < 0)
		return ref;
	rc = tcfs_cas_verify(cas, e->h);
	if (rc == -EBADMSG) {
		int fixed = f->repair && tcfs_cas_quarantine(cas, e->h) == 0;

		/* A referenced blob is reported by the files that use it. */
		if (ref)
			return remember_bad(f, e->h, 0);
		report(f, TCFS_FSCK_DAMAGED, where,
		       fixed ? "unreferenced blob whose bytes do not match "
			       "its name; moved to quarantine/"
			     : "unreferenced blob whose bytes do not match "
			       "its name",
		       fixed);
		return 0;
	}
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (!ref) {
		f->res->orphans++;
		f->res->orphan_bytes += e->size;
	}
	if (e->mode & 0222) {
		int fixed = f->repair && tcfs_cas_seal(cas, e->h) == 0;

		report(f, TCFS_FSCK_WRITABLE, where,
		       fixed ? "was writable; made read-only" : "is writable",
		       fixed);
	}
	return 0;
}

static int note_if_missing(void *ctx, sqlite3_stmt *st)
{
	struct fsck *f = ctx;
	struct tcfs_hash h;
	uint64_t size;

	tcfs_progress_report(f->prog, "blobs named by files looked up", ++f->looked,
			     0);
	if (tcfs_db_hash(st, 0, &h) < 0 ||
	    tcfs_cas_stat(tcfs_store_cas(f->s), &h, &size) != -ENOENT)
		return 0;
	return remember_bad(f, &h, 1);
}

/* Blobs that rows name but objects/ lacks. */
static int check_missing(struct fsck *f)
{
	return tcfs_db_each(tcfs_store_db(f->s), note_if_missing, f,
			    sql_blobs, "");
}

struct user {
	uint64_t ino, parent;
	char name[TCFS_NAME_MAX + 1];
};

static int fill_user(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct user *u = elem;

	(void)ctx;
	u->ino = (uint64_t)sqlite3_column_int64(st, 0);
	u->parent = (uint64_t)sqlite3_column_int64(st, 1);
	snprintf(u->name, sizeof(u->name), "%s", tcfs_db_text(st, 2, NULL));
	return 0;
}

static int report_users(struct fsck *f, const struct bad *b)
{
	char hex[TCFS_HASH_HEXLEN], path[4096], detail[256];
	struct user *users = NULL;
	size_t nusers = 0;
	int rc;

	rc = tcfs_db_collect(tcfs_store_db(f->s), sizeof(*users), fill_user,
			     NULL, &users, &nusers, sql_users, "h", &b->h);
	tcfs_hash_hex(&b->h, hex);
	for (size_t j = 0; rc == 0 && j < nusers; j++) {
		const struct user *u = &users[j];
		int fixed = 0;

		if (tcfs_ns_path(f->s, u->ino, path, sizeof(path)) < 0)
			snprintf(path, sizeof(path), "%s", u->name);
		if (f->repair) {
			rc = tcfs_damage_drop_file(f->s, u->parent, u->name,
						   NULL, NULL, NULL);
			fixed = rc == 0;
		}
		snprintf(detail, sizeof(detail), "blob %s is %s%s", hex,
			 b->missing  ? "missing"
			 : f->repair ? "damaged (moved to quarantine/)"
				     : "damaged",
			 fixed ? "; removed the file and its kernel's group "
				 "file, so the kernel will be recompiled"
			       : "");
		report(f, b->missing ? TCFS_FSCK_MISSING : TCFS_FSCK_DAMAGED,
		       path, detail, fixed);
	}
	free(users);
	return rc;
}

static int check_kernels(struct fsck *f)
{
	struct user *groups = NULL;
	size_t ngroups = 0;
	char path[4096];
	int rc;

	rc = tcfs_db_collect(tcfs_store_db(f->s), sizeof(*groups), fill_user,
			     NULL, &groups, &ngroups, sql_no_kernel, "");
	for (size_t i = 0; rc == 0 && i < ngroups; i++) {
		const struct user *g = &groups[i];
		int fixed = 0, key;

		/* A put that never finished (its writer or the daemon
		 * stopped) is no fault: the next mount removes it. */
		rc = tcfs_kernel_is_key_dir(f->s, g->parent, &key);
		if (rc < 0 || !key)
			continue;
		if (f->repair) {
			rc = tcfs_store_begin(f->s);
			if (rc == 0)
				rc = tcfs_store_end(
					f->s,
					tcfs_kernel_refresh_dir(f->s, g->parent));
			fixed = rc == 0;
		}
		if (tcfs_ns_path(f->s, g->ino, path, sizeof(path)) < 0)
			snprintf(path, sizeof(path), "%s", g->name);
		report(f, TCFS_FSCK_KERNEL, path,
		       fixed ? "kernel not indexed; indexed it"
			     : "kernel not indexed",
		       fixed);
	}
	free(groups);
	return rc;
}

static int count_files(struct fsck *f)
{
	struct tcfs_db *db = tcfs_store_db(f->s);
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_files, "");
	if (rc == 1) {
		f->res->files = (uint64_t)sqlite3_column_int64(st, 0);
		tcfs_db_reset(st);
		rc = 0;
	}
	tcfs_db_unlock(db);
	return rc;
}

int tcfs_fsck_run(struct tcfs_store *s, int repair,
		  void (*cb)(void *ctx, const struct tcfs_fsck_report *r),
		  void *ctx, const struct tcfs_progress *prog,
		  struct tcfs_fsck_result *res)
{
	struct fsck f = { s, repair, cb, ctx, prog, 0, res, NULL, 0, 0 };
	int rc;

	memset(res, 0, sizeof(*res));
	/* Nothing below can be trusted on a damaged index, and repairing
	 * through it could make things worse. */
	tcfs_progress_report(prog, "index.db", 0, 0);
	rc = check_index(&f);
	if (rc == 0)
		rc = count_files(&f);
	if (rc == 0)
		rc = tcfs_cas_foreach(tcfs_store_cas(s), check_object, &f);
	if (rc == 0)
		rc = check_missing(&f);
	for (size_t i = 0; rc == 0 && i < f.nbad; i++)
		rc = report_users(&f, &f.bad[i]);
	if (rc == 0)
		rc = check_kernels(&f);
	free(f.bad);
	return rc == -EUCLEAN ? 0 : rc;
}
