/*
 * untar: a tar stream (compressed or not) extracted into a directory,
 * each entry shown to the caller's vet before anything of it is written,
 * its size counted against a budget: what an image's layers and the
 * archives holding images share.
 */
#ifndef TCFS_TOOLS_UNTAR_H
#define TCFS_TOOLS_UNTAR_H

#include <stdint.h>

struct archive_entry;

struct untar {
	int fd;			/* the archive, read from its start; not
				 * closed */
	const char *where;	/* names it in messages */
	const char *dir;	/* extracted into */
	uint64_t *budget;	/* bytes the entries may still expand to */
	int overwrite;		/* replace what is there (later layers) */
	/* Checks e and may rewrite it (its path made canonical, its mode):
	 * 0 to write it, 1 to skip it, or -errno with a message.  Paths are
	 * relative to dir. */
	int (*vet)(void *ctx, struct archive_entry *e);
	void *ctx;
};

/* What an entry costs beside its bytes: a tar header's 512, so that a
 * stream of empty files and dirs (millions of inodes in a small layer)
 * runs out of budget too. */
#define UNTAR_ENTRY_COST 512
/* The most components a name may have: a cache is a few levels deep
 * (vLLM's nests a Triton cache five down); a deeper tree is only made to
 * exhaust whoever walks or removes it. */
#define UNTAR_DEPTH_MAX 32

/* Charges entry e (where names its archive) to *budget before any of it
 * is written: its size, not the bytes stored, as a sparse file stores
 * almost none of a size that every later reader of it pays in full, and
 * UNTAR_ENTRY_COST.  0, or -EFBIG with a message when past it. */
int untar_charge(const char *where, struct archive_entry *e,
		 uint64_t *budget);

/* Extracts u->fd into u->dir; libarchive's secure options refuse, on
 * top of the vet, any entry that would land outside dir or write
 * through a symlink.  0, or -errno with a message. */
int untar_run(const struct untar *u);

#endif
