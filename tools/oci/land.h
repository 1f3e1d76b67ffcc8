/*
 * land: a cache tree brought into a mounted store through its mount
 * point, written as Triton and Inductor write a kernel: a dir the mount
 * lacks written whole in a temp dir renamed into place (one rename, not
 * one a file: most of a landing's cost through FUSE); into a dir there
 * already, each file under a temp name renamed into place, the group
 * files last.  Either way no process using the mount ever sees half a
 * kernel.  What the mount then holds is in its
 * views at once, and the daemon, the store's only writer, stays so.
 */
#ifndef TCFS_TOOLS_LAND_H
#define TCFS_TOOLS_LAND_H

#include <stdint.h>

struct progress;

struct land_stats {
	uint64_t files;		/* written */
	uint64_t kept;		/* already there: left as they were */
	uint64_t bytes;		/* of the files written */
	uint64_t kernels;	/* group files written */
	uint64_t kept_kernels;	/* group files already there: kept */
};

/* Copies the tree at src into the mount at dst, with binary_only none of
 * the IR (index/base/name.h: TCFS_ART_IR; the group files must already list
 * none).  On an error everything it wrote is removed again, and the
 * error returned with a message.  prog (may be NULL) hears how far it
 * got. */
int land_tree(const char *src, const char *dst, int binary_only,
	      struct land_stats *st, struct progress *prog);

#endif
