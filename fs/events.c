/*
 * events: a queue of probe events and the one thread that writes them to
 * the store in batches, so no request waits for SQLite to log a probe.
 * The same thread tells the kernel to drop entries from its cache: that
 * may wait for a directory a request holds, so no request thread may do
 * it (libfuse's notify_inval_entry deadlocks a handler).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "index/store/config.h"
#include "index/base/err.h"
#include "index/store/store.h"
#include "index/base/vec.h"
#include "priv.h"

/* Longest an event waits in memory, and a change the store has not
 * committed (db.h); also how often exited processes are forgotten by the
 * probe table. */
#define EVENTS_FLUSH_MS 100
/* How often the log is trimmed to its bounds (event.h), which are read
 * again each time: a change by tcfs config shows within this.  It is
 * trimmed sooner once as many events as it keeps were logged since: a
 * flood of probes grows the index by one bound at most between trims. */
#define EVENTS_TRIM_NS (2 * 1000000000LL)
/* Events that wait for a batch, at most: beyond, they are dropped (and
 * counted), whatever a flood of probes asks of the writer. */
#define EVENTS_QUEUE_MAX 100000

struct inval {
	uint64_t parent;
	char name[TCFS_NAME_MAX + 1];
};

struct fs_events {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct tcfs_event *q;
	size_t n, cap;
	struct inval *inv;
	size_t ninv, invcap;
	int stop;
	atomic_int done;	/* the thread is out of its loop */
	pthread_t thread;
	uint64_t dropped;	/* events the queue had no room for (mu) */
	uint64_t unlogged;	/* events dropped, not yet counted in the
				 * store (the thread's, as is:) */
	int tight;		/* the last batch found the index tight */
	int64_t trimmed_ns;	/* when the log was last trimmed (thread) */
	uint64_t logged;	/* events logged since (thread) */
	int64_t max_events;	/* the bound then read, 0: none yet */
	uint64_t asked;		/* syncs asked for (mu) */
	uint64_t written;	/* of those, done by the last round (mu) */
	pthread_cond_t synced;	/* written moved */
	fs_tick_fn *ticks[FS_EVENTS_TICKS];
	size_t nticks;
};

void fs_events_add(struct tcfs_fs *fs, const struct tcfs_event *ev)
{
	struct fs_events *e = fs->events;
	struct tcfs_event *slot;

	pthread_mutex_lock(&e->mu);
	slot = e->n < EVENTS_QUEUE_MAX
		       ? tcfs_vec_push(&e->q, &e->n, &e->cap, sizeof(*slot))
		       : NULL;
	if (slot)
		*slot = *ev;
	else
		e->dropped++;
	pthread_mutex_unlock(&e->mu);
}

void fs_events_inval(struct tcfs_fs *fs, uint64_t parent, const char *name)
{
	struct fs_events *e = fs->events;
	struct inval *slot;

	pthread_mutex_lock(&e->mu);
	slot = tcfs_vec_push(&e->inv, &e->ninv, &e->invcap, sizeof(*slot));
	if (slot) {
		slot->parent = parent;
		snprintf(slot->name, sizeof(slot->name), "%s", name);
	}
	pthread_cond_signal(&e->cv);	/* now, not at the next tick */
	pthread_mutex_unlock(&e->mu);
}

/* Takes the queue, and the count of events dropped with it; the caller
 * writes and frees it. */
static struct tcfs_event *take(struct fs_events *e, size_t *n,
			       uint64_t *dropped)
{
	struct tcfs_event *q = e->q;

	*n = e->n;
	*dropped = e->dropped;
	e->q = NULL;
	e->n = e->cap = 0;
	e->dropped = 0;
	return q;
}

/* Logs a batch, with the count of those dropped before it.  Logging
 * yields to the tree: while the index is tight (space.h) events are only
 * counted, for the next batch that finds room to say how many went. */
static void write_batch(struct tcfs_fs *fs, struct tcfs_event *q, size_t n,
			uint64_t dropped)
{
	struct fs_events *e = fs->events;
	int rc;

	e->unlogged += dropped;
	if (n == 0 && e->unlogged == 0)
		return;
	if (tcfs_store_tight(fs->store)) {
		if (!e->tight)
			syslog(LOG_WARNING, "tcfs: the disk is nearly full: "
			       "probes are counted, not logged, until it "
			       "has room");
		e->tight = 1;
		if (tcfs_event_dropped(fs->store, e->unlogged + n) == 0)
			e->unlogged = 0;
		else
			e->unlogged += n;
		return;
	}
	e->tight = 0;
	rc = tcfs_event_add(fs->store, q, n, e->unlogged);
	if (rc < 0) {
		syslog(LOG_ERR, "tcfs: %zu probe events not logged: %s", n,
		       tcfs_err_msg());
		e->unlogged += n;
		return;
	}
	e->unlogged = 0;
	e->logged += n;
}

