/*
 * land: what the fleet tier fetched (remote.h), into the store, through the
 * index as a Triton write would leave it: every child as a blob and a file
 * of the key dir, the group file last, all in one transaction, so a reader
 * sees the whole kernel or none of it, and its kernel row (origin
 * "remote") follows in the same transaction.
 *
 * Nothing local is ever replaced: a child already there with other bytes
 * (a compile of the same key on this node, half written) makes the
 * landing -EEXIST, and the probe stays a miss.
 */
#ifndef TCFS_REMOTE_LAND_H
#define TCFS_REMOTE_LAND_H

#include <stdint.h>

#include "index/remote/remote.h"
#include "index/tree/nsread.h"

struct tcfs_store;

/* Lands f in the key dir dir (a key dir of s, named f->key).  A kernel's
 * group file is made in Triton's file format, relocatable as group.h keeps
 * every group file, so readers see its children in their key dir.  *landed (optional): the names made, for the caller to
 * tell the kernel's caches; up to TCFS_WIRE_FILES_MAX + 1, owned by f.
 * 0 (also when the group file or single file is there already), -EEXIST,
 * or -errno with a message. */
int tcfs_remote_land(struct tcfs_store *s, uint64_t dir,
		     const struct tcfs_fetched *f, const char **landed,
		     size_t *nlanded);
/* Lands f, a pack (pack.h) fetched for the dir f->name in the dir
 * parent: that dir made if absent, then every file of the pack below it
 * (its dirs made), all in one transaction.  *out: the dir.  Nothing local
 * is replaced (-EEXIST, as above); a pack that does not parse is -EBADMSG
 * with a message. */
int tcfs_remote_land_pack(struct tcfs_store *s, uint64_t parent,
			  const struct tcfs_fetched *f, struct tcfs_node *out);

#endif
