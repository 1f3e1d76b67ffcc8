/* remote: the remote tier's connection pool and circuit breaker, around
 * an engine's table (redis.c). */
#include "index/remote/remote.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/base/err.h"
#include "index/base/text.h"
#include "index/model/entry.h"
#include "index/remote/keyfmt.h"

/* One connection, used by one caller at a time (its mutex held). */
struct slot {
	pthread_mutex_t mu;
	void *conn;		/* NULL: connect at the next use */
};

struct tcfs_remote {
	struct tcfs_remote_cfg cfg;
	const struct tcfs_remote_ops *ops;
	struct tcfs_remote_stats stats;
	atomic_uint next;	/* the slot to try first, so callers spread */
	/* Callers waiting for a slot, no more than there are slots, so
	 * that at most twice remote_conns threads ever wait on the remote
	 * (a FUSE session has 16 workers). */
	pthread_mutex_t wmu;
	pthread_cond_t wcv;	/* a slot was let go */
	atomic_int waiting;
	pthread_mutex_t bmu;	/* the breaker's fields below */
	enum tcfs_breaker state;
	int fails;		/* failures in a row */
	int64_t opened_ns;	/* when it last opened */
	size_t nslots;
	struct slot slots[];
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int tcfs_remote_open(const struct tcfs_remote_cfg *cfg,
		     struct tcfs_remote **out)
{
	size_t n = cfg->conns > 0 ? (size_t)cfg->conns : 1;
	struct tcfs_remote *r;

	*out = NULL;
	r = calloc(1, sizeof(*r) + n * sizeof(r->slots[0]));
	if (!r)
		return -ENOMEM;
	assert(cfg->engine);
	r->ops = cfg->engine;
	r->cfg = *cfg;
	r->nslots = n;
	pthread_mutex_init(&r->bmu, NULL);
	pthread_mutex_init(&r->wmu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&r->wcv, &ca);
		pthread_condattr_destroy(&ca);
	}
	for (size_t i = 0; i < n; i++)
		pthread_mutex_init(&r->slots[i].mu, NULL);
	r->state = TCFS_BREAKER_CLOSED;
	*out = r;
	return 0;
}

void tcfs_remote_close(struct tcfs_remote *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nslots; i++) {
		if (r->slots[i].conn)
			r->ops->close(r->slots[i].conn);
		pthread_mutex_destroy(&r->slots[i].mu);
	}
	pthread_mutex_destroy(&r->bmu);
	pthread_cond_destroy(&r->wcv);
	pthread_mutex_destroy(&r->wmu);
	free(r);
}

const struct tcfs_remote_cfg *tcfs_remote_cfg_of(const struct tcfs_remote *r)
{
	return &r->cfg;
}

struct tcfs_remote_stats *tcfs_remote_stats(struct tcfs_remote *r)
{
	return &r->stats;
}

const char *tcfs_breaker_name(enum tcfs_breaker b)
{
	switch (b) {
	case TCFS_BREAKER_CLOSED:
		return "closed";
	case TCFS_BREAKER_OPEN:
		return "open";
	case TCFS_BREAKER_HALF_OPEN:
		return "half-open";
	}
	return "?";
}

static int breaker_due(const struct tcfs_remote *r, int64_t now)
{
	return now - r->opened_ns >= (int64_t)r->cfg.breaker_open_ms * 1000000;
}

/* OPEN past its time reads as HALF_OPEN: the next caller will try. */
enum tcfs_breaker tcfs_remote_breaker(struct tcfs_remote *r)
{
	enum tcfs_breaker b;

	pthread_mutex_lock(&r->bmu);
	b = r->state;
	if (b == TCFS_BREAKER_OPEN && breaker_due(r, now_ns()))
		b = TCFS_BREAKER_HALF_OPEN;
	pthread_mutex_unlock(&r->bmu);
	return b;
}

/* Whether this caller may ask the remote: always when closed; when open,
 * only the first caller after breaker_open_ms (then half-open, and every
 * other caller is turned away until that one reports). */
static int breaker_admit(struct tcfs_remote *r)
{
	int ok = 0;

	pthread_mutex_lock(&r->bmu);
	if (r->state == TCFS_BREAKER_CLOSED) {
		ok = 1;
	} else if (r->state == TCFS_BREAKER_OPEN && breaker_due(r, now_ns())) {
		r->state = TCFS_BREAKER_HALF_OPEN;
		ok = 1;
	}
	pthread_mutex_unlock(&r->bmu);
	return ok;
}

