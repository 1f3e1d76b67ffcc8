/*
 * blobset: a mark per blob name, in memory.  Open addressing, hashed by
 * the names' own bits (they are XXH3 digests already).  Not thread-safe:
 * its owner locks around it.
 */
#ifndef TCFS_BLOBSET_H
#define TCFS_BLOBSET_H

#include <stddef.h>

#include "index/base/hash.h"

struct tcfs_blobset_slot {
	struct tcfs_hash h;
	unsigned char mark;	/* 0: empty */
};

/* Zero-initialised it is empty; tcfs_blobset_free releases it. */
struct tcfs_blobset {
	struct tcfs_blobset_slot *v;
	size_t cap;		/* a power of two, or 0 */
	size_t n;		/* slots in use */
};

/* h's mark, or 0 when it has none. */
int tcfs_blobset_get(const struct tcfs_blobset *s, const struct tcfs_hash *h);

/* Gives h the mark (1..255); 0, or -ENOMEM (the set is unchanged). */
int tcfs_blobset_set(struct tcfs_blobset *s, const struct tcfs_hash *h,
		     int mark);

void tcfs_blobset_free(struct tcfs_blobset *s);

#endif
