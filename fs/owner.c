/*
 * owner: who owns what the mount makes, who may change an owner or a
 * mode, and the setuid and setgid bits that a change by another user
 * clears, as Linux does on ext4.  The kernel checks chmod and chown itself
 * only with default_permissions (with allow_other, fs.c), and no check
 * here trusts that it ran.  Without FUSE_CAP_HANDLE_KILLPRIV (libfuse 3.14
 * does not ask for it) the kernel clears the bits on a write itself, by a
 * SETATTR of the mode on behalf of the writer, who need not own the file
 * (kills_only); they are cleared here too, after a write, a truncation or
 * a chown, for a kernel that leaves it to us.  Root is uid 0: a FUSE
 * request carries no capabilities.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "priv.h"

/* Bounds the groups read of a request's process (from /proc). */
#define OWNER_GROUPS_MAX 65536

uid_t fs_uid_of(const struct tcfs_fs *fs, const struct tcfs_node *n)
{
	return n->uid == TCFS_OWNER_MOUNT ? fs->uid : (uid_t)n->uid;
}

gid_t fs_gid_of(const struct tcfs_fs *fs, const struct tcfs_node *n)
{
	return n->gid == TCFS_OWNER_MOUNT ? fs->gid : (gid_t)n->gid;
}

static int is_root(fuse_req_t req)
{
	return fuse_req_ctx(req)->uid == 0;
}

/* Whether req's process is in group gid: its own gid, or one of its
 * supplementary groups; not, when they cannot be read (it is gone). */
static int in_group(fuse_req_t req, gid_t gid)
{
	gid_t some[64], *list = some;
	int n, found = 0;

	if (fuse_req_ctx(req)->gid == gid)
		return 1;
	n = fuse_req_getgroups(req, 64, some);
	if (n > 64 && n <= OWNER_GROUPS_MAX) {
		list = malloc((size_t)n * sizeof(*list));
		n = list ? fuse_req_getgroups(req, n, list) : -ENOMEM;
	}
	for (int i = 0; i < n && i < OWNER_GROUPS_MAX && !found; i++)
		found = list[i] == gid;
	if (list != some)
		free(list);
	return found;
}

int fs_new_owner(fuse_req_t req, uint64_t parent, int is_dir, unsigned *mode,
		 struct tcfs_owner *own)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node dir;
	int rc = tcfs_ns_get(fs->store, parent, &dir);

	if (rc < 0)
		return rc;
	own->uid = ctx->uid;
	own->gid = ctx->gid;
	/* A setgid dir gives what is made in it its group, and a subdir
	 * its setgid, so that a shared tree keeps one group; a file made
	 * setgid there keeps the bit only for a member (inode_init_owner). */
	if (!(dir.mode & S_ISGID))
		return 0;
	own->gid = dir.gid;
	if (is_dir)
		*mode |= S_ISGID;
	else if ((*mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
		 !is_root(req) && !in_group(req, fs_gid_of(fs, &dir)))
		*mode &= ~(unsigned)S_ISGID;
	return 0;
}

/* The setuid and setgid bits a write, truncation or chown by a user
 * other than root clears from a file's mode (Linux's
 * should_remove_suid): setgid only with group execute, as without it the
 * bit means mandatory locking, not a group to run as. */
static unsigned killed(unsigned mode)
{
	unsigned kill = mode & S_ISUID;

	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	return kill;
}

/* Whether req's process may write n, by its mode bits (Linux's
 * generic_permission, less root, who needs no check). */
static int may_write(fuse_req_t req, const struct tcfs_node *n)
{
	struct tcfs_fs *fs = fs_of(req);

	if (fuse_req_ctx(req)->uid == fs_uid_of(fs, n))
		return !!(n->mode & S_IWUSR);
	if (in_group(req, fs_gid_of(fs, n)))
		return !!(n->mode & S_IWGRP);
	return !!(n->mode & S_IWOTH);
}

/* Whether mode is n's less some of the bits a write by another user
 * clears, asked by one who may write it: the kernel's own clearing
 * (file_remove_privs), which any writer may cause. */
static int kills_only(fuse_req_t req, const struct tcfs_node *n,
		      unsigned mode)
{
	unsigned gone = n->mode & ~mode;

	return n->kind == TCFS_FILE && !(mode & ~n->mode) && gone &&
	       !(gone & ~killed(n->mode)) && may_write(req, n);
}

/* chown and chgrp: root gives a node to anyone; its owner may only
 * change its group, to one of the owner's groups.  A file's setuid goes
 * (even for root: Linux's chown_common) and its setgid as Linux's
 * setattr_should_drop_sgid says. */
static int set_owner(fuse_req_t req, const struct tcfs_node *n,
		     const struct stat *attr, int to_set, int *mask,
		     struct tcfs_attrs *a)
{
	struct tcfs_fs *fs = fs_of(req);
	uid_t uid = fs_uid_of(fs, n), new_uid = uid;
	gid_t gid = fs_gid_of(fs, n), new_gid = gid;

	if (to_set & FUSE_SET_ATTR_UID)
		new_uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		new_gid = attr->st_gid;
	if (!is_root(req) &&
	    (new_uid != uid || fuse_req_ctx(req)->uid != uid ||
	     (new_gid != gid && !in_group(req, new_gid))))
		return -EPERM;
	a->own.uid = new_uid;
	a->own.gid = new_gid;
	*mask |= TCFS_SET_UID | TCFS_SET_GID;
	if (n->kind == TCFS_DIR)
		return 0;
	a->mode &= ~(unsigned)S_ISUID;
	if ((a->mode & S_ISGID) &&
	    ((a->mode & S_IXGRP) || (!is_root(req) && !in_group(req, gid))))
		a->mode &= ~(unsigned)S_ISGID;
	if (a->mode != n->mode)
		*mask |= TCFS_SET_MODE;
	return 0;
}

int fs_owner_setattr(fuse_req_t req, const struct tcfs_node *n,
		     const struct stat *attr, int to_set, int *mask,
		     struct tcfs_attrs *a)
{
	struct tcfs_fs *fs = fs_of(req);
	int root = is_root(req), rc;

	a->mode = n->mode;
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		rc = set_owner(req, n, attr, to_set, mask, a);
		if (rc < 0)
			return rc;
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		if (!root && fuse_req_ctx(req)->uid != fs_uid_of(fs, n) &&
		    !kills_only(req, n, attr->st_mode & 07777))
			return -EPERM;
		a->mode = attr->st_mode & 07777;
		/* Only a member of its group may make a file setgid. */
		if ((a->mode & S_ISGID) && !root &&
		    !in_group(req, (*mask & TCFS_SET_GID) ? (gid_t)a->own.gid
							   : fs_gid_of(fs, n)))
			a->mode &= ~(unsigned)S_ISGID;
		*mask |= TCFS_SET_MODE;
	} else if ((to_set & FUSE_SET_ATTR_SIZE) && !root &&
		   n->kind == TCFS_FILE && killed(a->mode)) {
		a->mode &= ~killed(a->mode);
		*mask |= TCFS_SET_MODE;
	}
	return 0;
}

int fs_owner_wrote(fuse_req_t req, uint64_t row)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_attrs a = { 0 };
	struct tcfs_node n;
	int rc;

	if (is_root(req))
		return 0;
	rc = tcfs_ns_get(fs->store, row, &n);
	if (rc < 0 || !killed(n.mode))
		return rc;
	a.mode = n.mode & ~killed(n.mode);
	return tcfs_ns_setattr(fs->store, row, TCFS_SET_MODE, &a);
}
