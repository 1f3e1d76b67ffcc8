/*
 * vec: growing arrays, for the lists queries return.
 */
#ifndef TCFS_VEC_H
#define TCFS_VEC_H

#include <stddef.h>

/* Makes room for one more element of size elem in *v (which holds *n, with
 * room for *cap) and returns it, zeroed, after incrementing *n; NULL when
 * out of memory (*v is then unchanged).  *v is owned by the caller. */
void *tcfs_vec_push(void *v, size_t *n, size_t *cap, size_t elem);

#endif
