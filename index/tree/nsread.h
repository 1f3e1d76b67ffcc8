/*
 * nsread: reading the namespace (ns.h), one row per directory entry.
 *
 * The read half of ns, below the kernel model (kernel.c reads the tree
 * through it) and below ns.c, which changes the tree and keeps the kernel
 * rows in step.  Reads of the writer come from its node cache
 * (nodecache.h).
 */
#ifndef TCFS_NSREAD_H
#define TCFS_NSREAD_H

#include <stddef.h>
#include <stdint.h>

#include "index/base/hash.h"
#include "index/base/name.h"

struct tcfs_store;

#define TCFS_ROOT_INO 1
/* A removed node kept for the mount (see tcfs_ns_forget) has as parent
 * the negated inode number of the directory it was removed from: no name
 * reaches it, but what it was (a group file in which key dir) is known. */
static inline int tcfs_ns_in_limbo(uint64_t parent, uint64_t *was_in)
{
	int64_t p = (int64_t)parent;

	if (p >= 0)
		return 0;
	if (was_in)
		*was_in = (uint64_t)-p;
	return 1;
}

enum tcfs_kind {
	TCFS_DIR = 'd',
	TCFS_FILE = 'f',
	TCFS_SYMLINK = 'l',
	/* Another name of a file: ns.c and nodecache.c see such rows; every
	 * node returned is the file's instead. */
	TCFS_HARDLINK = 'h',
};

/* How a file's blob becomes its bytes. */
enum tcfs_fmt {
	TCFS_FMT_RAW = 0,	/* the blob is the file */
	TCFS_FMT_GROUP = 1,	/* a key-relative group template (group.h) */
};

struct tcfs_node {
	uint64_t ino;
	uint64_t entry;		/* the row of the name found: ino, but for
				 * a file's other names */
	uint64_t parent;
	char name[TCFS_NAME_MAX + 1];
	enum tcfs_kind kind;
	unsigned mode;		/* permission bits */
	int64_t uid;		/* owner; -1: whoever mounts (schema.c) */
	int64_t gid;
	uint64_t size;		/* as written; see schema.c for group files;
				 * a symlink's target length */
	int64_t mtime_ns;
	int64_t atime_ns;	/* mtime_ns until a utimensat sets it */
	int64_t ctime_ns;
	uint32_t nlink;		/* names; 2 + subdirs for a dir; 0 in limbo */
	struct tcfs_hash blob;	/* files only */
	enum tcfs_fmt fmt;
};

int tcfs_ns_get(struct tcfs_store *s, uint64_t ino, struct tcfs_node *out);
int tcfs_ns_lookup(struct tcfs_store *s, uint64_t parent, const char *name,
		   struct tcfs_node *out);
/* A symlink's target into buf (len bytes, NUL included): 0, -EINVAL for
 * a node that is no symlink, -ENAMETOOLONG when it does not fit. */
int tcfs_ns_readlink(struct tcfs_store *s, uint64_t ino, char *buf,
		     size_t len);
/* The entries anywhere in the tree named as temps may be (tmp.*,
 * *.tmp.pid_*): in one scan, not one query per dir.  Whether each is
 * one where it lies is the caller's to say (tcfs_name_is_temp).  *out is
 * owned by the caller (free()). */
int tcfs_ns_temps(struct tcfs_store *s, struct tcfs_node **out, size_t *n);
/* Up to max (0: all) children of dir with entry rows above after, in
 * entry order, so that a listing resumed from the last inode seen is stable
 * while entries come and go.  *out is owned by the caller (free()). */
int tcfs_ns_list(struct tcfs_store *s, uint64_t dir, uint64_t after,
		 size_t max, struct tcfs_node **out, size_t *n);
/* A child as a listing shows it: its name, its kind and inode (a hard
 * link's are its file's), and its entry row to resume after. */
struct tcfs_dirent {
	uint64_t entry;
	uint64_t ino;
	enum tcfs_kind kind;
	char name[TCFS_NAME_MAX + 1];
};
/* tcfs_ns_list with only what a listing shows: four columns a row where
 * a node has fifteen, for readdir (fs/dir.c), which reads every child
 * of a root of 100,000 key dirs. */
int tcfs_ns_entries(struct tcfs_store *s, uint64_t dir, uint64_t after,
		    size_t max, struct tcfs_dirent **out, size_t *n);
/* "KEY/NAME" style path of a node below the root, for messages; len >= 1.
 * -ENAMETOOLONG when it does not fit. */
/* Every entry whose name matches glob (SQLite's GLOB), wherever it is:
 * *out owned by the caller (free()).  A full scan: for rare commands. */
int tcfs_ns_named(struct tcfs_store *s, const char *glob,
		  struct tcfs_node **out, size_t *n);
int tcfs_ns_path(struct tcfs_store *s, uint64_t ino, char *buf, size_t len);
/* Every user's own dir (name.h's TCFS_NAME_PRIVATE_PREFIX), from an
 * index of them alone.  *out owned by the caller (free()). */
int tcfs_ns_private_dirs(struct tcfs_store *s, struct tcfs_node **out,
			 size_t *n);
/* Current time in nanoseconds, the unit of mtime_ns, atime_ns and
 * ctime_ns. */
int64_t tcfs_ns_now(void);

#endif
