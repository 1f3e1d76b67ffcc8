/*
 * ops: the dispatch layer, libfuse's low-level entry points.  Each counts
 * its request (.tcfs/metrics.prom), decodes the inode numbers it is given
 * into {kind, row} (ino.h), classifies its names once (struct fs_name)
 * and calls the operation of that kind (kind.h); what a kind lacks is
 * answered here, EROFS for a write and ENOSYS for anything else.  The
 * requests that no kind tells apart (statfs, fsyncdir, open) are
 * answered here too.
 */
#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "index/store/store.h"
#include "kind.h"

static const struct fs_kind_ops *const kinds[FS_KINDS] = {
	[FS_KIND_STORE] = &fs_store_ops,
	[FS_KIND_BIN] = &fs_bin_ops,
	[FS_KIND_VIEW] = &fs_view_ops,
	[FS_KIND_BROWSE] = &fs_browse_ops,
};

/* Every request counts itself first. */
static void counted(fuse_req_t req)
{
	atomic_fetch_add_explicit(&fs_of(req)->requests, 1,
				  memory_order_relaxed);
}

/* Counts the request, and decodes ino into *i: its kind's operations. */
static const struct fs_kind_ops *enter(fuse_req_t req, uint64_t ino,
				       struct fs_ino *i)
{
	counted(req);
	*i = fs_ino_of(ino);
	assert(i->kind < FS_KINDS && kinds[i->kind]);
	return kinds[i->kind];
}

/* The operations of the kind that parent/name is: the parent's, unless
 * another kind claims the name there (the views' names at the root). */
static const struct fs_kind_ops *owner(struct tcfs_fs *fs,
				       const struct fs_ino *parent,
				       const struct fs_name *nm)
{
	for (size_t k = 0; k < FS_KINDS; k++)
		if (k != parent->kind && kinds[k]->claims &&
		    kinds[k]->claims(fs, parent, nm))
			return kinds[k];
	return kinds[parent->kind];
}

/* A request about parent/name: counted, decoded, classified, and routed
 * to where the name is for its user (users.c).  NULL when it was
 * answered already: a name this user may not see is not there, or not
 * to be made (EACCES). */
static const struct fs_kind_ops *enter_name(fuse_req_t req, uint64_t parent,
					    const char *name,
					    struct fs_ino *p,
					    struct fs_name *nm,
					    enum fs_route how)
{
	const struct fs_kind_ops *o;

	enter(req, parent, p);
	fs_name_of(nm, name);
	o = owner(fs_of(req), p, nm);
	if (o != kinds[p->kind] || fs_users_route(req, p, nm, how) == 0)
		return o;
	fuse_reply_err(req, how <= FS_FIND ? ENOENT : EACCES);
	return NULL;
}

/* Whether the kind lacks the operation (absent): then err is replied. */
static int lacks(fuse_req_t req, int absent, int err)
{
	if (absent)
		fuse_reply_err(req, err);
	return absent;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* In no-open mode (file.c) there is no OPEN to carry O_TRUNC: it
	 * must come as a SETATTR of the size. */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
	/* Writes must reach us as they happen: a file's bytes are committed
	 * when it is closed. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static void op_destroy(void *userdata)
{
	fs_files_flush_all(userdata);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_ino p;
	struct fs_name nm;
	const struct fs_kind_ops *o =
		enter_name(req, parent, name, &p, &nm, FS_LOAD);

	if (o && !lacks(req, !o->lookup, ENOSYS))
		o->lookup(req, &p, &nm);
}

static void forget_one(struct tcfs_fs *fs, uint64_t ino, uint64_t n)
{
	struct fs_ino i = fs_ino_of(ino);

	if (kinds[i.kind]->forget)
		kinds[i.kind]->forget(fs, &i, n);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	counted(req);
	forget_one(fs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	counted(req);
	for (size_t k = 0; k < count; k++)
		forget_one(fs_of(req), forgets[k].ino, forgets[k].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs_ino i;
	const struct fs_kind_ops *o = enter(req, ino, &i);

	(void)fi;
	if (!lacks(req, !o->getattr, ENOSYS))
		o->getattr(req, &i);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fs_ino i;
	const struct fs_kind_ops *o = enter(req, ino, &i);

	(void)fi;
	if (!lacks(req, !o->setattr, EROFS))
		o->setattr(req, &i, attr, to_set);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_ino i;
	const struct fs_kind_ops *o = enter(req, ino, &i);

	if (!lacks(req, !o->readlink, ENOSYS))
		o->readlink(req, &i);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct fs_ino p;
	struct fs_name nm;
	const struct fs_kind_ops *o =
		enter_name(req, parent, name, &p, &nm, FS_MKDIR);

	if (o && !lacks(req, !o->mkdir, EROFS))
		o->mkdir(req, &p, &nm, mode);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_ino p;
	struct fs_name nm;
	const struct fs_kind_ops *o =
		enter_name(req, parent, name, &p, &nm, FS_FIND);

	if (o && !lacks(req, !o->unlink, EROFS))
		o->unlink(req, &p, &nm);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_ino p;
	struct fs_name nm;
	const struct fs_kind_ops *o =
		enter_name(req, parent, name, &p, &nm, FS_FIND);

	if (o && !lacks(req, !o->rmdir, EROFS))
		o->rmdir(req, &p, &nm);
}

/* Both names must be of kinds that rename, and of the same family of
 * operations: a rename never crosses from one to another. */
static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct fs_ino p, np;
	struct fs_name nm, newnm;
	const struct fs_kind_ops *o =
		enter_name(req, parent, name, &p, &nm, FS_FIND);
	const struct fs_kind_ops *no;

	if (!o)
		return;
	np = fs_ino_of(newparent);
	fs_name_of(&newnm, newname);
	no = owner(fs_of(req), &np, &newnm);
	if (no == kinds[np.kind] &&
	    fs_users_route(req, &np, &newnm, FS_PLACE) < 0) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (!lacks(req, !o->rename || o->rename != no->rename, EROFS))
		o->rename(req, &p, &nm, &np, &newnm, flags);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	struct fs_ino p;
	struct fs_name nm;
	const struct fs_kind_ops *o =
		enter_name(req, parent, name, &p, &nm, FS_PLACE);

	if (o && !lacks(req, !o->symlink, EROFS))
		o->symlink(req, link, &p, &nm);
}

