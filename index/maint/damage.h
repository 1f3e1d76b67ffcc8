/*
 * damage: what a lost or damaged blob takes out of the cache.
 *
 * Every file that names the blob goes, and with each the group files of
 * its key dir, so Triton misses and recompiles those kernels rather than
 * load a group whose children are gone or wrong.  Used by fsck --repair,
 * by a writer opening the store after a crash (recover.h), and by the
 * mount when a blob fails its check as it is read.
 */
#ifndef TCFS_DAMAGE_H
#define TCFS_DAMAGE_H

#include <stdint.h>

struct tcfs_hash;
struct tcfs_store;

/* Told of every entry removed: its directory's inode number and name. */
typedef void tcfs_damage_cb(void *ctx, uint64_t parent, const char *name);

/* Removes the file name in parent and the group files of parent, in one
 * transaction.  Adds 1 to *dropped (optional) when the file was still
 * there (an earlier drop in the same dir may have taken it).  cb
 * (optional) hears of each entry removed. */
int tcfs_damage_drop_file(struct tcfs_store *s, uint64_t parent,
			  const char *name, tcfs_damage_cb *cb, void *ctx,
			  uint64_t *dropped);

/* The same for every file that names blob h, in one transaction. */
int tcfs_damage_drop_users(struct tcfs_store *s, const struct tcfs_hash *h,
			   tcfs_damage_cb *cb, void *ctx, uint64_t *dropped);

#endif
