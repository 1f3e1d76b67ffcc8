/*
 * census: the files under a store's objects/ counted and summed, as
 * tcfs_cas_foreach (cas.h) sees them, by several threads at once.  Its
 * one thread's stat of each blob made most of what tcfs info took on a
 * store of 100,000 kernels (800,000 files): the stats are independent,
 * and each core takes fan-out dirs of its own.
 */
#ifndef TCFS_CENSUS_H
#define TCFS_CENSUS_H

#include <stdint.h>

struct tcfs_census {
	uint64_t files;	/* every name but dot names, strays included */
	uint64_t bytes;	/* their sizes; a stray at the top counts 0 */
};

/* Counts the files under objects/ of the store at store_path (a
 * directory, never followed through a link), with up to threads threads
 * (0: one per core online, at most 16).  Files added or removed meanwhile
 * may be counted or not.  0 or -errno (with a message). */
int tcfs_census_objects(const char *store_path, unsigned threads,
			struct tcfs_census *out);

#endif
