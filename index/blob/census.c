/* census: the files under objects/, counted by several threads. */
#include "index/blob/census.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/base/io.h"

#define CENSUS_THREADS_MAX 16

/* The top of objects/: its names, shared by the threads, each taking
 * the next one not taken. */
struct census {
	int objfd;
	char **name;			/* names at the top (io.h) */
	size_t n;
	atomic_size_t next;
	pthread_mutex_t mu;
	struct tcfs_census sum;		/* under mu */
	int rc;				/* the first error, under mu */
};

/* Adds the files of fan-out dir name to *c; a name that is no dir is a
 * stray file of 0 bytes, as cas.c counts it. */
static int count_sub(struct census *c, const char *name,
		     struct tcfs_census *mine)
{
	int fd = openat(c->objfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
		mine->files++;
		return 0;
	}
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;	/* gone meanwhile */
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		/* Removed meanwhile: not counted, as the walk does. */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		mine->files++;
		mine->bytes += (uint64_t)st.st_size;
	}
	closedir(d);
	return 0;
}

static void *counter(void *arg)
{
	struct census *c = arg;
	struct tcfs_census mine = { 0 };
	size_t i;
	int rc = 0;

	while (rc == 0 && (i = atomic_fetch_add(&c->next, 1)) < c->n)
		if (c->name[i][0] != '.')	/* as cas.c walks */
			rc = count_sub(c, c->name[i], &mine);
	pthread_mutex_lock(&c->mu);
	c->sum.files += mine.files;
	c->sum.bytes += mine.bytes;
	if (rc < 0 && c->rc == 0)
		c->rc = rc;
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static unsigned threads_for(unsigned asked, size_t subs)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = asked ? asked : cores > 0 ? (unsigned)cores : 1;

	if (n > CENSUS_THREADS_MAX)
		n = CENSUS_THREADS_MAX;
	if (n > subs)
		n = subs ? (unsigned)subs : 1;
	return n;
}

/* Runs the counters over c's names: the calling thread is one of them. */
static int run_counters(struct census *c, unsigned n)
{
	pthread_t t[CENSUS_THREADS_MAX];
	unsigned started = 0;

	for (; started + 1 < n; started++)
		if (pthread_create(&t[started], NULL, counter, c) != 0)
			break;	/* fewer threads: the work is shared all
				 * the same */
	counter(c);
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return c->rc;
}

int tcfs_census_objects(const char *store_path, unsigned threads,
			struct tcfs_census *out)
{
	struct census c = { 0 };
	char objects[4096];
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(objects, sizeof(objects), "%s/objects", store_path);
	c.objfd = open(objects, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);
	if (c.objfd < 0)
		return tcfs_err_errno(-errno, "%s", objects);
	atomic_init(&c.next, 0);
	pthread_mutex_init(&c.mu, NULL);
	rc = tcfs_io_list_names(c.objfd, NULL, &c.name, &c.n);
	if (rc == 0)
		rc = run_counters(&c, threads_for(threads, c.n));
	if (rc == 0)
		*out = c.sum;
	else
		rc = tcfs_err_errno(rc, "%s", objects);
	pthread_mutex_destroy(&c.mu);
	tcfs_io_names_free(c.name, c.n);
	close(c.objfd);
	return rc;
}
