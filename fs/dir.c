/*
 * dir: the directory operations.  Each is one transaction in the store
 * (ns.c), which answers with ext4's errors.  The store commits them in
 * batches (db.h): a rename, the way every cache writer publishes a file,
 * is committed before it is answered, and so is fsync of a directory;
 * anything else within a tick of the events thread (events.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/model/group.h"
#include "index/base/io.h"
#include "index/model/kernel.h"
#include "index/store/store.h"
#include "kind.h"

void fs_row_mkdir(fuse_req_t req, const struct fs_ino *parent,
		  const struct fs_name *nm, mode_t mode)
{
	struct tcfs_fs *fs = fs_of(req);
	unsigned m = mode & 07777;
	struct tcfs_owner own;
	struct tcfs_node n;
	int rc = fs_new_owner(req, parent->row, 1, &m, &own);

	m = fs_users_mode(req, parent->row, nm->s, m, 1);

	if (rc == 0)
		rc = tcfs_ns_mkdir(fs->store, parent->row, nm->s, m,
				   tcfs_ns_now(), &own, &n);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_reply_entry(req, &n, parent->kind,
		       fs_name_uncached(nm) ? 0 : FS_TTL);
	fs_changed(fs, parent->row, parent->kind, nm->s);
}

/* Replies with a new entry; its name is never cached if it could become a
 * probe by a rename (see fs_row_create). */
static void reply_new(fuse_req_t req, const struct fs_ino *parent,
		      const struct fs_name *nm, const struct tcfs_node *n,
		      int rc)
{
	struct tcfs_fs *fs = fs_of(req);	/* req goes with the reply */

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_reply_entry(req, n, parent->kind,
		       fs_name_uncached(nm) ? 0 : FS_TTL);
	fs_changed(fs, parent->row, parent->kind, nm->s);
}

void fs_row_symlink(fuse_req_t req, const char *link,
		    const struct fs_ino *parent, const struct fs_name *nm)
{
	unsigned m = 0777;
	struct tcfs_owner own;
	struct tcfs_node n;
	int rc = fs_new_owner(req, parent->row, 0, &m, &own);

	if (rc == 0)
		rc = tcfs_ns_symlink(fs_of(req)->store, parent->row, nm->s,
				     link, tcfs_ns_now(), &own, &n);

	reply_new(req, parent, nm, &n, rc);
}

void fs_row_link(fuse_req_t req, const struct fs_ino *i,
		 const struct fs_ino *newparent, const struct fs_name *nm)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node n;
	int rc = tcfs_ns_get(fs->store, i->row, &n);

	if (rc == 0)
		rc = fs_users_may_move(fs, n.parent, &n, newparent->row);
	if (rc == 0)
		rc = tcfs_ns_link(fs->store, i->row, newparent->row, nm->s,
				  &n);
	reply_new(req, newparent, nm, &n, rc);
}

/* Only regular files (ops.c refuses the others). */
void fs_row_mknod(fuse_req_t req, const struct fs_ino *parent,
		  const struct fs_name *nm, mode_t mode)
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
	reply_new(req, parent, nm, &n, rc);
}

void fs_row_rmdir(fuse_req_t req, const struct fs_ino *parent,
		  const struct fs_name *nm)
{
	struct tcfs_fs *fs = fs_of(req);
	int rc = tcfs_ns_rmdir(fs->store, parent->row, nm->s);

	fuse_reply_err(req, -rc);
	if (rc == 0)
		fs_changed(fs, parent->row, parent->kind, nm->s);
}

