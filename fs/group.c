/*
 * group: group files as this mount shows them, rendered from their
 * key-relative templates with the mount point as root.
 *
 * A key dir may lie at any depth (a cache root below the mount, as
 * Inductor's triton/DEVICE/): its group files are stored relative to it
 * and rendered with the mount's path to it.
 *
 * Every probe looks a group file up twice and then opens it, and each of
 * those needs its rendered size or bytes: renderings are kept, by inode,
 * and used only while the inode still has the same blob and key dir.
 * Those of a kernel redirected with -o redirect depend on what a
 * directory outside holds as well: they are made anew each time.
 *
 * A rename never changes a file's bytes on a local disk, and a reader
 * may have a group file open across one: a template that a rename would
 * move to another key dir, and so render anew, is first stored as the
 * bytes it renders now (fs_groups_pins, fs_groups_pin).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/blob/cas.h"
#include "index/model/group.h"
#include "index/base/io.h"
#include "index/model/kernel.h"
#include "index/store/store.h"
#include "index/base/vec.h"
#include "priv.h"

#define CACHE_SLOTS 4096
/* Sizes alone, for many more: a probe's lookup needs only the size, and
 * a cache of 100,000 kernels probed at random missed the 4,096
 * renderings nearly every time, reading and rendering the template
 * again (48 bytes a slot). */
#define SIZE_SLOTS (1u << 18)

struct rendering {
	uint64_t ino;		/* as shown (fs_ino_make); 0: empty slot */
	struct tcfs_hash blob;
	char *path;		/* its key dir's (struct fs_keydir) */
	char *bytes;
	size_t len;
};

/* A rendering's size: of inode ino (as shown), blob blob, rendered for
 * the key dir whose path hashes to path. */
struct rendered_size {
	uint64_t ino;		/* 0: empty slot */
	struct tcfs_hash blob;
	struct tcfs_hash path;
	uint64_t len;
};

struct fs_groups {
	pthread_mutex_t mu;
	struct rendering slot[CACHE_SLOTS];
	struct rendered_size *size;	/* SIZE_SLOTS of them */
};

int fs_groups_new(struct fs_groups **out)
{
	struct fs_groups *g = calloc(1, sizeof(*g));

	if (g)
		g->size = calloc(SIZE_SLOTS, sizeof(*g->size));
	if (!g || !g->size) {
		free(g);
		return -ENOMEM;
	}
	pthread_mutex_init(&g->mu, NULL);
	*out = g;
	return 0;
}

void fs_groups_free(struct fs_groups *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		free(g->slot[i].bytes);
		free(g->slot[i].path);
	}
	free(g->size);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

/* A user's own key dir (users.c) is where its user reaches it: at the
 * cache root, as the shared ones.  The dir to name for up, a cache
 * root. */
static uint64_t as_user_sees(struct tcfs_fs *fs, uint64_t up)
{
	struct tcfs_node own;

	if (fs->users && tcfs_ns_get(fs->store, up, &own) == 0 &&
	    tcfs_name_private(own.name, NULL))
		return own.parent;
	return up;
}

int fs_key_of(struct tcfs_fs *fs, const struct tcfs_node *n,
	      struct fs_keydir *k)
{
	struct tcfs_node a = *n, own = { 0 };
	uint64_t up, own_up = 0;
	size_t used;
	int rc, key = 0;

	for (;;) {
		up = a.parent;
		/* A replaced group file still being read renders as it was. */
		tcfs_ns_in_limbo(a.parent, &up);
		if (up == 0)
			return -ENOENT;
		if (a.kind == TCFS_DIR) {
			rc = tcfs_kernel_key_dir_at(fs->store, up, a.name, &key);
			if (rc < 0)
				return rc;
			if (!key && !own.ino) {
				own = a;
				own_up = up;
			}
		}
		if (key)
			break;
		/* In no key dir: its own dir, where a group file naming
		 * another dir (Inductor's tmp.<uuid>) stays raw until it
		 * lands in its key dir (dir.c, relocate_groups). */
		if (up == TCFS_ROOT_INO) {
			if (own.ino) {
				a = own;
				up = own_up;
			}
			break;
		}
		rc = tcfs_ns_get(fs->store, up, &a);
		if (rc < 0)
			return rc;
	}
	rc = tcfs_ns_path(fs->store, as_user_sees(fs, up), k->path,
			  sizeof(k->path));
	if (rc < 0)
		return rc;
	used = strlen(k->path);
	if (used && used + 1 < sizeof(k->path))
		k->path[used++] = '/';
	if (used + strlen(a.name) >= sizeof(k->path))
		return -ENAMETOOLONG;
	memcpy(k->path + used, a.name, strlen(a.name) + 1);
	k->key = k->path + used;
	k->ino = a.ino;
	k->found = key;
	return 0;
}

