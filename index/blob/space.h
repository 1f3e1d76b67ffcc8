/*
 * space: how much of its file system the store may fill, and with what.
 *
 * A store shares its file system with whatever else is there, and a full
 * disk must cost a failed write, never a change already answered for.  So
 * blobs stop short of a reserve left to the index: 1/32 of the file
 * system, between 8 and 64 MiB.  A write that a blob cannot take fails at
 * once with ENOSPC, where it loses nothing; bytes a writer holds in memory
 * count as written already, since each of them must fit when it is
 * stored (cas.c).  The rows keep coming (a flood of mkdirs, the probe
 * log), and once less than half the reserve is left the index is tight:
 * the mount then commits each change alone before answering it (db.h),
 * so that one the disk cannot take fails by itself with ENOSPC, and logs
 * no probes (events.c).
 */
#ifndef TCFS_SPACE_H
#define TCFS_SPACE_H

#include <stdint.h>

struct tcfs_space {
	uint64_t avail;		/* bytes an unprivileged writer may still use */
	uint64_t reserve;	/* of those, left to the index */
};

/* Reads the file system that fd is on; 0 or -errno. */
int tcfs_space_read(int fd, struct tcfs_space *out);

/* 0 when blobs may take len more bytes while others hold pending bytes
 * that are to be written yet; else -ENOSPC with a message naming where
 * (path). */
int tcfs_space_blobs_fit(const struct tcfs_space *sp, uint64_t len,
			 uint64_t pending, const char *path);

/* Whether the index is into the second half of its reserve. */
static inline int tcfs_space_tight(const struct tcfs_space *sp)
{
	return sp->avail < sp->reserve / 2;
}

#endif
