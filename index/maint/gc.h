/*
 * gc: deleting blobs that no file references any more.
 */
#ifndef TCFS_GC_H
#define TCFS_GC_H

#include <stdint.h>

#include "index/base/progress.h"

struct tcfs_store;

struct tcfs_gc_result {
	uint64_t removed;	/* orphan blobs deleted (or, dry, found) */
	uint64_t freed_bytes;
	uint64_t kept;		/* blobs still referenced */
	uint64_t kept_bytes;
	uint64_t recent;	/* orphans kept, put within the grace (cas.h):
				 * a mount's gc only */
	uint64_t recent_bytes;
};

/* {dry_run, removed, freed_bytes, kept, kept_bytes, recent,
 * recent_bytes}: tcfs gc --json, and the mount's answer to a gc.  Owned
 * by the caller (cJSON_Delete); NULL when out of memory. */
struct cJSON *tcfs_gc_result_json(const struct tcfs_gc_result *res, int dry);

/* The store must be open as the writer, so nothing can start referencing a
 * blob while gc decides it is an orphan.  With dry_run nothing is deleted.
 * cb (optional) hears of each orphan by its path under objects/; prog
 * (optional) of each blob looked at, as "blobs checked". */
int tcfs_gc_run(struct tcfs_store *s, int dry_run,
		void (*cb)(void *ctx, const char *relpath, uint64_t size),
		void *ctx, const struct tcfs_progress *prog,
		struct tcfs_gc_result *res);

/* 1 when some file references blob h, 0 when none does, or -errno.  A
 * file removed but kept for the mount (limbo, ns.h) counts, and the empty
 * blob always does (the mount's own). */
struct tcfs_hash;
int tcfs_gc_referenced(struct tcfs_store *s, const struct tcfs_hash *h);
/* The same for files in the tree only: 0 for a blob that only removed
 * files name. */
int tcfs_gc_live(struct tcfs_store *s, const struct tcfs_hash *h);

#endif
