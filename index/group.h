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

/* Returns 1 and a template in *tmpl (owned by the caller, free()) when the
 * file can be stored key-relative; 0 when it must be kept raw; or -ENOMEM.
 * key is the name of the directory the file is in. */
int tcfs_group_relativize(const char *bytes, size_t len, const char *key,
			  char **tmpl, size_t *tlen);

/* Renders a template with child paths ROOT/KEY/F.  *out is owned by the
 * caller (free()).  -EUCLEAN when tmpl is not a template. */
int tcfs_group_render(const char *tmpl, size_t len, const char *root,
		      const char *key, char **out, size_t *olen);

/* 0 when group files can name children under root (a cache dir, a
 * mount point); -EILSEQ when it is not valid UTF-8, which json.dumps
 * cannot write and so no rendering could hold. */
int tcfs_group_root_ok(const char *root);

#endif
