/*
 * info: what a store holds, in numbers.
 */
#ifndef TCFS_INFO_H
#define TCFS_INFO_H

#include <stddef.h>
#include <stdint.h>

struct tcfs_store;

struct tcfs_info_target {
	char backend[32];	/* "" when the metadata lacks it */
	char arch[32];
	uint64_t kernels;
	uint64_t bytes;		/* logical bytes of those kernels */
};

struct tcfs_info {
	uint64_t kernels;
	uint64_t modules;	/* *.so files */
	uint64_t files;
	uint64_t dirs;		/* not counting the root */
	uint64_t logical_bytes;	/* the files' sizes as written */
	uint64_t blobs;		/* files under objects/ */
	uint64_t stored_bytes;	/* their sizes */
	struct tcfs_info_target *targets;	/* most kernels first */
	size_t ntargets;
};

/* Fills *out; release it with tcfs_info_free. */
int tcfs_info_get(struct tcfs_store *s, struct tcfs_info *out);
void tcfs_info_free(struct tcfs_info *info);

#endif
