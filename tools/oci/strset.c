/* strset: sets of strings over tsearch (strset.h). */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "strset.h"

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int strset_add(struct strset *set, const char *s)
{
	char *own = strdup(s), **got;

	got = own ? tsearch(own, &set->root, cmp) : NULL;
	if (!got) {
		free(own);
		return -ENOMEM;
	}
	if (*got != own) {
		free(own);
		return 0;
	}
	return 1;
}

int strset_has(const struct strset *set, const char *s)
{
	return tfind(s, &set->root, cmp) != NULL;
}

void strset_free(struct strset *set)
{
	tdestroy(set->root, free);
	set->root = NULL;
}
