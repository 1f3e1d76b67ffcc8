/*
 * file: reading and writing files.
 *
 * Opening a file costs the kernel nothing: OPEN and FLUSH are answered
 * ENOSYS once, after which the kernel sends neither (no-open mode), serves
 * reads from its page cache, and asks for a page only once, by inode.
 * Removed inodes stay readable while the kernel holds them (ns.h), so an
 * open or mapped file keeps its bytes after a replace or unlink, as dlopen
 * of a replaced .so needs.
 *
 * A file created through the mount has a handle (CREATE returns one): its
 * writes go to a stage (cas.h) that becomes the file's content, a blob
 * named in one transaction, on release, fsync, or when the file is renamed
 * (Triton renames right after close, and release comes asynchronously).
 * A write to an existing file, which has no handle, is committed at once.
 * A group file is stored key-relative when its children lie in its key dir.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "index/cas.h"
#include "index/err.h"
#include "index/group.h"
#include "index/io.h"
#include "index/store.h"
#include "priv.h"

#define GROUP_MAX (16u << 20)

struct fs_file {
	pthread_mutex_t mu;
	struct tcfs_node node;	/* as opened: answers fstat after unlink */
	int fd;			/* the bytes as opened: the blob, or -1 */
	char *bytes;		/* ... or a group file rendered for us */
	size_t len;
	struct tcfs_cas_stage *stage;	/* writes, once there are any */
	int writable;
	int dirty;		/* the stage holds bytes not yet committed */
	struct fs_file *prev, *next;	/* fs->files: the writable ones */
};

static struct fs_file *file_of(struct fuse_file_info *fi)
{
	return (struct fs_file *)(uintptr_t)fi->fh;
}

/* Points the handle's read side at the node's current bytes. */
static int load_base(struct tcfs_fs *fs, struct fs_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->bytes);
	f->fd = -1;
	f->bytes = NULL;
	if (f->node.fmt == TCFS_FMT_GROUP)
		return fs_render(fs, &f->node, &f->bytes, &f->len);
	f->fd = tcfs_cas_open_blob(tcfs_store_cas(fs->store), &f->node.blob);
	return f->fd < 0 ? f->fd : 0;
}

/* The first write copies the bytes as opened into a stage. */
static int ensure_stage(struct tcfs_fs *fs, struct fs_file *f)
{
	char buf[1 << 16];
	uint64_t off = 0;
	int rc;

	if (f->stage)
		return 0;
	rc = tcfs_cas_stage_new(tcfs_store_cas(fs->store), &f->stage);
	if (rc < 0)
		return rc;
	if (f->bytes)
		return tcfs_cas_stage_write(f->stage, f->bytes, f->len, 0);
	while (f->fd >= 0) {
		ssize_t got = pread(f->fd, buf, sizeof(buf), (off_t)off);

		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		rc = tcfs_cas_stage_write(f->stage, buf, (size_t)got, off);
		if (rc < 0)
			return rc;
		off += (uint64_t)got;
	}
	return 0;
}

/* Stores the staged bytes: a group file whose children lie in its key dir
 * as a template, anything else as it is. */
static int store_stage(struct tcfs_fs *fs, struct fs_file *f,
		       struct tcfs_content *c)
{
	struct tcfs_cas *cas = tcfs_store_cas(fs->store);
	char key[TCFS_NAME_MAX + 1], *raw = NULL, *tmpl = NULL;
	size_t len = 0, tlen = 0;
	int rc;

	c->fmt = TCFS_FMT_RAW;
	if (tcfs_name_artifact(f->node.name) == TCFS_ART_GROUP &&
	    fs_key_of(fs, &f->node, key, sizeof(key)) == 0 &&
	    lseek(tcfs_cas_stage_fd(f->stage), 0, SEEK_SET) == 0 &&
	    tcfs_io_read_small(tcfs_cas_stage_fd(f->stage), GROUP_MAX, &raw,
			       &len) == 0 &&
	    tcfs_group_relativize(raw, len, key, &tmpl, &tlen) == 1) {
		rc = tcfs_cas_put_buf(cas, tmpl, tlen, &c->blob, NULL);
		c->size = len;
		c->fmt = TCFS_FMT_GROUP;
		tcfs_cas_stage_abort(f->stage);
	} else {
		rc = tcfs_cas_stage_commit(f->stage, &c->blob, &c->size, NULL);
	}
	f->stage = NULL;
	free(raw);
	free(tmpl);
	return rc;
}

