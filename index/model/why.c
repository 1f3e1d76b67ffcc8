/* why: a kernel's metadata and TTIR against its nearest sibling cached
 * before it. */
#include "index/model/why.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/blob/cas.h"
#include "index/model/ttir.h"
#include "index/store/db.h"
#include "index/tree/ns.h"
#include "index/store/store.h"


/* The file NAME + suffix of key dir dir, read whole: *buf (owned by the
 * caller, free()) holds its *len bytes.  -ENOENT when it is missing or no
 * file, -EFBIG when it is over max. */
static int read_artifact(struct tcfs_store *s, uint64_t dir, const char *name,
			 const char *suffix, size_t max, char **buf,
			 size_t *len)
{
	char file[TCFS_NAME_MAX + 16];
	struct tcfs_node n;
	int rc;

	*buf = NULL;
	*len = 0;
	snprintf(file, sizeof(file), "%s%s", name, suffix);
	rc = tcfs_ns_lookup(s, dir, file, &n);
	if (rc == 0 && n.kind != TCFS_FILE)
		rc = -ENOENT;
	if (rc == 0 && n.size > max)
		rc = -EFBIG;
	if (rc == 0)
		rc = tcfs_cas_read_checked(tcfs_store_cas(s), &n.blob, max, buf,
					   len);
	return rc;
}

/* The parsed NAME.json of the kernel name in key dir dir; NULL when it is
 * missing, damaged or not JSON. */
static cJSON *meta_of(struct tcfs_store *s, uint64_t dir, const char *name)
{
	char *buf = NULL;
	size_t len = 0;
	cJSON *doc = NULL;

	if (read_artifact(s, dir, name, ".json", TCFS_KERNEL_META_MAX, &buf,
			  &len) == 0)
		doc = cJSON_ParseWithLength(buf, len);
	free(buf);
	if (doc && !cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		doc = NULL;
	}
	return doc;
}

static int differs(const cJSON *a, const cJSON *b)
{
	return !a || !b || !cJSON_Compare(a, b, 1);
}

/* The top-level fields but "hash" in which a and b differ: counted, and
 * added to diff ([a's, b's]) when diff is not NULL. */
static int compare(const cJSON *a, const cJSON *b, cJSON *diff)
{
	const cJSON *both[2] = { a, b };
	int n = 0;

	for (int side = 0; side < 2; side++) {
		for (const cJSON *f = both[side]->child; f; f = f->next) {
			const cJSON *x, *y;

			if (strcmp(f->string, "hash") == 0)
				continue;
			/* A field both have is counted from a's side. */
			if (side == 1 && cJSON_GetObjectItemCaseSensitive(
						 a, f->string))
				continue;
			x = cJSON_GetObjectItemCaseSensitive(a, f->string);
			y = cJSON_GetObjectItemCaseSensitive(b, f->string);
			if (!differs(x, y))
				continue;
			n++;
			if (diff) {
				cJSON *pair = cJSON_CreateArray();

				cJSON_AddItemToArray(pair, x ? cJSON_Duplicate(x, 1)
							     : cJSON_CreateNull());
				cJSON_AddItemToArray(pair, y ? cJSON_Duplicate(y, 1)
							     : cJSON_CreateNull());
				cJSON_AddItemToObject(diff, f->string, pair);
			}
		}
	}
	return n;
}

/* The first kernel (by name) of key dir key, the first of that name (by
 * inode) where several cache roots hold it. */
static int find(struct tcfs_store *s, const char *key, struct tcfs_kernel *k)
{
	struct tcfs_kernel *all = NULL;
	size_t n = 0, best = SIZE_MAX;
	int rc = tcfs_kernel_list(s, NULL, &all, &n);

	/* Listed by key and name: the first of each dir is its first. */
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (strcmp(all[i].key, key) == 0 &&
		    (best == SIZE_MAX || all[i].dir_ino < all[best].dir_ino))
			best = i;
	if (rc == 0 && best == SIZE_MAX)
		rc = -ENOENT;
	if (rc == 0)
		*k = all[best];
	free(all);
	return rc;
}

/* The probe counts outlive the log (event.h): the first miss of a key is
 * known as long as the kernel is. */
static const char sql_first_miss[] =
	"SELECT min(first) FROM probe_counts"
	" WHERE key = ? AND name = ? AND kind = 'kernel' AND misses > 0";

/* When k missed: its first miss, else (imported, landed unseen) its
 * creation, whichever came first. */
static int since_of(struct tcfs_store *s, const struct tcfs_kernel *k,
		    int64_t *since)
{
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	*since = k->created_ns;
	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_first_miss, "tt", k->key, k->name);
	if (rc == 1) {
		if (sqlite3_column_type(st, 0) != SQLITE_NULL &&
		    sqlite3_column_int64(st, 0) < *since)
			*since = sqlite3_column_int64(st, 0);
		tcfs_db_reset(st);
	}
	tcfs_db_unlock(db);
	return rc < 0 ? rc : 0;
}

