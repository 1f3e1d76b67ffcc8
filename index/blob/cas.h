/*
 * cas: the content-addressed blob store, STORE/objects/ab/<xxh3-128 hex>.
 *
 * A blob is written to a file that has no name yet (O_TMPFILE in
 * STORE/objects) and linked to its name once whole, or where the file
 * system cannot do that, written to STORE/staging and renamed into place;
 * never replacing anything, and read-only (mode 0444) from then on.  It
 * is not fsynced here: the store makes new blobs durable in batches
 * (durable.h).  When a blob of the same name exists its bytes are
 * compared first: equal bytes are shared, a damaged existing copy is
 * healed with the new bytes, and a true collision is an error, so wrong
 * bytes are never served.
 *
 * Thread safety: every function may be called from many threads at once.
 */
#ifndef TCFS_CAS_H
#define TCFS_CAS_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "index/base/hash.h"

struct tcfs_cas;
struct tcfs_cas_stage;

/* What a put did with the bytes it was given. */
enum tcfs_cas_put {
	TCFS_CAS_SHARED = 0,	/* an identical blob was already there */
	TCFS_CAS_CREATED = 1,	/* a new blob was added */
	TCFS_CAS_HEALED = 2,	/* a damaged blob of that name was replaced */
};

/* Opens the blob store under the store directory storefd (creating
 * objects/ and staging/ when create is set).  storepath is used only in
 * messages; it is copied.  *out is owned by the caller: tcfs_cas_close. */
int tcfs_cas_open(int storefd, const char *storepath, int create,
		  struct tcfs_cas **out);
void tcfs_cas_close(struct tcfs_cas *cas);

/* From now on, starts writing each new blob's bytes to the disk as it is
 * placed (sync_file_range), not waiting for them.  A writer that syncs
 * the file system before each commit (durable.h) then waits on the last
 * of them only, not on all its batch has written. */
void tcfs_cas_write_early(struct tcfs_cas *cas);

/* Stores len bytes; *put (optional) says what happened. */
int tcfs_cas_put_buf(struct tcfs_cas *cas, const void *buf, size_t len,
		     struct tcfs_hash *out, enum tcfs_cas_put *put);

/* Stores everything readable from fd (from its current offset to EOF);
 * *size gets the byte count.  Errors reading fd are returned as they are,
 * so the caller can name its own file. */
int tcfs_cas_put_fd(struct tcfs_cas *cas, int fd, struct tcfs_hash *out,
		    uint64_t *size, enum tcfs_cas_put *put);

/*
 * A stage holds the bytes of a file that a writer fills piecewise (the
 * mount's write requests) before they become a blob: in memory while it
 * is small, else in a file (unnamed, or under STORE/staging: see above).
 * Every byte a stage takes has room on the disk (space.h): a write that
 * would not fit when stored fails with ENOSPC, so a commit does not fail
 * for want of room unless someone else filled the disk meanwhile.  The
 * stage is owned by the caller until a successful tcfs_cas_stage_commit,
 * or _abort, frees it; a commit that fails leaves it as it was, to be
 * tried again.  One stage is used by one thread at a time.
 */
int tcfs_cas_stage_new(struct tcfs_cas *cas, struct tcfs_cas_stage **out);
int tcfs_cas_stage_size(const struct tcfs_cas_stage *s, uint64_t *size);
/* Reads up to len bytes at off into buf: the count read, 0 at the end, or
 * a negative errno. */
ssize_t tcfs_cas_stage_pread(const struct tcfs_cas_stage *s, void *buf,
			     size_t len, uint64_t off);
/* Writes all of buf at off.  In-order appends are hashed as they come so
 * that commit need not read the file back. */
int tcfs_cas_stage_write(struct tcfs_cas_stage *s, const void *buf,
			 size_t len, uint64_t off);
int tcfs_cas_stage_truncate(struct tcfs_cas_stage *s, uint64_t size);
int tcfs_cas_stage_commit(struct tcfs_cas_stage *s, struct tcfs_hash *out,
			  uint64_t *size, enum tcfs_cas_put *put);
void tcfs_cas_stage_abort(struct tcfs_cas_stage *s);
/* Whether a commit must read the stage back to hash it: a file written
 * out of order (appends, writes past the end and truncates that grow it
 * are hashed as they come).  Seconds, for a big one. */
int tcfs_cas_stage_costly(const struct tcfs_cas_stage *s);

/* Opens a blob for reading; returns the descriptor (caller closes it). */
int tcfs_cas_open_blob(struct tcfs_cas *cas, const struct tcfs_hash *h);

/*
 * Opens a blob whose bytes are about to be served (the mount reads them
 * to a process).  A damaged blob is never served: the first time this
 * handle serves a blob's file, its bytes are read back and checked
 * against its name (files it stored or compared itself count as
 * checked).  A verdict holds for that file only (its device, inode, size
 * and change time): another put at the blob's path is checked in turn.
 * Returns the descriptor of the file checked (caller closes it).  A blob found bad is never served by
 * this handle again: the call that finds it gets -EBADMSG (damaged) or
 * -ENOENT (gone), every later one -EIO, all with a message naming it.
 */
