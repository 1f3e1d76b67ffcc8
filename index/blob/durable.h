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
 *
 * durable knows the index and the blobs, not the tree: which files a lost
 * blob takes with it is its caller's to say (recover.c).
 */
#ifndef TCFS_DURABLE_H
#define TCFS_DURABLE_H

#include <stdint.h>

struct tcfs_cas;
struct tcfs_db;
struct tcfs_hash;
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

/* The batch state of a writer of the store at path (for messages) whose
 * index is db; storefd is any descriptor on the store's file system.  All
 * three are borrowed and must outlive it (the store owns them).  *out is
 * owned by the caller: tcfs_durable_free. */
int tcfs_durable_new(int storefd, const char *path, struct tcfs_db *db,
		     struct tcfs_durable **out);
void tcfs_durable_free(struct tcfs_durable *d);

/* Notes that a row names h, inside the caller's transaction; nothing when
 * d is NULL (the store does not batch: tcfs_store_durable).  The blob's
 * bytes must be written already. */
int tcfs_durable_note(struct tcfs_durable *d, const struct tcfs_hash *h);

/* For a writer that commits seldom (an import: once per thousand key
 * dirs): notes nothing, and syncs the store's file system before every
 * COMMIT instead, so no committed row ever names a blob that is not
 * durable.  Cheaper than a note per row, whose table's pages, keyed by
 * random names, are all over the index.  From then on, for good;
 * nothing when d is NULL.  A failed sync fails that commit (rolled back)
 * and every later one. */
void tcfs_durable_sync_first(struct tcfs_durable *d);

/* Commits the index and makes it and every blob noted so far durable,
 * then forgets those notes (the forgetting is committed with the store's
 * next sync).  Nothing to do when nothing changed since the last flush, or
 * d is NULL.  Safe from any thread not inside a transaction.  Once a sync
 * has failed (the disk lost writes), every flush fails with that error
 * and no note is forgotten any more: the next writer checks them all. */
int tcfs_durable_flush(struct tcfs_durable *d);

/* Told of a lost blob h: removes the files that name it, adding those
 * removed to *dropped (recover.c: tcfs_damage_drop_users). */
typedef int tcfs_durable_lost_cb(void *ctx, const struct tcfs_hash *h,
				 uint64_t *dropped);

/* For a writer opening the store, before anyone else uses it: checks
 * the blobs a writer that did not stop cleanly left noted, has lost(ctx)
 * drop the files whose blobs were lost and removes what is left of those
 * blobs, makes the rest durable and forgets their notes (an unreadable
 * blob keeps its note).  storefd and path as for tcfs_durable_new. */
int tcfs_durable_recover(struct tcfs_db *db, struct tcfs_cas *cas,
			 int storefd, const char *path,
			 tcfs_durable_lost_cb *lost, void *ctx,
			 struct tcfs_durable_report *out);

#endif
