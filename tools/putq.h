/*
 * putq: an import's new blobs written on threads of their own.
 *
 * Writing a blob (a file made, written and named in STORE/objects) is
 * half of an import's time, and the index rows that name it need only
 * its hash: so the import thread hashes the bytes it read, hands them
 * here and goes on with the rows while these threads store them, several
 * at once (each put is mostly syscalls, which a thread per core spreads).  Before
 * a key dir's transaction ends its puts are waited for (putq_drain): one
 * that failed fails the key dir, which then lands not at all, as when
 * the import stored its blobs itself.
 *
 * One thread adds and drains; the queue's own threads only store, in any
 * order, but results come back in the order added.
 */
#ifndef TCFS_PUTQ_H
#define TCFS_PUTQ_H

#include <stddef.h>
#include <stdint.h>

#include "index/blob/cas.h"

struct putq;

/* What became of one put, in the order they were added. */
struct putq_result {
	const char *path;	/* as given to putq_add */
	int rc;			/* 0 or -errno */
	const char *msg;	/* the store's message with rc, or "" */
	struct tcfs_hash blob;
	enum tcfs_cas_put put;
	uint64_t stored;	/* the blob's size, when put is CREATED */
};

/* Starts threads (1 to 16; fewer if no more can be made) storing into cas
 * (borrowed: it must outlive q).  *out is owned by the caller: putq_stop. */
int putq_start(struct tcfs_cas *cas, unsigned threads, struct putq **out);
/* Stops the threads once what is queued is stored, and frees q. */
void putq_stop(struct putq *q);

/* Queues buf's len bytes, whose hash is h, to be stored; buf is taken
 * (freed by the queue), path copied.  Waits while too many bytes are
 * queued.  0, or -ENOMEM (buf freed all the same). */
int putq_add(struct putq *q, char *buf, size_t len,
	     const struct tcfs_hash *h, const char *path);

/* Waits until everything queued is stored, then gives done each result
 * in order; returns the first error of done or of a put, else 0. */
int putq_drain(struct putq *q,
	       int (*done)(void *ctx, const struct putq_result *r),
	       void *ctx);

#endif
