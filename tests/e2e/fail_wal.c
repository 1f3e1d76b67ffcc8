/*
 * An LD_PRELOAD shim for crash.sh: once the file named by TCFS_FAIL_WAL
 * exists, every write to an SQLite WAL file (a path ending in "-wal")
 * fails with EIO, so the index can no longer commit, as on a disk gone
 * bad.  Only for tests: it looks at the trigger on every write.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int failing(int fd)
{
	const char *trigger = getenv("TCFS_FAIL_WAL");
	char link[64], path[4096];
	ssize_t n;

	if (!trigger || access(trigger, F_OK) < 0)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 4)
		return 0;
	path[n] = '\0';
	return strcmp(path + n - 4, "-wal") == 0;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
	static ssize_t (*next)(int, const void *, size_t, off64_t);

	if (failing(fd)) {
		errno = EIO;
		return -1;
	}
	if (!next)
		next = (ssize_t (*)(int, const void *, size_t, off64_t))
			dlsym(RTLD_NEXT, "pwrite64");
	return next(fd, buf, len, off);
}
