/* io: whole-buffer transfers and comparisons, opens confined to a tree,
 * and the directories and temp files of writes made atomic by rename. */
#include "index/base/io.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "index/base/err.h"

int tcfs_io_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tcfs_io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int tcfs_io_read_small(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 1 << 16, used = 0;
	char *b = malloc(cap);

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (used == cap) {
			char *nb;

			if (cap >= max) {
				*buf = b;
				*len = used;
				return -EFBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(b, cap);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		n = read(fd, b + used, cap - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int rc = -errno;

			free(b);
			return rc;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	*buf = b;
	*len = used;
	return 0;
}

/* Reads as much of [off, off+len) as the file has; returns the count. */
static ssize_t pread_full(int fd, char *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int tcfs_io_same_bytes(int a, int b)
{
	static const size_t chunk = 1 << 16;
	char *ba = malloc(2 * chunk), *bb = ba + chunk;
	uint64_t off = 0;
	int rc;

	if (!ba)
		return -ENOMEM;
	for (;;) {
		ssize_t na = pread_full(a, ba, chunk, off);
		ssize_t nb = pread_full(b, bb, chunk, off);

		if (na < 0 || nb < 0) {
			rc = na < 0 ? (int)na : (int)nb;
			break;
		}
		if (na != nb || memcmp(ba, bb, (size_t)na) != 0) {
			rc = 0;
			break;
		}
		if ((size_t)na < chunk) {
			rc = 1;
			break;
		}
		off += chunk;
	}
	free(ba);
	return rc;
}

int tcfs_io_equals_buf(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	char chunk[1 << 16];
	uint64_t off = 0;

	for (;;) {
		ssize_t n = pread_full(fd, chunk, sizeof(chunk), off);

		if (n < 0)
			return (int)n;
		if ((size_t)n > len - off)
			return 0;
		/* An empty buffer may be NULL: memcmp must not see it. */
		if (n > 0 && memcmp(chunk, p + off, (size_t)n))
			return 0;
		off += (uint64_t)n;
		if ((size_t)n < sizeof(chunk))
			return off == len;
	}
}

/* openat2 answers EAGAIN when a rename elsewhere raced its ".." checks;
 * a few tries settle any honest race. */
#define BENEATH_TRIES 16

int tcfs_io_open_beneath(int dirfd, const char *path, int flags,
			 int no_symlinks)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = flags & O_CREAT ? 0600 : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
			   (no_symlinks ? RESOLVE_NO_SYMLINKS : 0),
	};
	long fd = -1;

	/* glibc 2.36 has no wrapper for it. */
	for (int i = 0; i < BENEATH_TRIES; i++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || (errno != EAGAIN && errno != EINTR))
			break;
	}
	return fd < 0 ? -errno : (int)fd;
}

static int rm_at(int dirfd, const char *name, int depth)
{
	char **names = NULL;
	size_t n = 0;
	int fd, rc;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= TCFS_IO_RM_DEPTH)
		return -ELOOP;
	/* O_NOFOLLOW: a dir swapped for a link on the way is not entered. */
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = tcfs_io_list_names(fd, NULL, &names, &n);
	for (size_t i = 0; i < n; i++) {
		int r = rm_at(fd, names[i], depth + 1);

		rc = rc < 0 ? rc : r;
	}
	tcfs_io_names_free(names, n);
	close(fd);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT &&
	    rc == 0)
		rc = -errno;
	return rc;
}

int tcfs_io_rm_tree_at(int dirfd, const char *name)
{
	return rm_at(dirfd, name, 0);
}

int tcfs_io_mkdirs(const char *path)
{
	char buf[PATH_MAX];

	if (!path[0])
		return -ENOENT;
	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	/* Each ancestor in turn, then path itself (the last pass). */
	for (char *p = buf + 1;; p++) {
		int last = *p == '\0';

		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (last)
			return 0;
		*p = '/';
	}
}

int tcfs_io_temp_name(char *tmp, size_t len)
{
	unsigned char r[8];

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -errno;
	snprintf(tmp, len, "tmp.pid_%ld_%02x%02x%02x%02x%02x%02x%02x%02x",
		 (long)getpid(), r[0], r[1], r[2], r[3], r[4], r[5], r[6],
		 r[7]);
	return 0;
}

int tcfs_io_create_temp(int dirfd, char *tmp, size_t len)
{
	int fd;

	do {
		fd = tcfs_io_temp_name(tmp, len);
		if (fd == 0)
			fd = tcfs_io_open_beneath(dirfd, tmp,
						  O_WRONLY | O_CREAT | O_EXCL |
							  O_NOFOLLOW,
						  1);
	} while (fd == -EEXIST);
	return fd;
}

int tcfs_io_put_at(int dirfd, const char *name, const void *bytes,
		   size_t len, mode_t mode, int64_t mtime_ns)
{
	struct timespec times[2] = { { 0, UTIME_OMIT },
				     { mtime_ns / 1000000000,
				       mtime_ns % 1000000000 } };
	char tmp[64];
	int fd, rc;

	fd = tcfs_io_create_temp(dirfd, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	rc = tcfs_io_write_all(fd, bytes, len);
	if (rc == 0 && (fchmod(fd, mode) < 0 || futimens(fd, times) < 0))
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

int tcfs_io_refuse_symlink(int dirfd, const char *name, const char *shown)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return tcfs_err_set(-ELOOP, "%s: is a symlink; not written "
				    "through (remove it)", shown);
	return 0;
}

static int by_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tcfs_io_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Appends the names in buf's got bytes of entries to *v, but "." and
 * "..".  0 or -ENOMEM. */
static int add_names(const char *buf, ssize_t got, char ***v, size_t *used)
{
	for (ssize_t off = 0; off < got;) {
		const struct dirent64 *de = (const void *)(buf + off);
		char **nv;

		assert(de->d_reclen > 0);
		off += de->d_reclen;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		nv = realloc(*v, (*used + 1) * sizeof(**v));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		if (!(nv[*used] = strdup(de->d_name)))
			return -ENOMEM;
		(*used)++;
	}
	return 0;
}

/* getdents64 on dirfd itself, from its top and back to it: opendir on a
 * dup of it cost four more system calls a directory (dup, fcntl, fstat,
 * close), a sixth of import's own thread's calls at 100,000 key dirs. */
int tcfs_io_list_names(int dirfd, int (*cmp)(const void *, const void *),
		       char ***names, size_t *n)
{
	_Alignas(struct dirent64) char buf[8192];
	char **v = NULL;
	size_t used = 0;
	ssize_t got;
	int rc = 0;

	if (lseek(dirfd, 0, SEEK_SET) < 0)
		return -errno;
	while (rc == 0 && (got = getdents64(dirfd, buf, sizeof(buf))) != 0)
		rc = got < 0 ? -errno : add_names(buf, got, &v, &used);
	if (rc == 0 && lseek(dirfd, 0, SEEK_SET) < 0)
		rc = -errno;
	if (rc < 0) {
		tcfs_io_names_free(v, used);
		return rc;
	}
	if (used > 1)	/* qsort's base may not be NULL */
		qsort(v, used, sizeof(*v), cmp ? cmp : by_strcmp);
	*names = v;
	*n = used;
	return 0;
}
