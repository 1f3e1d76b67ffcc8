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
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/base/err.h"
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

/* Whether nm in parent is a key dir's name at a cache root. */
static int key_at_root(struct tcfs_fs *fs, uint64_t parent,
		       const struct fs_name *nm)
{
	int yes = 0;

	if (!tcfs_name_is_key(nm->s))
		return 0;
	return tcfs_kernel_key_dir_at(fs->store, parent, nm->s, &yes) == 0 &&
	       yes;
}

int fs_users_route(fuse_req_t req, struct fs_ino *parent, struct fs_name *nm,
		   enum fs_route how)
{
	struct tcfs_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uint64_t own;
	struct tcfs_node n;
	uint32_t uid;

	if (!fs->users || parent->kind == FS_KIND_VIEW)
		return 0;
	if (tcfs_name_private(nm->s, &uid)) {
		nm->apart = 1;
		/* Another user's own dir is not there; nobody makes one. */
		return uid == (uint32_t)ctx->uid && how == FS_FIND ? 0 : -ENOENT;
	}
	if (!key_at_root(fs, parent->row, nm))
		return 0;
	nm->apart = 1;
	if (fs_trusted(fs, ctx->uid, ctx->gid))
		return 0;
	/* The requester's own key dir first; a new one is theirs, unless a
	 * shared one of that name is there already. */
	if (private_dir(req, parent->row, 0, &own) == 0 &&
	    tcfs_ns_lookup(fs->store, own, nm->s, &n) == 0) {
		parent->row = own;
		return 0;
	}
	if (how == FS_FIND ||
	    tcfs_ns_lookup(fs->store, parent->row, nm->s, &n) == 0)
		return 0;
	if (private_dir(req, parent->row, 1, &own) < 0)
		return -EIO;
	parent->row = own;
	return 0;
}

int fs_users_own_dir(fuse_req_t req, uint64_t dir, uint64_t *own)
{
	struct tcfs_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (!fs->users || fs_trusted(fs, ctx->uid, ctx->gid))
		return 0;
	return private_dir(req, dir, 0, own) == 0;
}

/* Whether dir is a key dir, or a temp dir in one (Triton's tmp.pid_*):
 * what it holds is a kernel's. */
static int in_kernel(struct tcfs_fs *fs, uint64_t dir)
{
	struct tcfs_node n;
	int yes = 0;

	if (tcfs_kernel_is_key_dir(fs->store, dir, &yes) == 0 && yes)
		return 1;
	return tcfs_ns_get(fs->store, dir, &n) == 0 && n.parent &&
	       tcfs_kernel_is_key_dir(fs->store, n.parent, &yes) == 0 && yes;
}

unsigned fs_users_mode(fuse_req_t req, uint64_t parent, const char *name,
		       unsigned mode, int dir)
{
	struct tcfs_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int yes = 0;

	/* A shared kernel is loaded by everyone: nobody but its writer may
	 * change it, whatever the writer's umask.  Anything else on the
	 * mount keeps the modes it is given, as on any file system. */
	if (!fs->users || !fs_trusted(fs, ctx->uid, ctx->gid))
		return mode;
	if (!in_kernel(fs, parent) &&
	    !(tcfs_name_is_key(name) &&
	      tcfs_kernel_key_dir_at(fs->store, parent, name, &yes) == 0 &&
	      yes))
		return mode;
	return mode & (dir ? 07755 : 07644);
}

/* One user's own key dir kid of own (in root) made shared: moved to root
 * under its name; where root has a shared one of that name already, the
 * user's goes (the shared one is what everyone loads).  1 when moved. */
static int promote_one(struct tcfs_fs *fs, const struct tcfs_node *own,
		       const struct tcfs_node *kid)
{
	int rc = tcfs_ns_rename(fs->store, own->ino, kid->name, own->parent,
				kid->name, RENAME_NOREPLACE);

	if (rc == -EEXIST)
		return tcfs_ns_unlink_tree(fs->store, own->ino, kid->name);
	return rc < 0 ? rc : 1;
}

int fs_users_promote(struct tcfs_fs *fs, const char *key, int64_t uid,
		     size_t *moved)
{
	struct tcfs_node *owns = NULL, *kids = NULL;
	size_t nown = 0, nkid = 0;
	uint32_t who;
	int rc = tcfs_ns_named(fs->store, TCFS_NAME_PRIVATE_PREFIX "*", &owns,
			       &nown);

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
