/*
 * flusher: the thread that makes the mount's changes durable, new blobs
 * and index alike, once a second in one syncfs (index/blob/durable.h says why
 * and what a power cut then costs).  Its own thread, because a sync may
 * wait long behind other programs' writes to the same disk, and nothing
 * else may wait with it; for the same reason it commits the idle files
 * whose commit must hash them again (a big file written out of order).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "index/blob/durable.h"
#include "index/base/err.h"
#include "index/store/store.h"
#include "priv.h"

/* How long a new blob may wait in the page cache unless told: a power
 * cut loses at most this much of the newest files (ext4 loses its last
 * 5 s). */
#define FLUSH_EVERY_NS 1000000000LL

struct fs_flusher {
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* CLOCK_MONOTONIC */
	long long every_ns;
	int stop;
	pthread_t thread;
};

/* A failed sync fails every flush after it (durable.h): say so once. */
static void flush(struct tcfs_fs *fs, int *last)
{
	int rc = tcfs_durable_flush(tcfs_store_durable(fs->store));

	if (rc < 0 && rc != *last)
		syslog(LOG_ERR, "tcfs: new files not made durable: %s",
		       tcfs_err_msg()[0] ? tcfs_err_msg() : strerror(-rc));
	*last = rc;
}

static void *run(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_flusher *f = fs->flusher;
	struct timespec until;
	int last = 0;

	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += f->every_ns % 1000000000LL;
		until.tv_sec += f->every_ns / 1000000000LL +
				until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		while (!f->stop &&
		       pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0)
			;
		/* The store's close makes the last flush, after the unmount:
		 * a sync here would hold the unmount up behind the disk. */
		if (f->stop)
			break;
		pthread_mutex_unlock(&f->mu);
		/* Idle files whose commit takes long are this thread's to
		 * commit: it may wait, the events thread may not. */
		fs_dirty_sweep(fs, FS_DIRTY_IDLE_S, 1);
		flush(fs, &last);
		pthread_mutex_lock(&f->mu);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

int fs_flusher_start(struct tcfs_fs *fs, double every_s)
{
	struct fs_flusher *f = calloc(1, sizeof(*f));
	pthread_condattr_t ca;
	int rc;

	if (!f)
		return -ENOMEM;
	f->every_ns = every_s > 0 ? (long long)(every_s * 1e9) : FLUSH_EVERY_NS;
	pthread_mutex_init(&f->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cv, &ca);
	pthread_condattr_destroy(&ca);
	fs->flusher = f;
	rc = fs_thread_start(&f->thread, run, fs);
	if (rc < 0) {
		fs->flusher = NULL;
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
		free(f);
	}
	return rc;
}

void fs_flusher_stop(struct tcfs_fs *fs)
{
	struct fs_flusher *f = fs->flusher;

	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = 1;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	fs->flusher = NULL;
}
