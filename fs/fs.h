/*
 * fs: the FUSE mount, `tcfs mount`.  Serves a store at a mount point (the
 * user's TRITON_CACHE_DIR) with libfuse's low-level API, many threads.
 */
#ifndef TCFS_FS_H
#define TCFS_FS_H

#include <stddef.h>

struct tcfs_fs_opts {
	const char *store;	/* the store directory */
	const char *mountpoint;
	const char *fuse_opts;	/* -o options, comma separated, or NULL */
	int foreground;		/* -f: stay in the foreground */
	int debug;		/* -d: libfuse's request trace on stderr */
	double wait_s;		/* for the store's writer lock */
	int no_fsync;		/* new blobs never synced (--no-fsync) */
	double sync_s;		/* else synced this often; 0: every second */
	long busy_poll_us;	/* --busy-poll: 0 for none */
	/* Told at once when another process holds the store's writer lock
	 * (index/store/lock.h's busy hook): 0 to wait for it, which the
	 * mount says, or a negative errno with a message to fail at once.
	 * Optional. */
	int (*busy)(void *ctx, const char *holder);
	void *busy_ctx;
};

/* How long the mount keeps polling for the next request after one, by
 * default (fs/busypoll.c): longer than the gaps within a burst of
 * Triton's requests, short enough that an idle mount costs nothing. */
#define TCFS_FS_BUSY_POLL_US 200

/* The counter (event.h) in which a mount keeps the bytes of the blobs no
 * file names that it frees within a minute (pruned, evicted, rewritten):
 * what tcfs info takes out of the stored size while the store is
 * mounted. */
#define TCFS_PENDING_COUNTER "blobs_pending_bytes"

/* Mounts and serves until unmounted.  Without foreground, returns in the
 * calling process once the mount serves requests (the daemon goes on).
 * Returns 0 on a clean unmount, 2 for a -o redirect that cannot be (a
 * usage error), or 1 after any other error; it printed either on stderr
 * (naming the option, the mount point or the store, and the cause). */
int tcfs_fs_mount(const struct tcfs_fs_opts *o);

/* The i-th -o option of tcfs's own that a mount takes (libfuse's are
 * fuse(8)'s), for help: its name ("max_size", "remote_ttl") into name
 * (len bytes); *arg the form of its value ("SIZE", or NULL for a flag)
 * and *help one sentence, both static.  0, or -ENOENT past the last. */
int tcfs_fs_opt_doc(size_t i, char *name, size_t len, const char **arg,
		    const char **help);

struct cJSON;

/* Sends req to the daemon that serves store (its control socket,
 * fs/ctl.c) and waits for the answer: *resp is owned by the caller
 * (cJSON_Delete).  An answer {"error": MSG} is the daemon's failure.
 * 0, or -errno with a message (tcfs_err_msg): -ECONNREFUSED or -ENOENT
 * when no daemon listens, -EPERM when the listener runs as a user other
 * than root and the store's owner (nothing is sent to it). */
int tcfs_fs_ctl_call(const char *store, const struct cJSON *req,
		     struct cJSON **resp);

#endif
