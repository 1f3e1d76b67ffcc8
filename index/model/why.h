/*
 * why: why a kernel missed.  A kernel compiled anew differs from the
 * kernels cached before it of the same name and target in some of its
 * metadata (NAME.json: num_warps, num_stages, the Triton version, ...):
 * the nearest of them, the one with the fewest differing top-level
 * fields, says which.  None differing means the source, the signature
 * or Triton itself changed, which the metadata does not record.
 */
#ifndef TCFS_WHY_H
#define TCFS_WHY_H

#include <cjson/cJSON.h>

#include "index/model/kernel.h"

struct tcfs_store;

struct tcfs_why {
	struct tcfs_kernel k;			/* the kernel asked about */
	char nearest[TCFS_NAME_MAX + 1];	/* its key; "" when none */
	/* {FIELD: [nearest's value, this kernel's value]} for every
	 * top-level field that differs but "hash"; owned, tcfs_why_free */
	cJSON *differences;
};

/* Compares the kernel at key (the first one there, by name) with the
 * others of its name and target.  -ENOENT when key holds no kernel. */
int tcfs_why(struct tcfs_store *s, const char *key, struct tcfs_why *out);
void tcfs_why_free(struct tcfs_why *w);

#endif
