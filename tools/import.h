/*
 * import: Triton cache directories brought into the store, one key dir
 * per transaction (tcfs import), or a whole tree in one (tcfs unpack).
 */
#ifndef TCFS_TOOLS_IMPORT_H
#define TCFS_TOOLS_IMPORT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "index/base/hash.h"

struct progress;
struct tcfs_store;
struct tcfs_ns_file;

struct import_stats {
	uint64_t kernels;	/* group files in imported key dirs */
	uint64_t new_kernels;	/* of those, not there before */
	uint64_t kept_kernels;	/* group files there already, the same or
				 * not (a conflict): kept as they were */
	uint64_t keydirs;
	uint64_t files;		/* files now in the store from the sources */
	uint64_t new_files;	/* of those, not there before */
	uint64_t bytes;		/* their logical size */
	uint64_t new_bytes;	/* that of the new files */
	uint64_t new_blob_bytes;	/* bytes of blobs this import added */
	uint64_t skipped;	/* temp files, foreign entries, links out */
	uint64_t conflicts;	/* same name, different bytes: kept stored */
	uint64_t failed_dirs;
};

/* Key dirs an import commits together unless told otherwise: why so
 * many, import.c. */
#define IMPORT_BATCH_DIRS 16384

struct import_opts {
	const char *cmd;	/* for messages: "import", "unpack" */
	int quiet;		/* no notes, only errors */
	int binary_only;	/* IR files stay out */
	/* Where the import's progress goes; NULL: nowhere.  Not owned. */
	struct progress *progress;
	/* The whole tree: caches at any depth (Inductor's, vLLM's) and the
	 * files beside them, not only the key dirs at the top. */
	int tree;
	/* All or nothing: the first error undoes everything imported
	 * (import_end), and nothing commits before it. */
	int atomic;
	/* Key dirs committed together; 0: IMPORT_BATCH_DIRS. */
	uint64_t batch_dirs;
};

struct import {
	struct tcfs_store *s;	/* not owned */
	struct import_opts o;
	const char *src;	/* as given, for messages */
	int srcfd;		/* symlinks may not lead out of it */
	char realsrc[PATH_MAX];	/* its absolute path */
	struct import_stats st;
	int fatal;		/* the store cannot take more: stop */
	size_t batch_dirs;	/* key dirs in the batch not yet committed */
	int lost;		/* that batch's commit failed (store_lost) */
	/* Blobs added since the last commit point (the current key dir, or
	 * with atomic everything); removed if it rolls back. */
	struct tcfs_hash *added;
	uint64_t *added_size;
	size_t nadded;
	struct putq *q;		/* owned; NULL: files read and stored here */
	int spacefd;		/* the store's file system, for its room */
	struct ahead *cur;	/* the key dir being imported, when its
				 * files were queued (import.c); not owned */
	int shown;		/* the error on its way up was reported */
	/* A key dir this import made, whose files' rows wait in pend until
	 * the next row of another kind or the dir's end; 0: none. */
	uint64_t fresh;
	struct tcfs_ns_file *pend;	/* owned; names borrowed */
	size_t npend, pend_cap;
};

/* Starts an import into s (a writer).  0 or -errno; then import_end. */
int import_begin(struct import *im, struct tcfs_store *s,
		 const struct import_opts *o);
/* Imports the directory src.  0, or -errno when src itself could not be
 * read (key dirs that fail are counted in st.failed_dirs). */
int import_source(struct import *im, const char *src);
/* Ends the import and frees im's memory.  With atomic, commits
 * everything, or when rc < 0 or anything failed takes it all back;
 * without, each source was committed as it ended.  0 when everything
 * imported is in the store, else rc or -EIO. */
int import_end(struct import *im, int rc);

#endif
