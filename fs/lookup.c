/*
 * lookup: finding names and answering for their attributes, with the
 * kernel cache policy that makes the mount fast: names and attributes are
 * cached for a day, misses too (as negative entries), except the probes,
 * whose every lookup must reach us to be logged.  A name that would be a
 * probe is never cached wherever it is: a dentry keeps its timeout when
 * renamed, and Triton renames group files and modules into their key dirs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "index/store.h"
#include "priv.h"

int fs_hides(const struct tcfs_fs *fs, int bin, const char *name)
{
	return (bin || fs->binary_only) &&
	       tcfs_name_artifact(name) == TCFS_ART_IR;
}

int fs_drops(const struct tcfs_fs *fs, const char *name)
{
	return fs->store_binary_only &&
	       tcfs_name_landing(name) == TCFS_ART_IR;
}

enum tcfs_group_filter fs_store_filter(const struct tcfs_fs *fs)
{
	return fs->store_binary_only ? TCFS_GROUP_BINARY_ONLY : TCFS_GROUP_ALL;
}

enum tcfs_group_filter fs_filter(const struct tcfs_fs *fs, int bin)
{
	return bin || fs->binary_only ? TCFS_GROUP_BINARY_ONLY
				      : TCFS_GROUP_ALL;
}

void fs_changed(struct tcfs_fs *fs, uint64_t parent, int bin,
		const char *name)
{
	if (atomic_load(&fs->bin_used))
		fs_events_inval(fs, fs_shown(parent, !bin), name);
}

int fs_stat(struct tcfs_fs *fs, const struct tcfs_node *given, int bin,
	    struct stat *st)
{
	const struct tcfs_node *n = given;
	struct tcfs_node fresh;
	uint64_t size = n->size;
	int64_t mtime = n->mtime_ns;
	int dirty = 0;

	/* A handle's uncommitted writes are the file's bytes.  Looked for
	 * before the store is read again: a commit lands in the store before
	 * its handle stops counting as dirty, so no size is missed between
	 * the two (the kernel believes the size we give it). */
	if (n->kind == TCFS_FILE) {
		dirty = fs_files_size(fs, n->ino, &size, &mtime);
		if (!dirty && tcfs_ns_get(fs->store, n->ino, &fresh) == 0) {
			n = &fresh;
			size = n->size;
			mtime = n->mtime_ns;
		}
	}
	if (!dirty && n->kind == TCFS_FILE && n->fmt == TCFS_FMT_GROUP) {
		char *bytes;
		int rc = fs_render_shown(fs, n, bin, &bytes, &size, &mtime);

		if (rc < 0)
			return rc;
		free(bytes);
	}
	memset(st, 0, sizeof(*st));
	st->st_ino = fs_shown(n->ino, bin);
	st->st_mode = fs_type(n->kind) | n->mode;
	st->st_nlink = n->nlink;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	st->st_mtim.tv_sec = mtime / 1000000000;
	st->st_mtim.tv_nsec = mtime % 1000000000;
	st->st_atim = st->st_mtim;
	/* Writes not committed yet changed the inode too. */
	if (n->ctime_ns > mtime)
		mtime = n->ctime_ns;
	st->st_ctim.tv_sec = mtime / 1000000000;
	st->st_ctim.tv_nsec = mtime % 1000000000;
	return 0;
}

void fs_reply_entry(fuse_req_t req, const struct tcfs_node *n, int bin,
		    double ttl)
{
	struct fuse_entry_param e = { 0 };
	int rc = fs_stat(fs_of(req), n, bin, &e.attr);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	e.ino = fs_shown(n->ino, bin);
	e.entry_timeout = ttl;
	e.attr_timeout = FS_TTL;
	fs_inode_ref(fs_of(req), n->ino);
	if (fuse_reply_entry(req, &e) != 0)
		fs_inode_forget(fs_of(req), n->ino, 1);
}

void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	struct fuse_entry_param miss = { 0 };
	enum tcfs_probe probe = 0;
	struct tcfs_node dir, n;
	double ttl = FS_TTL;
	int bin = fs_bin_ino(parent), rc;

	if (fs_view_lookup(req, parent, name))
		return;
	parent = fs_row(parent);
	if (bin && !atomic_load(&fs->bin_used))
		atomic_store(&fs->bin_used, 1);
	if (fs_hides(fs, bin, name)) {
		miss.entry_timeout = FS_TTL;	/* hidden for good */
		fuse_reply_entry(req, &miss);
		return;
	}
	/* Only a probe-like name needs its directory: is it a key dir? */
	if (fs_probe_name(name)) {
		ttl = 0;
		rc = tcfs_ns_get(fs->store, parent, &dir);
		if (rc < 0) {
			fuse_reply_err(req, -rc);
			return;
		}
		probe = fs_probe_kind(fs, &dir, name);
	}
	if (probe)
		fs_probe_lock(fs, 0);
	rc = tcfs_ns_lookup(fs->store, parent, name, &n);
	if (probe && rc == 0)
		rc = fs_probe_whole(fs, &dir, &n, probe);
	if (probe && (rc == 0 || rc == -ENOENT))
		fs_probe_seen(fs, req, &dir, name, probe, rc == 0, bin);
	if (probe)
		fs_probe_unlock(fs);
	if (rc == -ENOENT) {
		/* A negative entry: a cached miss costs the kernel nothing. */
		miss.entry_timeout = ttl;
		fuse_reply_entry(req, &miss);
		return;
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_reply_entry(req, &n, bin, ttl);
}

void fs_reply_attr(fuse_req_t req, uint64_t ino)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node n;
	struct stat st;
	int rc;

	/* An unlinked file still open is in limbo: found all the same. */
	rc = tcfs_ns_get(fs->store, fs_row(ino), &n);
	if (rc == 0)
		rc = fs_stat(fs, &n, fs_bin_ino(ino), &st);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, FS_TTL);
}

void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_count(req);
	(void)fi;
	if (fs_view_ino(ino))
		fs_view_getattr(req, ino);
	else
		fs_reply_attr(req, ino);
}

mode_t fs_type(enum tcfs_kind kind)
{
	switch (kind) {
	case TCFS_DIR:
		return S_IFDIR;
	case TCFS_SYMLINK:
		return S_IFLNK;
	default:
		return S_IFREG;
	}
}

void fs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	fs_count(req);
	char target[TCFS_SYMLINK_MAX + 1];
	int rc;

	if (fs_view_ino(ino)) {
		fs_view_readlink(req, ino);
		return;
	}
	rc = tcfs_ns_readlink(fs_of(req)->store, fs_row(ino), target,
			      sizeof(target));
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, target);
}

void fs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	struct statvfs sv;

	(void)ino;
	if (statvfs(tcfs_store_path(fs->store), &sv) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	sv.f_namemax = TCFS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}
