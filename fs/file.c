/*
 * file: the store's files read and written (fs_store_ops, fs_bin_ops).
 * Writes go to the inode's pending writes (dirty.c), reads come from
 * them while there are any, else from the file's blob or its group
 * template rendered for the kind that reads it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/store/store.h"
#include "kind.h"

void fs_row_create(fuse_req_t req, const struct fs_ino *parent,
		   const struct fs_name *nm, mode_t mode,
		   struct fuse_file_info *fi)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_content c = { fs->empty, 0, TCFS_FMT_RAW };
	unsigned m = mode & 07777;
	struct tcfs_owner own;
	struct tcfs_node n;
	int rc = fs_new_owner(req, parent->row, 0, &m, &own);

	m = fs_users_mode(req, parent->row, nm->s, m, 0);

	if (rc == 0)
		rc = tcfs_ns_create(fs->store, parent->row, nm->s, m,
				    tcfs_ns_now(), &c, &own, &n);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* A probe name written in a temp dir keeps its dentry when renamed
	 * into the key dir: it must not be cached from the start. */
	rc = fs_reply_create(req, &n, parent->kind,
			     fs_name_uncached(nm) ? 0 : FS_TTL, fi);
	if (rc == 0)
		fs_changed(fs, parent->row, parent->kind, nm->s);
}

/* Replies with up to size bytes of a rendering from off. */
static void reply_part(fuse_req_t req, const char *bytes, size_t len,
		       size_t size, off_t off)
{
	size_t o = (size_t)off < len ? (size_t)off : len;

	fuse_reply_buf(req, bytes + o, len - o < size ? len - o : size);
}

/* Replies with the blob's bytes, spliced from its file when it can. */
static void reply_blob(fuse_req_t req, const struct tcfs_node *n,
		       size_t size, off_t off)
{
	struct tcfs_fs *fs = fs_of(req);
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);
	int fd = tcfs_cas_open_checked(tcfs_store_cas(fs->store), &n->blob);

	if (fd < 0) {
		fuse_reply_err(req, -fs_blob_failed(fs, &n->blob, fd));
		return;
	}
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].pos = off;
	bv.buf[0].fd = fd;
	fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
	close(fd);
}

void fs_row_read(fuse_req_t req, const struct fs_ino *i, size_t size,
		 off_t off)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node n;
	char *bytes = NULL;
	size_t len = 0;
	int rc = fs_files_read(fs, i->row, size, off, &bytes, &len, &n);

	if (rc == 1) {		/* its pending writes' */
		fuse_reply_buf(req, bytes, len);
		free(bytes);
		return;
	}
	if (rc == 0 && n.fmt == TCFS_FMT_GROUP)
		rc = fs_render_shown(fs, &n, i->kind, &bytes, &len, NULL);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (bytes)
		reply_part(req, bytes, len, size, off);
	else
		reply_blob(req, &n, size, off);
	free(bytes);
}

/* A user past their share of the size limit, whose kernels are all in
 * use, writes nothing more, nor anything that would take their bytes
 * that cannot be evicted past it (evict.c).  Those may hold the file's
 * committed bytes already (a file of theirs rewritten): the node is read
 * only when the write would be refused without them. */
static int over_share(struct tcfs_fs *fs, uid_t uid, uint64_t row,
		      uint64_t end)
{
	struct tcfs_node n;

	if (!fs_evict_over_share(fs, uid, end, 0))
		return 0;
	if (tcfs_ns_get(fs->store, row, &n) < 0 || n.uid != (int64_t)uid)
		return 1;
	return fs_evict_over_share(fs, uid, end, n.size);
}

void fs_row_write(fuse_req_t req, const struct fs_ino *i, const char *buf,
		  size_t size, off_t off)
{
	struct tcfs_fs *fs = fs_of(req);
	int rc = -EDQUOT;

	if (!size ||
	    !over_share(fs, fuse_req_ctx(req)->uid, i->row, (uint64_t)off + size))
		rc = fs_files_write(fs, i->row, buf, size, off);

	if (rc == 0)
		rc = fs_owner_wrote(req, i->row);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

int fs_row_commit(struct tcfs_fs *fs, const struct fs_ino *i)
{
	return fs_files_commit(fs, i->row);
}

/* A time that to_set sets: the one given, or now. */
static int64_t time_set(int to_set, int given, const struct timespec *t,
			int64_t now)
{
	if (!(to_set & given))
		return now;
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* What to_set asks of the store's setattr (TCFS_SET_*) of times, each
 * apart (utimensat's UTIME_OMIT leaves the other); the owner's and mode's
 * are fs_owner_setattr's. */
static int set_mask(const struct stat *attr, int to_set,
		    struct tcfs_attrs *a)
{
	int64_t now = tcfs_ns_now();
	int mask = 0;

	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		mask |= TCFS_SET_MTIME;
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
		mask |= TCFS_SET_ATIME;
	a->mtime_ns = time_set(to_set, FUSE_SET_ATTR_MTIME, &attr->st_mtim,
			       now);
	a->atime_ns = time_set(to_set, FUSE_SET_ATTR_ATIME, &attr->st_atim,
			       now);
	return mask;
}

void fs_row_setattr(fuse_req_t req, const struct fs_ino *i,
		    struct stat *attr, int to_set)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_attrs a = { 0 };
	struct tcfs_node n;
	int mask = set_mask(attr, to_set, &a);
	int rc = tcfs_ns_get(fs->store, i->row, &n);

	if (rc == 0)
		rc = fs_owner_setattr(req, &n, attr, to_set, &mask, &a);
	/* A shared kernel stays writable by its writer alone. */
	if (rc == 0 && (to_set & FUSE_SET_ATTR_MODE) &&
	    fs_users_mode(req, n.parent, n.name, attr->st_mode & 07777,
			  n.kind == TCFS_DIR) !=
		    (attr->st_mode & 07777))
		rc = -EPERM;
	if (rc == 0 && (to_set & FUSE_SET_ATTR_SIZE))
		rc = fs_files_truncate(fs, &n, (uint64_t)attr->st_size);
	/* A mode or time set now must not be undone by a later commit of
	 * earlier writes: commit them first. */
	if (rc == 0 && mask)
		rc = fs_files_commit(fs, i->row);
	if (rc == 0 && mask)
		rc = tcfs_ns_setattr(fs->store, i->row, mask, &a);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fs_reply_attr(req, i->kind, i->row);
}
