/*
 * putq: an import's files read, hashed and stored as blobs by a thread
 * per core, ahead of the import thread.
 *
 * The index rows of a key dir need only its files' hashes, and SQLite
 * runs on one thread: so the import thread opens the files of the key
 * dirs it will come to, hands their descriptors here, and while it
 * writes the rows of one key dir these threads read, hash and store the
 * files of the next ones.  Results come back one at a time in the order
 * the files were added (putq_next); the import thread writes a file's
 * row only once its blob is stored, and a put that failed fails its key
 * dir, which then lands not at all.
 *
 * One thread adds and takes results; the queue's own threads only store,
 * in any order.  At most PUTQ_JOBS_MAX files wait to be read, so the
 * descriptors held stay bounded; each thread holds at most one file's
 * bytes (tcfs_cas_put_fd buffers up to 8 MiB).
 */
#ifndef TCFS_PUTQ_H
#define TCFS_PUTQ_H

#include <stddef.h>
#include <stdint.h>

#include "index/blob/cas.h"

struct putq;

/* What became of one put. */
struct putq_result {
	char *path;		/* owned: as given to putq_add */
	int rc;			/* 0 or -errno */
	char *msg;		/* owned: the store's message with rc, or NULL */
	struct tcfs_hash blob;
	uint64_t size;		/* the file's bytes */
	enum tcfs_cas_put put;
	uint64_t stored;	/* the blob's size, when put is CREATED */
};

/* Starts threads (1 to 16; fewer if no more can be made) storing into cas
 * (borrowed: it must outlive q).  *out is owned by the caller: putq_stop. */
int putq_start(struct tcfs_cas *cas, unsigned threads, struct putq **out);
/* Stops the threads once what is queued is stored, and frees q with the
 * results not taken (the blobs they made are left to gc). */
void putq_stop(struct putq *q);

/* Queues the regular file open at fd (taken: closed by the queue) to be
 * read from its start and stored; path is copied.  Waits while too many
 * files wait to be read.  0, or -ENOMEM (fd closed all the same). */
int putq_add(struct putq *q, int fd, const char *path);

/* Waits for the oldest result not taken and moves it to *r (its strings
 * the caller's: putq_result_free).  -ENOENT when none is queued. */
int putq_next(struct putq *q, struct putq_result *r);
void putq_result_free(struct putq_result *r);

/* Waits until every queued file is stored.  Then, if a result not taken
 * yet shared blob h, which its maker is about to take back, the first
 * such becomes its maker (put CREATED, stored its size): 1, else 0. */
int putq_adopt(struct putq *q, const struct tcfs_hash *h, uint64_t stored);

#endif
