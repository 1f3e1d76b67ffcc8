/*
 * An LD_PRELOAD shim for crash.sh: each cache invalidation the daemon
 * sends to the kernel (libfuse's fuse_lowlevel_notify_inval_entry) waits
 * TCFS_SLOW_INVAL_MS first, so that a test can stop the session loop
 * while one is on its way.  Only for tests.
 */
#define FUSE_USE_VERSION 314

#include <dlfcn.h>
#include <fuse_lowlevel.h>
#include <stdlib.h>
#include <time.h>

int fuse_lowlevel_notify_inval_entry(struct fuse_session *se,
				     fuse_ino_t parent, const char *name,
				     size_t namelen)
{
	static int (*next)(struct fuse_session *, fuse_ino_t, const char *,
			   size_t);
	const char *ms = getenv("TCFS_SLOW_INVAL_MS");
	long wait = ms ? atol(ms) : 0;
	struct timespec t = { wait / 1000, wait % 1000 * 1000000L };

	if (wait > 0)
		nanosleep(&t, NULL);
	if (!next)
		next = (int (*)(struct fuse_session *, fuse_ino_t, const char *,
				size_t))dlsym(RTLD_NEXT,
					      "fuse_lowlevel_notify_inval_entry");
	return next(se, parent, name, namelen);
}
