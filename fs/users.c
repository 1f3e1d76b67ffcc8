/*
 * users: one cache shared by many users (-o allow_other): who is trusted
 * to write shared kernels, and where every other user's own key dirs live.
 *
 * A trusted user (-o trust=USER,...,@GROUP; by default root and the
 * mount's owner) writes key dirs where Triton names them: shared, seen by
 * every user.  Any other user's key dirs go to a dir of that user's own
 * beside them, ROOT/.tcfs-private-UID, which only that user sees: at a
 * cache root, the name KEY is that user's own key dir when there is one,
 * else the shared one; the private dir's own name exists for its user
 * alone, and no listing shows it.  So no user ever loads a kernel another
 * untrusted user wrote, and two users who compile one key get two kernels
 * (their identical bytes one blob).  Such names mean something else for
 * each user: the kernel may cache none of them (fs_name_uncached).
 *
 * A mount without allow_other lets only its owner in: nothing here
 * applies, and it behaves as it always did.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/base/err.h"
#include "index/model/entry.h"
#include "index/model/kernel.h"
#include "index/store/store.h"
#include "index/tree/ns.h"
#include "index/tree/nsread.h"
#include "priv.h"

#define TRUST_MAX 64		/* names in -o trust */
#define GROUPS_SLOTS 256	/* users whose groups are remembered */
#define GROUPS_MAX 64		/* groups of a user looked at */
#define GROUPS_TTL_NS (60 * 1000000000LL)

struct groups_slot {
	uid_t uid;
	int used;
	int trusted;		/* the answer, for ttl */
	int64_t until_ns;
};

struct fs_users {
	uid_t uids[TRUST_MAX];
	size_t nuids;
	gid_t gids[TRUST_MAX];
	size_t ngids;
	pthread_mutex_t mu;
	struct groups_slot slots[GROUPS_SLOTS];	/* (mu) */
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One item of -o trust: a user (name or number), or @group. */
static int trust_item(struct fs_users *u, const char *item)
{
	char *end;
	unsigned long v = strtoul(item + (item[0] == '@'), &end, 10);
	int numeric = *end == '\0' && end != item + (item[0] == '@');

	if (u->nuids == TRUST_MAX || u->ngids == TRUST_MAX)
		return tcfs_err_set(-EINVAL, "-o trust: more than %d names",
				    TRUST_MAX);
	if (item[0] == '@') {
		const struct group *g = numeric ? NULL : getgrnam(item + 1);

		if (!numeric && !g)
			return tcfs_err_set(-EINVAL, "-o trust: %s: no such "
					    "group", item + 1);
		u->gids[u->ngids++] = numeric ? (gid_t)v : g->gr_gid;
		return 0;
	}
	{
		const struct passwd *p = numeric ? NULL : getpwnam(item);

		if (!numeric && !p)
			return tcfs_err_set(-EINVAL, "-o trust: %s: no such "
					    "user", item);
		u->uids[u->nuids++] = numeric ? (uid_t)v : p->pw_uid;
	}
	return 0;
}

int fs_users_new(const char *trust, uid_t owner, struct fs_users **out)
{
	struct fs_users *u = calloc(1, sizeof(*u));
	char *copy = trust ? strdup(trust) : NULL, *save = NULL, *item;
	int rc = 0;

	if (!u || (trust && !copy)) {
		free(u);
		free(copy);
		return -ENOMEM;
	}
	/* Root and whoever mounts are always trusted. */
	u->uids[u->nuids++] = 0;
	u->uids[u->nuids++] = owner;
	for (item = copy ? strtok_r(copy, ":", &save) : NULL; rc == 0 && item;
	     item = strtok_r(NULL, ":", &save))
		rc = trust_item(u, item);
	free(copy);
	if (rc < 0) {
		free(u);
		return rc;
	}
	pthread_mutex_init(&u->mu, NULL);
	*out = u;
	return 0;
}

void fs_users_free(struct fs_users *u)
{
	if (!u)
		return;
	pthread_mutex_destroy(&u->mu);
	free(u);
}

/* Whether uid is in one of the trusted groups, as getgrouplist says. */
static int in_trusted_group(const struct fs_users *u, uid_t uid, gid_t gid)
{
	gid_t groups[GROUPS_MAX];
	int n = GROUPS_MAX;
	const struct passwd *p;

	if (!u->ngids)
		return 0;
	p = getpwuid(uid);
	if (!p || getgrouplist(p->pw_name, gid, groups, &n) < 0)
		n = 0;	/* unknown, or in more groups than looked at */
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < u->ngids; k++)
			if (groups[i] == u->gids[k])
				return 1;
	return 0;
}

