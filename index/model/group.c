/* group: group files stored key-relative and rendered for a root. */
#include "index/model/group.h"
#include "index/base/text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/name.h"

/* A growing output string; err sticks after the first failed allocation. */
/* The child_paths object of a group file, or NULL if it is not one. */
static const cJSON *child_paths(const cJSON *doc)
{
	const cJSON *cp;

	if (!cJSON_IsObject(doc) || !doc->child || doc->child->next)
		return NULL;
	cp = doc->child;
	if (strcmp(cp->string, "child_paths") != 0 || !cJSON_IsObject(cp))
		return NULL;
	for (const cJSON *c = cp->child; c; c = c->next)
		if (!cJSON_IsString(c))
			return NULL;
	return cp;
}

static int shown(const char *child, enum tcfs_group_filter f)
{
	return f != TCFS_GROUP_BINARY_ONLY ||
	       tcfs_name_artifact(child) != TCFS_ART_IR;
}

/* Writes {"child_paths": {"F": prefix + value, ...}} in json.dumps style,
 * for the children f lets through; prefix may be NULL.  A child that
 * path (may be NULL) places elsewhere gets that path instead. */
static int emit(const cJSON *cp, const char *prefix, enum tcfs_group_filter f,
		tcfs_group_path_fn *path, void *ctx, struct tcfs_text *o)
{
	struct tcfs_text v = { 0 };
	int first = 1;

	tcfs_text_str(o, "{\"child_paths\": {");
	for (const cJSON *c = cp->child; c; c = c->next) {
		const char *moved;

		if (!shown(c->string, f))
			continue;
		if (!first)
			tcfs_text_str(o, ", ");
		first = 0;
		v.len = 0;
		moved = path ? path(ctx, c->string) : NULL;
		if (moved) {
			tcfs_text_str(&v, moved);
		} else {
			tcfs_text_str(&v, prefix ? prefix : "");
			tcfs_text_str(&v, c->valuestring);
		}
		if (v.err) {
			o->err = v.err;
			break;
		}
		tcfs_text_pystr(o, c->string);
		tcfs_text_str(o, ": ");
		tcfs_text_pystr(o, v.p ? v.p : "");
	}
	free(v.p);
	tcfs_text_str(o, "}}");
	return o->err;
}

/* "ROOT/KEY/" with ROOT's trailing slashes dropped, as os.path.join. */
static int make_prefix(const char *root, const char *key, struct tcfs_text *o)
{
	size_t n = strlen(root);

	while (n > 0 && root[n - 1] == '/')
		n--;
	tcfs_text_add(o, root, n);
	tcfs_text_str(o, "/");
	tcfs_text_str(o, key);
	tcfs_text_str(o, "/");
	return o->err;
}

/* Splits value into ROOT and the part below "/KEY/"; returns the part, or
 * NULL when the value is not under a directory named key.  The first such
 * directory is the key dir: a file below it may sit in a subdir that
 * happens to bear the key's name too. */
static const char *below_key(const char *value, const char *key,
			     size_t *rootlen)
{
	size_t klen = strlen(key);
	const char *hit = NULL, *p = value;
	const char *rel;

	for (; !hit && (p = strchr(p, '/')) != NULL; p++)
		if (strncmp(p + 1, key, klen) == 0 && p[1 + klen] == '/')
			hit = p;
	if (!hit)
		return NULL;
	rel = hit + 1 + klen + 1;
	if (!*rel || strstr(rel, "..") || rel[0] == '/')
		return NULL;
	*rootlen = (size_t)(hit - value);
	return rel;
}

static int templatize(cJSON *cp, const char *key, char **root)
{
	size_t rlen = 0, first = SIZE_MAX;

	if (!cp->child)
		return 0;
	for (cJSON *c = cp->child; c; c = c->next) {
		const char *rel = below_key(c->valuestring, key, &rlen);

		if (!rel)
			return 0;
		if (first == SIZE_MAX) {
			first = rlen;
			*root = strndup(c->valuestring, rlen);
			if (!*root)
				return -ENOMEM;
		} else if (rlen != first ||
			   strncmp(*root, c->valuestring, rlen) != 0) {
			return 0;
		}
		/* rel points into the value being replaced: copy it first. */
		char *own = strdup(rel);

		if (!own || !cJSON_SetValuestring(c, own)) {
			free(own);
			return -ENOMEM;
		}
		free(own);
	}
	return 1;
}

/* A template of bytes (see tcfs_group_relativize), listing the children
 * f lets through. */
static int relativize(const char *bytes, size_t len, const char *key,
		      enum tcfs_group_filter f, char **tmpl, size_t *tlen)
{
	cJSON *doc = cJSON_ParseWithLength(bytes, len);
	struct tcfs_text t = { 0 }, r = { 0 };
	cJSON *cp = (cJSON *)child_paths(doc);
	char *root = NULL;
	int rc = 0;