/* Whether the kernel name in key dir dir was cached before t. */
static int cached_before(struct tcfs_store *s, uint64_t dir, const char *name,
			 int64_t t)
{
	char grp[TCFS_NAME_MAX + 16];
	struct tcfs_node n;
	struct tcfs_kernel k;

	snprintf(grp, sizeof(grp), "__grp__%s.json", name);
	return tcfs_ns_lookup(s, dir, grp, &n) == 0 &&
	       tcfs_kernel_get(s, n.ino, &k) == 0 && k.created_ns < t;
}

/* The nearest of the kernels of out->k's name and target cached before
 * out->since_ns, by metadata (mine); *dir gets its key dir. */
static int find_nearest(struct tcfs_store *s, struct tcfs_why *out,
			const cJSON *mine, uint64_t *dir)
{
	const struct tcfs_kernel *k = &out->k;
	struct tcfs_kernel_at *sib = NULL;
	size_t n = 0;
	int rc, best = -1;

	rc = tcfs_kernel_keys(s, k->name, k->backend[0] ? k->backend : NULL,
			      k->backend[0] ? k->arch : NULL, NULL, 0,
			      (size_t)-1, &sib, &n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		cJSON *theirs;
		int d;

		if (sib[i].dir_ino == k->dir_ino ||
		    !cached_before(s, sib[i].dir_ino, k->name, out->since_ns))
			continue;
		theirs = meta_of(s, sib[i].dir_ino, k->name);
		d = theirs ? compare(theirs, mine, NULL) : 0;
		if (theirs && (best < 0 || d < best)) {
			best = d;
			*dir = sib[i].dir_ino;
			snprintf(out->nearest, sizeof(out->nearest), "%s",
				 sib[i].key);
			cJSON_Delete(out->differences);
			out->differences = cJSON_CreateObject();
			if (!out->differences)
				rc = -ENOMEM;
			else
				compare(theirs, mine, out->differences);
		}
		cJSON_Delete(theirs);
	}
	free(sib);
	return rc;
}

/* The two kernels' NAME.source compared (ttir.h). */
static int compare_source(struct tcfs_store *s, struct tcfs_why *out,
			  uint64_t nearest_dir)
{
	char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	int rc;

	rc = read_artifact(s, nearest_dir, out->k.name, ".source",
			   TCFS_TTIR_MAX, &a, &alen);
	if (rc == 0)
		rc = read_artifact(s, out->k.dir_ino, out->k.name, ".source",
				   TCFS_TTIR_MAX, &b, &blen);
	if (rc == 0 && alen == blen && memcmp(a, b, alen) == 0)
		out->source = TCFS_WHY_SOURCE_SAME;
	else if (rc == 0)
		rc = tcfs_ttir_diff(a, alen, b, blen, out->k.name,
				    &out->source_differences);
	free(a);
	free(b);
	if (rc == 0 && out->source != TCFS_WHY_SOURCE_SAME)
		out->source = TCFS_WHY_SOURCE_DIFFERS;
	else if (rc == -ENOENT)
		out->source = TCFS_WHY_SOURCE_MISSING;
	else if (rc == -EFBIG)
		out->source = TCFS_WHY_SOURCE_TOO_BIG;
	else if (rc == -EINVAL)
		out->source = TCFS_WHY_SOURCE_NOT_TTIR;
	else if (rc < 0 && rc != -ENOMEM)
		out->source = TCFS_WHY_SOURCE_MISSING;	/* damaged: as good */
	return rc == -ENOMEM ? rc : 0;
}

int tcfs_why(struct tcfs_store *s, const char *key, struct tcfs_why *out)
{
	cJSON *mine = NULL;
	uint64_t dir = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = find(s, key, &out->k);
	if (rc < 0)
		return rc;
	out->differences = cJSON_CreateObject();
	if (!out->differences)
		return -ENOMEM;
	rc = since_of(s, &out->k, &out->since_ns);
	mine = rc == 0 ? meta_of(s, out->k.dir_ino, out->k.name) : NULL;
	if (mine)
		rc = find_nearest(s, out, mine, &dir);
	if (rc == 0 && out->nearest[0])
		rc = compare_source(s, out, dir);
	cJSON_Delete(mine);
	if (rc < 0)
		tcfs_why_free(out);
	return rc;
}

void tcfs_why_free(struct tcfs_why *w)
{
	cJSON_Delete(w->differences);
	w->differences = NULL;
	cJSON_Delete(w->source_differences);
	w->source_differences = NULL;
}

const char *tcfs_why_source_name(enum tcfs_why_source s)
{
	static const char *const names[] = {
		[TCFS_WHY_SOURCE_SAME] = "same",
		[TCFS_WHY_SOURCE_DIFFERS] = "differs",
		[TCFS_WHY_SOURCE_MISSING] = "missing",
		[TCFS_WHY_SOURCE_TOO_BIG] = "too big",
		[TCFS_WHY_SOURCE_NOT_TTIR] = "not TTIR",
	};

	return (size_t)s < sizeof(names) / sizeof(*names) ? names[s] : NULL;
}
