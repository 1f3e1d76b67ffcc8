/*
 * putq: an import's files read, hashed and stored as blobs by a thread
 * per core, ahead of the import thread.
 *
 * The index rows of a key dir need only its files' hashes and stats,
 * and SQLite runs on one thread: so the import thread names the files of
 * the key dirs it will come to, and while it writes the rows of one key
 * dir these threads open, stat, read, hash and store the files of the
 * next ones.  An open and a stat cost the import thread as much as a
 * row: here they cost it nothing.  Results come back one at a time in
 * the order the files were added (putq_next); the import thread writes a
 * file's row only once its blob is stored, and a put that failed fails
 * its key dir, which then lands not at all.
 *
 * One thread adds and takes results; the queue's own threads only store,
 * in any order.  At most PUTQ_JOBS_MAX files wait to be read; each thread
 * holds at most one file's bytes (tcfs_cas_put_fd buffers up to 8 MiB).
 */
#ifndef TCFS_PUTQ_H
#define TCFS_PUTQ_H

#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>

#include "index/blob/cas.h"
#include "index/model/group.h"
#include "index/model/kernel.h"

struct putq;

/* What became of one put. */
struct putq_result {
	char *path;		/* owned: as given to putq_add */
	/* 1: not stored, for it was not a regular file when opened
	 * without following a link, or could not be opened: the caller's
	 * walk looks at it again, and says what it is. */
	int walk;
	int rc;			/* 0 or -errno */
	char *msg;		/* owned: the store's message with rc, or NULL */
	struct stat st;		/* of the file as opened */
	struct tcfs_content c;	/* its blob, its bytes, their format */
	enum tcfs_cas_put put;
	uint64_t stored;	/* the blob's size, when put is CREATED */
	/* owned: what the file parses to as a kernel's NAME.json (its
	 * metadata fields), when it is named *.json; else NULL */
	struct tcfs_kernel *meta;
};

/* Starts threads (1 to 16; fewer if no more can be made) storing into cas
 * (borrowed: it must outlive q), group files as f says.  *out is owned by
 * the caller: putq_stop. */
int putq_start(struct tcfs_cas *cas, unsigned threads,
	       enum tcfs_group_filter f, struct putq **out);
/* Stops the threads once what is queued is stored, and frees q with the
 * results not taken (the blobs they made are left to gc). */
void putq_stop(struct putq *q);

/* Queues file name of the directory open at dirfd, in key dir key, to be
 * opened (never through a link) and stored; path, whose last component
 * is name, is copied.  dirfd and key are borrowed: they must stay until
 * the result is taken.  Waits while too many files wait to be read.  0,
 * or -ENOMEM.  No thread starts on it before putq_go. */
int putq_add(struct putq *q, int dirfd, const char *key, const char *path);

/* Sets the threads to work on the files added since the last time: an
 * adder calls it after a batch (a taker's wait does too). */
void putq_go(struct putq *q);

/* Waits for the oldest result not taken and moves it to *r (its strings
 * the caller's: putq_result_free).  -ENOENT when none is queued. */
int putq_next(struct putq *q, struct putq_result *r);
void putq_result_free(struct putq_result *r);

/* Stores the regular file open at fd, st its stat, named name in key dir
 * key: a group file as the group policy f says (index/model/group.h),
 * anything else as it is.  What the queue's threads do, for a caller
 * storing a file itself.  0 or -errno, and c, *put, *stored, and with
 * meta not NULL *meta, as in a result. */
int putq_store_fd(struct tcfs_cas *cas, int fd, const struct stat *st,
		  const char *name, const char *key, enum tcfs_group_filter f,
		  struct tcfs_content *c, enum tcfs_cas_put *put,
		  uint64_t *stored, struct tcfs_kernel **meta);

/* The bytes of the files stored whose results were not taken yet. */
uint64_t putq_bytes(struct putq *q);

/* Waits until every queued file is stored.  Then, if a result not taken
 * yet shared blob h, which its maker is about to take back, the first
 * such becomes its maker (put CREATED, stored its size): 1, else 0. */
int putq_adopt(struct putq *q, const struct tcfs_hash *h, uint64_t stored);

#endif
