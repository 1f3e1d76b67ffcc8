/*
 * attr: a row's attributes as the kernel sees them, and the entries and
 * attributes replied, for every kind that shows rows: the one place that
 * hands the kernel a lookup of a row (counted, inode.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index/store/store.h"
#include "priv.h"

/* A file's size and time: its uncommitted writes', else its row's, fresh
 * from the store (n, if it was read again); 1 when they are the writes'. */
static int size_of(struct tcfs_fs *fs, const struct tcfs_node **n,
		   struct tcfs_node *fresh, uint64_t *size, int64_t *mtime)
{
	int dirty;

	/* Looked for before the store is read again: a commit lands in the
	 * store before its handle stops counting as dirty, so no size is
	 * missed between the two (the kernel believes the size we give). */
	dirty = fs_files_size(fs, (*n)->ino, size, mtime);
	if (!dirty && tcfs_ns_get(fs->store, (*n)->ino, fresh) == 0) {
		*n = fresh;
		*size = fresh->size;
		*mtime = fresh->mtime_ns;
	}
	return dirty;
}

int fs_stat(struct tcfs_fs *fs, const struct tcfs_node *given,
	    enum fs_kind kind, struct stat *st)
{
	const struct tcfs_node *n = given;
	struct tcfs_node fresh;
	uint64_t size = n->size;
	int64_t mtime = n->mtime_ns;
	int dirty = 0;

	if (n->kind == TCFS_FILE)
		dirty = size_of(fs, &n, &fresh, &size, &mtime);
	if (!dirty && n->kind == TCFS_FILE && n->fmt == TCFS_FMT_GROUP) {
		int rc = fs_render_size(fs, n, kind, &size, &mtime);

		if (rc < 0)
			return rc;
	}
	memset(st, 0, sizeof(*st));
	st->st_ino = fs_ino_make(kind, n->ino);
	st->st_mode = fs_type(n->kind) | n->mode;
	st->st_nlink = n->nlink;
	st->st_uid = fs_uid_of(fs, n);
	st->st_gid = fs_gid_of(fs, n);
	st->st_size = (off_t)size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	st->st_mtim.tv_sec = mtime / 1000000000;
	st->st_mtim.tv_nsec = mtime % 1000000000;
	st->st_atim.tv_sec = n->atime_ns / 1000000000;
	st->st_atim.tv_nsec = n->atime_ns % 1000000000;
	/* Writes not committed yet changed the inode too. */
	if (n->ctime_ns > mtime)
		mtime = n->ctime_ns;
	st->st_ctim.tv_sec = mtime / 1000000000;
	st->st_ctim.tv_nsec = mtime % 1000000000;
	return 0;
}

/* n's entry in kind, cached for ttl: 0 or -errno. */
static int entry_of(struct tcfs_fs *fs, const struct tcfs_node *n,
		    enum fs_kind kind, double ttl, struct fuse_entry_param *e)
{
	int rc = fs_stat(fs, n, kind, &e->attr);

	e->ino = fs_ino_make(kind, n->ino);
	e->entry_timeout = ttl;
	e->attr_timeout = fs_kind_ttl(kind);
	return rc;
}

/* Replies n as a new entry (fi NULL) or a created file, taking the
 * kernel's reference first, and giving it back when the reply fails. */
static int reply_new(fuse_req_t req, const struct tcfs_node *n,
		     enum fs_kind kind, double ttl, struct fuse_file_info *fi)
{
	struct tcfs_fs *fs = fs_of(req);	/* req goes with the reply */
	struct fuse_entry_param e = { 0 };
	int rc = entry_of(fs, n, kind, ttl, &e);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return rc;
	}
	fs_inode_ref(fs, n->ino);
	if (fi)
		fi->fh = 0;	/* writes are kept by inode */
	if ((fi ? fuse_reply_create(req, &e, fi) : fuse_reply_entry(req, &e)) !=
	    0)
		fs_inode_forget(fs, n->ino, 1);
	return 0;
}

int fs_reply_entry(fuse_req_t req, const struct tcfs_node *n,
		   enum fs_kind kind, double ttl)
{
	return reply_new(req, n, kind, ttl, NULL);
}

int fs_reply_create(fuse_req_t req, const struct tcfs_node *n,
		    enum fs_kind kind, double ttl, struct fuse_file_info *fi)
{
	assert(fi);
	return reply_new(req, n, kind, ttl, fi);
}

void fs_reply_attr(fuse_req_t req, enum fs_kind kind, uint64_t row)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node n;
	struct stat st;
	int rc;

	/* An unlinked file still open is in limbo: found all the same. */
	rc = tcfs_ns_get(fs->store, row, &n);
	if (rc == 0)
		rc = fs_stat(fs, &n, kind, &st);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, fs_kind_ttl(kind));
}
