/* putq: the threads that read, hash and store an import's files (putq.h). */
#include "putq.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/base/io.h"

/* Files waiting to be read, at most. */
#define PUTQ_JOBS_MAX 256
/* Threads, at most: past this they contend for objects/ more than they
 * gain. */
#define PUTQ_THREADS_MAX 16

struct job {
	struct job *next;
	int dirfd;		/* borrowed, as is: */
	const char *key;
	const char *name;	/* the last component of r.path */
	int done;		/* stored (guarded by mu) */
	uint64_t seq;		/* the order it was added in */
	/* The seq of the first job no thread had taken when this one was
	 * stored: only those before it can have made the blob that this
	 * one found there.  (Not a pointer: with every job taken, those
	 * added later must not count, and with threads idle that is the
	 * common case.) */
	uint64_t horizon;
	struct putq_result r;
};

struct putq {
	struct tcfs_cas *cas;	/* borrowed */
	enum tcfs_group_filter filter;
	pthread_t thread[PUTQ_THREADS_MAX];
	unsigned nthreads;
	pthread_mutex_t mu;	/* guards: */
	pthread_cond_t added;	/* a job came, or stop */
	pthread_cond_t stored;	/* a job was stored */
	struct job *head, *tail;	/* not taken yet, in order */
	struct job *todo;	/* the first of them no thread took yet */
	size_t waiting;		/* jobs from todo on */
	size_t undone;		/* jobs queued and not stored yet */
	/* A wake-up costs the thread that gives it a system call: threads
	 * are woken once for a batch of jobs (putq_go), and the taker only
	 * for the job it waits on (any, with want_any). */
	size_t unkicked;	/* jobs added since threads were woken */
	unsigned idle;		/* threads waiting for a job */
	const struct job *want;
	int want_any;
	uint64_t bytes;		/* of the jobs stored and not taken */
	uint64_t nadded;	/* jobs ever added: the next one's seq */
	int stop;
};

/* Reads the file at fd whole into *buf (the caller's to free) when it
 * is at most max bytes: 0.  A bigger one is stored as it is instead: 1,
 * c and *put set.  Else -errno. */
static int read_else_put(struct tcfs_cas *cas, int fd, size_t max,
			 char **buf, size_t *len, struct tcfs_content *c,
			 enum tcfs_cas_put *put)
{
	int rc = tcfs_io_read_small(fd, max, buf, len);

	if (rc != -EFBIG)
		return rc;
	free(*buf);
	*buf = NULL;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	c->fmt = TCFS_FMT_RAW;
	rc = tcfs_cas_put_fd(cas, fd, &c->blob, &c->size, put);
	return rc < 0 ? rc : 1;
}

/* A group file as the group policy says; one that grew past a group
 * file's bound since its stat is not Triton's, and is stored as it is. */
static int put_group(struct tcfs_cas *cas, int fd, const char *key,
		     enum tcfs_group_filter f, struct tcfs_content *c,
		     enum tcfs_cas_put *put)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_else_put(cas, fd, TCFS_GROUP_MAX, &buf, &len, c, put);

	if (rc == 0)
		rc = tcfs_group_put(cas, key, buf, len, f, c, put);
	free(buf);
	return rc < 0 ? rc : 0;
}

/* A kernel's metadata (NAME.json) stored and parsed here, so that the
 * import thread need not read it back for the kernel's row
 * (tcfs_kernel_meta_known).  *meta stays NULL where it is too big to be
 * Triton's: stored as it is, and the row's reader judges it. */
static int put_meta(struct tcfs_cas *cas, int fd, struct tcfs_content *c,
		    enum tcfs_cas_put *put, struct tcfs_kernel **meta)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_else_put(cas, fd, TCFS_KERNEL_META_MAX, &buf, &len, c,
			       put);

	if (rc == 0) {
		rc = tcfs_cas_put_buf(cas, buf, len, &c->blob, put);
		c->size = len;
	}
	if (rc == 0 && (*meta = malloc(sizeof(**meta))))
		tcfs_kernel_parse_meta(buf, len, *meta);
	free(buf);
	return rc < 0 ? rc : 0;
}

