/*
 * busypoll: one more reader of /dev/fuse, which keeps polling for the next
 * request, without sleeping, for a short window after each one it serves.
 *
 * Why: Triton's requests come one at a time, each waiting for its answer,
 * in bursts (a warm start is 1,714 of them for 159 kernels).  A libfuse
 * worker sleeps in read() between requests, and waking it (a cross-CPU
 * wakeup, often out of an idle state) is a large part of a round trip.  A
 * reader already running takes the next request at once.  Once a burst is
 * over the window closes and this thread sleeps too, so an idle mount
 * costs no CPU.  sched_yield() in the loop leaves the CPU to anything
 * else runnable on it.
 *
 * The libfuse workers read their own cloned descriptors (clone_fd); this
 * thread reads the session's own, which is where it must answer too.  The
 * descriptor stays blocking, as libfuse expects of it (a worker that
 * cannot clone one reads it): the thread polls and reads only once a
 * request is queued, and if another reader takes that request first, it
 * waits in read() like any worker.  Like libfuse's workers it is stopped
 * by cancellation, which it allows only while waiting, never while it
 * serves a request.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "priv.h"

struct fs_busypoll {
	long long window_ns;
	atomic_int stop;	/* the session loop has returned */
	pthread_t thread;
	/* The thread's request buffer, freed by whoever joins it: a
	 * cleanup handler would have to unwind through this file's frames,
	 * which ASan's runtime does not survive. */
	struct fuse_buf buf;
};

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Whether /dev/fuse has a request queued (or has failed: the read then
 * says how), waiting up to timeout_ms (-1: for ever). */
static int request_ready(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) > 0;
}

static void *run(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_busypoll *b = fs->busypoll;
	int fd = fuse_session_fd(fs->se);
	long long last = now_ns();

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	/* The session's exit flag alone will not do: the loop clears it
	 * as it returns. */
	while (!atomic_load(&b->stop) && !fuse_session_exited(fs->se)) {
		int spinning = now_ns() - last < b->window_ns;
		int res;

		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		if (spinning && !request_ready(fd, 0)) {
			pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
			sched_yield();
			continue;
		}
		if (!spinning)
			request_ready(fd, -1);
		res = fuse_session_receive_buf(fs->se, &b->buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (res == -EINTR)
			continue;
		/* 0: unmounted or stopping; else the device failed, and
		 * the workers, reading their own descriptors, go on. */
		if (res <= 0)
			break;
		fuse_session_process_buf(fs->se, &b->buf);
		last = now_ns();
	}
	return NULL;
}

int fs_busypoll_start(struct tcfs_fs *fs, long window_us)
{
	struct fs_busypoll *b;
	int rc;

	if (window_us <= 0)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->window_ns = window_us * 1000LL;
	atomic_init(&b->stop, 0);
	fs->busypoll = b;
	rc = fs_thread_start(&b->thread, run, fs);
	if (rc < 0) {
		fs->busypoll = NULL;
		free(b);
	}
	return rc;
}

void fs_busypoll_stop(struct tcfs_fs *fs)
{
	struct fs_busypoll *b = fs->busypoll;

	if (!b)
		return;
	/* A request being served is finished first: cancellation waits for
	 * the thread's next poll or read. */
	atomic_store(&b->stop, 1);
	pthread_cancel(b->thread);
	pthread_join(b->thread, NULL);
	free(b->buf.mem);
	free(b);
	fs->busypoll = NULL;
}
