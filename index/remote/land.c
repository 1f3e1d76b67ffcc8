/* land: a kernel fetched from the fleet tier, into the store as one write. */
#include "index/remote/land.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"
#include "index/model/group.h"
#include "index/remote/pack.h"
#include "index/store/db.h"
#include "index/store/store.h"
#include "index/tree/ns.h"
#include "index/tree/nsread.h"

/* The bytes Triton's FileCacheManager would have written for f's group,
 * made relocatable by group.h as every group file is: *c filled, its blob
 * put. */
static int put_group(struct tcfs_store *s, const struct tcfs_fetched *f,
		     struct tcfs_content *c)
{
	char path[PATH_MAX], why[256], *doc_s = NULL;
	char *tmpl = NULL, *bytes = NULL;
	size_t tlen = 0, blen = 0;
	enum tcfs_cas_put put;
	cJSON *doc = cJSON_CreateObject(), *cp;
	int rc = 0;

	cp = doc ? cJSON_AddObjectToObject(doc, "child_paths") : NULL;
	if (rc == 0 && !cp)
		rc = -ENOMEM;
	for (size_t i = 0; rc == 0 && i < f->n; i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", TCFS_GROUP_IMAGE_ROOT,
			 f->key, f->f[i].name);
		if (!cJSON_AddStringToObject(cp, f->f[i].name, path))
			rc = -ENOMEM;
	}
	if (rc == 0 && !(doc_s = cJSON_PrintUnformatted(doc)))
		rc = -ENOMEM;
	if (rc == 0)
		rc = tcfs_group_template_of(doc_s, strlen(doc_s), f->key, &tmpl,
					    &tlen, why, sizeof(why));
	if (rc == 0)
		rc = tcfs_err_set(-EBADMSG, "%s/__grp__%s.json: %s", f->key,
				  f->name, why);
	/* Any root will do: the store keeps the group relative to it. */
	if (rc == 1)
		rc = tcfs_group_render(tmpl, tlen, TCFS_GROUP_IMAGE_ROOT, f->key,
				       TCFS_GROUP_ALL, &bytes, &blen);
	if (rc == 0)
		rc = tcfs_group_put(tcfs_store_cas(s), f->key, bytes, blen,
				    TCFS_GROUP_ALL, c, &put);
	free(bytes);
	free(tmpl);
	free(doc_s);
	cJSON_Delete(doc);
	return rc;
}

/* Whether name is in dir already: 1 with bytes h, 0 absent, -EEXIST
 * with others. */
static int already(struct tcfs_store *s, uint64_t dir, const char *name,
		   const struct tcfs_hash *h)
{
	struct tcfs_node n;
	int rc = tcfs_ns_lookup(s, dir, name, &n);

	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	if (n.kind == TCFS_FILE && tcfs_hash_equal(&n.blob, h))
		return 1;
	return tcfs_err_set(-EEXIST, "%s: here already, with other bytes: "
			    "not replaced by the remote's", name);
}

/* One file of bytes into dir, unless there with those bytes: *made 1
 * when it was made.  In the transaction the caller holds. */
static int land_one(struct tcfs_store *s, uint64_t dir, const char *name,
		    const char *bytes, size_t len, int *made)
{
	struct tcfs_content c = { .size = len, .fmt = TCFS_FMT_RAW };
	enum tcfs_cas_put put;
	int rc, there;

	*made = 0;
	rc = tcfs_cas_put_buf(tcfs_store_cas(s), bytes, len, &c.blob, &put);
	there = rc < 0 ? rc : already(s, dir, name, &c.blob);
	if (there != 0)
		return there < 0 ? there : 0;
	rc = tcfs_ns_create(s, dir, name, 0644, tcfs_ns_now(), &c, NULL, NULL);
	*made = rc == 0;
	return rc;
}

/* The children, then the group file, in the transaction the caller
 * holds. */