int tcfs_cas_open_checked(struct tcfs_cas *cas, const struct tcfs_hash *h);

/* The same check without the descriptor: 0 when the blob may be served,
 * else the error an open of it gets. */
int tcfs_cas_check(struct tcfs_cas *cas, const struct tcfs_hash *h);

/* The same for a blob read whole, of at most max bytes (else -EFBIG):
 * *buf (owned by the caller, free()) holds its *len bytes. */
int tcfs_cas_read_checked(struct tcfs_cas *cas, const struct tcfs_hash *h,
			  size_t max, char **buf, size_t *len);

/* 0 when the blob exists (size in *size), -ENOENT otherwise. */
int tcfs_cas_stat(struct tcfs_cas *cas, const struct tcfs_hash *h,
		  uint64_t *size);

/* Reads the blob and checks its bytes against its name: 0 when whole,
 * -EBADMSG when damaged, -ENOENT when missing. */
int tcfs_cas_verify(struct tcfs_cas *cas, const struct tcfs_hash *h);

/* Deletes a blob; -ENOENT when it was not there. */
int tcfs_cas_remove(struct tcfs_cas *cas, const struct tcfs_hash *h);

/* The put grace: how long a blob put may wait for the row that will name
 * it (a batch committed later, a retry after a full disk). */
#define TCFS_CAS_GRACE_NS (60 * 1000000000LL)

/* Deletes a blob no row names, for a writer that shares the store with
 * puts in flight (the mount): referenced says 1 when a row names h, 0
 * when none, or -errno.  A blob this handle put within the grace is
 * kept, referenced or not, for the row that will name it, and so is the
 * empty blob.  *freed gets the bytes freed (0 when kept or already
 * gone). */
int tcfs_cas_free(struct tcfs_cas *cas, const struct tcfs_hash *h,
		  int (*referenced)(void *ctx, const struct tcfs_hash *h),
		  void *ctx, uint64_t *freed);

/* 1 when tcfs_cas_free would keep h for the put grace (this handle put
 * it within TCFS_CAS_GRACE_NS), else 0: what a caller tells a user who
 * waits for its bytes. */
int tcfs_cas_fresh(struct tcfs_cas *cas, const struct tcfs_hash *h);

/* Says that no put is in flight and every row that names a blob put is
 * committed: tcfs_cas_free need keep no blob for being new. */
void tcfs_cas_settled(struct tcfs_cas *cas);

/* Blobs this handle opened to read (tcfs_cas_open_blob and the checked
 * opens and reads): a count that no retry of a system call inflates. */
uint64_t tcfs_cas_opens(struct tcfs_cas *cas);

/* Bytes of the blobs this handle created, less those it freed: with one
 * walk of objects/ (tcfs_cas_foreach), what the store holds now. */
int64_t tcfs_cas_growth(struct tcfs_cas *cas);

/* Moves a damaged blob out of objects/ into STORE/quarantine/, where it is
 * kept for inspection and never served. */
int tcfs_cas_quarantine(struct tcfs_cas *cas, const struct tcfs_hash *h);

/* Makes a blob read-only again if someone made it writable. */
int tcfs_cas_seal(struct tcfs_cas *cas, const struct tcfs_hash *h);

/* One file found under objects/.  h is NULL for a file whose name is not
 * a blob name (a stray); relpath is "ab/name". */
struct tcfs_cas_entry {
	const struct tcfs_hash *h;
	const char *relpath;
	uint64_t size;
	unsigned mode;
	int64_t mtime_ns;	/* a blob's: when its bytes were written */
};

/* Calls cb for every file under objects/; a non-zero return from cb stops
 * the walk and is returned.  A symlink is a stray, never followed. */
int tcfs_cas_foreach(struct tcfs_cas *cas,
		     int (*cb)(void *ctx, const struct tcfs_cas_entry *e),
		     void *ctx);

/* The same walk in steps, for a caller that must let others in between
 * (the mount's orphan sweep).  *out is owned by the caller:
 * tcfs_cas_walk_end.  Files added or removed meanwhile may be seen or
 * not. */
struct tcfs_cas_walk;
int tcfs_cas_walk_begin(struct tcfs_cas *cas, struct tcfs_cas_walk **out);
/* Calls cb for up to max more files (and strays): 0, or cb's non-zero
 * return, or -errno. */
int tcfs_cas_walk_step(struct tcfs_cas_walk *w, size_t max,
		       int (*cb)(void *ctx, const struct tcfs_cas_entry *e),
		       void *ctx);
/* Whether every file has been seen. */
int tcfs_cas_walk_done(const struct tcfs_cas_walk *w);
void tcfs_cas_walk_end(struct tcfs_cas_walk *w);

/* Removes files left in staging/ by writers that died.  Only safe while the
 * caller holds the store's writer lock.  *count (optional) gets how many. */
int tcfs_cas_clean_staging(struct tcfs_cas *cas, uint64_t *count);

/* Removes a stray file under objects/ by its relpath from foreach. */
int tcfs_cas_remove_stray(struct tcfs_cas *cas, const char *relpath);

#endif
