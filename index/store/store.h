/*
 * store: one tcfs store directory, the root object of libtcfs.
 *
 *   STORE/index.db      namespace, kernels and probe events (db, schema)
 *   STORE/objects/ab/…  blobs named by XXH3-128 (cas)
 *   STORE/staging/      blobs being written
 *   STORE/quarantine/   damaged blobs set aside by fsck --repair
 *   STORE/lock          the writer lock (lock)
 *
 * A store handle is safe to use from many threads.
 */
#ifndef TCFS_STORE_H
#define TCFS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "index/blob/durable.h"
#include "index/store/lock.h"

struct tcfs_store;
struct tcfs_db;
struct tcfs_cas;
struct tcfs_nodecache;

/* A writer's first step once it holds the lock and before the store is
 * used: what a writer that did not stop cleanly left is put right, and
 * what that found goes to *out.  storefd is the store directory.
 * tcfs_recover (recover.h) is the one tcfs runs. */
typedef int tcfs_store_recover_fn(struct tcfs_store *s, int storefd,
				  struct tcfs_durable_report *out);

struct tcfs_store_opts {
	const char *dir;	/* the store directory */
	int create;		/* create it (mode 0700) if missing */
	int writer;		/* take the writer lock */
	double wait_s;		/* how long to wait for the writer lock */
	int keep_unlinked;	/* the mount: see tcfs_ns_forget */
	enum tcfs_durability durability;	/* a writer's: batch (0) or none */
	tcfs_store_recover_fn *recover;	/* a writer's: required */
	tcfs_lock_busy_fn *busy;	/* a writer's, optional: lock.h */
	void *busy_ctx;
};

/* Seconds a writer waits for another by default. */
#define TCFS_STORE_WAIT_S 10.0

/* The store directory a command uses when not told: $TCFS_STORE, else
 * $XDG_DATA_HOME/tcfs, else $HOME/.local/share/tcfs.  -ENOENT when none of
 * those variables is set. */
int tcfs_store_default_dir(char *buf, size_t len);

/* Opens a store; *out is owned by the caller: tcfs_store_close.  A writer
 * runs opts->recover before anything else uses the store (what it found:
 * tcfs_store_recovery); opening itself repairs nothing. */
int tcfs_store_open(const struct tcfs_store_opts *opts,
		    struct tcfs_store **out);
void tcfs_store_close(struct tcfs_store *s);

/* Owned by the store. */
const char *tcfs_store_path(const struct tcfs_store *s);
struct tcfs_db *tcfs_store_db(struct tcfs_store *s);
/* The writer's node cache (see nodecache.h); NULL in a reader. */
struct tcfs_nodecache *tcfs_store_nodecache(struct tcfs_store *s);
struct tcfs_cas *tcfs_store_cas(struct tcfs_store *s);

/* Where the kernels that land now come from (kernels.origin): the mount's
 * writes are "here"; a command that lands kernels from elsewhere sets its
 * own, and the mount sets "remote" while it lands what the fleet tier
 * fetched, holding the index's lock (tcfs_db_lock) for as long.  origin
 * must be static.  Returns the one it replaces. */
#define TCFS_ORIGIN_HERE "here"
#define TCFS_ORIGIN_IMPORT "import"
#define TCFS_ORIGIN_UNPACK "unpack"
#define TCFS_ORIGIN_REMOTE "remote"
const char *tcfs_store_origin(const struct tcfs_store *s);
const char *tcfs_store_set_origin(struct tcfs_store *s, const char *origin);
/* Whose writes make shared kernels (kernels.shared, kernel.h): the mount's
 * -o trust (fs/users.c) sets fn, which answers whether a node's owner (uid,
 * gid as ns.h's struct tcfs_owner) is trusted.  Without one, as in every
 * command, every writer is; so is the owner -1, whoever mounts the store.
 * ctx is not owned; fn must be safe to call from any thread. */
typedef int tcfs_store_trust_fn(void *ctx, int64_t uid, int64_t gid);
void tcfs_store_set_trust(struct tcfs_store *s, tcfs_store_trust_fn *fn,
			  void *ctx);
int tcfs_store_trusts(const struct tcfs_store *s, int64_t uid, int64_t gid);
/* The batch state when the store batches (durable.h), else NULL. */
struct tcfs_durable *tcfs_store_durable(struct tcfs_store *s);
const struct tcfs_durable_report *
tcfs_store_recovery(const struct tcfs_store *s);

/* Whether removed nodes stay readable by inode number (the mount). */
int tcfs_store_keeps_unlinked(const struct tcfs_store *s);

/* Commits only at tcfs_store_sync from now on (see tcfs_db_defer, which
 * says when lost is called), except while the index is tight: then each
 * change commits alone (tcfs_db_commit_alone_when). */
void tcfs_store_defer(struct tcfs_store *s, void (*lost)(void *ctx, int rc),
		      void *ctx);
/* Sets the index up for a writer of many files in big batches (an
 * import): a page cache that holds what a batch changes, so that no page
 * is written out and written again within one, and checkpoints only past
 * a WAL of 64 MiB, so that pages every batch changes (the indexes keyed
 * by random names: blobs, keys) reach index.db once for several batches.
 * A savepoint's journal is kept in one piece of memory (store.c).  Takes
 * up to 128 MiB of memory. */
int tcfs_store_bulk(struct tcfs_store *s);
/* Whether the index is into the second half of the reserve that blobs
 * leave it (space.h): changes then commit alone, and the mount logs no
 * probes. */
int tcfs_store_tight(struct tcfs_store *s);
int tcfs_store_sync(struct tcfs_store *s);
/* fsync's meaning: commits, and makes the index and every new blob
 * durable unless the store never syncs (tcfs_durable_flush). */
int tcfs_store_fsync(struct tcfs_store *s);

/* Groups the operations between them into one transaction; nests.  Every
 * begin that succeeds is paired with one end, on the same thread. */
int tcfs_store_begin(struct tcfs_store *s);
/* One that lands whole, cheaper for many changes: the first operation in
 * it to fail fails it all (tcfs_db_begin_whole). */
int tcfs_store_begin_whole(struct tcfs_store *s);
int tcfs_store_end(struct tcfs_store *s, int rc);

#endif
