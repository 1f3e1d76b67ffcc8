/*
 * damage: what the mount does with a blob found damaged or gone as it is
 * read.  Every blob is checked the first time it is served (index/cas.h),
 * and one that fails is never served: the reader gets EIO, the blob goes
 * to STORE/quarantine/, and the files that name it leave the tree with
 * their key dirs' group files (index/damage.h), as tcfs fsck --repair
 * would have it.  The next probe of those kernels misses, and Triton
 * compiles them again.
 */
#include <errno.h>
#include <stdio.h>
#include <syslog.h>

#include "index/cas.h"
#include "index/damage.h"
#include "index/err.h"
#include "index/store.h"
#include "priv.h"

/* A removed name the kernel may have cached goes from its cache too. */
static void forget_entry(void *ctx, uint64_t parent, const char *name)
{
	struct tcfs_fs *fs = ctx;

	if (!fs_probe_name(name))	/* probe names are never cached */
		fs_events_inval(fs, parent, name);
}

int fs_blob_failed(struct tcfs_fs *fs, const struct tcfs_hash *h, int rc)
{
	char why[512], hex[TCFS_HASH_HEXLEN];
	uint64_t dropped = 0;
	int gone = rc == -ENOENT;

	/* Only the check that found it acts; others are told -EIO. */
	if (rc != -EBADMSG && rc != -ENOENT)
		return rc;
	snprintf(why, sizeof(why), "%s", tcfs_err_msg());
	if (!gone && tcfs_cas_quarantine(tcfs_store_cas(fs->store), h) < 0)
		syslog(LOG_ERR, "tcfs: %s", tcfs_err_msg());
	rc = tcfs_damage_drop_users(fs->store, h, forget_entry, fs, &dropped);
	tcfs_hash_hex(h, hex);
	if (rc < 0)
		syslog(LOG_ERR, "tcfs: %s; its files could not be removed: %s",
		       why, tcfs_err_msg());
	else
		syslog(LOG_ERR, "tcfs: %s%s; removed the %llu files that "
		       "named blob %s, with their kernels' group files: those "
		       "kernels will be recompiled", why,
		       gone ? "" : " (moved to quarantine/)",
		       (unsigned long long)dropped, hex);
	return -EIO;
}
