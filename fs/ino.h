/*
 * ino: what an inode number that the kernel holds says.  The one place
 * that knows its bit layout: everything else gets {kind, row} from
 * fs_ino_of (once, in the dispatch layer, ops.c) and makes numbers with
 * fs_ino_make.
 *
 * The top FS_INO_TAG_BITS bits are a tag, the rest a row:
 *   tag 0                    the store's row itself (FS_KIND_STORE): the
 *                            store hands out numbers below 2^60
 *   tag 7                    the same row in binary-only/ (FS_KIND_BIN)
 *   tag 8                    the same row in .tcfs/kernels/, the browse
 *                            tree (FS_KIND_BROWSE)
 *   tags 1..6 (VIEW_MIN..MAX) the views' (FS_KIND_VIEW): view.c gives
 *                            each tag a meaning of its own and the row
 *                            bits an id (FS_INO_TAG, FS_INO_ROW)
 * Numbers are never reused with another meaning for the mount's life.
 */
#ifndef TCFS_FS_INO_H
#define TCFS_FS_INO_H

#include <assert.h>
#include <stdint.h>

#include "index/tree/ns.h"

#define FS_INO_TAG_BITS 4
#define FS_INO_TAG_SHIFT (64 - FS_INO_TAG_BITS)
#define FS_INO_ROW_MAX ((UINT64_C(1) << FS_INO_TAG_SHIFT) - 1)
#define FS_INO_TAG_STORE 0
#define FS_INO_TAG_VIEW_MIN 1
#define FS_INO_TAG_VIEW_MAX 6
#define FS_INO_TAG_BIN 7
#define FS_INO_TAG_BROWSE 8

/* A number's tag and row bits, and the number of a tag's row. */
#define FS_INO_TAG(ino) ((unsigned)((uint64_t)(ino) >> FS_INO_TAG_SHIFT))
#define FS_INO_ROW(ino) ((uint64_t)(ino) & FS_INO_ROW_MAX)
#define FS_INO_MAKE(tag, row) \
	((uint64_t)(tag) << FS_INO_TAG_SHIFT | (uint64_t)(row))

_Static_assert(FS_INO_TAG_SHIFT == 60, "a store row has 60 bits");
_Static_assert(FS_INO_TAG_BROWSE < (1u << FS_INO_TAG_BITS) &&
		       FS_INO_TAG_BIN < FS_INO_TAG_BROWSE &&
		       FS_INO_TAG_VIEW_MAX < FS_INO_TAG_BIN &&
		       FS_INO_TAG_VIEW_MIN > FS_INO_TAG_STORE,
	       "the tags are distinct and fit their bits");
_Static_assert(TCFS_ROOT_INO == 1 && TCFS_ROOT_INO <= FS_INO_ROW_MAX,
	       "the root is the store's row 1, FUSE's root id");

/* The kinds of inode, each served by its table of operations (kind.h). */
enum fs_kind {
	FS_KIND_STORE,		/* a row of the store */
	FS_KIND_BIN,		/* a row, in binary-only/ */
	FS_KIND_VIEW,		/* by-name/, by-arch/, .tcfs/ (view.c) */
	FS_KIND_BROWSE,		/* a row, in .tcfs/kernels/: read-only, and
				 * its lookups are no probes */
	FS_KINDS
};

/* An inode number as the kernel holds it, decoded. */
struct fs_ino {
	enum fs_kind kind;
	uint64_t row;		/* the store's row (STORE, BIN); the row
				 * bits (VIEW) */
	uint64_t ino;		/* the number itself */
};

static inline struct fs_ino fs_ino_of(uint64_t ino)
{
	unsigned tag = FS_INO_TAG(ino);
	struct fs_ino i = { FS_KIND_VIEW, FS_INO_ROW(ino), ino };

	if (tag == FS_INO_TAG_STORE)
		i.kind = FS_KIND_STORE;
	else if (tag == FS_INO_TAG_BIN)
		i.kind = FS_KIND_BIN;
	else if (tag == FS_INO_TAG_BROWSE)
		i.kind = FS_KIND_BROWSE;
	return i;
}

/* The number that a row has in kind (STORE, BIN or BROWSE). */
static inline uint64_t fs_ino_make(enum fs_kind kind, uint64_t row)
{
	assert(row <= FS_INO_ROW_MAX && kind != FS_KIND_VIEW);
	return FS_INO_MAKE(kind == FS_KIND_BIN	    ? FS_INO_TAG_BIN
			   : kind == FS_KIND_BROWSE ? FS_INO_TAG_BROWSE
						    : FS_INO_TAG_STORE,
			   row);
}

/* The store row a number shows, or 0 (no row's) for a view's. */
static inline uint64_t fs_ino_row(uint64_t ino)
{
	struct fs_ino i = fs_ino_of(ino);

	return i.kind == FS_KIND_VIEW ? 0 : i.row;
}

#endif
