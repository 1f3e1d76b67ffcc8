#include "fsck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cas.h"
#include "db.h"
#include "err.h"
#include "gc.h"
#include "kernel.h"
#include "ns.h"
#include "store.h"

static const char sql_blobs[] =
	"SELECT DISTINCT blob FROM nodes WHERE blob IS NOT NULL";
static const char sql_users[] =
	"SELECT ino, parent, name FROM nodes WHERE blob = ?";
static const char sql_files[] =
	"SELECT count(*) FROM nodes WHERE kind = 'f'";
static const char sql_no_kernel[] =
	"SELECT g.ino, g.parent FROM nodes g"
	" LEFT JOIN kernels k ON k.grp_ino = g.ino"
	" WHERE g.kind = 'f' AND g.name GLOB '__grp__*.json'"
	" AND k.grp_ino IS NULL";
static const char sql_groups_in[] =
	"SELECT name FROM nodes WHERE parent = ? AND kind = 'f'"
	" AND name GLOB '__grp__*.json'";

struct fsck {
	struct tcfs_store *s;
	int repair;
	void (*cb)(void *, const struct tcfs_fsck_report *);
	void *ctx;
	struct tcfs_fsck_result *res;
	struct tcfs_hash *bad;	/* damaged or missing blobs */
	int *bad_missing;
	size_t nbad;
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
	struct tcfs_hash *nb = realloc(f->bad, (f->nbad + 1) * sizeof(*nb));
	int *nm;

	if (!nb)
		return -ENOMEM;
	f->bad = nb;
	nm = realloc(f->bad_missing, (f->nbad + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	f->bad_missing = nm;
	f->bad[f->nbad] = *h;
	f->bad_missing[f->nbad] = missing;
	f->nbad++;
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

/* Blobs that rows name but objects/ lacks. */
static int check_missing(struct fsck *f)
{
	struct tcfs_db *db = tcfs_store_db(f->s);
	struct tcfs_hash *want = NULL, h;
	size_t n = 0;
	sqlite3_stmt *st;
	uint64_t size;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_blobs, "");
	while (rc == 1) {
		if (tcfs_db_hash(st, 0, &h) == 0) {
			struct tcfs_hash *nv = realloc(want, (n + 1) * sizeof(h));

			if (!nv) {
				tcfs_db_reset(st);
				rc = -ENOMEM;
				break;
			}
			want = nv;
			want[n++] = h;
		}
		rc = tcfs_db_next(db, st);
	}
	tcfs_db_unlock(db);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (tcfs_cas_stat(tcfs_store_cas(f->s), &want[i], &size) ==
		    -ENOENT)
			rc = remember_bad(f, &want[i], 1);
	free(want);
	return rc;
}

struct user {
	uint64_t ino, parent;
	char name[TCFS_NAME_MAX + 1];
};

static int users_of(struct tcfs_store *s, const struct tcfs_hash *h,
		    struct user **out, size_t *n)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct user *v = NULL;
	sqlite3_stmt *st;
	int rc;

	*n = 0;
	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_users, "h", h);
	while (rc == 1) {
		struct user *nv = realloc(v, (*n + 1) * sizeof(*v));

		if (!nv) {
			tcfs_db_reset(st);
			rc = -ENOMEM;
			break;
		}
		v = nv;
		v[*n].ino = (uint64_t)sqlite3_column_int64(st, 0);
		v[*n].parent = (uint64_t)sqlite3_column_int64(st, 1);
		snprintf(v[*n].name, sizeof(v[*n].name), "%s",
			 tcfs_db_text(st, 2, NULL));
		(*n)++;
		rc = tcfs_db_next(db, st);
	}
	tcfs_db_unlock(db);
	*out = v;
	return rc;
}

/* Takes a kernel out of the cache: Triton then misses and recompiles it
 * rather than loading a group whose children are gone. */
static int drop_groups(struct tcfs_store *s, uint64_t dir)
{
	struct tcfs_db *db = tcfs_store_db(s);
	char names[16][TCFS_NAME_MAX + 1];
	size_t n = 0;
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_groups_in, "i", (int64_t)dir);
	while (rc == 1) {
		if (n < 16)
			snprintf(names[n++], sizeof(names[0]), "%s",
				 tcfs_db_text(st, 0, NULL));
		rc = tcfs_db_next(db, st);
	}
	tcfs_db_unlock(db);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = tcfs_ns_unlink(s, dir, names[i]);
	return rc;
}

