/* vec: growing arrays for the rows queries return. */
#include "index/base/vec.h"

#include <stdlib.h>
#include <string.h>

void *tcfs_vec_push(void *v, size_t *n, size_t *cap, size_t elem)
{
	char **p = v;
	char *slot;

	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		char *nv = realloc(*p, ncap * elem);

		if (!nv)
			return NULL;
		*p = nv;
		*cap = ncap;
	}
	slot = *p + *n * elem;
	memset(slot, 0, elem);
	(*n)++;
	return slot;
}