static int is_json(const char *name)
{
	size_t n = strlen(name);

	return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

int putq_store_fd(struct tcfs_cas *cas, int fd, const struct stat *st,
		  const char *name, const char *key, enum tcfs_group_filter f,
		  struct tcfs_content *c, enum tcfs_cas_put *put,
		  uint64_t *stored, struct tcfs_kernel **meta)
{
	int rc;

	c->fmt = TCFS_FMT_RAW;
	if (tcfs_group_candidate(name, (uint64_t)st->st_size))
		rc = put_group(cas, fd, key, f, c, put);
	else if (meta && is_json(name))
		rc = put_meta(cas, fd, c, put, meta);
	else
		rc = tcfs_cas_put_fd(cas, fd, &c->blob, &c->size, put);
	*stored = c->size;
	if (rc == 0 && *put == TCFS_CAS_CREATED)
		tcfs_cas_stat(cas, &c->blob, stored);
	return rc;
}

/* O_NONBLOCK: a file swapped for a FIFO must not hang the thread. */
static void store(struct putq *q, struct job *j)
{
	struct putq_result *r = &j->r;
	int fd = openat(j->dirfd, j->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
					    O_CLOEXEC);

	if (fd < 0 || fstat(fd, &r->st) < 0 || !S_ISREG(r->st.st_mode)) {
		r->walk = 1;
		if (fd >= 0)
			close(fd);
		return;
	}
	tcfs_err_clear();
	r->rc = putq_store_fd(q->cas, fd, &r->st, j->name, j->key, q->filter,
			      &r->c, &r->put, &r->stored, &r->meta);
	if (r->rc < 0 && tcfs_err_msg()[0])
		r->msg = strdup(tcfs_err_msg());
	tcfs_err_clear();
	close(fd);
}

static void *run(void *arg)
{
	struct putq *q = arg;
	struct job *j;

	pthread_setname_np(pthread_self(), "tcfs-put");	/* for top -H */
	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->todo && !q->stop) {
			q->idle++;
			pthread_cond_wait(&q->added, &q->mu);
			q->idle--;
		}
		j = q->todo;
		if (!j)
			break;
		q->todo = j->next;
		q->waiting--;
		if (q->todo && q->idle)
			pthread_cond_signal(&q->added);
		pthread_mutex_unlock(&q->mu);
		/* Two threads may store the same bytes at once: the store
		 * counts the second as shared (cas.c, install). */
		store(q, j);
		pthread_mutex_lock(&q->mu);
		assert(q->undone > 0);
		j->done = 1;
		j->horizon = q->todo ? q->todo->seq : q->nadded;
		q->bytes += j->r.walk ? 0 : j->r.c.size;
		q->undone--;
		if (q->want_any || q->want == j)
			pthread_cond_signal(&q->stored);
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

int putq_start(struct tcfs_cas *cas, unsigned threads,
	       enum tcfs_group_filter f, struct putq **out)
{
	struct putq *q = calloc(1, sizeof(*q));
	int rc = 0;

	if (!q)
		return -ENOMEM;
	q->cas = cas;
	q->filter = f;
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
	free(r->meta);
	r->path = r->msg = NULL;
	r->meta = NULL;
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

/* Wakes a thread for the jobs added since the last time; it wakes
 * another if more are left when it takes one (run), so the adder pays
 * for one wake-up a batch, and no more threads wake than there is work
 * for.  With q->mu. */
static void kick(struct putq *q)
{
	if (q->unkicked && q->idle)
		pthread_cond_signal(&q->added);
	q->unkicked = 0;
}

void putq_go(struct putq *q)
{
	pthread_mutex_lock(&q->mu);
	kick(q);
	pthread_mutex_unlock(&q->mu);
}

/* The taker waits until j is stored, or with j NULL until any job is.
 * With q->mu. */
static void wait_stored(struct putq *q, const struct job *j)
{
	kick(q);
	q->want = j;
	q->want_any = !j;
	pthread_cond_wait(&q->stored, &q->mu);
	q->want = NULL;
	q->want_any = 0;
}

int putq_add(struct putq *q, int dirfd, const char *key, const char *path)
{
	struct job *j = calloc(1, sizeof(*j));
	const char *slash;

	if (!j || !(j->r.path = strdup(path))) {
		free(j);
		return -ENOMEM;
	}
	slash = strrchr(j->r.path, '/');
	j->name = slash ? slash + 1 : j->r.path;
	j->dirfd = dirfd;
	j->key = key;
	pthread_mutex_lock(&q->mu);
	while (q->waiting >= PUTQ_JOBS_MAX)
		wait_stored(q, NULL);
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	if (!q->todo)
		q->todo = j;
	j->seq = q->nadded++;
	q->waiting++;
	q->undone++;
	q->unkicked++;
	pthread_mutex_unlock(&q->mu);
	return 0;
}

/* Threads store in any order: a later file may make a blob that j's
 * found there.  The blob is then j's, the first to name it, so that a
 * later key dir taken back takes back only its own blobs.  With q->mu. */
static void claim(struct putq *q, struct job *j)
{
	struct putq_result *r = &j->r;

	if (r->walk || r->rc < 0 || r->put != TCFS_CAS_SHARED)
		return;
	for (struct job *k = j->next; k && k->seq < j->horizon; k = k->next) {
		while (!k->done)
			wait_stored(q, k);
		if (!k->r.walk && k->r.rc == 0 &&
		    k->r.put == TCFS_CAS_CREATED &&
		    tcfs_hash_equal(&k->r.c.blob, &r->c.blob)) {
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
		wait_stored(q, j);
	if (j)
		claim(q, j);
	if (j) {
		q->bytes -= j->r.walk ? 0 : j->r.c.size;
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

uint64_t putq_bytes(struct putq *q)
{
	uint64_t b;

	pthread_mutex_lock(&q->mu);
	b = q->bytes;
	pthread_mutex_unlock(&q->mu);
	return b;
}

int putq_adopt(struct putq *q, const struct tcfs_hash *h, uint64_t stored)
{
	int found = 0;

	pthread_mutex_lock(&q->mu);
	while (q->undone)
		wait_stored(q, NULL);
	for (struct job *j = q->head; j && !found; j = j->next) {
		if (!j->r.walk && j->r.rc == 0 &&
		    j->r.put == TCFS_CAS_SHARED &&
		    tcfs_hash_equal(&j->r.c.blob, h)) {
			j->r.put = TCFS_CAS_CREATED;
			j->r.stored = stored;
			found = 1;
		}
	}
	pthread_mutex_unlock(&q->mu);
	return found;
}
