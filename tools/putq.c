/* putq: the threads that read, hash and store an import's files (putq.h). */
#include "putq.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/base/err.h"

/* Files waiting to be read, at most: each holds a descriptor. */
#define PUTQ_JOBS_MAX 256
/* Threads, at most: past this they contend for objects/ more than they
 * gain. */
#define PUTQ_THREADS_MAX 16

struct job {
	struct job *next;
	int fd;			/* the storing thread's; closed once stored */
	int done;		/* stored (guarded by mu) */
	/* The first job no thread had taken when this one was stored
	 * (NULL: none): only those before it can have made the blob that
	 * this one found there. */
	struct job *horizon;
	struct putq_result r;
};

struct putq {
	struct tcfs_cas *cas;	/* borrowed */
	pthread_t thread[PUTQ_THREADS_MAX];
	unsigned nthreads;
	pthread_mutex_t mu;	/* guards: */
	pthread_cond_t added;	/* a job came, or stop */
	pthread_cond_t stored;	/* a job was stored */
	struct job *head, *tail;	/* not taken yet, in order */
	struct job *todo;	/* the first of them no thread took yet */
	size_t waiting;		/* jobs from todo on */
	size_t undone;		/* jobs queued and not stored yet */
	int stop;
};

static void store(struct tcfs_cas *cas, struct job *j)
{
	tcfs_err_clear();
	j->r.rc = tcfs_cas_put_fd(cas, j->fd, &j->r.blob, &j->r.size,
				  &j->r.put);
	j->r.stored = j->r.size;
	if (j->r.rc == 0 && j->r.put == TCFS_CAS_CREATED)
		tcfs_cas_stat(cas, &j->r.blob, &j->r.stored);
	else if (j->r.rc < 0 && tcfs_err_msg()[0])
		j->r.msg = strdup(tcfs_err_msg());
	tcfs_err_clear();
	close(j->fd);
	j->fd = -1;
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
		q->waiting--;
		pthread_mutex_unlock(&q->mu);
		/* Two threads may store the same bytes at once: the store
		 * counts the second as shared (cas.c, install). */
		store(q->cas, j);
		pthread_mutex_lock(&q->mu);
		assert(q->undone > 0);
		j->done = 1;
		j->horizon = q->todo;
		q->undone--;
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

void putq_result_free(struct putq_result *r)
{
	free(r->path);
	free(r->msg);
	r->path = r->msg = NULL;
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
	while (q->head) {
		struct job *next = q->head->next;

		putq_result_free(&q->head->r);
		free(q->head);
		q->head = next;
	}
	destroy(q);
}

int putq_add(struct putq *q, int fd, const char *path)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j || !(j->r.path = strdup(path))) {
		free(j);
		close(fd);
		return -ENOMEM;
	}
	j->fd = fd;
	pthread_mutex_lock(&q->mu);
	while (q->waiting >= PUTQ_JOBS_MAX)
		pthread_cond_wait(&q->stored, &q->mu);
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	if (!q->todo)
		q->todo = j;
	q->waiting++;
	q->undone++;
	pthread_cond_signal(&q->added);
	pthread_mutex_unlock(&q->mu);
	return 0;
}

/* Threads store in any order: a later file may make a blob that j's
 * found there.  The blob is then j's, the first to name it, so that a
 * later key dir taken back takes back only its own blobs.  With q->mu. */
static void claim(struct putq *q, struct job *j)
{
	struct putq_result *r = &j->r;

	if (r->rc < 0 || r->put != TCFS_CAS_SHARED)
		return;
	for (struct job *k = j->next; k && k != j->horizon; k = k->next) {
		while (!k->done)
			pthread_cond_wait(&q->stored, &q->mu);
		if (k->r.rc == 0 && k->r.put == TCFS_CAS_CREATED &&
		    tcfs_hash_equal(&k->r.blob, &r->blob)) {
			k->r.put = TCFS_CAS_SHARED;
			r->put = TCFS_CAS_CREATED;
			r->stored = k->r.stored;
			return;
		}
	}
}

int putq_next(struct putq *q, struct putq_result *r)
{
	struct job *j;

	pthread_mutex_lock(&q->mu);
	j = q->head;
	while (j && !j->done)
		pthread_cond_wait(&q->stored, &q->mu);
	if (j)
		claim(q, j);
	if (j) {
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
	}
	pthread_mutex_unlock(&q->mu);
	if (!j)
		return -ENOENT;
	*r = j->r;
	free(j);
	return 0;
}

int putq_adopt(struct putq *q, const struct tcfs_hash *h, uint64_t stored)
{
	int found = 0;

	pthread_mutex_lock(&q->mu);
	while (q->undone)
		pthread_cond_wait(&q->stored, &q->mu);
	for (struct job *j = q->head; j && !found; j = j->next) {
		if (j->r.rc == 0 && j->r.put == TCFS_CAS_SHARED &&
		    tcfs_hash_equal(&j->r.blob, h)) {
			j->r.put = TCFS_CAS_CREATED;
			j->r.stored = stored;
			found = 1;
		}
	}
	pthread_mutex_unlock(&q->mu);
	return found;
}
