/*
 * progress: how a long loop of the library (gc, fsck) tells its caller how
 * far it got.  The library never prints; the command decides whether and
 * how to show it (tools/progress.h).
 */
#ifndef TCFS_BASE_PROGRESS_H
#define TCFS_BASE_PROGRESS_H

#include <stdint.h>

struct tcfs_progress {
	/* step names what done counts ("blobs verified"), a string that
	 * lives as long as the run; total is 0 when not known, and done
	 * and total both 0 when a step has just begun. */
	void (*fn)(void *ctx, const char *step, uint64_t done,
		   uint64_t total);
	void *ctx;
};

/* Tells p (may be NULL, or have no fn) of the count. */
static inline void tcfs_progress_report(const struct tcfs_progress *p,
					const char *step, uint64_t done,
					uint64_t total)
{
	if (p && p->fn)
		p->fn(p->ctx, step, done, total);
}

#endif
