/*
 * group: Triton's group files, __grp__NAME.json, made relocatable.
 *
 * Triton writes {"child_paths": {"F": "/ROOT/KEY/F", ...}} with json.dumps,
 * ROOT being TRITON_CACHE_DIR as spelled where it compiled.  The store keeps
 * instead a template {"child_paths": {"F": "F", ...}} whose values are
 * relative to the key dir, and renders it with whatever root the reader
 * sits at (the mount point, an export's destination).  A file becomes a
 * template only if rendering the template with its own root gives back
 * exactly its bytes; anything else (invalid JSON, Triton's Redis format,
 * children outside the key dir) is kept and served byte for byte.
 */
#ifndef TCFS_GROUP_H
#define TCFS_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "index/blob/cas.h"
#include "index/tree/ns.h"

/* The largest file read to be made key-relative.  Triton's group files
 * are a few hundred bytes; a bigger file of that name is not one of its
 * own and is stored as it is, however it arrives (written in place,
 * renamed in, imported). */
#define TCFS_GROUP_MAX (16u << 20)

/* What a rendering shows of a group file's children. */
enum tcfs_group_filter {
	TCFS_GROUP_ALL,
	TCFS_GROUP_BINARY_ONLY,	/* no IR (name.h: TCFS_ART_IR), as with
				 * TRITON_STORE_BINARY_ONLY */
};

/* Whether a file named name of size bytes may become a template: if so,
 * read its bytes and store them with tcfs_group_put; else store the file
 * as it is. */
int tcfs_group_candidate(const char *name, uint64_t size);

/* Stores a candidate's bytes, found in key dir key: as a template
 * (fmt TCFS_FMT_GROUP) when they are Triton's format with every child in
 * that key dir, else as they are.  With TCFS_GROUP_BINARY_ONLY a
 * template lists no IR child.  Fills *c (size: len); *put as for
 * tcfs_cas_put_buf.  0 or -errno. */
int tcfs_group_put(struct tcfs_cas *cas, const char *key, const char *bytes,
		   size_t len, enum tcfs_group_filter f,
		   struct tcfs_content *c, enum tcfs_cas_put *put);

/* A stored template's bytes, checked against their name (cas.h): *tmpl
 * owned by the caller (free()).  -EUCLEAN when the blob is too big to be
 * one; other errors as tcfs_cas_read_checked returns them. */
int tcfs_group_load(struct tcfs_cas *cas, const struct tcfs_hash *h,
		    char **tmpl, size_t *len);

/* Returns 1 and a template in *tmpl (owned by the caller, free()) when the
 * file can be stored key-relative; 0 when it must be kept raw; or -ENOMEM.
 * key is the name of the directory the file is in. */
int tcfs_group_relativize(const char *bytes, size_t len, const char *key,
			  char **tmpl, size_t *tlen);

/* Renders a template with child paths ROOT/KEY/F, the children f lets
 * through.  *out is owned by the caller (free()).  -EUCLEAN when tmpl is
 * not a template. */
int tcfs_group_render(const char *tmpl, size_t len, const char *root,
		      const char *key, enum tcfs_group_filter f, char **out,
		      size_t *olen);

/* The root group files in an image (tcfs pack) name their children
 * under: relative, as Red Hat's MCV sanitizes them, and replaces it with
 * the cache dir it unpacks to.  Rendered as Triton writes them
 * otherwise, so an unpack gives back the very bytes. */
#define TCFS_GROUP_IMAGE_ROOT ".triton/cache"

/* A template of a group file in any JSON layout (an image's, indented,
 * with relative paths), when it is one exactly as Triton writes them:
 * each child F at ROOT/KEY/F, F a plain name, ROOT the same for all.
 * An image is hostile: a child anywhere else (an absolute path, "..",
 * another key dir's file) makes it no template.  1 and *tmpl (owned by
 * the caller, free()); 0 when it is not one, why (wlen bytes) saying
 * which child is out of place; -ENOMEM. */
int tcfs_group_template_of(const char *bytes, size_t len, const char *key,
			   char **tmpl, size_t *tlen, char *why, size_t wlen);

/* Where a child goes instead of ROOT/KEY/F (the mount's -o redirect):
 * given the child's name F, NULL to keep ROOT/KEY/F, else an absolute
 * path, owned by ctx and valid until the next call. */
typedef const char *tcfs_group_path_fn(void *ctx, const char *child);

/* tcfs_group_render, with the children path places elsewhere (path NULL:
 * none) named there. */
int tcfs_group_render_with(const char *tmpl, size_t len, const char *root,
			   const char *key, enum tcfs_group_filter f,
			   tcfs_group_path_fn *path, void *ctx, char **out,
			   size_t *olen);

/* 0 when group files can name children under root (a cache dir, a
 * mount point); -EILSEQ when it is not valid UTF-8, which json.dumps
 * cannot write and so no rendering could hold. */
int tcfs_group_root_ok(const char *root);

#endif
