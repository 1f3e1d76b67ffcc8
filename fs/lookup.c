/*
 * lookup: finding names in the store's rows and answering for their
 * attributes (fs_store_ops, fs_bin_ops), with the kernel cache policy
 * that makes the mount fast: names and attributes are cached for a day,
 * misses too (as negative entries), except the probes, whose every lookup
 * must reach us to be logged.  A name that would be a probe is never
 * cached wherever it is: a dentry keeps its timeout when renamed, and
 * Triton renames group files and modules into their key dirs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index/store/store.h"
#include "kind.h"

static void reply_miss(fuse_req_t req, double ttl)
{
	struct fuse_entry_param miss = { 0 };

	/* A negative entry: a cached miss costs the kernel nothing. */
	miss.entry_timeout = ttl;
	fuse_reply_entry(req, &miss);
}

/* parent/nm into *n, a probe noted as it is answered (hit or miss),
 * unless parent is the browse tree's, where no lookup is Triton's.
 * *looked: whether the name was looked for (-ENOENT then is a miss). */
static int find(fuse_req_t req, const struct fs_ino *parent,
		const struct fs_name *nm, struct tcfs_node *n, int *looked,
		int *uncached)
{
	struct tcfs_fs *fs = fs_of(req);
	enum tcfs_probe probe = 0;
	struct tcfs_node dir, to;
	int rc, hit;

	/* Only a probe-like name needs its directory: is it a key dir? */
	if (fs_name_uncached(nm) && parent->kind != FS_KIND_BROWSE) {
		rc = tcfs_ns_get(fs->store, parent->row, &dir);
		if (rc < 0)
			return rc;
		probe = fs_probe_kind(fs, &dir, nm);
	}
	if (probe)
		fs_probe_lock(fs, 0);
	*looked = 1;
	rc = tcfs_ns_lookup(fs->store, parent->row, nm->s, n);
	hit = rc == 0;
	/* A local miss may be the fleet's hit.  Asked without the probe
	 * lock, which evictions wait for, as the network may be slow; once
	 * per probe: not again at the process's own later lookups. */
	if (probe && rc == -ENOENT && fs->remote &&
	    !fs_probe_folded(fs, req, &dir, nm)) {
		fs_probe_unlock(fs);
		rc = fs_remote_fetch(fs, &dir, nm, probe, &to);
		fs_probe_lock(fs, 0);
		if (rc == 0)
			dir = to;	/* where it landed */
		rc = rc == 0 ? tcfs_ns_lookup(fs->store, dir.ino, nm->s, n)
			     : -ENOENT;
		hit = rc == 0 ? FS_HIT_REMOTE : 0;
	}
	/* A dir above Inductor's or vLLM's entries, on a fresh node. */
	if (!probe && rc == -ENOENT && fs->remote &&
	    parent->kind != FS_KIND_BROWSE) {
		rc = fs_remote_above(fs, parent->row, nm, n);
		*uncached = rc == 1;
		if (rc == 1)
			rc = -ENOENT;
	}
	if (probe && rc == 0)
		rc = fs_probe_whole(fs, &dir, n, probe);
	if (probe && (rc == 0 || rc == -ENOENT))
		fs_probe_seen(fs, req, &dir, nm, probe, rc == 0 ? hit : 0,
			      parent->kind);
	if (probe)
		fs_probe_unlock(fs);
	return rc;
}

void fs_row_lookup(fuse_req_t req, const struct fs_ino *parent,
		   const struct fs_name *nm)
{
	double ttl = fs_name_uncached(nm) ? 0 : fs_kind_ttl(parent->kind);
	struct tcfs_node n;
	int rc, looked = 0, uncached = 0;

	if (fs_hides(fs_of(req), parent->kind, nm)) {
		reply_miss(req, FS_TTL);	/* hidden for good */
		return;
	}
	rc = find(req, parent, nm, &n, &looked, &uncached);
	if (rc == -ENOENT && looked)
		reply_miss(req, uncached ? 0 : ttl);
	else if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fs_reply_entry(req, &n, parent->kind, ttl);
}

/* A node kept in limbo goes when the kernel has forgotten every lookup of
 * it (inode.c); live nodes are not affected. */
void fs_row_forget(struct tcfs_fs *fs, const struct fs_ino *i, uint64_t n)
{
	fs_inode_forget(fs, i->row, n);
}

void fs_row_getattr(fuse_req_t req, const struct fs_ino *i)
{
	fs_reply_attr(req, i->kind, i->row);
}

void fs_row_readlink(fuse_req_t req, const struct fs_ino *i)
{
	char target[TCFS_SYMLINK_MAX + 1];
	int rc = tcfs_ns_readlink(fs_of(req)->store, i->row, target,
				  sizeof(target));

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, target);
}