int fs_trusted(struct tcfs_fs *fs, uid_t uid, gid_t gid)
{
	struct fs_users *u = fs->users;
	struct groups_slot *s;
	int64_t now;
	int yes;

	if (!u)
		return 1;	/* one user's mount: that user */
	for (size_t i = 0; i < u->nuids; i++)
		if (u->uids[i] == uid)
			return 1;
	if (!u->ngids)
		return 0;
	/* Groups are looked up once a minute per user: getgrouplist reads
	 * /etc/group (or asks NSS) every time. */
	now = mono_ns();
	s = &u->slots[uid % GROUPS_SLOTS];
	pthread_mutex_lock(&u->mu);
	if (s->used && s->uid == uid && s->until_ns > now) {
		yes = s->trusted;
		pthread_mutex_unlock(&u->mu);
		return yes;
	}
	pthread_mutex_unlock(&u->mu);
	yes = in_trusted_group(u, uid, gid);
	pthread_mutex_lock(&u->mu);
	*s = (struct groups_slot){ uid, 1, yes, now + GROUPS_TTL_NS };
	pthread_mutex_unlock(&u->mu);
	return yes;
}

/* The requester's own dir beside parent's key dirs: 0 and *dir, or
 * -ENOENT when it has none (make: then it is made, the requester's). */
static int private_dir(fuse_req_t req, uint64_t parent, int make,
		       uint64_t *dir)
{
	struct tcfs_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char name[sizeof(TCFS_NAME_PRIVATE_PREFIX) + 16];
	struct tcfs_node n;
	int rc;

	snprintf(name, sizeof(name), TCFS_NAME_PRIVATE_PREFIX "%u",
		 (unsigned)ctx->uid);
	rc = tcfs_ns_lookup(fs->store, parent, name, &n);
	if (rc == -ENOENT && make) {
		struct tcfs_owner own = { ctx->uid, ctx->gid };

		rc = tcfs_ns_mkdir(fs->store, parent, name, 0700,
				   tcfs_ns_now(), &own, &n);
		if (rc == -EEXIST)
			rc = tcfs_ns_lookup(fs->store, parent, name, &n);
	}
	if (rc == 0 && n.kind != TCFS_DIR)
		rc = -ENOENT;
	if (rc == 0)
		*dir = n.ino;
	return rc;
}

/* Whether nm in dir p is an entry a probe finds: a key dir at a cache
 * root, or an entry of Inductor's or vLLM's caches (entry.h).  Those are
 * what a user's own dir holds. */
static int entry_in(struct tcfs_fs *fs, const struct tcfs_node *p,
		    const struct fs_name *nm)
{
	int yes = 0;

	if (tcfs_name_is_key(nm->s) &&
	    tcfs_kernel_key_dir_at(fs->store, p->ino, nm->s, &yes) == 0 && yes)
		return 1;
	/* Triton's own kinds are files of a key dir, routed with it. */
	return tcfs_entry_kind(fs->store, p, nm->s) > TCFS_PROBE_MODULE;
}

static int entry_at(struct tcfs_fs *fs, uint64_t parent,
		    const struct fs_name *nm)
{
	struct tcfs_node p;

	return tcfs_ns_get(fs->store, parent, &p) == 0 && entry_in(fs, &p, nm);
}

/* -ENOENT when the shared entry nm in dir p was written by a user not
 * trusted: it must not be loaded by anyone, however it got its name (a
 * store from before the writer decided, a dir moved above it).  Found by
 * its writer, never by its path. */
static int loadable(fuse_req_t req, const struct tcfs_node *p,
		    const struct fs_name *nm)
{
	struct tcfs_fs *fs = fs_of(req);
	struct tcfs_node n;

	if (tcfs_ns_lookup(fs->store, p->ino, nm->s, &n) < 0 ||
	    n.uid == (int64_t)fuse_req_ctx(req)->uid ||
	    fs_users_trust(fs, n.uid, n.gid))
		return 0;
	return -ENOENT;
}

int fs_users_route(fuse_req_t req, struct fs_ino *parent, struct fs_name *nm,
		   enum fs_route how)
{
	struct tcfs_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct tcfs_node p, n;
	uint64_t own;
	uint32_t uid;
	int entry;

