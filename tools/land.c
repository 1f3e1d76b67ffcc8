/*
 * land: a staged tree copied into a mount as Triton writes (land.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "index/err.h"
#include "index/io.h"
#include "index/name.h"
#include "index/vec.h"
#include "land.h"

/* Key dirs are flat; vLLM's caches sit a few levels down. */
#define DEPTH_MAX 16

/* What this landing made, undone in reverse on an error. */
struct made {
	char path[PATH_MAX];
	int dir;
};

struct land {
	const char *src, *dst;
	int binary_only;	/* IR files stay behind */
	struct land_stats *st;
	struct made *made;
	size_t nmade, cap;
};

static int remember(struct land *l, const char *path, int dir)
{
	struct made *m = tcfs_vec_push(&l->made, &l->nmade, &l->cap,
				       sizeof(*m));

	if (!m)
		return -ENOMEM;
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->dir = dir;
	return 0;
}

static void undo(struct land *l)
{
	while (l->nmade) {
		const struct made *m = &l->made[--l->nmade];

		if (m->dir)
			rmdir(m->path);
		else
			unlink(m->path);
	}
}

/* dir's names in the order Triton writes a kernel: group files last. */
static int list(const char *dir, char ***names, size_t *n)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return tcfs_err_errno(-errno, "%s", dir);
	rc = tcfs_io_list_names(fd, tcfs_name_cmp_commit_order, names, n);
	close(fd);
	return rc < 0 ? tcfs_err_errno(rc, "%s", dir) : 0;
}

static int copy_file(struct land *l, const char *from, const char *to,
		     mode_t mode)
{
	char tmp[PATH_MAX + 64];
	unsigned char r[6];
	char *buf = NULL;
	size_t len = 0;
	int in, out, rc;

	in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return tcfs_err_errno(-errno, "%s", from);
	rc = tcfs_io_read_small(in, SIZE_MAX, &buf, &len);
	close(in);
	if (rc < 0) {
		free(buf);
		return tcfs_err_errno(rc, "%s", from);
	}
	if (getrandom(r, sizeof(r), 0) != sizeof(r)) {
		free(buf);
		return -errno;
	}
	/* Triton 3.0's temp name: the mount skips it as a write in flight. */
	snprintf(tmp, sizeof(tmp), "%s.tmp.pid_%ld_%02x%02x%02x%02x%02x%02x",
		 to, (long)getpid(), r[0], r[1], r[2], r[3], r[4], r[5]);
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		   mode & 0111 ? 0755 : 0644);
	if (out < 0) {
		free(buf);
		return tcfs_err_errno(-errno, "%s", tmp);
	}
	rc = tcfs_io_write_all(out, buf, len);
	free(buf);
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, to) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		return tcfs_err_errno(rc, "%s", to);
	}
	l->st->bytes += len;
	return remember(l, to, 0);
}

static int land_dir(struct land *l, const char *rel, int depth)
{
	char from[PATH_MAX], to[PATH_MAX], **names = NULL;
	size_t n = 0;
	int rc;

	snprintf(from, sizeof(from), "%s%s%s", l->src, rel[0] ? "/" : "", rel);
	if (depth > DEPTH_MAX)
		return tcfs_err_set(-ELOOP, "%s: nested too deep", from);
	rc = list(from, &names, &n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char sub[PATH_MAX], src[PATH_MAX];
		struct stat st, there;

		if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel,
				     rel[0] ? "/" : "", names[i]) >=
		    sizeof(sub)) {
			rc = tcfs_err_set(-ENAMETOOLONG, "%s/%s: too long",
					  from, names[i]);
			break;
		}
		rc = cli_path_join(src, sizeof(src), l->src, sub);
		if (rc == 0)
			rc = cli_path_join(to, sizeof(to), l->dst, sub);
		if (rc < 0)
			break;
		if (lstat(src, &st) < 0) {
			rc = tcfs_err_errno(-errno, "%s", src);
			break;
		}
		if (l->binary_only && !S_ISDIR(st.st_mode) &&
		    tcfs_name_artifact(names[i]) == TCFS_ART_IR)
			continue;	/* as import --binary-only drops them */
		if (lstat(to, &there) == 0) {
			if (S_ISDIR(st.st_mode) && S_ISDIR(there.st_mode))
				rc = land_dir(l, sub, depth + 1);
			else
				l->st->kept++;	/* as import keeps them */
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			rc = mkdir(to, 0755) < 0 ? tcfs_err_errno(-errno, "%s",
								  to)
						 : remember(l, to, 1);
			if (rc == 0)
				rc = land_dir(l, sub, depth + 1);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t len = readlink(src, target, sizeof(target) - 1);

			if (len < 0)
				rc = tcfs_err_errno(-errno, "%s", src);
			else if ((target[len] = '\0', symlink(target, to)) < 0)
				rc = tcfs_err_errno(-errno, "%s", to);
			else
				rc = remember(l, to, 0);
			l->st->files += rc == 0;
		} else {
			rc = copy_file(l, src, to, st.st_mode);
			l->st->files += rc == 0;
			l->st->kernels += rc == 0 &&
					  tcfs_name_artifact(names[i]) ==
						  TCFS_ART_GROUP;
		}
	}
	tcfs_io_names_free(names, n);
	return rc;
}

int land_tree(const char *src, const char *dst, int binary_only,
	      struct land_stats *st)
{
	struct land l = { src, dst, binary_only, st, NULL, 0, 0 };
	int rc;

	*st = (struct land_stats){ 0 };
	rc = land_dir(&l, "", 1);
	if (rc < 0) {
		undo(&l);
		*st = (struct land_stats){ 0 };
	}
	free(l.made);
	return rc;
}
