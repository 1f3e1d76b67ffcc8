/*
 * thread: the mount's own threads (events, flusher, busypoll) and how a
 * stopping one is waited for while requests still come.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "priv.h"

int64_t fs_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int fs_ms_until(int64_t deadline)
{
	int64_t now = fs_now_ms();

	if (deadline < 0)
		return -1;
	return deadline <= now ? 0 : (int)(deadline - now);
}

int fs_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t stop, old;
	int rc;

	/* libfuse's workers block these too, so that they reach the main
	 * thread: its handler ends the session loop, which waits there. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}

void fs_serve_until(struct tcfs_fs *fs, atomic_int *done)
{
	struct fuse_buf buf = { 0 };
	int fd = fuse_session_fd(fs->se);

	while (!atomic_load(done)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int res;

		if (poll(&p, 1, 10) <= 0)
			continue;
		/* A signal or a lost index ends the session meanwhile, and
		 * libfuse then drops what it reads: its sender would wait
		 * for ever. */
		fuse_session_reset(fs->se);
		res = fuse_session_receive_buf(fs->se, &buf);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0) {	/* unmounted: every wait ends with it */
			fd = -1;
			continue;
		}
		fuse_session_process_buf(fs->se, &buf);
	}
	free(buf.mem);
}