static void breaker_report(struct tcfs_remote *r, int failed)
{
	pthread_mutex_lock(&r->bmu);
	if (!failed) {
		r->fails = 0;
		r->state = TCFS_BREAKER_CLOSED;
	} else {
		r->fails++;
		if (r->state == TCFS_BREAKER_HALF_OPEN ||
		    (r->state == TCFS_BREAKER_CLOSED &&
		     r->fails >= r->cfg.breaker_fails)) {
			r->state = TCFS_BREAKER_OPEN;
			r->opened_ns = now_ns();
			atomic_fetch_add(&r->stats.breaker_opens, 1);
		}
	}
	pthread_mutex_unlock(&r->bmu);
}

/* A free slot's mutex taken, or NULL. */
static struct slot *slot_try(struct tcfs_remote *r)
{
	unsigned start = atomic_fetch_add(&r->next, 1);

	for (size_t i = 0; i < r->nslots; i++) {
		struct slot *s = &r->slots[(start + i) % r->nslots];

		if (pthread_mutex_trylock(&s->mu) == 0)
			return s;
	}
	return NULL;
}

/* A free slot, its mutex held.  With none free, a caller waits for one,
 * no longer than one reply's timeout, and only while fewer callers than
 * there are slots wait: else -EBUSY at once.  A burst of probes of new
 * kernels is served in turn; a stalled remote holds at most twice
 * remote_conns threads, each for one timeout, until the breaker opens. */
static int slot_take(struct tcfs_remote *r, int64_t until_ns,
		     struct slot **out)
{
	int64_t until = now_ns() + (int64_t)r->cfg.io_ms * 1000000;
	struct timespec ts;
	struct slot *s = slot_try(r);
	int timed_out = 0;

	/* A caller's deadline (a probe's budget) bounds the wait too. */
	if (until_ns && until_ns < until)
		until = until_ns;
	ts = (struct timespec){ until / 1000000000, until % 1000000000 };
	if (!s && atomic_load(&r->waiting) < (int)r->nslots) {
		pthread_mutex_lock(&r->wmu);
		atomic_fetch_add(&r->waiting, 1);
		while (!(s = slot_try(r)) && !timed_out)
			timed_out = pthread_cond_timedwait(&r->wcv, &r->wmu,
							   &ts) == ETIMEDOUT;
		atomic_fetch_sub(&r->waiting, 1);
		pthread_mutex_unlock(&r->wmu);
	}
	if (s) {
		*out = s;
		return 0;
	}
	atomic_fetch_add(&r->stats.skipped, 1);
	return tcfs_err_set(-EBUSY, "remote: all %zu %s busy", r->nslots,
			    TCFS_NOUN(r->nslots, "connection"));
}

/* Lets a slot go, and wakes a caller waiting for one. */
static void slot_give(struct tcfs_remote *r, struct slot *s)
{
	pthread_mutex_unlock(&s->mu);
	if (atomic_load(&r->waiting) > 0) {
		pthread_mutex_lock(&r->wmu);
		pthread_cond_signal(&r->wcv);
		pthread_mutex_unlock(&r->wmu);
	}
}

/* A slot and the breaker's leave, connected, within until_ns (0: the
 * engine's timeouts only): 0 with *out held, or -EBUSY, -EAGAIN (nothing
 * asked), or the connect's error. */
static int call_begin(struct tcfs_remote *r, int64_t until_ns,
		      struct slot **out)
{
	struct slot *s = NULL;
	int rc = slot_take(r, until_ns, &s);

	if (rc)
		return rc;
	if (!breaker_admit(r)) {
		slot_give(r, s);
		atomic_fetch_add(&r->stats.skipped, 1);
		return tcfs_err_set(-EAGAIN, "remote: not asked: the breaker"
				    " is open after %d %s",
				    r->cfg.breaker_fails,
				    TCFS_NOUN((unsigned)r->cfg.breaker_fails,
					      "failure"));
	}
	if (!s->conn)
		rc = r->ops->connect(&r->cfg, until_ns, &s->conn);
	if (rc) {
		breaker_report(r, 1);
		atomic_fetch_add(&r->stats.errors, 1);
		slot_give(r, s);
		return rc;
	}
	r->ops->until(s->conn, until_ns);
	*out = s;
	return 0;
}

/* Ends a call of result rc: an answer (a value, absent, too big) or a
 * failure, which drops the connection (it may be out of step). */
