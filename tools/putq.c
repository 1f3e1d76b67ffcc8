/* putq: the threads that store an import's new blobs (putq.h). */
#include "putq.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"

/* Bytes queued and not yet stored, at most: what the import thread reads
 * ahead of the disk. */
#define PUTQ_BYTES_MAX (64u << 20)
/* Threads, at most: past this they contend for objects/ more than they
 * gain. */
#define PUTQ_THREADS_MAX 16

struct job {
	struct job *next;
	char *buf;		/* freed once stored */
	size_t len;
	char *path;
	char *msg;		/* the store's message, when it failed */
	struct putq_result r;
};

struct putq {
	struct tcfs_cas *cas;	/* borrowed */
	pthread_t thread[PUTQ_THREADS_MAX];
	unsigned nthreads;
	pthread_mutex_t mu;	/* guards: */
	pthread_cond_t added;	/* a job came, or stop */
	pthread_cond_t stored;	/* a job was stored */
	struct job *head, *tail;	/* not drained yet, in order */
	struct job *todo;	/* the first of them no thread took yet */
	size_t undone;		/* jobs queued and not stored yet */
	size_t undone_bytes;
	int stop;
};

static void store(struct tcfs_cas *cas, struct job *j)
{
	struct tcfs_hash h;

	tcfs_err_clear();
	j->r.rc = tcfs_cas_put_buf(cas, j->buf, j->len, &h, &j->r.put);
	j->r.stored = j->len;
	if (j->r.rc == 0) {
		/* The import named its rows by the bytes it handed over. */
		assert(tcfs_hash_equal(&h, &j->r.blob));
		if (j->r.put == TCFS_CAS_CREATED)
			tcfs_cas_stat(cas, &h, &j->r.stored);
	} else if (tcfs_err_msg()[0]) {
		j->msg = strdup(tcfs_err_msg());
	}
	j->r.msg = j->msg ? j->msg : "";
	tcfs_err_clear();
}

static void *run(void *arg)
{
	struct putq *q = arg;
	struct job *j;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->todo && !q->stop)
			pthread_cond_wait(&q->added, &q->mu);
		j = q->todo;
		if (!j)
			break;
		q->todo = j->next;
		pthread_mutex_unlock(&q->mu);
		/* Two threads may store the same bytes at once: the store
		 * counts the second as shared (cas.c, install). */
		store(q->cas, j);
		free(j->buf);
		j->buf = NULL;
		pthread_mutex_lock(&q->mu);
		assert(q->undone > 0);
		q->undone--;
		q->undone_bytes -= j->len;
		pthread_cond_broadcast(&q->stored);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

static void destroy(struct putq *q)
{
	pthread_cond_destroy(&q->stored);
	pthread_cond_destroy(&q->added);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

int putq_start(struct tcfs_cas *cas, unsigned threads, struct putq **out)
{
	struct putq *q = calloc(1, sizeof(*q));
	int rc = 0;

	if (!q)
		return -ENOMEM;
	q->cas = cas;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->added, NULL);
	pthread_cond_init(&q->stored, NULL);
	threads = threads < 1 ? 1 : threads;
	threads = threads > PUTQ_THREADS_MAX ? PUTQ_THREADS_MAX : threads;
	while (q->nthreads < threads && rc == 0) {
		rc = pthread_create(&q->thread[q->nthreads], NULL, run, q);
		q->nthreads += rc == 0;
	}
	if (q->nthreads == 0) {	/* fewer than asked for still works */
		destroy(q);
		return -rc;
	}
	*out = q;
	return 0;
}

static void free_jobs(struct job *j)
{
	while (j) {
		struct job *next = j->next;

		free(j->buf);
		free(j->path);
		free(j->msg);
		free(j);
		j = next;
	}
}

void putq_stop(struct putq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	q->stop = 1;
	pthread_cond_broadcast(&q->added);
	pthread_mutex_unlock(&q->mu);
	for (unsigned i = 0; i < q->nthreads; i++)
		pthread_join(q->thread[i], NULL);
	assert(!q->todo && !q->undone);
	free_jobs(q->head);
	destroy(q);
}

int putq_add(struct putq *q, char *buf, size_t len,
	     const struct tcfs_hash *h, const char *path)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j || !(j->path = strdup(path))) {
		free(j);
		free(buf);
		return -ENOMEM;
	}
	j->buf = buf;
	j->len = len;
	j->r.path = j->path;
	j->r.blob = *h;
	pthread_mutex_lock(&q->mu);
	while (q->undone && q->undone_bytes + len > PUTQ_BYTES_MAX)
		pthread_cond_wait(&q->stored, &q->mu);
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	if (!q->todo)
		q->todo = j;
	q->undone++;
	q->undone_bytes += len;
	pthread_cond_signal(&q->added);
	pthread_mutex_unlock(&q->mu);
	return 0;
}

int putq_drain(struct putq *q,
	       int (*done)(void *ctx, const struct putq_result *r),
	       void *ctx)
{
	struct job *list;
	int rc = 0;

	pthread_mutex_lock(&q->mu);
	while (q->undone)
		pthread_cond_wait(&q->stored, &q->mu);
	assert(!q->todo);
	list = q->head;
	q->head = q->tail = NULL;
	pthread_mutex_unlock(&q->mu);
	/* Every job was stored: no thread touches them any more. */
	for (struct job *j = list; j; j = j->next) {
		int d = done(ctx, &j->r);

		if (rc == 0)
			rc = j->r.rc < 0 ? j->r.rc : d;
	}
	free_jobs(list);
	return rc;
}
