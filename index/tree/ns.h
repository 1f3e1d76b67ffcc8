/*
 * ns: the namespace, one row per directory entry (table nodes).
 *
 * A file's row is also its inode; its other names (hard links) are rows
 * that name that row (schema.c, version 7), and are shown as the file:
 * lookups, gets and lists return the file's node, with the name it was
 * found by (entry, parent, name).
 *
 * Every operation that changes the tree is one transaction and answers with
 * ext4's errors: EEXIST, ENOTEMPTY, ENOENT, ENOTDIR, EISDIR, EINVAL exactly
 * where ext4 gives them.  Inode numbers are never reused; a rename keeps a
 * node's number, a replacement (create + rename over) gets a new one.
 * Kernel rows follow the tree: whenever a directory holding a group file
 * changes, its kernels are refreshed in the same transaction.
 *
 * This half changes the tree; nsread.h reads it.  kernel.c reads the tree
 * through nsread.h only, so that ns.c may call it and it never calls back.
 */
#ifndef TCFS_NS_H
#define TCFS_NS_H

#include <stddef.h>
#include <stdint.h>

#include "index/base/hash.h"
#include "index/base/name.h"
#include "index/tree/nsread.h"	/* the nodes and reading them */

struct tcfs_store;

/* The permission bits an entry keeps when it comes into the store from a
 * directory (import) or goes out to one (export): no setuid, setgid or
 * sticky bit and no write for others, which a cache copied as root must
 * not carry from one tree to the other. */
static inline unsigned tcfs_ns_portable_mode(unsigned mode)
{
	return mode & 0775;
}

/* A file's content: which blob, how big as written, in which format. */
struct tcfs_content {
	struct tcfs_hash blob;
	uint64_t size;
	enum tcfs_fmt fmt;
};

/* Who owns a node.  TCFS_OWNER_MOUNT (-1) in either is whoever mounts
 * the store (schema.c, version 11); a NULL owner is both. */
#define TCFS_OWNER_MOUNT (-1)
struct tcfs_owner {
	int64_t uid;
	int64_t gid;
};

/* out and own are optional in the three below. */
int tcfs_ns_mkdir(struct tcfs_store *s, uint64_t parent, const char *name,
		  unsigned mode, int64_t mtime_ns,
		  const struct tcfs_owner *own, struct tcfs_node *out);
int tcfs_ns_create(struct tcfs_store *s, uint64_t parent, const char *name,
		   unsigned mode, int64_t mtime_ns,
		   const struct tcfs_content *c, const struct tcfs_owner *own,
		   struct tcfs_node *out);
/* A file for tcfs_ns_create_files: its name is borrowed. */
struct tcfs_ns_file {
	const char *name;
	unsigned mode;
	int64_t mtime_ns;
	struct tcfs_content c;
};
/* Creates n files in dir, owned by whoever mounts, as n tcfs_ns_create
 * would, but with what a create does for its dir (its mtime, its
 * kernels) done once.  dir must hold none of their names (else -EEXIST,
 * and none is made): a bulk load (tools/import.c) of a dir it made. */
int tcfs_ns_create_files(struct tcfs_store *s, uint64_t dir,
			 const struct tcfs_ns_file *f, size_t n);
/* target: 1 to TCFS_SYMLINK_MAX bytes, no NUL (else -ENOENT,
 * -ENAMETOOLONG). */
#define TCFS_SYMLINK_MAX 4095
int tcfs_ns_symlink(struct tcfs_store *s, uint64_t parent, const char *name,
		    const char *target, int64_t mtime_ns,
		    const struct tcfs_owner *own, struct tcfs_node *out);
/* Another name for the file or symlink ino, which keeps the file's owner:
 * -EPERM for a directory (as ext4), -ENOENT for one that has no name left
 * (in limbo). */
int tcfs_ns_link(struct tcfs_store *s, uint64_t ino, uint64_t newparent,
		 const char *newname, struct tcfs_node *out);
/* New content for an existing file, keeping its inode number. */
int tcfs_ns_set_content(struct tcfs_store *s, uint64_t ino,
			const struct tcfs_content *c, int64_t mtime_ns);

/* What tcfs_ns_setattr sets, as mask says; a hard link's owner and mode
 * are its file's.  Whether the caller may is the caller's to check. */
#define TCFS_SET_MODE 1
#define TCFS_SET_MTIME 2
#define TCFS_SET_UID 4
#define TCFS_SET_GID 8
#define TCFS_SET_ATIME 16
struct tcfs_attrs {
	unsigned mode;
	int64_t mtime_ns;
	int64_t atime_ns;
	struct tcfs_owner own;
};
int tcfs_ns_setattr(struct tcfs_store *s, uint64_t ino, int mask,
		    const struct tcfs_attrs *a);

/* flags: 0 or RENAME_NOREPLACE or RENAME_EXCHANGE, as renameat2(2). */
int tcfs_ns_rename(struct tcfs_store *s, uint64_t parent, const char *name,
		   uint64_t newparent, const char *newname, unsigned flags);
int tcfs_ns_unlink(struct tcfs_store *s, uint64_t parent, const char *name);
int tcfs_ns_rmdir(struct tcfs_store *s, uint64_t parent, const char *name);

/* A store opened with keep_unlinked (the mount) does not delete a node
 * that is unlinked, removed or replaced: it moves it to limbo (see
 * tcfs_ns_in_limbo), where no name reaches it but its inode number does, as the kernel
 * may still hold it (an open about to happen, a cached dentry).  When the
 * kernel forgets the inode, tcfs_ns_forget deletes it for good; a writer
 * opening the store purges what is left. */
int tcfs_ns_forget(struct tcfs_store *s, uint64_t ino);
int tcfs_ns_purge_unlinked(struct tcfs_store *s);

/* Removes name and, for a directory, everything below it, in one
 * transaction. */
int tcfs_ns_remove_tree(struct tcfs_store *s, uint64_t parent,
			const char *name);
/* The same as unlinks do it: in a store that keeps unlinked nodes, each
 * goes to limbo, readable by inode number until forgotten. */
int tcfs_ns_unlink_tree(struct tcfs_store *s, uint64_t parent,
			const char *name);

#endif
