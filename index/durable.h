/*
 * durable: when new blobs, and the index rows naming them, reach the disk.
 *
 * Fsyncing each new blob and its fan-out directory before a row names it
 * costs two disk flushes per file, most of what a cold compile paid through
 * the mount.  So writers batch: a new blob is not fsynced, but every row
 * that names a blob notes it in table unsynced, in the same transaction.
 * tcfs_durable_flush (the mount: once a second; a command: when it closes
 * the store) commits the index and syncs the store's file system once
 * (syncfs), which makes the blobs and the index durable together, and then
 * forgets the notes taken before it began.
 *
 * After a power cut the index may thus hold rows whose blobs the disk lost,
 * but never without their notes: the next writer to open the store reads
 * every noted blob back and drops the files whose bytes are gone, so they
 * read as never written, never as wrong bytes (the loss is like a local
 * disk's, which also drops its last seconds of writes).  A killed process
 * loses nothing: the page cache keeps the bytes.
 */
#ifndef TCFS_DURABLE_H
#define TCFS_DURABLE_H

#include <stdint.h>

struct tcfs_hash;
struct tcfs_store;
struct tcfs_durable;

/* How a writer makes new blobs durable (tcfs_store_opts.durability). */
enum tcfs_durability {
	TCFS_DURABLE_BATCH = 0,	/* note them; tcfs_durable_flush syncs */
	TCFS_DURABLE_NONE,	/* never: a power cut may damage recent
				 * blobs, and only fsck finds them */
};

/* What tcfs_durable_recover found. */
struct tcfs_durable_report {
	uint64_t checked;	/* noted blobs read back */
	uint64_t lost;		/* of those, missing or damaged */
	uint64_t dropped;	/* files removed because their blob was lost */
	uint64_t unreadable;	/* blobs that could not be read (an I/O
				 * error): kept, noted, for tcfs fsck */
};

/* The batch state of a writer; storefd (borrowed) is any descriptor on
 * the store's file system.  *out is owned by the caller: tcfs_durable_free. */
int tcfs_durable_new(int storefd, struct tcfs_durable **out);
void tcfs_durable_free(struct tcfs_durable *d);

/* Notes that a row names h, inside the caller's transaction; nothing when
 * the store does not batch.  The blob's bytes must be written already. */
int tcfs_durable_note(struct tcfs_store *s, const struct tcfs_hash *h);

/* Commits the index and makes it and every blob noted so far durable,
 * then forgets those notes (the forgetting is committed with the store's
 * next sync).  Nothing to do when nothing changed since the last flush, or
 * the store does not batch.  Safe from any thread not inside a
 * transaction.  Once a sync has failed (the disk lost writes), every flush
 * fails with that error and no note is forgotten any more: the next writer
 * checks them all. */
int tcfs_durable_flush(struct tcfs_store *s);

/* For a writer opening the store, before anyone else uses it: checks
 * the blobs a writer that did not stop cleanly left noted, drops the
 * files whose blobs were lost, makes the rest durable and forgets their
 * notes (an unreadable blob keeps its note).  storefd as for
 * tcfs_durable_new. */
int tcfs_durable_recover(struct tcfs_store *s, int storefd,
			 struct tcfs_durable_report *out);

#endif
