/*
 * fsck: checking a store end to end, and repairing what is safe to repair.
 *
 * Checked: the SQLite index's own integrity, every blob's bytes against its
 * name, every file's blob being present, blobs being read-only, the kernels
 * table matching the tree.  Repair never deletes bytes: a damaged blob is
 * moved to quarantine/, and the files that named a damaged or missing blob
 * are removed together with their key dir's group file, so Triton recompiles
 * that kernel instead of loading part of it.
 */
#ifndef TCFS_FSCK_H
#define TCFS_FSCK_H

#include <stdint.h>

#include "index/base/progress.h"

struct tcfs_hash;
struct tcfs_store;

enum tcfs_fsck_problem {
	TCFS_FSCK_INDEX,	/* index.db fails SQLite's integrity check */
	TCFS_FSCK_DAMAGED,	/* a blob's bytes do not hash to its name */
	TCFS_FSCK_MISSING,	/* a file's blob is not in objects/ */
	TCFS_FSCK_WRITABLE,	/* a blob lost its read-only mode */
	TCFS_FSCK_STRAY,	/* a file in objects/ that is not a blob */
	TCFS_FSCK_KERNEL,	/* a group file without its kernels row */
};

struct tcfs_fsck_report {
	enum tcfs_fsck_problem what;
	const char *path;	/* "KEY/FILE" in the cache, or under STORE/ */
	const char *detail;
	int repaired;
};

struct tcfs_fsck_result {
	uint64_t blobs;		/* blobs verified */
	uint64_t files;		/* files whose blob was looked for */
	uint64_t problems;
	uint64_t repaired;
	uint64_t orphans;	/* unreferenced blobs: for gc, not damage */
	uint64_t orphan_bytes;
};

/* With repair the store must be open as the writer.  cb hears of every
 * problem as it is found (and, with repair, after it is mended); prog
 * (optional) of each step, and of each blob verified. */
int tcfs_fsck_run(struct tcfs_store *s, int repair,
		  void (*cb)(void *ctx, const struct tcfs_fsck_report *r),
		  void *ctx, const struct tcfs_progress *prog,
		  struct tcfs_fsck_result *res);

#endif
