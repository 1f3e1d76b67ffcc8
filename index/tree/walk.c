/*
 * walk: reads a store tree out to a sink (walk.h), verifying every blob.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/blob/cas.h"
#include "index/base/err.h"
#include "index/base/name.h"
#include "index/model/kernel.h"
#include "index/store/store.h"
#include "index/tree/walk.h"

/* Key dirs are flat; Inductor's and vLLM's roots sit a few levels down. */
#define DEPTH_MAX 16

static int walk_file(struct tcfs_walk *w, const struct tcfs_node *n,
		     const char *path)
{
	char keydir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	char *buf = NULL;
	size_t len = 0;
	int rc;

	snprintf(keydir, sizeof(keydir), "%.*s",
		 slash ? (int)(slash - path) : 0, path);
	/* Checked against its name: a damaged blob never reaches a sink. */
	rc = tcfs_cas_read_checked(tcfs_store_cas(w->s), &n->blob,
				   n->fmt == TCFS_FMT_GROUP ? TCFS_GROUP_MAX
							    : SIZE_MAX,
				   &buf, &len);
	if (rc < 0)	/* the message names the blob: say whose it is */
		return tcfs_err_prefix(rc, "%s", path);
	rc = w->sink->file(w->ctx, path, keydir, n, buf, len);
	free(buf);
	return rc;
}

static int walk_symlink(struct tcfs_walk *w, const struct tcfs_node *n,
			const char *path)
{
	char target[TCFS_SYMLINK_MAX + 1];
	int rc = tcfs_ns_readlink(w->s, n->ino, target, sizeof(target));

	if (rc < 0)
		return tcfs_err_errno(rc, "%s", path);
	return w->sink->symlink(w->ctx, path, n, target);
}

int tcfs_walk_shared(struct tcfs_store *s, const struct tcfs_node *n)
{
	int yes = 1;

	if (n->kind == TCFS_DIR && tcfs_kernel_dir_shared(s, n->ino, &yes) < 0)
		return 0;
	return yes;
}

static int is_group(const struct tcfs_node *n)
{
	return n->kind != TCFS_DIR && n->kind != TCFS_SYMLINK &&
	       tcfs_name_artifact(n->name) == TCFS_ART_GROUP;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tcfs_node *)a)->name,
		      ((const struct tcfs_node *)b)->name);
}

static int walk_at(struct tcfs_walk *w, const struct tcfs_node *n,
		   const char *path, int depth);

/* dir's children: everything but group files, then (only if all of
 * those made it) the group files.  Returns the first error. */
static int walk_children_at(struct tcfs_walk *w, uint64_t dir,
			    const char *path, int depth)
{
	struct tcfs_node *kids;
	size_t n;
	int rc, first = 0;

	rc = tcfs_ns_list(w->s, dir, 0, 0, &kids, &n);
	if (rc < 0) {
		w->sink->error(w->ctx, path, rc);
		return rc;
	}
	if (n > 1)	/* qsort's base may not be NULL, even for n == 0 */
		qsort(kids, n, sizeof(*kids), by_name);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			char sub[PATH_MAX];

			/* Users' own kernels are theirs alone: out of
			 * every export and image (fs/users.c), by where
			 * they are and by who wrote them. */
			if (is_group(&kids[i]) != pass ||
			    tcfs_name_private(kids[i].name, NULL) ||
			    !tcfs_walk_shared(w->s, &kids[i]))
				continue;
			if (w->filter == TCFS_GROUP_BINARY_ONLY &&
			    kids[i].kind != TCFS_DIR &&
			    tcfs_name_artifact(kids[i].name) == TCFS_ART_IR)
				continue;
			if (pass == 1 && first < 0)
				break;	/* no group for a partial kernel */
			if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", path,
					     path[0] ? "/" : "",
					     kids[i].name) >= sizeof(sub)) {
				rc = tcfs_err_set(-ENAMETOOLONG, "%s/%s: path "
						  "too long", path,
						  kids[i].name);
				w->sink->error(w->ctx, path, rc);
			} else {
				rc = walk_at(w, &kids[i], sub, depth + 1);
			}
			if (rc < 0 && !first)
				first = rc;
		}
	}
	free(kids);
	return first;
}

static int walk_at(struct tcfs_walk *w, const struct tcfs_node *n,
		   const char *path, int depth)
{
	int rc;

	tcfs_err_clear();
	if (n->kind == TCFS_DIR) {
		if (depth > DEPTH_MAX)
			rc = tcfs_err_set(-ELOOP, "%s: nested too deep", path);
		else
			rc = w->sink->enter(w->ctx, path, n);
		if (rc < 0) {
			w->sink->error(w->ctx, path, rc);
			return rc;
		}
		rc = walk_children_at(w, n->ino, path, depth);
		tcfs_err_clear();
		rc = w->sink->leave(w->ctx, path, n, rc);
		/* Children reported their own errors; this is the dir's. */
		if (rc < 0 && tcfs_err_msg()[0])
			w->sink->error(w->ctx, path, rc);
		return rc;
	}
	if (n->kind == TCFS_SYMLINK)
		rc = walk_symlink(w, n, path);
	else
		rc = walk_file(w, n, path);
	if (rc < 0)
		w->sink->error(w->ctx, path, rc);
	return rc;
}

int tcfs_walk(struct tcfs_walk *w, const struct tcfs_node *n,
	      const char *path)
{
	assert(w->sink && w->sink->enter && w->sink->leave &&
	       w->sink->file && w->sink->symlink && w->sink->error);
	return walk_at(w, n, path, 1);
}