static int land_files(struct tcfs_store *s, uint64_t dir,
		      const struct tcfs_fetched *f, const char **landed,
		      size_t *nlanded)
{
	char grp[TCFS_NAME_MAX + 16];
	struct tcfs_content c;
	struct tcfs_node here;
	int rc = 0, made;

	snprintf(grp, sizeof(grp), "__grp__%s.json", f->name);
	if (f->group && tcfs_ns_lookup(s, dir, grp, &here) == 0)
		return 0;	/* landed meanwhile: that one stays */
	for (size_t i = 0; rc == 0 && i < f->n; i++) {
		rc = land_one(s, dir, f->f[i].name, f->f[i].bytes, f->f[i].len,
			      &made);
		if (rc == 0 && made && landed)
			landed[(*nlanded)++] = f->f[i].name;
	}
	if (rc == 0 && f->group) {
		rc = put_group(s, f, &c);
		if (rc == 0)
			rc = tcfs_ns_create(s, dir, grp, 0644, tcfs_ns_now(),
					    &c, NULL, NULL);
	}
	return rc;
}

int tcfs_remote_land(struct tcfs_store *s, uint64_t dir,
		     const struct tcfs_fetched *f, const char **landed,
		     size_t *nlanded)
{
	struct tcfs_db *db = tcfs_store_db(s);
	const char *was;
	size_t n = 0;
	int rc;

	assert(f->n <= TCFS_WIRE_FILES_MAX);
	tcfs_db_lock(db);
	was = tcfs_store_set_origin(s, TCFS_ORIGIN_REMOTE);
	rc = tcfs_store_begin(s);
	if (rc == 0)
		rc = tcfs_store_end(s, land_files(s, dir, f, landed, &n));
	tcfs_store_set_origin(s, was);
	tcfs_db_unlock(db);
	if (nlanded)
		*nlanded = rc == 0 ? n : 0;
	if (rc < 0)
		return tcfs_err_prefix(rc, "landing %s/%s from the remote",
				       f->key, f->name);
	return 0;
}

/* Dir name in parent, made if absent: into *out. */
static int dir_in(struct tcfs_store *s, uint64_t parent, const char *name,
		  struct tcfs_node *out)
{
	int rc = tcfs_ns_lookup(s, parent, name, out);

	if (rc == -ENOENT)
		rc = tcfs_ns_mkdir(s, parent, name, 0755, tcfs_ns_now(), NULL,
				   out);
	if (rc == 0 && out->kind != TCFS_DIR)
		rc = tcfs_err_set(-EEXIST, "%s: here already, not a dir",
				  name);
	return rc;
}

/* The files of a pack below the dir top, each path's dirs made. */
static int land_pack_files(struct tcfs_store *s, uint64_t top,
			   const struct tcfs_pack_file *pf, size_t n)
{
	char part[TCFS_NAME_MAX + 1];
	struct tcfs_node d;
	int rc = 0, made;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		const char *p = pf[i].path, *slash;

		d.ino = top;
		while (rc == 0 && (slash = strchr(p, '/'))) {
			snprintf(part, sizeof(part), "%.*s", (int)(slash - p),
				 p);
			rc = dir_in(s, d.ino, part, &d);
			p = slash + 1;
		}
		if (rc == 0)
			rc = land_one(s, d.ino, p, pf[i].bytes, pf[i].len,
				      &made);
	}
	return rc;
}

int tcfs_remote_land_pack(struct tcfs_store *s, uint64_t parent,
			  const struct tcfs_fetched *f, struct tcfs_node *out)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_pack_file *pf = NULL;
	char *paths = NULL;
	const char *was;
	size_t n = 0;
	int rc;

	assert(f->n == 1);
	rc = tcfs_pack_parse(f->f[0].bytes, f->f[0].len, &pf, &paths, &n);
	if (rc == 0) {
		tcfs_db_lock(db);
		was = tcfs_store_set_origin(s, TCFS_ORIGIN_REMOTE);
		rc = tcfs_store_begin(s);
		if (rc == 0) {
			int r2 = dir_in(s, parent, f->name, out);

			if (r2 == 0)
				r2 = land_pack_files(s, out->ino, pf, n);
			rc = tcfs_store_end(s, r2);
		}
		tcfs_store_set_origin(s, was);
		tcfs_db_unlock(db);
	}
	free(pf);
	free(paths);
	if (rc < 0)
		return tcfs_err_prefix(rc, "landing %s/%s from the remote",
				       f->key, f->name);
	return 0;
}
