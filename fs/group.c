/*
 * group: group files as this mount shows them, rendered from their
 * key-relative templates with the mount point as root.
 *
 * Every probe looks a group file up twice and then opens it, and each of
 * those needs its rendered size or bytes: renderings are kept, by inode,
 * and used only while the inode still has the same blob and key dir.
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

#include "index/cas.h"
#include "index/group.h"
#include "index/io.h"
#include "index/store.h"
#include "index/vec.h"
#include "priv.h"

#define CACHE_SLOTS 4096

struct rendering {
	uint64_t ino;		/* as shown (fs_shown); 0: empty slot */
	struct tcfs_hash blob;
	char key[TCFS_NAME_MAX + 1];
	char *bytes;
	size_t len;
};

struct fs_groups {
	pthread_mutex_t mu;
	struct rendering slot[CACHE_SLOTS];
};

int fs_groups_new(struct fs_groups **out)
{
	struct fs_groups *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->mu, NULL);
	*out = g;
	return 0;
}

void fs_groups_free(struct fs_groups *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		free(g->slot[i].bytes);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

int fs_key_of(struct tcfs_fs *fs, const struct tcfs_node *n, char *key,
	      size_t len)
{
	struct tcfs_node a = *n;
	int rc;

	while (a.parent != TCFS_ROOT_INO) {
		uint64_t up = a.parent;

		/* A replaced group file still being read renders as it was. */
		tcfs_ns_in_limbo(a.parent, &up);
		if (up == 0)
			return -ENOENT;
		rc = tcfs_ns_get(fs->store, up, &a);
		if (rc < 0)
			return rc;
	}
	snprintf(key, len, "%s", a.name);
	return 0;
}

static int render(struct tcfs_fs *fs, const struct tcfs_node *n,
		  const char *key, int bin, char **out, size_t *len)
{
	char *tmpl = NULL;
	size_t tlen = 0;
	int rc;

	rc = tcfs_group_load(tcfs_store_cas(fs->store), &n->blob, &tmpl, &tlen);
	if (rc < 0)
		return rc == -EUCLEAN ? rc : fs_blob_failed(fs, &n->blob, rc);
	rc = tcfs_group_render(tmpl, tlen, bin ? fs->bin_root : fs->root, key,
			       fs_filter(fs, bin), out, len);
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
		  const char *key, char **out, size_t *len)
{
	struct rendering *r = slot_of(g, n->ino);
	int rc = -ENOENT;

	pthread_mutex_lock(&g->mu);
	if (r->ino == n->ino && tcfs_hash_equal(&r->blob, &n->blob) &&
	    strcmp(r->key, key) == 0) {
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
		 const char *key, const char *bytes, size_t len)
{
	struct rendering *r = slot_of(g, n->ino);
	char *copy = malloc(len ? len : 1);

	if (!copy)
		return;
	memcpy(copy, bytes, len);
	pthread_mutex_lock(&g->mu);
	free(r->bytes);
	r->ino = n->ino;
	r->blob = n->blob;
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->bytes = copy;
	r->len = len;
	pthread_mutex_unlock(&g->mu);
}

int fs_render(struct tcfs_fs *fs, const struct tcfs_node *n, int bin,
	      char **out, size_t *len)
{
	struct tcfs_node shown = *n;
	char key[TCFS_NAME_MAX + 1];
	int rc = fs_key_of(fs, n, key, sizeof(key));

	if (rc < 0)
		return rc;
	/* Each view's rendering is kept apart, by the inode it shows. */
	shown.ino = fs_shown(n->ino, bin);
	if (lookup(fs->groups, &shown, key, out, len) == 0)
		return 0;
	rc = render(fs, n, key, bin, out, len);
	if (rc == 0)
		keep(fs->groups, &shown, key, *out, *len);
	return rc;
}

/* The key dir an entry named name in dir lies in: itself at the root. */
static int key_at(struct tcfs_fs *fs, uint64_t dir, const char *name,
		  char *key, size_t len)
{
	struct tcfs_node d;
	int rc;

	if (dir == TCFS_ROOT_INO) {
		snprintf(key, len, "%s", name);
		return 0;
	}
	rc = tcfs_ns_get(fs->store, dir, &d);
	return rc < 0 ? rc : fs_key_of(fs, &d, key, len);
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

		rc = fs_render(fs, n, 0, &bytes, &len);
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
	char was[TCFS_NAME_MAX + 1], will[TCFS_NAME_MAX + 1];
	struct pins p = { *pins, *n, *n };
	int rc;

	rc = key_at(fs, moved->parent, moved->name, was, sizeof(was));
	if (rc == 0)
		rc = key_at(fs, newparent, newname, will, sizeof(will));
	if (rc == 0 && strcmp(was, will) != 0)
		rc = pin_below(fs, moved, &p, 0);
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
