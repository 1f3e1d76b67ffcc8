/*
 * strset: a set of strings (a tsearch tree), for the names an archive or
 * an image holds: each lookup and insertion O(log n), for 100k kernels.
 */
#ifndef TCFS_TOOLS_STRSET_H
#define TCFS_TOOLS_STRSET_H

struct strset {
	void *root;		/* tsearch's; NULL: empty */
};

/* Adds a copy of s (owned by the set): 1 when it was not there, 0 when
 * it was, -ENOMEM. */
int strset_add(struct strset *set, const char *s);
/* Whether s is in the set. */
int strset_has(const struct strset *set, const char *s);
/* Frees every string and empties the set. */
void strset_free(struct strset *set);

#endif
