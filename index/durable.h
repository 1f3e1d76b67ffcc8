/*
 * durable: when new blobs reach the disk.
 *
 * Fsyncing each new blob and its fan-out directory before a row names it
 * costs two disk flushes per file, most of what a cold compile paid through
 * the mount.  So the mount batches: a new blob is not fsynced, but every row
 * that names a blob notes it in table unsynced, in the same transaction, and
 * tcfs_durable_flush, run once a second, syncs the store's file system once
 * (syncfs) and then forgets the notes taken before it began.
 *
 * After a power cut the index may thus hold rows whose blobs the disk lost,
 * but never without their notes: the next writer to open the store checks
 * every noted blob against its name and drops the files whose bytes are
 * gone, so that they read as never written, never as wrong bytes (the
 * loss is like a local disk's, which also drops its last seconds of
 * writes).  A killed daemon loses nothing: the page cache keeps the bytes.
 */
#ifndef TCFS_DURABLE_H
#define TCFS_DURABLE_H

#include <stdint.h>

struct tcfs_hash;
struct tcfs_store;
struct tcfs_durable;

/* How a writer makes new blobs durable (tcfs_store_opts.durability). */
enum tcfs_durability {
	TCFS_DURABLE_EACH = 0,	/* fsync each blob before it is named */
	TCFS_DURABLE_BATCH,	/* note it; tcfs_durable_flush syncs */
	TCFS_DURABLE_NONE,	/* never: a power cut may damage recent
				 * blobs, and only fsck finds them */
};

/* What tcfs_durable_recover found. */
struct tcfs_durable_report {
	uint64_t checked;	/* noted blobs read back */
	uint64_t lost;		/* of those, missing or damaged */
	uint64_t dropped;	/* files removed because their blob was lost */
};

/* The batch state of a writer; storefd (borrowed) is any descriptor on
 * the store's file system.  *out is owned by the caller: tcfs_durable_free. */
int tcfs_durable_new(int storefd, struct tcfs_durable **out);
void tcfs_durable_free(struct tcfs_durable *d);

/* Notes that a row names h, inside the caller's transaction; nothing when
 * the store does not batch.  The blob's bytes must be written already. */
int tcfs_durable_note(struct tcfs_store *s, const struct tcfs_hash *h);

/* Makes every blob noted so far durable, then forgets those notes (the
 * forgetting is committed with the store's next sync).  Safe from any
 * thread, without the db lock; nothing to do when the store does not
 * batch or nothing was noted since the last flush. */
int tcfs_durable_flush(struct tcfs_store *s);

/* For a writer opening the store, before anyone else uses it: checks
 * the blobs a writer that did not stop cleanly left noted, drops the
 * files whose blobs were lost, makes the rest durable and forgets the
 * notes.  storefd as for tcfs_durable_new. */
int tcfs_durable_recover(struct tcfs_store *s, int storefd,
			 struct tcfs_durable_report *out);

#endif
