/* survey: what the fleet tier holds. */
#include "index/remote/survey.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"
#include "index/remote/config.h"
#include "index/remote/keyfmt.h"
#include "index/remote/remote.h"
#include "index/remote/wire.h"

/* Keys asked about in one round trip. */
#define SURVEY_BATCH 256

/* Of the n kernels ks, how many r holds (their group files' keys). */
static int held(struct tcfs_remote *r, const struct tcfs_kernel *ks, size_t n,
		size_t *out)
{
	char (*keys)[TCFS_KEYFMT_KEY_MAX] = malloc(SURVEY_BATCH *
						   sizeof(*keys));
	char grp[TCFS_NAME_MAX + 16];
	const char *kp[SURVEY_BATCH];
	int64_t sizes[SURVEY_BATCH];
	int rc = keys ? 0 : -ENOMEM;

	*out = 0;
	for (size_t i = 0; rc == 0 && i < n; i += SURVEY_BATCH) {
		size_t m = n - i < SURVEY_BATCH ? n - i : SURVEY_BATCH;

		for (size_t j = 0; rc == 0 && j < m; j++) {
			rc = tcfs_wire_group_file(ks[i + j].name, grp,
						  sizeof(grp));
			if (rc == 0)
				rc = tcfs_remote_key(r, ks[i + j].key, grp,
						     keys[j], sizeof(keys[j]));
			kp[j] = keys[j];
		}
		if (rc == 0)
			rc = tcfs_remote_sizes(r, kp, m, sizes);
		for (size_t j = 0; rc == 0 && j < m; j++)
			*out += sizes[j] >= 0;
	}
	free(keys);
	return rc;
}

int tcfs_remote_survey_status(struct tcfs_remote *r, struct tcfs_store *s,
			      const struct tcfs_kernel_filter *f, cJSON **out)
{
	char url[512], info[256] = "", why[512] = "";
	struct tcfs_kernel *ks = NULL;
	size_t n = 0, have = 0;
	int64_t ns = 0;
	int rc;
	cJSON *o;

	tcfs_err_clear();
	rc = tcfs_remote_ping(r, &ns, info, sizeof(info));
	if (rc == 0)
		rc = tcfs_kernel_list(s, f, &ks, &n);
	if (rc == 0)
		rc = held(r, ks, n, &have);
	free(ks);
	if (rc < 0)
		snprintf(why, sizeof(why), "%s", tcfs_err_msg()[0]
				 ? tcfs_err_msg() : strerror(-rc));
	tcfs_remote_cfg_url_of(tcfs_remote_cfg_of(r), url, sizeof(url));
	*out = o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "url", url) ||
	    !cJSON_AddBoolToObject(o, "answers", rc == 0) ||
	    !cJSON_AddNumberToObject(o, "latency_ms", (double)ns / 1e6) ||
	    !cJSON_AddStringToObject(o, "server", info) ||
	    !cJSON_AddNumberToObject(o, "kernels", (double)n) ||
	    !cJSON_AddNumberToObject(o, "held", (double)have) ||
	    !(rc < 0 ? cJSON_AddStringToObject(o, "error", why)
		     : cJSON_AddNullToObject(o, "error"))) {
		cJSON_Delete(o);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

struct found {
	const struct tcfs_remote_cfg *cfg;
	const char *glob;
	struct tcfs_remote_kernel *v;
	size_t n, cap;
};

/* One key the scan found: a group file's, of a kernel the glob takes. */
static int found_one(void *ctx, const char *rkey)
{
	struct found *fd = ctx;
	char key[TCFS_NAME_MAX + 1], file[TCFS_NAME_MAX + 1];
	struct tcfs_remote_kernel *v;

	if (!tcfs_keyfmt_parse(fd->cfg->key_format, rkey, key, sizeof(key),
			       file, sizeof(file)))
		return 0;
	if (fd->n == fd->cap) {
		v = realloc(fd->v, (fd->cap ? fd->cap * 2 : 256) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		fd->v = v;
		fd->cap = fd->cap ? fd->cap * 2 : 256;
	}
	v = &fd->v[fd->n];
	if (!tcfs_name_group_kernel(file, v->name, sizeof(v->name)) ||
	    (fd->glob && fnmatch(fd->glob, v->name, 0) != 0))
		return 0;
	snprintf(v->key, sizeof(v->key), "%s", key);
	fd->n++;
	return 0;
}

/* Whether remote kernel k is for f's arch and backend (its NAME.json
 * says), as its fetch will check it. */
static int target_ok(struct tcfs_remote *r, const struct tcfs_kernel_filter *f,
		     const struct tcfs_remote_kernel *k)
{
	char meta[TCFS_NAME_MAX + 8], rkey[TCFS_KEYFMT_KEY_MAX];
	const char *kp[1] = { rkey };
	struct tcfs_kernel kk;
	char *val = NULL;
	size_t len = 0;
	int ok;

	if (!f->arch && !f->backend)
		return 1;
	snprintf(meta, sizeof(meta), "%s.json", k->name);
	if (tcfs_remote_key(r, k->key, meta, rkey, sizeof(rkey)) < 0 ||
	    tcfs_remote_get(r, kp, 1, TCFS_KERNEL_META_MAX, &val, &len) < 0 ||
	    !val)
		return 0;
	memset(&kk, 0, sizeof(kk));
	ok = tcfs_kernel_parse_meta(val, len, &kk) == 0;
	/* Named by its group file, as the store names it. */
	snprintf(kk.name, sizeof(kk.name), "%s", k->name);
	ok = ok && tcfs_kernel_match(&kk, f);
	free(val);
	return ok;
}

int tcfs_remote_survey_list(struct tcfs_remote *r,
			    const struct tcfs_kernel_filter *f,
			    struct tcfs_remote_kernel **out, size_t *n)
{
	struct found fd = { tcfs_remote_cfg_of(r), f->name, NULL, 0, 0 };
	char pattern[TCFS_KEYFMT_KEY_MAX];
	size_t k = 0;
	int rc = tcfs_keyfmt_pattern(fd.cfg->key_format, "__grp__*.json",
				     pattern, sizeof(pattern));

	if (rc == 0)
		rc = tcfs_remote_scan(r, pattern, TCFS_REMOTE_SURVEY_MAX,
				      found_one, &fd);
	for (size_t i = 0; rc >= 0 && i < fd.n; i++)
		if (target_ok(r, f, &fd.v[i]))
			fd.v[k++] = fd.v[i];
	if (rc < 0) {
		free(fd.v);
		return rc;
	}
	*out = fd.v;
	*n = k;
	return 0;
}
