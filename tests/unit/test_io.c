/* io: sorted listings, files put whole by rename; err: context prefixed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/base/io.h"
#include "index/base/name.h"
#include "tap.h"

static void touch(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
}

static void test_list(int dirfd)
{
	char **v = NULL;
	size_t n = 99;

	tap_eq(tcfs_io_list_names(dirfd, NULL, &v, &n), 0, "empty dir lists");
	tap_eq(n, 0, "... as no names");
	tcfs_io_names_free(v, n);

	touch(dirfd, "b");
	touch(dirfd, "__grp__a.json");
	touch(dirfd, "a");
	tap_eq(tcfs_io_list_names(dirfd, NULL, &v, &n), 0, "three names");
	tap_ok(n == 3 && !strcmp(v[0], "__grp__a.json") && !strcmp(v[1], "a") &&
		       !strcmp(v[2], "b"),
	       "strcmp order without a comparator, no . or ..");
	tcfs_io_names_free(v, n);
	tap_eq(tcfs_io_list_names(dirfd, tcfs_name_cmp_commit_order, &v, &n),
	       0, "listed again from the same descriptor");
	tap_ok(n == 3 && !strcmp(v[2], "__grp__a.json"),
	       "commit order puts the group file last");
	tcfs_io_names_free(v, n);
	tap_eq(tcfs_io_list_names(-1, NULL, &v, &n), -EBADF,
	       "a bad descriptor is -EBADF");
	{
		/* More entries than one read of the directory returns. */
		_Alignas(8) char ents[4096];
		char name[64];
		int sub, ok = 1;

		mkdirat(dirfd, "big", 0755);
		sub = openat(dirfd, "big", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		for (int i = 0; i < 1000; i++) {
			snprintf(name, sizeof(name), "%04d-a-name-long-enough-"
				 "to-take-room", i);
			touch(sub, name);
		}
		tap_eq(tcfs_io_list_names(sub, NULL, &v, &n), 0,
		       "a dir of 1,000 names lists");
		for (size_t i = 0; ok && i < n; i++) {
			snprintf(name, sizeof(name), "%04zu-a-name-long-enough-"
				 "to-take-room", i);
			ok = !strcmp(v[i], name);
		}
		tap_ok(n == 1000 && ok, "... each once, in order (%zu)", n);
		tcfs_io_names_free(v, n);
		tap_ok(lseek(sub, 0, SEEK_CUR) == 0,
		       "... and its descriptor is left at the top");
		tap_ok(getdents64(sub, ents, sizeof(ents)) > 0,
		       "... where a read of it starts again");
		close(sub);
	}
}

static void test_put(int dirfd)
{
	struct stat st;
	char buf[16] = { 0 };
	int fd;

	tap_eq(tcfs_io_put_at(dirfd, "f", "hello", 5, 0640,
			      1234567890123456789LL),
	       0, "put a file");
	tap_ok(fstatat(dirfd, "f", &st, 0) == 0 && st.st_size == 5 &&
		       (st.st_mode & 07777) == 0640 &&
		       st.st_mtim.tv_sec == 1234567890 &&
		       st.st_mtim.tv_nsec == 123456789,
	       "with its size, mode and mtime");
	fd = openat(dirfd, "f", O_RDONLY | O_CLOEXEC);
	tap_ok(fd >= 0 && read(fd, buf, sizeof(buf)) == 5 &&
		       !strcmp(buf, "hello"),
	       "and its bytes");
	if (fd >= 0)
		close(fd);

	tap_eq(symlinkat("/nonexistent-tcfs-target", dirfd, "l"), 0,
	       "a symlink planted");
	tap_eq(tcfs_io_put_at(dirfd, "l", "x", 1, 0644, 0), 0,
	       "put over the symlink");
	tap_ok(fstatat(dirfd, "l", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		       S_ISREG(st.st_mode) &&
		       access("/nonexistent-tcfs-target", F_OK) < 0,
	       "replaces it, never writing through it");

	tap_ok(mkdirat(dirfd, "d", 0755) == 0 &&
		       tcfs_io_put_at(dirfd, "d", "x", 1, 0644, 0) < 0,
	       "a directory in the way: an error");
	{
		char **v;
		size_t n;
		int temps = 0;

		tcfs_io_list_names(dirfd, NULL, &v, &n);
		for (size_t i = 0; i < n; i++)
			temps += !strncmp(v[i], "tmp.pid_", 8);
		tcfs_io_names_free(v, n);
		tap_eq(temps, 0, "... and no temp file left behind");
	}
}

/* A tree removed without following the links in it: what they name
 * stays, wherever it is. */
static void test_rm_tree(int dirfd)
{
	char outside[] = "/tmp/tcfs-test-io-outside.XXXXXX";
	char victim[sizeof(outside) + 8];
	struct stat st;

	tap_ok(mkdtemp(outside) != NULL, "a dir outside the tree");
	snprintf(victim, sizeof(victim), "%s/v", outside);
	close(open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	mkdirat(dirfd, "t", 0755);
	mkdirat(dirfd, "t/sub", 0755);
	mkdirat(dirfd, "t/sub/deeper", 0755);
	touch(dirfd, "t/sub/deeper/f");
	tap_eq(symlinkat(outside, dirfd, "t/sub/out"), 0, "a link out of it");
	tap_eq(symlinkat(victim, dirfd, "t/file-out"), 0, "... to a file too");
	tap_eq(tcfs_io_rm_tree_at(dirfd, "t"), 0, "the tree is removed");
	tap_ok(fstatat(dirfd, "t", &st, AT_SYMLINK_NOFOLLOW) < 0 &&
		       errno == ENOENT,
	       "... all of it");
	tap_eq(stat(victim, &st), 0, "... and what its links name is not");
	tap_eq(tcfs_io_rm_tree_at(dirfd, "t"), 0, "nothing there: no error");
	tap_eq(symlinkat(outside, dirfd, "l2"), 0, "a link alone");
	tap_eq(tcfs_io_rm_tree_at(dirfd, "l2"), 0, "... is removed");
	tap_eq(stat(victim, &st), 0, "... not the dir it names");
	unlink(victim);
	rmdir(outside);
}

static void test_err(void)
{
	tcfs_err_clear();
	tap_eq(tcfs_err_prefix(-ENOENT, "layer %d", 2), -ENOENT,
	       "prefix returns rc");
	tap_ok(!strcmp(tcfs_err_msg(), "layer 2: No such file or directory"),
	       "with no message, the cause: %s", tcfs_err_msg());
	tcfs_err_set(-EBADMSG, "blob x: damaged");
	tcfs_err_prefix(-EBADMSG, "%s", "KEY/k.cubin");
	tap_ok(!strcmp(tcfs_err_msg(), "KEY/k.cubin: blob x: damaged"),
	       "before the message there: %s", tcfs_err_msg());
}

int main(void)
{
	char dir[] = "/tmp/tcfs-test-io.XXXXXX";
	int dirfd;

	if (!mkdtemp(dir))
		return 1;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	test_list(dirfd);
	close(dirfd);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unlinkat(dirfd, "a", 0);
	unlinkat(dirfd, "b", 0);
	unlinkat(dirfd, "__grp__a.json", 0);
	tcfs_io_rm_tree_at(dirfd, "big");
	test_put(dirfd);
	test_rm_tree(dirfd);
	test_err();
	unlinkat(dirfd, "f", 0);
	unlinkat(dirfd, "l", 0);
	unlinkat(dirfd, "d", AT_REMOVEDIR);
	close(dirfd);
	rmdir(dir);
	return tap_done();
}
