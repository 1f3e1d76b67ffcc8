/*
 * dir: the directory operations.  Each is one transaction in the store
 * (ns.c), which answers with ext4's errors.  The store commits them in
 * batches (db.h): a rename, the way every cache writer publishes a file,
 * is committed before it is answered, and so is fsync of a directory;
 * anything else within a tick of the events thread (events.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/cas.h"
#include "index/group.h"
#include "index/io.h"
#include "index/kernel.h"
#include "index/store.h"
#include "priv.h"

void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	int bin = fs_bin_ino(parent);
	struct tcfs_node n;
	int rc = fs_view_reserved(fs, parent, name)
			 ? -EROFS
			 : tcfs_ns_mkdir(fs->store, fs_row(parent), name,
					 mode & 07777, tcfs_ns_now(), &n);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_reply_entry(req, &n, bin, FS_TTL);
	fs_changed(fs, fs_row(parent), bin, name);
}

/* Replies with a new entry; its name is never cached if it could become a
 * probe by a rename (see fs_op_create). */
static void reply_new(fuse_req_t req, fuse_ino_t parent, const char *name,
		      const struct tcfs_node *n, int rc)
{
	struct tcfs_fs *fs = fs_of(req);
	int bin = fs_bin_ino(parent);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_reply_entry(req, n, bin, fs_probe_name(name) ? 0 : FS_TTL);
	fs_changed(fs, fs_row(parent), bin, name);
}

void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		   const char *name)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node n;
	int rc = fs_view_reserved(fs, parent, name)
			 ? -EROFS
			 : tcfs_ns_symlink(fs->store, fs_row(parent), name,
					   link, tcfs_ns_now(), &n);

	reply_new(req, parent, name, &n, rc);
}

void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		const char *newname)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node n;
	int rc = fs_view_ino(ino) || fs_view_reserved(fs, newparent, newname)
			 ? -EROFS
			 : tcfs_ns_link(fs->store, fs_row(ino),
					fs_row(newparent), newname, &n);

	reply_new(req, newparent, newname, &n, rc);
}

/* Only regular files: the store keeps no device numbers, and a fifo or
 * socket would have to be served by this daemon. */
void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_content c = { fs->empty, 0, TCFS_FMT_RAW };
	struct tcfs_node n;
	int rc = -EPERM;

	(void)rdev;
	if (S_ISREG(mode))
		rc = fs_view_reserved(fs, parent, name)
			     ? -EROFS
			     : tcfs_ns_create(fs->store, fs_row(parent), name,
					      mode & 07777, tcfs_ns_now(), &c,
					      &n);
	reply_new(req, parent, name, &n, rc);
}

void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	int rc = fs_view_reserved(fs, parent, name)
			 ? -EROFS
			 : tcfs_ns_rmdir(fs->store, fs_row(parent), name);

	fuse_reply_err(req, -rc);
	if (rc == 0)
		fs_changed(fs, fs_row(parent), fs_bin_ino(parent), name);
}

void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	int rc = fs_view_reserved(fs, parent, name)
			 ? -EROFS
			 : tcfs_ns_unlink(fs->store, fs_row(parent), name);

	fuse_reply_err(req, -rc);
	if (rc == 0)
		fs_changed(fs, fs_row(parent), fs_bin_ino(parent), name);
}

/* Group files written where they could not be stored key-relative (in
 * Inductor's root/tmp.<uuid>, or as Triton 3.0's FILE.tmp.pid_*) can be
 * once they land in their key dir: the store becomes relocatable again. */