	if (!cp)
		goto out;
	rc = templatize(cp, key, &root);
	if (rc <= 0)
		goto out;
	rc = emit(cp, NULL, TCFS_GROUP_ALL, NULL, NULL, &t);
	if (rc == 0)
		rc = tcfs_group_render(t.p, t.len, root, key, TCFS_GROUP_ALL,
				       &r.p, &r.len);
	if (rc < 0) {
		rc = rc == -ENOMEM ? rc : 0;	/* unrenderable: keep raw */
		goto out;
	}
	rc = r.len == len && memcmp(r.p, bytes, len) == 0;
	if (rc && f != TCFS_GROUP_ALL) {
		t.len = 0;
		rc = emit(cp, NULL, f, NULL, NULL, &t);
		rc = rc < 0 ? rc : 1;
	}
	if (rc == 1) {
		*tmpl = t.p;
		*tlen = t.len;
		t.p = NULL;
	}
out:
	free(t.p);
	free(r.p);
	free(root);
	cJSON_Delete(doc);
	return rc;
}

int tcfs_group_relativize(const char *bytes, size_t len, const char *key,
			  char **tmpl, size_t *tlen)
{
	return relativize(bytes, len, key, TCFS_GROUP_ALL, tmpl, tlen);
}

int tcfs_group_candidate(const char *name, uint64_t size)
{
	return size <= TCFS_GROUP_MAX &&
	       tcfs_name_artifact(name) == TCFS_ART_GROUP;
}

int tcfs_group_put(struct tcfs_cas *cas, const char *key, const char *bytes,
		   size_t len, enum tcfs_group_filter f,
		   struct tcfs_content *c, enum tcfs_cas_put *put)
{
	char *tmpl = NULL;
	size_t tlen = 0;
	int rc = relativize(bytes, len, key, f, &tmpl, &tlen);

	if (rc < 0)
		return rc;
	c->size = len;
	c->fmt = rc == 1 ? TCFS_FMT_GROUP : TCFS_FMT_RAW;
	rc = tcfs_cas_put_buf(cas, tmpl ? tmpl : bytes, tmpl ? tlen : len,
			      &c->blob, put);
	free(tmpl);
	return rc;
}

int tcfs_group_load(struct tcfs_cas *cas, const struct tcfs_hash *h,
		    char **tmpl, size_t *len)
{
	int rc = tcfs_cas_read_checked(cas, h, TCFS_GROUP_MAX, tmpl, len);

	return rc == -EFBIG ? -EUCLEAN : rc;
}

int tcfs_group_render(const char *tmpl, size_t len, const char *root,
		      const char *key, enum tcfs_group_filter f, char **out,
		      size_t *olen)
{
	return tcfs_group_render_with(tmpl, len, root, key, f, NULL, NULL, out,
				      olen);
}

int tcfs_group_render_with(const char *tmpl, size_t len, const char *root,
			   const char *key, enum tcfs_group_filter f,
			   tcfs_group_path_fn *path, void *ctx, char **out,
			   size_t *olen)
{
	cJSON *doc = cJSON_ParseWithLength(tmpl, len);
	const cJSON *cp = child_paths(doc);
	struct tcfs_text pre = { 0 }, o = { 0 };
	int rc;

	if (!cp) {
		cJSON_Delete(doc);
		return -EUCLEAN;
	}
	rc = make_prefix(root, key, &pre);
	if (rc == 0)
		rc = emit(cp, pre.p, f, path, ctx, &o);
	free(pre.p);
	cJSON_Delete(doc);
	if (rc < 0) {
		free(o.p);
		return rc;
	}
	*out = o.p;
	*olen = o.len;
	return 0;
}

/* Whether every child F of cp is ROOT/KEY/F, F a plain name: else 0 and
 * why (len bytes) names the first that is not. */
static int children_in_key(const cJSON *cp, const char *key, char *why,
			   size_t len)
{
	for (const cJSON *c = cp->child; c; c = c->next) {
		size_t rlen;
		const char *rel = below_key(c->valuestring, key, &rlen);

		if (tcfs_name_check(c->string) == 0 && rel &&
		    strcmp(rel, c->string) == 0)
			continue;
		snprintf(why, len, "child '%.64s' is '%.128s', not a file of "
			 "its key dir %s", c->string, c->valuestring, key);
		return 0;
	}
	return 1;
}

int tcfs_group_template_of(const char *bytes, size_t len, const char *key,
			   char **tmpl, size_t *tlen, char *why, size_t wlen)
{
	cJSON *doc = cJSON_ParseWithLength(bytes, len);
	cJSON *cp = (cJSON *)child_paths(doc);
	struct tcfs_text t = { 0 };
	char *root = NULL;
	int rc = 0;

	snprintf(why, wlen, "not a group file of Triton's ({\"child_paths\": "
		 "{NAME: PATH}} with at least one child)");
	if (cp && cp->child)
		rc = children_in_key(cp, key, why, wlen);
	if (rc == 1) {
		snprintf(why, wlen, "its children lie under different roots");
		rc = templatize(cp, key, &root);
	}
	if (rc == 1)
		rc = emit(cp, NULL, TCFS_GROUP_ALL, NULL, NULL, &t);
	if (rc == 0 && t.p) {
		*tmpl = t.p;
		*tlen = t.len;
		t.p = NULL;
		why[0] = '\0';
		rc = 1;
	}
	free(t.p);
	free(root);
	cJSON_Delete(doc);
	return rc;
}

int tcfs_group_root_ok(const char *root)
{
	struct tcfs_text o = { 0 };

	tcfs_text_pystr(&o, root);
	free(o.p);
	return o.err;
}
