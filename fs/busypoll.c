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
 * The libfuse workers read their own cloned descriptors (clone_fd),
 * blocking; this thread reads the session's own descriptor, made
 * non-blocking, which no worker reads.  Whichever reader takes a request
 * answers it on the descriptor it came from, as the kernel requires.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

struct fs_busypoll {
	long long window_ns;
	int stopfd;		/* an eventfd: readable once told to stop */
	pthread_t thread;
};

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Sleeps until a request is queued; 0, or -1 once told to stop. */
static int sleep_until_request(int fd, int stopfd)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
			       { .fd = stopfd, .events = POLLIN } };

	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			return -1;
	return p[1].revents ? -1 : 0;
}

static void *run(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_busypoll *b = fs->busypoll;
	struct fuse_buf buf = { 0 };
	int fd = fuse_session_fd(fs->se);
	long long last = now_ns();

	while (!fuse_session_exited(fs->se)) {
		int res = fuse_session_receive_buf(fs->se, &buf);

		if (res == -EAGAIN) {
			if (now_ns() - last < b->window_ns) {
				sched_yield();
				continue;
			}
			if (sleep_until_request(fd, b->stopfd) < 0)
				break;
			last = now_ns();
			continue;
		}
		if (res == -EINTR)
			continue;
		/* 0: unmounted or stopping; else the device failed, and
		 * the workers, reading their own descriptors, go on. */
		if (res <= 0)
			break;
		fuse_session_process_buf(fs->se, &buf);
		last = now_ns();
	}
	free(buf.mem);
	return NULL;
}

int fs_busypoll_start(struct tcfs_fs *fs, long window_us)
{
	struct fs_busypoll *b;
	int fd = fuse_session_fd(fs->se);
	int fl, rc;

	if (window_us <= 0)
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->window_ns = window_us * 1000LL;
	b->stopfd = eventfd(0, EFD_CLOEXEC);
	if (b->stopfd < 0) {
		rc = -errno;
		free(b);
		return rc;
	}
	fs->busypoll = b;
	rc = fs_thread_start(&b->thread, run, fs);
	if (rc < 0) {
		fs->busypoll = NULL;
		close(b->stopfd);
		free(b);
	}
	return rc;
}

void fs_busypoll_stop(struct tcfs_fs *fs)
{
	struct fs_busypoll *b = fs->busypoll;
	uint64_t one = 1;

	if (!b)
		return;
	/* Cannot fail: the counter is far from full. */
	(void)!write(b->stopfd, &one, sizeof(one));
	pthread_join(b->thread, NULL);
	close(b->stopfd);
	free(b);
	fs->busypoll = NULL;
}