void fs_row_unlink(fuse_req_t req, const struct fs_ino *parent,
		   const struct fs_name *nm)
{
	struct tcfs_fs *fs = fs_of(req);
	int rc = tcfs_ns_unlink(fs->store, parent->row, nm->s);

	fuse_reply_err(req, -rc);
	if (rc == 0)
		fs_changed(fs, parent->row, parent->kind, nm->s);
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
static void landed(struct tcfs_fs *fs, uint64_t dir, const struct fs_name *nm)
{
	const char *name = nm->s;
	struct tcfs_node n, *kids = NULL;
	size_t nk = 0;
	int key;

	/* Every artifact Triton publishes is renamed into place: only a
	 * group file's name, or a dir, is worth the lookups below. */
	if ((nm->art != TCFS_ART_GROUP && nm->art != TCFS_ART_OTHER) ||
	    nm->entry > TCFS_PROBE_MODULE)
		return;
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
		if (kids[i].kind == TCFS_FILE) {
			struct fs_name kid;

			fs_name_of(&kid, kids[i].name);
			if (fs_drops(fs, &kid))
				tcfs_ns_unlink(fs->store, n.ino, kids[i].name);
		}
	free(kids);
}

/* After the reply.  The kernel moves the file's cache entry, and with it
 * the entry's timeout: a file that lands on a probe name from a name the
 * kernel may cache is dropped from its cache (by the events thread).  Only
 * then: an invalidation waits in the kernel for the directory, and should
 * the daemon die meanwhile, with a request it had read holding that
 * directory, neither could ever end.  The writers Triton and Inductor
 * know publish from names never cached (lookup.c), so they cause none. */
static void after_rename(struct tcfs_fs *fs, uint64_t dir,
			 const struct fs_name *nm, int from_cached)
{
	struct tcfs_node n;

	if (from_cached && fs_name_uncached(nm) &&
	    tcfs_ns_lookup(fs->store, dir, nm->s, &n) == 0 &&
	    n.kind == TCFS_FILE)
		fs_events_inval(fs, dir, nm->s);
}

/* An IR file published under -o store_binary_only is accepted and
 * dropped: it goes, and nothing lands at its new name.  Its writes are
 * let go first, while its name still says what they are. */
static void drop_published(fuse_req_t req, const struct fs_ino *parent,
			   const struct fs_name *nm, const struct tcfs_node *src)
{
	struct tcfs_fs *fs = fs_of(req);
	int rc = fs_files_commit(fs, src->ino);

	if (rc == 0)
		rc = tcfs_ns_unlink(fs->store, parent->row, nm->s);
	fuse_reply_err(req, -rc);
	if (rc == 0)
		fs_changed(fs, parent->row, parent->kind, nm->s);
}

/* The rename itself, in one transaction with the pins that keep group
 * files' bytes (group.c), committed before it is answered. */
static int move(struct tcfs_fs *fs, const struct tcfs_node *src,
		uint64_t parent, const char *name, uint64_t newparent,
		const char *newname, unsigned int flags)
{
	struct fs_pin *pins = NULL;
	struct tcfs_node dst;
	size_t npins = 0;
	int rc = fs_groups_pins(fs, src, newparent, newname, &pins, &npins);

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
	return rc;
}

/* What a user's own dir holds stays there (users.c): both ways for an
 * exchange. */
static int may_move(struct tcfs_fs *fs, const struct fs_ino *parent,
		    const struct tcfs_node *src, const struct fs_ino *newparent,
		    const struct fs_name *newnm, unsigned flags)
{
	struct tcfs_node dst;
	int rc = fs_users_may_move(fs, parent->row, src, newparent->row);

	if (rc == 0 && (flags & RENAME_EXCHANGE) &&
	    tcfs_ns_lookup(fs->store, newparent->row, newnm->s, &dst) == 0)
		rc = fs_users_may_move(fs, newparent->row, &dst, parent->row);
	return rc;
}

void fs_row_rename(fuse_req_t req, const struct fs_ino *parent,
		   const struct fs_name *nm, const struct fs_ino *newparent,
		   const struct fs_name *newnm, unsigned int flags)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node src;
	int rc;

	/* A file written and closed may not be committed yet (release comes
	 * asynchronously): it must land with its bytes, and so must the
	 * files of a directory that moves (rare: Inductor's key dirs). */
	rc = tcfs_ns_lookup(fs->store, parent->row, nm->s, &src);
	if (rc == 0)
		rc = may_move(fs, parent, &src, newparent, newnm, flags);
	if (rc == 0 && src.kind == TCFS_FILE && fs_drops(fs, newnm) &&
	    !(flags & RENAME_EXCHANGE)) {
		drop_published(req, parent, nm, &src);
		return;
	}
	if (rc == 0 && src.kind == TCFS_FILE)
		rc = fs_files_commit(fs, src.ino);
	else if (rc == 0)
		fs_files_flush_all(fs);
	if (rc == 0)
		rc = move(fs, &src, parent->row, nm->s, newparent->row,
			  newnm->s, flags);
	if (rc == 0)
		landed(fs, newparent->row, newnm);
	fuse_reply_err(req, -rc);
	if (rc == 0) {
		after_rename(fs, newparent->row, newnm, !fs_name_uncached(nm));
		fs_changed(fs, parent->row, parent->kind, nm->s);
		fs_changed(fs, newparent->row, newparent->kind, newnm->s);
		fs_remote_landed(fs, newparent->row, newnm);
	}
}

/* The entries "." and ".." (offsets 0 and 1) from *off on. */
static int dots(fuse_req_t req, const struct fs_ino *i,
		const struct tcfs_node *dir, off_t *off, char *buf,
		size_t size, size_t *used)
{
	for (; *off < 2; ++*off) {
		struct stat st = { .st_mode = S_IFDIR };
		uint64_t row = *off == 0 || !dir->parent ? i->row : dir->parent;
		size_t len;

		st.st_ino = fs_ino_make(i->kind, row);
		len = fuse_add_direntry(req, buf + *used, size - *used,
					*off == 0 ? "." : "..", &st, *off + 1);
		if (len > size - *used)
			return 0;
		*used += len;
	}
	return 1;
}

/* Readdir offsets of the entries of the requester's own dir (users.c),
 * after those of the dir itself and before the root's views. */