static int call_end(struct tcfs_remote *r, struct slot *s, int rc)
{
	int failed = rc < 0 && rc != -ENOENT && rc != -EFBIG;

	if (failed) {
		r->ops->close(s->conn);
		s->conn = NULL;
		atomic_fetch_add(&r->stats.errors, 1);
	}
	breaker_report(r, failed);
	slot_give(r, s);
	return rc;
}

int tcfs_remote_sizes_until(struct tcfs_remote *r, const char *const *keys,
			    size_t n, int64_t *sizes, int64_t until_ns)
{
	struct slot *s;
	int rc = call_begin(r, until_ns, &s);

	if (rc)
		return rc;
	return call_end(r, s, r->ops->sizes(s->conn, keys, n, sizes));
}

int tcfs_remote_sizes(struct tcfs_remote *r, const char *const *keys,
		      size_t n, int64_t *sizes)
{
	return tcfs_remote_sizes_until(r, keys, n, sizes, 0);
}

int tcfs_remote_get_until(struct tcfs_remote *r, const char *const *keys,
			  size_t n, uint64_t max, char **vals, size_t *lens,
			  int64_t until_ns)
{
	struct slot *s;
	int rc = call_begin(r, until_ns, &s);

	if (rc)
		return rc;
	return call_end(r, s, r->ops->get(s->conn, keys, n, max, vals, lens));
}

int tcfs_remote_get(struct tcfs_remote *r, const char *const *keys,
		    size_t n, uint64_t max, char **vals, size_t *lens)
{
	return tcfs_remote_get_until(r, keys, n, max, vals, lens, 0);
}

int tcfs_remote_put(struct tcfs_remote *r, const struct tcfs_remote_kv *kv,
		    size_t n, size_t natomic)
{
	struct slot *s;
	int rc = call_begin(r, 0, &s);

	if (rc)
		return rc;
	return call_end(r, s,
			r->ops->put(s->conn, kv, n, natomic, r->cfg.ttl_s));
}

int tcfs_remote_ping(struct tcfs_remote *r, int64_t *latency_ns, char *info,
		     size_t len)
{
	struct slot *s;
	int64_t t0;
	int rc = call_begin(r, 0, &s);

	if (rc)
		return rc;
	t0 = now_ns();
	rc = r->ops->ping(s->conn, info, len);
	*latency_ns = now_ns() - t0;
	return call_end(r, s, rc);
}

int tcfs_remote_scan(struct tcfs_remote *r, const char *pattern, size_t max,
		     int (*fn)(void *ctx, const char *key), void *ctx)
{
	struct slot *s;
	int rc = call_begin(r, 0, &s);

	if (rc)
		return rc;
	return call_end(r, s, r->ops->scan(s->conn, pattern, max, fn, ctx));
}

int tcfs_remote_key(const struct tcfs_remote *r, const char *key,
		    const char *filename, char *buf, size_t len)
{
	return tcfs_keyfmt_expand(r->cfg.key_format, key, filename, buf, len);
}

const char *const tcfs_remote_fig_names[TCFS_REMOTE_FIGS] = {
	"remote_kernel_hits", "remote_module_hits", "remote_misses",
	"remote_errors", "remote_refused", "remote_bytes_fetched",
	"remote_published", "remote_queue_drops", "remote_skipped",
	"remote_breaker_opens", "remote_entry_hits",
};

void tcfs_remote_kind_fig(int k, char *buf, size_t len)
{
	const struct tcfs_probe_kind *row = tcfs_probe_kind(k);

	assert(len > 0);
	buf[0] = '\0';
	if (row->remote == TCFS_ENTRY_REMOTE_PT2 ||
	    row->remote == TCFS_ENTRY_REMOTE_TCFS)
		snprintf(buf, len, "remote_%s_hits", row->name);
}

void tcfs_remote_figs(struct tcfs_remote *r, uint64_t v[TCFS_REMOTE_FIGS])
{
	const struct tcfs_remote_stats *st = &r->stats;

	v[0] = atomic_load(&st->kernel_hits);
	v[1] = atomic_load(&st->module_hits);
	v[2] = atomic_load(&st->misses);
	v[3] = atomic_load(&st->errors);
	v[4] = atomic_load(&st->refused);
	v[5] = atomic_load(&st->bytes_fetched);
	v[6] = atomic_load(&st->published);
	v[7] = atomic_load(&st->queue_drops);
	v[8] = atomic_load(&st->skipped);
	v[9] = atomic_load(&st->breaker_opens);
	v[10] = atomic_load(&st->entry_hits);
}