/* As rename: the inode's kind must link the same way as the new name's. */
static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct fs_ino i, np;
	struct fs_name nm;
	const struct fs_kind_ops *o =
		enter_name(req, newparent, newname, &np, &nm, FS_PLACE);

	i = fs_ino_of(ino);
	if (o && !lacks(req, !o->link || o->link != kinds[i.kind]->link, EROFS))
		o->link(req, &i, &np, &nm);
}

/* Only regular files: the store keeps no device numbers, and a fifo or
 * socket would have to be served by this daemon. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	struct fs_ino p;
	struct fs_name nm;
	const struct fs_kind_ops *o =
		enter_name(req, parent, name, &p, &nm, FS_PLACE);

	(void)rdev;
	if (o && !lacks(req, !S_ISREG(mode), EPERM) &&
	    !lacks(req, !o->mknod, EROFS))
		o->mknod(req, &p, &nm, mode);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct fs_ino p;
	struct fs_name nm;
	const struct fs_kind_ops *o =
		enter_name(req, parent, name, &p, &nm, FS_PLACE);

	if (o && !lacks(req, !o->create, EROFS))
		o->create(req, &p, &nm, mode, fi);
}

/* Opening a file costs the kernel nothing: OPEN and FLUSH are answered
 * ENOSYS once, after which the kernel sends neither (no-open mode). */
static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	counted(req);
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs_ino i;
	const struct fs_kind_ops *o = enter(req, ino, &i);

	(void)fi;
	if (!lacks(req, !o->read, ENOSYS))
		o->read(req, &i, size, off);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_ino i;
	const struct fs_kind_ops *o = enter(req, ino, &i);

	(void)fi;
	if (!lacks(req, !o->write, EROFS))
		o->write(req, &i, buf, size, off);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct fs_ino i;
	const struct fs_kind_ops *o = enter(req, ino, &i);
	int rc = o->commit ? o->commit(fs_of(req), &i) : 0;

	(void)datasync;
	(void)fi;
	if (rc == 0)
		rc = tcfs_store_fsync(fs_of(req)->store);
	fuse_reply_err(req, -rc);
}

/* Before the kernel learns there is no OPEN, a created file may still be
 * released: a good moment to commit. */
static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs_ino i;
	const struct fs_kind_ops *o = enter(req, ino, &i);

	(void)fi;
	if (o->commit)
		o->commit(fs_of(req), &i);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	counted(req);
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -tcfs_store_fsync(fs_of(req)->store));
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	struct fs_ino i;
	const struct fs_kind_ops *o = enter(req, ino, &i);

	(void)fi;
	if (!lacks(req, !o->readdir, ENOSYS))
		o->readdir(req, &i, size, off);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct tcfs_fs *fs = fs_of(req);
	struct statvfs sv;

	counted(req);
	(void)ino;
	if (statvfs(tcfs_store_path(fs->store), &sv) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	sv.f_namemax = TCFS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops fs_fuse_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.symlink = op_symlink,
	.link = op_link,
	.mknod = op_mknod,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.release = op_release,
	.fsync = op_fsync,
	.fsyncdir = op_fsyncdir,
	.readdir = op_readdir,
	.readlink = op_readlink,
	.statfs = op_statfs,
	.create = op_create,
};