static void relocate_groups(struct tcfs_fs *fs, const struct tcfs_node *dir,
			    const struct tcfs_node *kids, size_t nk)
{
	struct tcfs_cas *cas = tcfs_store_cas(fs->store);
	int key;

	if (tcfs_kernel_key_dir_at(fs->store, dir->parent, dir->name, &key) <
		    0 ||
	    !key)
		return;
	for (size_t i = 0; i < nk; i++) {
		const struct tcfs_node *g = &kids[i];
		struct tcfs_content c;
		char *raw = NULL;
		size_t len = 0;
		int rc;

		if (g->kind != TCFS_FILE || g->fmt != TCFS_FMT_RAW ||
		    !tcfs_group_candidate(g->name, g->size))
			continue;
		/* Checked: damaged bytes must not pass into a new blob. */
		rc = tcfs_cas_read_checked(cas, &g->blob, TCFS_GROUP_MAX, &raw,
					   &len);
		if (rc < 0) {
			fs_blob_failed(fs, &g->blob, rc);
			continue;
		}
		if (tcfs_group_put(cas, dir->name, raw, len, fs_store_filter(fs),
				   &c, NULL) == 0 &&
		    c.fmt == TCFS_FMT_GROUP)
			tcfs_ns_set_content(fs->store, g->ino, &c, g->mtime_ns);
		free(raw);
	}
}

/* Before the reply: a group file that lands in its key dir, or a key
 * dir moved into place (Inductor's os.replace) with group files, can now
 * be made key-relative, which changes the size it renders to.  The first
 * lookup after the rename must see that size: a reader that looked up
 * the raw size would read the rendering cut to it. */
static void landed(struct tcfs_fs *fs, uint64_t dir, const char *name)
{
	struct tcfs_node n, *kids = NULL;
	size_t nk = 0;
	int key;

	if (tcfs_ns_lookup(fs->store, dir, name, &n) < 0)
		return;
	if (n.kind == TCFS_FILE) {
		struct tcfs_node keydir;

		if (tcfs_ns_get(fs->store, dir, &keydir) == 0)
			relocate_groups(fs, &keydir, &n, 1);
		return;
	}
	if (tcfs_ns_list(fs->store, n.ino, 0, 0, &kids, &nk) < 0)
		return;
	relocate_groups(fs, &n, kids, nk);
	/* A key dir moved into place keeps no IR it was given. */
	if (tcfs_kernel_key_dir_at(fs->store, dir, name, &key) < 0)
		key = 0;
	for (size_t i = 0; key && i < nk; i++)
		if (kids[i].kind == TCFS_FILE && fs_drops(fs, kids[i].name))
			tcfs_ns_unlink(fs->store, n.ino, kids[i].name);
	free(kids);
}

/* After the reply.  The kernel moves the file's cache entry, and with it
 * the entry's timeout: a file that lands on a probe name from a name the
 * kernel may cache is dropped from its cache (by the events thread).  Only
 * then: an invalidation waits in the kernel for the directory, and should
 * the daemon die meanwhile, with a request it had read holding that
 * directory, neither could ever end.  The writers Triton and Inductor
 * know publish from names never cached (lookup.c), so they cause none. */
static void after_rename(struct tcfs_fs *fs, uint64_t dir, const char *name,
			 int from_cached)
{
	struct tcfs_node n;

	if (from_cached && fs_probe_name(name) &&
	    tcfs_ns_lookup(fs->store, dir, name, &n) == 0 &&
	    n.kind == TCFS_FILE)
		fs_events_inval(fs, dir, name);
}