/* n's template, checked: a bad blob is taken out of the tree. */
static int load(struct tcfs_fs *fs, const struct tcfs_node *n, char **tmpl,
		size_t *tlen)
{
	int rc = tcfs_group_load(tcfs_store_cas(fs->store), &n->blob, tmpl,
				 tlen);

	if (rc < 0)
		return rc == -EUCLEAN ? rc : fs_blob_failed(fs, &n->blob, rc);
	return 0;
}

static int render(struct tcfs_fs *fs, const struct tcfs_node *n,
		  const char *path, enum fs_kind kind, char **out, size_t *len)
{
	char *tmpl = NULL;
	size_t tlen = 0;
	int rc = load(fs, n, &tmpl, &tlen);

	if (rc < 0)
		return rc;
	rc = tcfs_group_render(tmpl, tlen, fs_root_of(fs, kind), path,
			       fs_filter(fs, kind), out, len);
	free(tmpl);
	return rc;
}

/* A view's rendering of an inode has a slot apart from the other's. */
static struct rendering *slot_of(struct fs_groups *g, uint64_t shown)
{
	return &g->slot[(shown ^ shown >> 59) % CACHE_SLOTS];
}

/* Copies a kept rendering out; 0, or -ENOENT when none fits. */
static int lookup(struct fs_groups *g, const struct tcfs_node *n,
		  const char *path, char **out, size_t *len)
{
	struct rendering *r = slot_of(g, n->ino);
	int rc = -ENOENT;

	pthread_mutex_lock(&g->mu);
	if (r->ino == n->ino && tcfs_hash_equal(&r->blob, &n->blob) &&
	    strcmp(r->path, path) == 0) {
		char *copy = malloc(r->len ? r->len : 1);

		rc = copy ? 0 : -ENOMEM;
		if (copy) {
			memcpy(copy, r->bytes, r->len);
			*out = copy;
			*len = r->len;
		}
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

static void keep(struct fs_groups *g, const struct tcfs_node *n,
		 const char *path, const char *bytes, size_t len)
{
	struct rendering *r = slot_of(g, n->ino);
	char *copy = malloc(len ? len : 1), *p = strdup(path);

	if (!copy || !p) {
		free(copy);
		free(p);
		return;
	}
	memcpy(copy, bytes, len);
	pthread_mutex_lock(&g->mu);
	free(r->bytes);
	free(r->path);
	r->ino = n->ino;
	r->blob = n->blob;
	r->path = p;
	r->bytes = copy;
	r->len = len;
	pthread_mutex_unlock(&g->mu);
}

/* fs_render, for n in key dir k. */
static int render_in(struct tcfs_fs *fs, const struct tcfs_node *n,
		     const struct fs_keydir *k, enum fs_kind kind, char **out,
		     size_t *len)
{
	struct tcfs_node shown = *n;
	int rc;

	/* Each view's rendering is kept apart, by the inode it shows. */
	shown.ino = fs_ino_make(kind, n->ino);
	if (lookup(fs->groups, &shown, k->path, out, len) == 0)
		return 0;
	rc = render(fs, n, k->path, kind, out, len);
	if (rc == 0)
		keep(fs->groups, &shown, k->path, *out, *len);
	return rc;
}

int fs_render(struct tcfs_fs *fs, const struct tcfs_node *n,
	      enum fs_kind kind, char **out, size_t *len)
{
	struct fs_keydir k;
	int rc = fs_key_of(fs, n, &k);

	return rc < 0 ? rc : render_in(fs, n, &k, kind, out, len);
}

/* The size slot of inode ino as shown, and the hash of the key dir's
 * path its size is kept for. */
static struct rendered_size *size_slot(struct fs_groups *g, uint64_t shown,
				       const char *path,
				       struct tcfs_hash *path_hash)
{
	tcfs_hash_buf(path, strlen(path), path_hash);
	return &g->size[(shown ^ shown >> 59) % SIZE_SLOTS];
}

/* The size of n's rendering for kind, kept apart from the bytes. */
static int rendered_size(struct tcfs_fs *fs, const struct tcfs_node *n,
			 enum fs_kind kind, uint64_t *size)
{
	uint64_t shown = fs_ino_make(kind, n->ino);
	struct tcfs_hash path;
	struct rendered_size *r;
	struct fs_keydir k;
	char *bytes = NULL;
	size_t len = 0;
	int rc = fs_key_of(fs, n, &k), kept;

	if (rc < 0)
		return rc;
	r = size_slot(fs->groups, shown, k.path, &path);
	pthread_mutex_lock(&fs->groups->mu);
	kept = r->ino == shown && tcfs_hash_equal(&r->blob, &n->blob) &&
	       tcfs_hash_equal(&r->path, &path);
	if (kept)
		*size = r->len;
	pthread_mutex_unlock(&fs->groups->mu);
	if (kept)
		return 0;
	rc = render_in(fs, n, &k, kind, &bytes, &len);
	free(bytes);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->groups->mu);
	r->ino = shown;
	r->blob = n->blob;
	r->path = path;
	r->len = len;
	pthread_mutex_unlock(&fs->groups->mu);
	*size = len;
	return 0;
}

/* The redirect of the kernel whose group file n is, if any. */
static const struct fs_redirect *redirect_of(struct tcfs_fs *fs,
					     const struct tcfs_node *n)
{
	struct fs_name nm;

	if (!fs->redirects)
		return NULL;
	fs_name_of(&nm, n->name);
	return nm.group ? fs_redirect_of(fs->redirects, nm.kernel) : NULL;
}

int fs_render_shown(struct tcfs_fs *fs, const struct tcfs_node *n,
		    enum fs_kind kind, char **out, size_t *len,
		    int64_t *mtime_ns)
{
	const struct fs_redirect *rd = redirect_of(fs, n);
	struct fs_keydir k;
	char *tmpl = NULL;
	size_t tlen = 0;
	int rc;

	if (!rd)
		return fs_render(fs, n, kind, out, len);
	rc = fs_key_of(fs, n, &k);
	if (rc < 0)
		return rc;
	/* Only a kernel's group file is redirected: one in its key dir. */
	if (!k.found)
		return fs_render(fs, n, kind, out, len);
	rc = load(fs, n, &tmpl, &tlen);
	if (rc < 0)
		return rc;
	rc = fs_redirect_render(rd, tmpl, tlen, fs_root_of(fs, kind), k.path,
				fs_filter(fs, kind), out, len, mtime_ns);
	free(tmpl);
	return rc;
}

int fs_render_size(struct tcfs_fs *fs, const struct tcfs_node *n,
		   enum fs_kind kind, uint64_t *size, int64_t *mtime_ns)
{
	char *bytes = NULL;
	size_t len = 0;
	int rc;

	/* A redirected kernel's rendering is made anew each time. */
	if (!redirect_of(fs, n))
		return rendered_size(fs, n, kind, size);
	rc = fs_render_shown(fs, n, kind, &bytes, &len, mtime_ns);
	free(bytes);
	if (rc == 0)
		*size = len;
	return rc;
}

struct pins {
	struct fs_pin *v;
	size_t n, cap;
};

/* Renderings below (or at) n stored as blobs of their own, depth deep. */
static int pin_below(struct tcfs_fs *fs, const struct tcfs_node *n,
		     struct pins *p, int depth)
{
	struct tcfs_node *kids = NULL;
	size_t nk = 0;
	int rc = 0;

	if (n->kind == TCFS_FILE && n->fmt == TCFS_FMT_GROUP) {
		struct fs_pin *pin;
		char *bytes = NULL;
		size_t len = 0;

		rc = fs_render(fs, n, FS_KIND_STORE, &bytes, &len);
		pin = rc == 0 ? tcfs_vec_push(&p->v, &p->n, &p->cap,
					      sizeof(*pin))
			      : NULL;
		if (rc == 0 && !pin)
			rc = -ENOMEM;
		if (rc == 0) {
			pin->ino = n->ino;
			pin->mtime_ns = n->mtime_ns;
			pin->c.size = len;
			pin->c.fmt = TCFS_FMT_RAW;
			rc = tcfs_cas_put_buf(tcfs_store_cas(fs->store), bytes,
					      len, &pin->c.blob, NULL);
		}
		free(bytes);
		return rc;
	}
	/* Key dirs are flat; a deeper tree holds no group files we know. */
	if (n->kind != TCFS_DIR || depth > 8)
		return 0;
	rc = tcfs_ns_list(fs->store, n->ino, 0, 0, &kids, &nk);
	for (size_t i = 0; rc == 0 && i < nk; i++)
		rc = pin_below(fs, &kids[i], p, depth + 1);
	free(kids);
	return rc;
}

int fs_groups_pins(struct tcfs_fs *fs, const struct tcfs_node *moved,
		   uint64_t newparent, const char *newname,
		   struct fs_pin **pins, size_t *n)
{
	struct tcfs_node to = *moved;
	struct fs_keydir *was = NULL, *will = NULL;
	struct pins p = { *pins, *n, *n };
	int rc = -ENOMEM, inside;

	to.parent = newparent;
	snprintf(to.name, sizeof(to.name), "%s", newname);
	was = malloc(sizeof(*was));
	will = malloc(sizeof(*will));
	if (was && will)
		rc = fs_key_of(fs, moved, was);
	if (rc == 0)
		rc = fs_key_of(fs, &to, will);
	/* A dir that is no key dir's subdir may hold key dirs, whose group
	 * files render for their paths, which the move changes. */
	inside = rc == 0 && was->found && was->ino != moved->ino;
	if (rc == 0 && (strcmp(was->path, will->path) != 0 ||
			(moved->kind == TCFS_DIR && !inside)))
		rc = pin_below(fs, moved, &p, 0);
	free(was);
	free(will);
	*pins = p.v;
	*n = p.n;
	return rc;
}

int fs_groups_pin(struct tcfs_fs *fs, const struct fs_pin *pins, size_t n)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = tcfs_ns_set_content(fs->store, pins[i].ino, &pins[i].c,
					 pins[i].mtime_ns);
	return rc;
}