/* Makes the handle's writes the file's content.  Called with f->mu held. */
static int commit(struct tcfs_fs *fs, struct fs_file *f)
{
	struct tcfs_content c;
	int64_t now = tcfs_ns_now();
	int rc;

	if (!f->dirty)
		return 0;
	rc = store_stage(fs, f, &c);
	if (rc == 0) {
		rc = tcfs_ns_set_content(fs->store, f->node.ino, &c, now);
		if (rc == -ENOENT)	/* unlinked meanwhile: bytes go too */
			rc = 0;
	}
	if (rc < 0) {
		syslog(LOG_ERR, "tcfs: %s: %s", f->node.name, tcfs_err_msg());
		return rc;
	}
	f->dirty = 0;
	f->node.blob = c.blob;
	f->node.size = c.size;
	f->node.fmt = c.fmt;
	f->node.mtime_ns = now;
	return load_base(fs, f);
}

static void track(struct tcfs_fs *fs, struct fs_file *f, int add)
{
	pthread_mutex_lock(&fs->files_mu);
	if (add) {
		f->next = fs->files;
		if (f->next)
			f->next->prev = f;
		fs->files = f;
	} else {
		if (f->prev)
			f->prev->next = f->next;
		else
			fs->files = f->next;
		if (f->next)
			f->next->prev = f->prev;
	}
	pthread_mutex_unlock(&fs->files_mu);
}

static void file_free(struct fs_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	tcfs_cas_stage_abort(f->stage);
	free(f->bytes);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* A handle on node; truncate starts it with no bytes at all. */
static int file_new(struct tcfs_fs *fs, const struct tcfs_node *n,
		    int flags, struct fs_file **out)
{
	struct fs_file *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->mu, NULL);
	f->node = *n;
	f->fd = -1;
	f->writable = (flags & O_ACCMODE) != O_RDONLY;
	if (f->writable && (flags & O_TRUNC)) {
		rc = tcfs_cas_stage_new(tcfs_store_cas(fs->store), &f->stage);
		f->dirty = 1;
	} else {
		rc = load_base(fs, f);
	}
	if (rc < 0) {
		file_free(f);
		return rc;
	}
	if (f->writable)
		track(fs, f, 1);
	*out = f;
	return 0;
}

static void file_close(struct tcfs_fs *fs, struct fs_file *f)
{
	if (f->writable)
		track(fs, f, 0);
	file_free(f);
}

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* No-open mode: see the top of this file. */
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, struct fuse_file_info *fi)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_content c = { fs->empty, 0, TCFS_FMT_RAW };
	struct tcfs_node n;
	struct fs_file *f;
	struct fuse_entry_param e = { 0 };
	int rc;

	rc = tcfs_ns_create(fs->store, parent, name, mode & 07777,
			    tcfs_ns_now(), &c, &n);
	if (rc == 0)
		rc = file_new(fs, &n, fi->flags | O_TRUNC, &f);
	if (rc == 0)
		rc = fs_stat(fs, &n, &e.attr);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	f->dirty = 0;	/* empty is what the row already says */
	e.ino = n.ino;
	/* A probe name written in a temp dir keeps its dentry when renamed
	 * into the key dir: it must not be cached from the start. */
	e.entry_timeout = fs_probe_name(name) ? 0 : FS_TTL;
	e.attr_timeout = FS_TTL;
	fi->fh = (uintptr_t)f;
	fs_inode_ref(fs, n.ino);
	if (fuse_reply_create(req, &e, fi) != 0) {
		fs_inode_forget(fs, n.ino, 1);
		file_close(fs, f);
	}
}

/* The handle with uncommitted writes to ino, if any, with its lock held. */
static struct fs_file *dirty_handle(struct tcfs_fs *fs, uint64_t ino)
{
	struct fs_file *hit = NULL;