void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node src, dst;
	struct fs_pin *pins = NULL;
	size_t npins = 0;
	int rc;

	int bin = fs_bin_ino(parent), newbin = fs_bin_ino(newparent);

	if (fs_view_reserved(fs, parent, name) ||
	    fs_view_reserved(fs, newparent, newname)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	parent = fs_row(parent);
	newparent = fs_row(newparent);
	/* A file written and closed may not be committed yet (release comes
	 * asynchronously): it must land with its bytes, and so must the
	 * files of a directory that moves (rare: Inductor's key dirs). */
	rc = tcfs_ns_lookup(fs->store, parent, name, &src);
	if (rc == 0 && src.kind == TCFS_FILE && fs_drops(fs, newname) &&
	    !(flags & RENAME_EXCHANGE)) {
		/* An IR file published is accepted and dropped: it goes, and
		 * nothing lands at its new name.  Its writes are let go
		 * first, while its name still says what they are. */
		rc = fs_files_commit(fs, src.ino);
		if (rc == 0)
			rc = tcfs_ns_unlink(fs->store, parent, name);
		fuse_reply_err(req, -rc);
		if (rc == 0)
			fs_changed(fs, parent, bin, name);
		return;
	}
	if (rc == 0 && src.kind == TCFS_FILE)
		rc = fs_files_commit(fs, src.ino);
	else if (rc == 0)
		fs_files_flush_all(fs);
	/* Group files keep their bytes wherever they go (group.c). */
	if (rc == 0)
		rc = fs_groups_pins(fs, &src, newparent, newname, &pins,
				    &npins);
	if (rc == 0 && (flags & RENAME_EXCHANGE) &&
	    tcfs_ns_lookup(fs->store, newparent, newname, &dst) == 0)
		rc = fs_groups_pins(fs, &dst, parent, name, &pins, &npins);
	if (rc == 0)
		rc = tcfs_store_begin(fs->store);
	if (rc == 0) {
		rc = fs_groups_pin(fs, pins, npins);
		if (rc == 0)
			rc = tcfs_ns_rename(fs->store, parent, name, newparent,
					    newname, flags);
		rc = tcfs_store_end(fs->store, rc);
	}
	free(pins);
	if (rc == 0)
		rc = tcfs_store_sync(fs->store);
	if (rc == 0)
		landed(fs, newparent, newname);
	fuse_reply_err(req, -rc);
	if (rc == 0) {
		after_rename(fs, newparent, newname, !fs_probe_name(name));
		fs_changed(fs, parent, bin, name);
		fs_changed(fs, newparent, newbin, newname);
	}
}

void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi)
{
	fs_count(req);
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -tcfs_store_fsync(fs_of(req)->store));
}

/*
 * Offsets: 1 after ".", 2 after "..", and entry + 2 after a child (its
 * row's number: a hard link shows its file's inode).  Children come in
 * entry order, so resuming after the last one seen neither skips
 * nor repeats an entry while others are added or removed meanwhile.
 */
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	fs_count(req);
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node dir, *kids = NULL;
	size_t n = 0, used = 0, want = size / 32 + 1;
	uint64_t k = 0;
	char *buf;
	int bin, rc;

	(void)fi;
	if (fs_view_ino(ino)) {
		fs_view_readdir(req, ino, size, off);
		return;
	}
	bin = fs_bin_ino(ino);
	ino = fs_row(ino);
	rc = tcfs_ns_get(fs->store, ino, &dir);
	if (rc == 0 && dir.kind != TCFS_DIR)
		rc = -ENOTDIR;
	buf = rc == 0 ? malloc(size) : NULL;
	if (rc == 0 && !buf)
		rc = -ENOMEM;
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	for (; off < 2; off++) {
		struct stat st = { .st_mode = S_IFDIR };
		size_t len;

		st.st_ino = fs_shown(off == 0 ? ino
					      : (dir.parent ? dir.parent : ino),
				     bin);
		len = fuse_add_direntry(req, buf + used, size - used,
					off == 0 ? "." : "..", &st, off + 1);
		if (len > size - used)
			goto out;
		used += len;
	}
	/* The root's views come after its store entries (view.c). */
	if (off >= FS_VIEW_COOKIE(0)) {
		k = (uint64_t)(off - FS_VIEW_COOKIE(0));
		goto views;
	}
	/* A page of entries is at most a few hundred names. */
	rc = tcfs_ns_list(fs->store, ino, (uint64_t)off - 2, want, &kids, &n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct stat st = { 0 };
		size_t len;

		if (fs_hides(fs, bin, kids[i].name))
			continue;
		st.st_ino = fs_shown(kids[i].ino, bin);
		st.st_mode = fs_type(kids[i].kind);
		len = fuse_add_direntry(req, buf + used, size - used,
					kids[i].name, &st,
					(off_t)kids[i].entry + 2);
		if (len > size - used)
			goto out;
		used += len;
	}
views:
	if (rc == 0 && ino == TCFS_ROOT_INO && !bin && n < want)
		used += fs_view_root_entries(req, buf + used, size - used, &k);
out:
	free(kids);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}
