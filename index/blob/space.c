/* space: the reserve blobs leave to the index, and when the index is tight. */
#include "index/blob/space.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#include "index/base/err.h"

#define RESERVE_DIV 32
#define RESERVE_MIN (8u << 20)
#define RESERVE_MAX (64u << 20)

int tcfs_space_read(int fd, struct tcfs_space *out)
{
	struct statvfs v;
	uint64_t total;

	if (fstatvfs(fd, &v) < 0)
		return -errno;
	total = (uint64_t)v.f_blocks * v.f_frsize;
	out->avail = (uint64_t)v.f_bavail * v.f_frsize;
	/* The least is what the index may need between two checkpoints:
	 * SQLite's WAL grows to 1000 pages (4 MiB) before one, and the
	 * checkpoint grows the database. */
	out->reserve = total / RESERVE_DIV;
	if (out->reserve < RESERVE_MIN)
		out->reserve = RESERVE_MIN;
	if (out->reserve > RESERVE_MAX)
		out->reserve = RESERVE_MAX;
	return 0;
}

int tcfs_space_blobs_fit(const struct tcfs_space *sp, uint64_t len,
			 uint64_t pending, const char *path)
{
	if (sp->avail >= len + pending + sp->reserve)
		return 0;
	return tcfs_err_set(-ENOSPC, "%s: %s (%llu KiB left, kept for the "
			    "index)", path, strerror(ENOSPC),
			    (unsigned long long)(sp->avail >> 10));
}