	pthread_mutex_lock(&fs->files_mu);
	for (struct fs_file *f = fs->files; f && !hit; f = f->next) {
		pthread_mutex_lock(&f->mu);
		if (f->node.ino == ino && f->dirty)
			hit = f;
		else
			pthread_mutex_unlock(&f->mu);
	}
	pthread_mutex_unlock(&fs->files_mu);
	return hit;
}

static void reply_read(fuse_req_t req, struct fs_file *f, size_t size,
		       off_t off)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);

	if (f->stage || f->fd >= 0) {
		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv.buf[0].fd = f->stage ? tcfs_cas_stage_fd(f->stage) : f->fd;
		bv.buf[0].pos = off;
		fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
		return;
	}
	if ((size_t)off >= f->len)
		size = 0;
	else if (size > f->len - (size_t)off)
		size = f->len - (size_t)off;
	fuse_reply_buf(req, size ? f->bytes + off : NULL, size);
}

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct tcfs_fs *fs = fs_of(req);
	struct fs_file *f = file_of(fi);
	struct tcfs_node n;
	int rc;

	if (!f)
		f = dirty_handle(fs, ino);
	else
		pthread_mutex_lock(&f->mu);
	if (f) {
		reply_read(req, f, size, off);
		pthread_mutex_unlock(&f->mu);
		return;
	}
	/* No handle (no-open mode): the bytes the inode has now. */
	rc = tcfs_ns_get(fs->store, ino, &n);
	if (rc == 0)
		rc = file_new(fs, &n, O_RDONLY, &f);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	reply_read(req, f, size, off);
	file_close(fs, f);
}

/* A write with no handle (an existing file opened for writing) has no
 * close to wait for: it is committed at once. */
static int write_now(struct tcfs_fs *fs, uint64_t ino, const char *buf,
		     size_t size, off_t off)
{
	struct tcfs_node n;
	struct fs_file *f;
	int rc = fs_files_commit(fs, ino);

	if (rc == 0)
		rc = tcfs_ns_get(fs->store, ino, &n);
	if (rc == 0)
		rc = file_new(fs, &n, O_RDWR, &f);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->mu);
	rc = ensure_stage(fs, f);
	if (rc == 0)
		rc = tcfs_cas_stage_write(f->stage, buf, size, (uint64_t)off);
	f->dirty = rc == 0;
	if (rc == 0)
		rc = commit(fs, f);
	pthread_mutex_unlock(&f->mu);
	file_close(fs, f);
	return rc;
}