	/* The browse tree is read-only: a write there fails with EROFS
	 * (ops.c), and must not make the user an own dir first. */
	if (!fs->users || parent->kind == FS_KIND_VIEW ||
	    (parent->kind == FS_KIND_BROWSE && how > FS_FIND))
		return 0;
	if (tcfs_name_private(nm->s, &uid)) {
		nm->apart = 1;
		/* Another user's own dir is not there; nobody makes one. */
		return uid == (uint32_t)ctx->uid && how <= FS_FIND ? 0
								   : -ENOENT;
	}
	/* In one's own dir, names are as they are. */
	if (tcfs_ns_get(fs->store, parent->row, &p) < 0 ||
	    tcfs_name_private(p.name, NULL))
		return 0;
	/* An entry, or any name where files that are entries sit: a file
	 * written there, then renamed onto an entry's name, must be in the
	 * user's own dir from the start (the kernel keeps the dentry it
	 * renames, with the temp name's timeout). */
	entry = entry_in(fs, &p, nm);
	if (!entry && !tcfs_entry_place(fs->store, &p))
		return 0;
	nm->apart = 1;
	if (fs_trusted(fs, ctx->uid, ctx->gid))
		return how == FS_LOAD && entry ? loadable(req, &p, nm) : 0;
	/* The requester's own first. */
	if (private_dir(req, parent->row, 0, &own) == 0 &&
	    tcfs_ns_lookup(fs->store, own, nm->s, &n) == 0) {
		parent->row = own;
		return 0;
	}
	if (how == FS_LOAD)
		return entry ? loadable(req, &p, nm) : 0;
	if (how == FS_FIND)
		return 0;
	/* Triton makes its key dir on every probe (makedirs, exist_ok): a
	 * shared one of that name is there, and read from.  Anything else
	 * an untrusted user makes, or moves onto an entry's name, is theirs:
	 * never in place of a shared one. */
	if (how == FS_MKDIR && entry &&
	    tcfs_ns_lookup(fs->store, parent->row, nm->s, &n) == 0)
		return 0;
	if (private_dir(req, parent->row, 1, &own) < 0)
		return -EIO;
	parent->row = own;
	return 0;
}

int fs_users_trust(void *ctx, int64_t uid, int64_t gid)
{
	/* -1 is whoever mounts the store (ns.h). */
	return uid == TCFS_OWNER_MOUNT ||
	       fs_trusted(ctx, (uid_t)uid, (gid_t)gid);
}

/* The user's own dir that dir is, or lies in, or 0 for none.  Own dirs
 * sit in cache roots, so this is a walk up a few levels. */
static uint64_t area_of(struct tcfs_fs *fs, uint64_t dir)
{
	struct tcfs_node n;

	/* Bounded as a path is: a corrupt parent chain ends the walk. */
	for (int depth = 0; depth < PATH_MAX / 2; depth++) {
		if (tcfs_ns_get(fs->store, dir, &n) < 0)
			return 0;
		if (tcfs_name_private(n.name, NULL))
			return n.ino;
		if (n.ino == TCFS_ROOT_INO || tcfs_ns_in_limbo(n.parent, NULL))
			return 0;
		dir = n.parent;
	}
	return 0;
}

/* Whether dir is, or lies above, a user's own dir. */
static int holds_private(struct tcfs_fs *fs, uint64_t dir, int *yes)
{
	struct tcfs_node *owns = NULL;
	size_t nown = 0;
	int rc = tcfs_ns_private_dirs(fs->store, &owns, &nown);

	*yes = 0;
	for (size_t i = 0; rc == 0 && !*yes && i < nown; i++) {
		struct tcfs_node n = owns[i];

		for (int depth = 0; depth < PATH_MAX / 2; depth++) {
			if (n.ino == dir) {
				*yes = 1;
				break;
			}
			if (n.ino == TCFS_ROOT_INO ||
			    tcfs_ns_in_limbo(n.parent, NULL) ||
			    tcfs_ns_get(fs->store, n.parent, &n) < 0)
				break;
		}
	}
	free(owns);
	return rc;
}

int fs_users_may_move(struct tcfs_fs *fs, uint64_t from,
		      const struct tcfs_node *src, uint64_t to)
{
	uint64_t area = area_of(fs, from);
	int holds = 0, rc;

	if (src->kind == TCFS_DIR) {
		rc = holds_private(fs, src->ino, &holds);
		if (rc < 0)
			return rc;
		if (holds)
			return -EPERM;
	}
	/* Into one's own dir is how an entry written beside it becomes
	 * one's own (fs_users_route); out of it, never. */
	return area && area != area_of(fs, to) ? -EPERM : 0;
}

int fs_users_own_dir(fuse_req_t req, uint64_t dir, uint64_t *own)
{
	struct tcfs_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (!fs->users || fs_trusted(fs, ctx->uid, ctx->gid))
		return 0;
	return private_dir(req, dir, 0, own) == 0;
}

/* Whether the dir n is an entry (entry_at). */
static int is_entry(struct tcfs_fs *fs, const struct tcfs_node *n)
{
	struct fs_name nm;

	fs_name_of(&nm, n->name);
	return n->kind == TCFS_DIR && entry_at(fs, n->parent, &nm);
}

/* Whether dir is an entry, or a temp dir in one (Triton's tmp.pid_*):
 * what it holds is a kernel's, or an Inductor entry's. */
