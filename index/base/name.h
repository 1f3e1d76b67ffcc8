/*
 * name: what a name in a Triton cache is, from the name alone.
 */
#ifndef TCFS_NAME_H
#define TCFS_NAME_H

#include <stddef.h>
#include <stdint.h>

#define TCFS_NAME_MAX 255

/* A cache key directory name of some Triton version: 64 lowercase hex
 * (3.0, 3.1), 43 base64url chars that may begin with '-' (3.2), 52 base32
 * chars [A-Z2-7] (3.3 on). */
int tcfs_name_is_key(const char *name);

/* A temporary of an unfinished write: "tmp.pid_*" dirs in key dirs (3.2+),
 * "FILE.tmp.pid_*" files (3.0, 3.1), and at the top Inductor's "tmp.*"
 * dirs.  at_top says whether the name is directly under the cache root. */
int tcfs_name_is_temp(const char *name, int at_top);

/* A user's own dir beside the shared key dirs of a cache root, on a
 * cache many users share (fs/users.c): ".tcfs-private-UID".  1 and *uid
 * (optional) for such a name, else 0. */
#define TCFS_NAME_PRIVATE_PREFIX ".tcfs-private-"
int tcfs_name_private(const char *name, uint32_t *uid);
/* Takes out of path (a/b/c, in place) every component that is a user's
 * own dir: the path as that user reaches it. */
void tcfs_name_path_as_user(char *path);

/* For "__grp__NAME.json" writes NAME into kname and returns 1; returns 0 for
 * any other name. */
int tcfs_name_group_kernel(const char *name, char *kname, size_t len);

/* What a file in a key dir holds, by its extension. */
enum tcfs_artifact {
	TCFS_ART_OTHER,
	TCFS_ART_GROUP,		/* __grp__NAME.json */
	TCFS_ART_META,		/* NAME.json */
	TCFS_ART_SOURCE,	/* NAME.source */
	TCFS_ART_IR,		/* .ttir .ttgir .llir .ptx .amdgcn */
	TCFS_ART_BINARY,	/* .cubin .hsaco */
	TCFS_ART_MODULE,	/* *.so: compiled launcher/utils modules */
	TCFS_ART_AUTOTUNE,	/* FN.autotune.json */
};

enum tcfs_artifact tcfs_name_artifact(const char *name);

/* A qsort comparator of char * names in the order a kernel's files are
 * written: group files, the commit marker of a kernel, last; else by
 * strcmp. */
int tcfs_name_cmp_commit_order(const void *a, const void *b);

/* What a file will hold once it lands: the artifact of its name, or for
 * Triton 3.0/3.1's "FILE.tmp.pid_*", of the FILE it is renamed to. */
enum tcfs_artifact tcfs_name_landing(const char *name);

/* 0 for a name that may be created in a directory; -ENAMETOOLONG over 255
 * bytes, -EINVAL for "", ".", ".." or one holding '/'. */
int tcfs_name_check(const char *name);

#endif
