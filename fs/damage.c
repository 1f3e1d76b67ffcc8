/*
 * damage: what the mount does with a blob found damaged or gone as it is
 * read.  Every blob is checked the first time it is served (index/blob/cas.h),
 * and one that fails is never served: the reader gets EIO, the blob goes
 * to STORE/quarantine/, and the files that name it leave the tree with
 * their key dirs' group files (index/maint/damage.h), as tcfs fsck --repair
 * would have it.  The next probe of those kernels misses, and Triton
 * compiles them again.
 *
 * Triton reads a kernel's files only once its probe has hit, and an EIO
 * then fails the whole program.  So a probe that would hit first checks
 * the blobs its reader is about to load (the key dir's files, or the
 * module), once per key dir and daemon: a kernel with a bad one misses
 * instead, and is compiled again by the very process that probed it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

#include "index/blob/blobset.h"
#include "index/blob/cas.h"
#include "index/maint/damage.h"
#include "index/base/err.h"
#include "index/base/text.h"
#include "index/store/store.h"
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
		syslog(LOG_ERR, "tcfs: %s%s; removed the %llu %s that "
		       "named blob %s, with their kernels' group files: those "
		       "kernels will be recompiled", why,
		       gone ? "" : " (moved to quarantine/)",
		       (unsigned long long)dropped, TCFS_NOUN(dropped, "file"),
		       hex);
	return -EIO;
}

/* The key dirs whose files were all checked, by the XXH3 of their inode
 * number (blobset.h): a file that lands there later was written by this
 * daemon, which counts as checked (cas.h). */
struct fs_checked {
	pthread_mutex_t mu;
	struct tcfs_blobset dirs;
};

int fs_checked_new(struct fs_checked **out)
{
	struct fs_checked *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	*out = c;
	return 0;
}

void fs_checked_free(struct fs_checked *c)
{
	if (!c)
		return;
	tcfs_blobset_free(&c->dirs);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static int dir_checked(struct fs_checked *c, uint64_t ino, int set)
{
	struct tcfs_hash h;
	int yes;

	tcfs_hash_buf(&ino, sizeof(ino), &h);
	pthread_mutex_lock(&c->mu);
	yes = tcfs_blobset_get(&c->dirs, &h);
	if (set && !yes)	/* out of memory: checked again next time */
		tcfs_blobset_set(&c->dirs, &h, 1);
	pthread_mutex_unlock(&c->mu);
	return yes;
}

/* Checks one file's blob; 1 when it was bad (and is taken out now). */
static int bad_file(struct tcfs_fs *fs, const struct tcfs_node *f)
{
	int rc = tcfs_cas_check(tcfs_store_cas(fs->store), &f->blob);

	if (rc == -EBADMSG || rc == -ENOENT || rc == -EIO) {
		fs_blob_failed(fs, &f->blob, rc);
		return 1;
	}
	return 0;	/* no verdict (a read error): the read will say */
}

int fs_probe_whole(struct tcfs_fs *fs, const struct tcfs_node *dir,
		   const struct tcfs_node *n, enum tcfs_probe kind)
{
	struct tcfs_node *kids = NULL;
	size_t nk = 0;
	int bad = 0;

	if (n->kind != TCFS_FILE)
		return 0;
	if (kind != TCFS_PROBE_KERNEL)
		return bad_file(fs, n) ? -ENOENT : 0;
	if (dir_checked(fs->checked, dir->ino, 0))
		return 0;
	if (tcfs_ns_list(fs->store, dir->ino, 0, 0, &kids, &nk) < 0)
		return 0;	/* the reads will check */
	for (size_t i = 0; i < nk; i++)
		if (kids[i].kind == TCFS_FILE)
			bad |= bad_file(fs, &kids[i]);
	free(kids);
	if (bad)
		return -ENOENT;
	dir_checked(fs->checked, dir->ino, 1);
	return 0;
}
