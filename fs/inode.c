/*
 * inode: how many lookups the kernel holds on each inode.
 *
 * Every entry we hand the kernel (lookup, mkdir, create) is one lookup of
 * its inode; FORGET gives them back.  Only when none is left may a node
 * removed from the tree (kept in limbo, see tcfs_ns_forget) really go: a
 * FORGET of an old kernel inode can arrive after a new lookup of the same
 * number, so a FORGET alone proves nothing.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "priv.h"

#define INODE_BUCKETS 65536

struct ref {
	uint64_t ino;
	uint64_t n;
	struct ref *next;
};

struct fs_inodes {
	pthread_mutex_t mu;
	int untracked;		/* a lookup went uncounted (no memory) */
	struct ref *bucket[INODE_BUCKETS];
};

int fs_inodes_new(struct fs_inodes **out)
{
	struct fs_inodes *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return 0;
}

void fs_inodes_free(struct fs_inodes *t)
{
	if (!t)
		return;
	for (size_t b = 0; b < INODE_BUCKETS; b++)
		while (t->bucket[b]) {
			struct ref *r = t->bucket[b];

			t->bucket[b] = r->next;
			free(r);
		}
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* The link to ino's count, or to NULL; t->mu held. */
static struct ref **find(struct fs_inodes *t, uint64_t ino)
{
	struct ref **link = &t->bucket[ino % INODE_BUCKETS];

	FS_ASSERT_HELD(&t->mu);
	while (*link && (*link)->ino != ino)
		link = &(*link)->next;
	return link;
}

void fs_inode_ref(struct tcfs_fs *fs, uint64_t ino)
{
	struct fs_inodes *t = fs->inodes;
	struct ref **link;

	pthread_mutex_lock(&t->mu);
	link = find(t, ino);
	if (*link) {
		assert((*link)->n < UINT64_MAX);
		(*link)->n++;
	} else if ((*link = malloc(sizeof(**link))) != NULL) {
		(*link)->ino = ino;
		(*link)->n = 1;
		(*link)->next = NULL;
	} else {
		t->untracked = 1;
	}
	/* Out of memory: the node stays in limbo until the next mount. */
	pthread_mutex_unlock(&t->mu);
}

void fs_inode_forget(struct tcfs_fs *fs, uint64_t ino, uint64_t n)
{
	struct fs_inodes *t = fs->inodes;
	struct ref **link, *r;
	int gone = 0;

	pthread_mutex_lock(&t->mu);
	link = find(t, ino);
	r = *link;
	/* As passthrough_ll asserts: the kernel never forgets more than it
	 * looked up.  The root, which the kernel holds without a lookup, may
	 * be given back once more than it was looked up (binary-only/ is the
	 * root's row too). */
	assert(!r || r->n >= n || (ino == TCFS_ROOT_INO && r->n + 1 >= n));
	assert(r || n == 0 || ino == TCFS_ROOT_INO || t->untracked);
	if (r && r->n > n) {
		r->n -= n;
	} else if (r) {
		*link = r->next;
		free(r);
		gone = 1;
	}
	pthread_mutex_unlock(&t->mu);
	if (gone)
		tcfs_ns_forget(fs->store, ino);
}

int fs_inode_known(struct tcfs_fs *fs, uint64_t ino)
{
	struct fs_inodes *t = fs->inodes;
	int yes;

	pthread_mutex_lock(&t->mu);
	yes = *find(t, ino) != NULL;
	pthread_mutex_unlock(&t->mu);
	return yes;
}
