/*
 * pack: the files of one dir as one value, for entries that are a dir of
 * files rather than one file (vLLM's rank dirs: entry.h), so that a fresh
 * node gets the whole dir in one value, checked as one by its sidecar
 * (wire.h: a file's, whose one file is the pack) before it is read:
 *
 *   tcfs-pack-v1\n
 *   COUNT\n
 *   LEN:PATH SIZE\n          (COUNT lines, PATHs sorted by strcmp)
 *   the files' bytes, in that order, back to back
 *
 * A PATH is relative to the dir: 1 to TCFS_PACK_DEPTH names joined by
 * '/', each plain (tcfs_name_check), none a temp or a user's own dir: a
 * rank dir's files and those of the prefix dirs in it (rank_I_J/[PREFIX/]
 * FILE), never the caches of their own deeper down (triton_cache/KEY/,
 * inductor_cache/...), which travel in their own formats.
 * Parsed as hostile bytes all the same: every count, length and size is
 * checked against what is left.
 */
#ifndef TCFS_REMOTE_PACK_H
#define TCFS_REMOTE_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "index/base/name.h"

#define TCFS_PACK_FILES_MAX 4096
#define TCFS_PACK_DEPTH 2

/* The key of a pack, "tcfs:PREFIX:KEY/NAME" (PREFIX the kind's remote
 * id, entry.h; KEY the path of the dir's parent below the kind's root,
 * NAME the dir's), and of its sidecar, that and ":tcfs".  0,
 * -ENAMETOOLONG, or -EINVAL for a prefix or name that is not plain or a
 * key that tcfs_pack_path_check refuses. */
int tcfs_pack_key(const char *prefix, const char *key, const char *name,
		  char *buf, size_t len);
int tcfs_pack_sidecar_key(const char *prefix, const char *key,
			  const char *name, char *buf, size_t len);

/* One file of a pack: its path and bytes, neither owned. */
struct tcfs_pack_file {
	const char *path;
	const char *bytes;
	size_t len;
};

/* Whether path may name a file of a pack (as above): 0 or -EINVAL. */
int tcfs_pack_path_check(const char *path);

/* The pack of files[0..n) (sorted here by path: the caller's array is
 * reordered).  *out owned by the caller (free()).  0, -ENOMEM, -EINVAL
 * (a path tcfs_pack_path_check refuses, or twice), -E2BIG (over
 * TCFS_PACK_FILES_MAX files). */
int tcfs_pack_render(struct tcfs_pack_file *files, size_t n, char **out,
		     size_t *len);

/* The files of the pack buf (len bytes): *files (owned by the caller,
 * free(); its paths and bytes point into *paths and buf, so buf must
 * outlive it; *paths owned by the caller, free()) and *n.  0, -ENOMEM,
 * or -EBADMSG with a message saying what is wrong. */
int tcfs_pack_parse(const char *buf, size_t len, struct tcfs_pack_file **files,
		    char **paths, size_t *n);

#endif