void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		 size_t size, off_t off, struct fuse_file_info *fi)
{
	struct tcfs_fs *fs = fs_of(req);
	struct fs_file *f = file_of(fi);
	int rc;

	if (!f) {
		rc = write_now(fs, ino, buf, size, off);
	} else {
		pthread_mutex_lock(&f->mu);
		rc = ensure_stage(fs, f);
		if (rc == 0)
			rc = tcfs_cas_stage_write(f->stage, buf, size,
						  (uint64_t)off);
		if (rc == 0)
			f->dirty = 1;
		pthread_mutex_unlock(&f->mu);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

static int commit_handle(struct tcfs_fs *fs, struct fs_file *f)
{
	int rc;

	pthread_mutex_lock(&f->mu);
	rc = commit(fs, f);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

int fs_files_commit(struct tcfs_fs *fs, uint64_t ino)
{
	struct fs_file *f = dirty_handle(fs, ino);
	int rc;

	if (!f)
		return 0;
	rc = commit(fs, f);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi)
{
	struct tcfs_fs *fs = fs_of(req);
	struct fs_file *f = file_of(fi);

	(void)datasync;
	fuse_reply_err(req, f ? -commit_handle(fs, f)
			      : -fs_files_commit(fs, ino));
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tcfs_fs *fs = fs_of(req);
	struct fs_file *f = file_of(fi);

	(void)ino;
	commit_handle(fs, f);
	file_close(fs, f);
	fuse_reply_err(req, 0);
}

void fs_files_flush_all(struct tcfs_fs *fs)
{
	pthread_mutex_lock(&fs->files_mu);
	for (struct fs_file *f = fs->files; f; f = f->next) {
		pthread_mutex_lock(&f->mu);
		commit(fs, f);
		pthread_mutex_unlock(&f->mu);
	}
	pthread_mutex_unlock(&fs->files_mu);
}

int fs_files_size(struct tcfs_fs *fs, uint64_t ino, uint64_t *size)
{
	struct stat st;
	int found = 0;

	pthread_mutex_lock(&fs->files_mu);
	for (struct fs_file *f = fs->files; f && !found; f = f->next) {
		pthread_mutex_lock(&f->mu);
		if (f->node.ino == ino && f->stage &&
		    fstat(tcfs_cas_stage_fd(f->stage), &st) == 0) {
			*size = (uint64_t)st.st_size;
			found = 1;
		}
		pthread_mutex_unlock(&f->mu);
	}
	pthread_mutex_unlock(&fs->files_mu);
	return found;
}

/* Truncation by path: through a handle of our own. */
static int truncate_node(struct tcfs_fs *fs, const struct tcfs_node *n,
			 uint64_t size)
{
	struct fs_file *f;
	int rc = file_new(fs, n, O_RDWR, &f);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->mu);
	rc = ensure_stage(fs, f);
	if (rc == 0)
		rc = tcfs_cas_stage_truncate(f->stage, size);
	f->dirty = rc == 0;
	if (rc == 0)
		rc = commit(fs, f);
	pthread_mutex_unlock(&f->mu);
	file_close(fs, f);
	return rc;
}

static int set_size(struct tcfs_fs *fs, const struct tcfs_node *n,
		    struct fuse_file_info *fi, uint64_t size)
{
	struct fs_file *f = fi ? file_of(fi) : NULL;
	int rc;

	if (n->kind == TCFS_DIR)
		return -EISDIR;
	if (!f || !f->writable)
		return truncate_node(fs, n, size);
	pthread_mutex_lock(&f->mu);
	rc = ensure_stage(fs, f);
	if (rc == 0)
		rc = tcfs_cas_stage_truncate(f->stage, size);
	if (rc == 0)
		f->dirty = 1;
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		   int to_set, struct fuse_file_info *fi)
{
	struct tcfs_fs *fs = fs_of(req);
	struct fs_file *own = fi ? file_of(fi) : NULL;
	int64_t mtime = tcfs_ns_now();
	struct tcfs_node n;
	struct stat st;
	int rc = 0, mask = 0;

	/* Writes a closed handle has not committed yet (release comes
	 * asynchronously) come first: a truncate or utime by path is later. */
	if (!own || !own->writable)
		rc = fs_files_commit(fs, ino);
	if (rc == 0)
		rc = tcfs_ns_get(fs->store, ino, &n);
	if (rc == 0 && (((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != fs->uid) ||
			((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != fs->gid)))
		rc = -EPERM;	/* the store keeps no owners */
	if (rc == 0 && (to_set & FUSE_SET_ATTR_SIZE))
		rc = set_size(fs, &n, fi, (uint64_t)attr->st_size);
	if (to_set & FUSE_SET_ATTR_MODE)
		mask |= TCFS_SET_MODE;
	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		mask |= TCFS_SET_MTIME;
	if (to_set & FUSE_SET_ATTR_MTIME)
		mtime = (int64_t)attr->st_mtim.tv_sec * 1000000000 +
			attr->st_mtim.tv_nsec;
	if (rc == 0 && mask)
		rc = tcfs_ns_setattr(fs->store, ino, mask, attr->st_mode, mtime);
	if (rc == 0)
		rc = tcfs_ns_get(fs->store, ino, &n);
	if (rc == 0)
		rc = fs_stat(fs, &n, &st);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fuse_reply_attr(req, &st, FS_TTL);
}

int fs_file_node(struct fuse_file_info *fi, struct tcfs_node *n)
{
	struct fs_file *f = fi ? file_of(fi) : NULL;

	if (!f)
		return -ENOENT;
	pthread_mutex_lock(&f->mu);
	*n = f->node;
	pthread_mutex_unlock(&f->mu);
	return 0;
}