/* Keeps the log within its bounds: every EVENTS_TRIM_NS, once a bound's
 * worth of events was logged, or now (force). */
static void trim(struct tcfs_fs *fs, int force)
{
	struct fs_events *e = fs->events;
	int64_t now = tcfs_ns_now();
	int due = force || now - e->trimmed_ns >= EVENTS_TRIM_NS ||
		  (e->max_events > 0 && e->logged >= (uint64_t)e->max_events);

	if (!due || tcfs_store_tight(fs->store))
		return;
	e->trimmed_ns = now;
	e->logged = 0;
	if (tcfs_event_trim(fs->store, NULL) < 0)
		syslog(LOG_ERR, "tcfs: the probe log could not be trimmed: %s",
		       tcfs_err_msg());
	if (tcfs_config_get(fs->store, TCFS_CONFIG_LOG_MAX_EVENTS,
			    &e->max_events, NULL) < 0)
		e->max_events = 0;
}

static void *writer(void *arg)
{
	struct tcfs_fs *fs = arg;
	struct fs_events *e = fs->events;
	int stop = 0;

	while (!stop) {
		struct timespec until;
		struct tcfs_event *q;
		uint64_t dropped;
		size_t n;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += EVENTS_FLUSH_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		struct inval *inv;
		size_t ninv;

		uint64_t round;

		pthread_mutex_lock(&e->mu);
		if (!e->stop && e->ninv == 0 && e->asked == e->written)
			pthread_cond_timedwait(&e->cv, &e->mu, &until);
		stop = e->stop;
		round = e->asked;
		q = take(e, &n, &dropped);
		inv = e->inv;
		ninv = e->ninv;
		e->inv = NULL;
		e->ninv = e->invcap = 0;
		pthread_mutex_unlock(&e->mu);
		for (size_t i = 0; i < ninv && !stop; i++)
			fuse_lowlevel_notify_inval_entry(fs->se, inv[i].parent,
							 inv[i].name,
							 strlen(inv[i].name));
		free(inv);
		write_batch(fs, q, n, dropped);
		free(q);
		trim(fs, 0);
		for (size_t i = 0; i < e->nticks; i++)
			e->ticks[i](fs);
		if (tcfs_store_sync(fs->store) < 0)
			syslog(LOG_ERR, "tcfs: %s", tcfs_err_msg());
		/* Committed: other readers of the store see them too. */
		pthread_mutex_lock(&e->mu);
		e->written = round;
		pthread_cond_broadcast(&e->synced);
		pthread_mutex_unlock(&e->mu);
	}
	atomic_store(&e->done, 1);
	return NULL;
}

int fs_events_start(struct tcfs_fs *fs, fs_tick_fn *const *ticks, size_t n)
{
	struct fs_events *e = calloc(1, sizeof(*e));
	int rc;

	assert(n <= FS_EVENTS_TICKS);
	if (!e)
		return -ENOMEM;
	memcpy(e->ticks, ticks, n * sizeof(*ticks));
	e->nticks = n;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	pthread_cond_init(&e->synced, NULL);
	fs->events = e;
	rc = fs_thread_start(&e->thread, writer, fs);
	if (rc < 0) {
		fs->events = NULL;
		free(e);
	}
	return rc;
}

void fs_events_sync(struct tcfs_fs *fs)
{
	struct fs_events *e = fs->events;
	struct timespec until;
	uint64_t mine;

	/* Bounded: the thread may wait in the kernel for a directory that
	 * the request asking holds. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	pthread_mutex_lock(&e->mu);
	mine = ++e->asked;
	pthread_cond_signal(&e->cv);
	while (e->written < mine && !e->stop &&
	       pthread_cond_timedwait(&e->synced, &e->mu, &until) == 0)
		;
	pthread_mutex_unlock(&e->mu);
}

void fs_events_stop(struct tcfs_fs *fs)
{
	struct fs_events *e = fs->events;

	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	e->stop = 1;
	pthread_cond_signal(&e->cv);
	pthread_cond_broadcast(&e->synced);
	pthread_mutex_unlock(&e->mu);
	/* An invalidation it sent before the loop returned waits for the
	 * directory's lock, which a request may hold that nobody else will
	 * answer now. */
	fs_serve_until(fs, &e->done);
	pthread_join(e->thread, NULL);
	/* Logged while it stopped; dropped ones unknown to the store now
	 * are only told. */
	write_batch(fs, e->q, e->n, e->dropped);
	trim(fs, 1);	/* the store at rest is within its bounds too */
	if (e->unlogged)
		syslog(LOG_WARNING, "tcfs: %llu probe events were not logged "
		       "(the disk was full)", (unsigned long long)e->unlogged);
	free(e->q);
	free(e->inv);
	pthread_cond_destroy(&e->cv);
	pthread_cond_destroy(&e->synced);
	pthread_mutex_destroy(&e->mu);
	free(e);
	fs->events = NULL;
}