#define OWN_COOKIE(entry) ((off_t)(1ll << 61) + (off_t)(entry))

/* Whether a child of a listing is left out for this user: what the kind
 * hides, users' own dirs, and a name the user's own dir (shadow) has too
 * (the user's comes instead, after). */
static int left_out(fuse_req_t req, const struct fs_ino *i, uint64_t shadow,
		    const char *name)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node n;
	struct fs_name nm;

	fs_name_of(&nm, name);
	if (fs_hides(fs, i->kind, &nm))
		return 1;
	if (!fs->users)
		return 0;
	return tcfs_name_private(name, NULL) ||
	       (shadow && tcfs_name_is_key(name) &&
		tcfs_ns_lookup(fs->store, shadow, name, &n) == 0);
}

/* Rows read per entry a page has room for: a listing reads a batch of
 * rows, then as many more as the rest of the page may take.  Entries take
 * 32 bytes and more (80 for a Triton key): reading a page's worth of
 * 32-byte entries read two and a half times the rows a root of key dirs
 * shows. */
#define ROW_BYTES 64

/* The children of dir (i's, or with own the user's own dir's, shown as
 * i's; shadow: the own dir whose names i's give way to) after entry
 * *from, into the page, those left out skipped, in batches until the page
 * is full (1) or the dir has no more (0); *from is then the last entry
 * added.  Or -errno. */
static int children(fuse_req_t req, const struct fs_ino *i, uint64_t shadow,
		    uint64_t own, uint64_t *from, char *buf, size_t size,
		    size_t *used)
{
	struct tcfs_fs *fs = fs_of(req);
	uint64_t dir = own ? own : i->row;
	int rc = 0, full = 0;
	size_t n, want;

	do {
		struct tcfs_dirent *kids = NULL;

		want = (size - *used) / ROW_BYTES + 1;
		rc = tcfs_ns_entries(fs->store, dir, *from, want, &kids, &n);
		for (size_t k = 0; rc == 0 && k < n && !full; k++) {
			struct stat st = { 0 };
			size_t len = 0;

			if (!left_out(req, i, shadow, kids[k].name)) {
				st.st_ino = fs_ino_make(i->kind, kids[k].ino);
				st.st_mode = fs_type(kids[k].kind);
				len = fuse_add_direntry(
					req, buf + *used, size - *used,
					kids[k].name, &st,
					own ? OWN_COOKIE(kids[k].entry)
					    : (off_t)kids[k].entry + 2);
				full = len > size - *used;
			}
			if (!full) {
				*used += len;
				*from = kids[k].entry;
			}
		}
		free(kids);
	} while (rc == 0 && !full && n == want);
	return rc < 0 ? rc : full;
}

/* The store entries of a listing from off on: i's own, then those of
 * the requester's own dir there (users.c).  1 when the page is full. */
static int listing(fuse_req_t req, const struct fs_ino *i, off_t off,
		   char *buf, size_t size, size_t *used)
{
	uint64_t own = 0, from;
	int has_own = fs_users_own_dir(req, i->row, &own), rc = 0;

	if (off < OWN_COOKIE(0)) {
		from = (uint64_t)off - 2;
		rc = children(req, i, has_own ? own : 0, 0, &from, buf, size,
			      used);
		if (rc != 0 || !has_own)
			return rc;
		off = OWN_COOKIE(0);
	}
	if (!has_own)
		return 0;
	from = (uint64_t)(off - OWN_COOKIE(0));
	return children(req, i, 0, own, &from, buf, size, used);
}

/*
 * Offsets: 1 after ".", 2 after "..", and entry + 2 after a child (its
 * row's number: a hard link shows its file's inode).  Children come in
 * entry order, so resuming after the last one seen neither skips
 * nor repeats an entry while others are added or removed meanwhile.
 * The root's views come after its store entries (view.c).
 */
void fs_row_readdir(fuse_req_t req, const struct fs_ino *i, size_t size,
		    off_t off)
{
	struct tcfs_fs *fs = fs_of(req);
	size_t used = 0;
	struct tcfs_node dir;
	uint64_t k = 0;
	char *buf = NULL;
	int rc = tcfs_ns_get(fs->store, i->row, &dir), full = 0;

	if (rc == 0 && dir.kind != TCFS_DIR)
		rc = -ENOTDIR;
	if (rc == 0 && !(buf = malloc(size)))
		rc = -ENOMEM;
	if (rc == 0 && dots(req, i, &dir, &off, buf, size, &used)) {
		if (off >= FS_VIEW_COOKIE(0))
			k = (uint64_t)(off - FS_VIEW_COOKIE(0));
		else
			rc = listing(req, i, off, buf, size, &used);
		full = rc > 0;
		if (rc >= 0 && !full &&
		    i->kind == FS_KIND_STORE && i->row == TCFS_ROOT_INO)
			used += fs_view_root_entries(req, buf + used,
						     size - used, &k);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}
