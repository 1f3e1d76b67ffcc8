/*
 * lock: the store's writer lock, STORE/lock.
 *
 * One process writes a store at a time (an import, a mount, gc, a repair);
 * readers never lock, SQLite's WAL gives them a consistent snapshot.  The
 * lock is an flock(2), so it dies with its holder: a killed writer never
 * leaves a stale lock.  A second writer names the holder from /proc/locks;
 * the holder also writes its pid and command line into the file for people
 * looking at the store.
 */
#ifndef TCFS_LOCK_H
#define TCFS_LOCK_H

/* Told at once, and once, that another process holds the lock (holder
 * names it: "pid N (COMMAND)"), before any wait: a writer that waits in
 * silence looks hung.  0 to wait for it, or a negative errno, with a
 * message, to give up at once (the holder will not let go: a mount). */
typedef int tcfs_lock_busy_fn(void *ctx, const char *holder);

/* Takes the writer lock, waiting up to wait_s seconds for the current
 * holder; busy (optional) is told first.  Returns the lock's descriptor
 * (the lock is held until it is closed), or -EBUSY with a message naming
 * the holder, or busy's error. */
int tcfs_lock_writer(int storefd, const char *storepath, double wait_s,
		     tcfs_lock_busy_fn *busy, void *ctx);

#endif
