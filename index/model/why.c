/* why: a kernel's metadata against its nearest cached sibling's. */
#include "index/model/why.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/blob/cas.h"
#include "index/tree/ns.h"
#include "index/store/store.h"


/* The parsed NAME.json of the kernel name in key dir dir; NULL when it is
 * missing, damaged or not JSON. */
static cJSON *meta_of(struct tcfs_store *s, uint64_t dir, const char *name)
{
	char file[TCFS_NAME_MAX + 8], *buf = NULL;
	struct tcfs_node n;
	size_t len = 0;
	cJSON *doc = NULL;

	snprintf(file, sizeof(file), "%s.json", name);
	if (tcfs_ns_lookup(s, dir, file, &n) == 0 && n.kind == TCFS_FILE &&
	    tcfs_cas_read_checked(tcfs_store_cas(s), &n.blob,
				  TCFS_KERNEL_META_MAX, &buf, &len) == 0)
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

int tcfs_why(struct tcfs_store *s, const char *key, struct tcfs_why *out)
{
	struct tcfs_kernel_at *sib = NULL;
	cJSON *mine = NULL;
	size_t n = 0;
	int rc, best = -1;

	memset(out, 0, sizeof(*out));
	rc = find(s, key, &out->k);
	if (rc < 0)
		return rc;
	out->differences = cJSON_CreateObject();
	if (!out->differences)
		return -ENOMEM;
	mine = meta_of(s, out->k.dir_ino, out->k.name);
	rc = tcfs_kernel_keys(s, out->k.name,
			      out->k.backend[0] ? out->k.backend : NULL,
			      out->k.backend[0] ? out->k.arch : NULL, NULL, 0,
			      (size_t)-1, &sib, &n);
	for (size_t i = 0; rc == 0 && mine && i < n; i++) {
		cJSON *theirs;
		int d;

		if (sib[i].dir_ino == out->k.dir_ino)
			continue;
		theirs = meta_of(s, sib[i].dir_ino, out->k.name);
		if (!theirs)
			continue;
		d = compare(theirs, mine, NULL);
		if (best < 0 || d < best) {
			best = d;
			snprintf(out->nearest, sizeof(out->nearest), "%s",
				 sib[i].key);
			cJSON_Delete(out->differences);
			out->differences = cJSON_CreateObject();
			if (out->differences)
				compare(theirs, mine, out->differences);
		}
		cJSON_Delete(theirs);
	}
	free(sib);
	cJSON_Delete(mine);
	if (rc == 0 && !out->differences)
		rc = -ENOMEM;
	if (rc < 0)
		tcfs_why_free(out);
	return rc;
}

void tcfs_why_free(struct tcfs_why *w)
{
	cJSON_Delete(w->differences);
	w->differences = NULL;
}
