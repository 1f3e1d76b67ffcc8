/*
 * An LD_PRELOAD shim for import_crash.sh: the process kills itself with
 * SIGKILL, as kill -9 would, at the Nth of the calls by which a store
 * changes on disk, from any thread: a write (pwrite64: a blob's bytes,
 * SQLite's pages and WAL), a blob landing (linkat, renameat2), a sync
 * (fsync, fdatasync, syncfs).  So a kill falls at a point the test chooses by
 * count, never by time.
 *
 *   TCFS_KILL_AT=N     kill at the Nth such call (N >= 1)
 *   TCFS_KILL_COUNT=F  without TCFS_KILL_AT: write the number of such
 *                      calls made to F at exit
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_long calls;

static void count(void)
{
	const char *at = getenv("TCFS_KILL_AT");
	long n = atomic_fetch_add(&calls, 1) + 1;

	if (at && n == atol(at))
		raise(SIGKILL);
}

static void __attribute__((destructor)) report(void)
{
	const char *f = getenv("TCFS_KILL_COUNT");
	FILE *fp;

	if (!f || getenv("TCFS_KILL_AT") || !(fp = fopen(f, "w")))
		return;
	fprintf(fp, "%ld\n", atomic_load(&calls));
	fclose(fp);
}

#define NEXT(fn) \
	static __typeof__(fn) *next; \
	if (!next) \
		next = (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn)

ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
	NEXT(pwrite64);
	count();
	return next(fd, buf, len, off);
}

int linkat(int olddirfd, const char *oldpath, int newdirfd,
	   const char *newpath, int flags)
{
	NEXT(linkat);
	count();
	return next(olddirfd, oldpath, newdirfd, newpath, flags);
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd,
	      const char *newpath, unsigned int flags)
{
	NEXT(renameat2);
	count();
	return next(olddirfd, oldpath, newdirfd, newpath, flags);
}

int fsync(int fd)
{
	NEXT(fsync);
	count();
	return next(fd);
}

int fdatasync(int fd)
{
	NEXT(fdatasync);
	count();
	return next(fd);
}

int syncfs(int fd)
{
	NEXT(syncfs);
	count();
	return next(fd);
}
