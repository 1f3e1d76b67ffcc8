/*
 * why: why a kernel missed.  A kernel compiled anew differs from the
 * kernels of the same name and target that were cached before it missed
 * in some of its metadata (NAME.json: num_warps, num_stages, the Triton
 * version, ...): the nearest of them, the one with the fewest differing
 * top-level fields, says which.  Kernels cached after the miss (others
 * the same run compiled) could not have been hit, so are never nearest;
 * the first of its name and target has none.
 *
 * Then the two kernels' TTIR (NAME.source, ttir.h) says what the
 * metadata does not record: the arguments of the kernel function whose
 * type or attributes changed (a dtype, a divisibility) and the constants
 * that changed (a BLOCK size).  The same metadata and the same TTIR mean
 * Triton, its options or the environment changed.
 */
#ifndef TCFS_WHY_H
#define TCFS_WHY_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "index/model/kernel.h"

struct tcfs_store;

/* What comparing the two kernels' NAME.source found. */
enum tcfs_why_source {
	TCFS_WHY_SOURCE_NONE,		/* no nearest: nothing compared */
	TCFS_WHY_SOURCE_SAME,		/* byte for byte */
	TCFS_WHY_SOURCE_DIFFERS,	/* source_differences says where */
	TCFS_WHY_SOURCE_MISSING,	/* either has none (or one damaged) */
	TCFS_WHY_SOURCE_TOO_BIG,	/* either is over TCFS_TTIR_MAX */
	TCFS_WHY_SOURCE_NOT_TTIR,	/* either's signature does not parse */
};

struct tcfs_why {
	struct tcfs_kernel k;			/* the kernel asked about */
	/* Only kernels cached before this were compared: its first miss
	 * (the probe counts, event.h), else its creation. */
	int64_t since_ns;
	char nearest[TCFS_NAME_MAX + 1];	/* its key; "" when none */
	/* {FIELD: [nearest's value, this kernel's value]} for every
	 * top-level field that differs but "hash"; owned, tcfs_why_free */
	cJSON *differences;
	enum tcfs_why_source source;
	/* With TCFS_WHY_SOURCE_DIFFERS, ttir.h's {"arguments": [...],
	 * "constants": [...]} (both empty: the TTIR differs elsewhere, in
	 * the body); else NULL.  Owned, tcfs_why_free. */
	cJSON *source_differences;
};

/* Compares the kernel at key (the first one there, by name) with the
 * others of its name and target cached before it.  -ENOENT when key
 * holds no kernel. */
int tcfs_why(struct tcfs_store *s, const char *key, struct tcfs_why *out);
void tcfs_why_free(struct tcfs_why *w);

/* "same", "differs", "missing", "too big", "not TTIR"; NULL for
 * TCFS_WHY_SOURCE_NONE. */
const char *tcfs_why_source_name(enum tcfs_why_source s);

#endif