static int repair_user(struct fsck *f, const struct user *u)
{
	int rc = tcfs_store_begin(f->s);

	if (rc < 0)
		return rc;
	rc = tcfs_ns_unlink(f->s, u->parent, u->name);
	if (rc == 0 || rc == -ENOENT)
		rc = drop_groups(f->s, u->parent);
	return tcfs_store_end(f->s, rc);
}

static int report_users(struct fsck *f, size_t i)
{
	char hex[TCFS_HASH_HEXLEN], path[4096], detail[256];
	struct user *u = NULL;
	size_t n;
	int rc;

	rc = users_of(f->s, &f->bad[i], &u, &n);
	tcfs_hash_hex(&f->bad[i], hex);
	for (size_t j = 0; rc == 0 && j < n; j++) {
		int fixed = 0;

		if (tcfs_ns_path(f->s, u[j].ino, path, sizeof(path)) < 0)
			snprintf(path, sizeof(path), "%s", u[j].name);
		if (f->repair) {
			rc = repair_user(f, &u[j]);
			fixed = rc == 0;
		}
		snprintf(detail, sizeof(detail), "blob %s is %s%s", hex,
			 f->bad_missing[i] ? "missing"
			 : f->repair	   ? "damaged (moved to quarantine/)"
					   : "damaged",
			 fixed ? "; removed the file and its kernel's group "
				 "file, so the kernel will be recompiled"
			       : "");
		report(f, f->bad_missing[i] ? TCFS_FSCK_MISSING
					    : TCFS_FSCK_DAMAGED,
		       path, detail, fixed);
	}
	free(u);
	return rc;
}

static int check_kernels(struct fsck *f)
{
	struct tcfs_db *db = tcfs_store_db(f->s);
	uint64_t (*v)[2] = NULL;
	size_t n = 0;
	sqlite3_stmt *st;
	char path[4096];
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_no_kernel, "");
	while (rc == 1) {
		uint64_t (*nv)[2] = realloc(v, (n + 1) * sizeof(*v));

		if (!nv) {
			tcfs_db_reset(st);
			rc = -ENOMEM;
			break;
		}
		v = nv;
		v[n][0] = (uint64_t)sqlite3_column_int64(st, 0);
		v[n][1] = (uint64_t)sqlite3_column_int64(st, 1);
		n++;
		rc = tcfs_db_next(db, st);
	}
	tcfs_db_unlock(db);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int fixed = 0;

		if (f->repair) {
			rc = tcfs_store_begin(f->s);
			if (rc == 0)
				rc = tcfs_store_end(
					f->s, tcfs_kernel_refresh_dir(f->s,
								      v[i][1]));
			fixed = rc == 0;
		}
		if (tcfs_ns_path(f->s, v[i][0], path, sizeof(path)) < 0)
			snprintf(path, sizeof(path), "inode %llu",
				 (unsigned long long)v[i][0]);
		report(f, TCFS_FSCK_KERNEL, path,
		       fixed ? "kernel not indexed; indexed it"
			     : "kernel not indexed",
		       fixed);
	}
	free(v);
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
		  void *ctx, struct tcfs_fsck_result *res)
{
	struct fsck f = { s, repair, cb, ctx, res, NULL, NULL, 0 };
	int rc;

	memset(res, 0, sizeof(*res));
	/* Nothing below can be trusted on a damaged index, and repairing
	 * through it could make things worse. */
	rc = check_index(&f);
	if (rc == 0)
		rc = count_files(&f);
	if (rc == 0)
		rc = tcfs_cas_foreach(tcfs_store_cas(s), check_object, &f);
	if (rc == 0)
		rc = check_missing(&f);
	for (size_t i = 0; rc == 0 && i < f.nbad; i++)
		rc = report_users(&f, i);
	if (rc == 0)
		rc = check_kernels(&f);
	free(f.bad);
	free(f.bad_missing);
	return rc == -EUCLEAN ? 0 : rc;
}
