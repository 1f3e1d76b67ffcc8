/*
 * kind: the operations of one kind of inode, as the Linux kernel's
 * inode_operations.  ops.c, the dispatch layer, decodes the number the
 * kernel gives (ino.h), classifies a request's names (struct fs_name),
 * counts the request and calls the table of the inode's kind.  A handler
 * never asks what kind it serves: it was given its own.
 *
 * A new kind of inode is a tag in ino.h, a table here and a file that
 * fills it; ops.c picks it by fs_kind.  A NULL write operation is EROFS
 * (the kind is read-only), a NULL read one ENOSYS, both answered by
 * ops.c.  A request naming two inodes (link, rename) goes to the kind of
 * the one the name is looked up in, and only when the other's kind has
 * the same operation.
 */
#ifndef TCFS_FS_KIND_H
#define TCFS_FS_KIND_H

#include "ino.h"
#include "priv.h"

struct fs_kind_ops {
	/* Whether parent/name, in a dir of another kind, is this kind's
	 * (the views' names at the root): optional. */
	int (*claims)(struct tcfs_fs *fs, const struct fs_ino *parent,
		      const struct fs_name *nm);
	void (*lookup)(fuse_req_t req, const struct fs_ino *parent,
		       const struct fs_name *nm);
	/* The kernel gave back n lookups of i (no reply). */
	void (*forget)(struct tcfs_fs *fs, const struct fs_ino *i,
		       uint64_t n);
	void (*getattr)(fuse_req_t req, const struct fs_ino *i);
	void (*readlink)(fuse_req_t req, const struct fs_ino *i);
	void (*readdir)(fuse_req_t req, const struct fs_ino *i, size_t size,
			off_t off);
	void (*read)(fuse_req_t req, const struct fs_ino *i, size_t size,
		     off_t off);
	/* The writes: NULL in a read-only kind. */
	void (*mkdir)(fuse_req_t req, const struct fs_ino *parent,
		      const struct fs_name *nm, mode_t mode);
	void (*symlink)(fuse_req_t req, const char *link,
			const struct fs_ino *parent, const struct fs_name *nm);
	void (*link)(fuse_req_t req, const struct fs_ino *i,
		     const struct fs_ino *newparent, const struct fs_name *nm);
	void (*mknod)(fuse_req_t req, const struct fs_ino *parent,
		      const struct fs_name *nm, mode_t mode);
	void (*create)(fuse_req_t req, const struct fs_ino *parent,
		       const struct fs_name *nm, mode_t mode,
		       struct fuse_file_info *fi);
	void (*unlink)(fuse_req_t req, const struct fs_ino *parent,
		       const struct fs_name *nm);
	void (*rmdir)(fuse_req_t req, const struct fs_ino *parent,
		      const struct fs_name *nm);
	void (*rename)(fuse_req_t req, const struct fs_ino *parent,
		       const struct fs_name *nm, const struct fs_ino *newparent,
		       const struct fs_name *newnm, unsigned int flags);
	void (*write)(fuse_req_t req, const struct fs_ino *i, const char *buf,
		      size_t size, off_t off);
	void (*setattr)(fuse_req_t req, const struct fs_ino *i,
			struct stat *attr, int to_set);
	/* What fsync and release commit first: 0 or -errno.  NULL: there
	 * is nothing to commit. */
	int (*commit)(struct tcfs_fs *fs, const struct fs_ino *i);
};

/* rows.c: the store's rows, binary-only/'s filter over them, and the
 * browse tree's read-only copy of them. */
extern const struct fs_kind_ops fs_store_ops, fs_bin_ops, fs_browse_ops;
/* view.c: by-name/, by-arch/, .tcfs/. */
extern const struct fs_kind_ops fs_view_ops;

/* The store kinds' operations (lookup.c, dir.c, file.c), which rows.c
 * puts in both tables: each serves a row in the kind its fs_ino says. */
void fs_row_lookup(fuse_req_t req, const struct fs_ino *parent,
		   const struct fs_name *nm);
void fs_row_forget(struct tcfs_fs *fs, const struct fs_ino *i, uint64_t n);
void fs_row_getattr(fuse_req_t req, const struct fs_ino *i);
void fs_row_readlink(fuse_req_t req, const struct fs_ino *i);
void fs_row_readdir(fuse_req_t req, const struct fs_ino *i, size_t size,
		    off_t off);
void fs_row_read(fuse_req_t req, const struct fs_ino *i, size_t size,
		 off_t off);
void fs_row_mkdir(fuse_req_t req, const struct fs_ino *parent,
		  const struct fs_name *nm, mode_t mode);
void fs_row_symlink(fuse_req_t req, const char *link,
		    const struct fs_ino *parent, const struct fs_name *nm);
void fs_row_link(fuse_req_t req, const struct fs_ino *i,
		 const struct fs_ino *newparent, const struct fs_name *nm);
void fs_row_mknod(fuse_req_t req, const struct fs_ino *parent,
		  const struct fs_name *nm, mode_t mode);
void fs_row_create(fuse_req_t req, const struct fs_ino *parent,
		   const struct fs_name *nm, mode_t mode,
		   struct fuse_file_info *fi);
void fs_row_unlink(fuse_req_t req, const struct fs_ino *parent,
		   const struct fs_name *nm);
void fs_row_rmdir(fuse_req_t req, const struct fs_ino *parent,
		  const struct fs_name *nm);
void fs_row_rename(fuse_req_t req, const struct fs_ino *parent,
		   const struct fs_name *nm, const struct fs_ino *newparent,
		   const struct fs_name *newnm, unsigned int flags);
void fs_row_write(fuse_req_t req, const struct fs_ino *i, const char *buf,
		  size_t size, off_t off);
void fs_row_setattr(fuse_req_t req, const struct fs_ino *i,
		    struct stat *attr, int to_set);
int fs_row_commit(struct tcfs_fs *fs, const struct fs_ino *i);

#endif