static int in_entry(struct tcfs_fs *fs, uint64_t dir)
{
	struct tcfs_node n;

	if (tcfs_ns_get(fs->store, dir, &n) < 0)
		return 0;
	if (is_entry(fs, &n))
		return 1;
	return n.parent && tcfs_ns_get(fs->store, n.parent, &n) == 0 &&
	       is_entry(fs, &n);
}

unsigned fs_users_mode(fuse_req_t req, uint64_t parent, const char *name,
		       unsigned mode, int dir)
{
	struct tcfs_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fs_name nm;

	/* A shared entry is loaded by everyone: nobody but its writer may
	 * change it, whatever the writer's umask.  Anything else on the
	 * mount keeps the modes it is given, as on any file system. */
	if (!fs->users || !fs_trusted(fs, ctx->uid, ctx->gid))
		return mode;
	fs_name_of(&nm, name);
	if (!in_entry(fs, parent) && !entry_at(fs, parent, &nm))
		return mode;
	return mode & (dir ? 07755 : 07644);
}

/* What an untrusted user wrote in the dir ino, now shared: the mount's
 * owner's, writable by none but it, and its kernels marked shared
 * (kernel.h), or its user could change what everyone loads. */
static int disown(struct tcfs_fs *fs, uint64_t ino)
{
	struct tcfs_attrs a = { .own = { TCFS_OWNER_MOUNT, TCFS_OWNER_MOUNT } };
	struct tcfs_node *kids = NULL, d;
	size_t n = 0;
	int rc = tcfs_ns_get(fs->store, ino, &d);

	if (rc == 0)
		rc = tcfs_ns_list(fs->store, ino, 0, 0, &kids, &n);
	for (size_t i = 0; rc == 0 && i <= n; i++) {
		const struct tcfs_node *k = i < n ? &kids[i] : &d;

		if (k->kind == TCFS_SYMLINK)
			continue;
		a.mode = k->mode & (k->kind == TCFS_DIR ? 0755 : 0644);
		rc = tcfs_ns_setattr(fs->store, k->ino,
				     TCFS_SET_MODE | TCFS_SET_UID |
					     TCFS_SET_GID, &a);
		/* The kernel keeps the attributes it was told: a lookup
		 * must tell it the new owner. */
		if (rc == 0)
			fs_events_inval(fs, k->parent, k->name);
	}
	free(kids);
	return rc < 0 ? rc : tcfs_kernel_set_shared(fs->store, ino);
}

/* One user's own key dir kid of own (in root) made shared: moved to root
 * under its name; where root has a shared one of that name already, the
 * user's goes (the shared one is what everyone loads).  1 when moved. */
static int promote_one(struct tcfs_fs *fs, const struct tcfs_node *own,
		       const struct tcfs_node *kid)
{
	int rc = tcfs_ns_rename(fs->store, own->ino, kid->name, own->parent,
				kid->name, RENAME_NOREPLACE);

	/* A shared one with nothing in it (a fetch's, or a probe's
	 * makedirs) gives way. */
	if (rc == -EEXIST &&
	    tcfs_ns_rmdir(fs->store, own->parent, kid->name) == 0)
		rc = tcfs_ns_rename(fs->store, own->ino, kid->name,
				    own->parent, kid->name, RENAME_NOREPLACE);
	if (rc == -EEXIST)
		return tcfs_ns_unlink_tree(fs->store, own->ino, kid->name);
	if (rc == 0)
		rc = disown(fs, kid->ino);
	return rc < 0 ? rc : 1;
}

int fs_users_promote(struct tcfs_fs *fs, const char *key, int64_t uid,
		     size_t *moved)
{
	struct tcfs_node *owns = NULL, *kids = NULL;
	size_t nown = 0, nkid = 0;
	uint32_t who;
	int rc = tcfs_ns_private_dirs(fs->store, &owns, &nown);

	*moved = 0;
	for (size_t i = 0; rc == 0 && i < nown; i++) {
		if (!tcfs_name_private(owns[i].name, &who) ||
		    (uid >= 0 && (int64_t)who != uid))
			continue;
		rc = tcfs_ns_list(fs->store, owns[i].ino, 0, 0, &kids, &nkid);
		for (size_t k = 0; rc == 0 && k < nkid; k++) {
			if (!tcfs_name_is_key(kids[k].name) ||
			    (key && strcmp(key, kids[k].name) != 0))
				continue;
			rc = promote_one(fs, &owns[i], &kids[k]);
			*moved += rc == 1;
			rc = rc < 0 ? rc : 0;
		}
		free(kids);
		kids = NULL;
	}
	free(owns);
	if (rc == 0)
		rc = tcfs_store_sync(fs->store);
	return rc;
}
