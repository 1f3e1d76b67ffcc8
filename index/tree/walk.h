/*
 * walk: a tree of the store read out to a sink, every blob verified on the
 * way: a directory (tcfs export) and a tar stream (tcfs pack) are two sinks
 * of the same walk.
 *
 * Children come in name order, so what a sink writes depends only on the
 * store's content.  A dir's group files come after everything else in it,
 * and only when everything else made it, as Triton writes a kernel: a
 * reader of the result never sees a group file that names a missing or
 * damaged child.
 */
#ifndef TCFS_WALK_H
#define TCFS_WALK_H

#include <stddef.h>

#include "index/model/group.h"
#include "index/tree/ns.h"

struct tcfs_store;

/* What a sink does with each entry.  path is the entry's path below the
 * store root ("KEY/F", "triton/0/KEY/F"); a callback returns 0 or -errno,
 * and an error is reported through error() and ends that entry only. */
struct tcfs_walk_sink {
	/* Before a dir's children; after them, leave() with their result
	 * (a sink sets the dir's mode and mtime there). */
	int (*enter)(void *ctx, const char *path, const struct tcfs_node *n);
	int (*leave)(void *ctx, const char *path, const struct tcfs_node *n,
		     int rc);
	/* A file's stored bytes, verified.  For a group file stored as a
	 * template (n->fmt TCFS_FMT_GROUP) they are the template: the sink
	 * renders it (group.h) for the key dir keydir, its parent's path. */
	int (*file)(void *ctx, const char *path, const char *keydir,
		    const struct tcfs_node *n, const char *bytes, size_t len);
	int (*symlink)(void *ctx, const char *path, const struct tcfs_node *n,
		       const char *target);
	/* An entry that failed; the walk goes on with the next. */
	void (*error)(void *ctx, const char *path, int rc);
};

struct tcfs_walk {
	struct tcfs_store *s;
	enum tcfs_group_filter filter;	/* binary-only: IR files skipped */
	const struct tcfs_walk_sink *sink;
	void *ctx;
};

/* Whether n may leave its user's view (export, pack): anything but a
 * key dir of kernels not shared (kernel.h: written by a user the mount
 * did not trust).  A walk leaves such dirs out below its start; callers
 * decide for the nodes they start from. */
int tcfs_walk_shared(struct tcfs_store *s, const struct tcfs_node *n);

/* Walks node n (a dir with its tree, a file, a symlink) found at path.
 * Returns the first error (already reported through error()). */
int tcfs_walk(struct tcfs_walk *w, const struct tcfs_node *n,
	      const char *path);

#endif
