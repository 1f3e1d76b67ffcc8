/* blobset: a mark per blob name, in memory. */
#include "index/blob/blobset.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct tcfs_blobset *s, const struct tcfs_hash *h)
{
	uint64_t x;

	memcpy(&x, h->b, sizeof(x));
	return (size_t)x & (s->cap - 1);
}

/* The slot holding h, or the empty one where it would go. */
static struct tcfs_blobset_slot *find(const struct tcfs_blobset *s,
				      const struct tcfs_hash *h)
{
	size_t i = slot_of(s, h);

	while (s->v[i].mark && !tcfs_hash_equal(&s->v[i].h, h))
		i = (i + 1) & (s->cap - 1);
	return &s->v[i];
}

int tcfs_blobset_get(const struct tcfs_blobset *s, const struct tcfs_hash *h)
{
	return s->cap ? find(s, h)->mark : 0;
}

/* Doubles the table (at least 1024 slots), rehashing every mark. */
static int grow(struct tcfs_blobset *s)
{
	struct tcfs_blobset old = *s;

	s->cap = old.cap ? 2 * old.cap : 1024;
	s->v = calloc(s->cap, sizeof(*s->v));
	if (!s->v) {
		*s = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old.cap; i++)
		if (old.v[i].mark)
			*find(s, &old.v[i].h) = old.v[i];
	free(old.v);
	return 0;
}

int tcfs_blobset_set(struct tcfs_blobset *s, const struct tcfs_hash *h,
		     int mark)
{
	struct tcfs_blobset_slot *slot;

	assert(mark > 0 && mark < 256);
	/* At most half full, so probes stay short and find always ends. */
	if (2 * (s->n + 1) > s->cap && grow(s) < 0)
		return -ENOMEM;
	slot = find(s, h);
	if (!slot->mark) {
		slot->h = *h;
		s->n++;
	}
	slot->mark = (unsigned char)mark;
	return 0;
}

void tcfs_blobset_free(struct tcfs_blobset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
