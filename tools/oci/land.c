/*
 * land: a staged tree copied into a mount as Triton writes (land.h).
 *
 * Both trees are walked by descriptor, never through a symlink.  Triton's
 * own processes may be writing the same kernels through the mount at the
 * same time, so nothing here replaces what they land (a file is renamed
 * into place with RENAME_NOREPLACE, a dir that appears meanwhile is
 * entered), and a rollback removes only what this landing created,
 * known by its inode number: never a path someone else filled since.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cli.h"
#include "index/err.h"
#include "index/io.h"
#include "index/name.h"
#include "index/vec.h"
#include "land.h"

/* Key dirs are flat; vLLM's caches sit a few levels down. */
#define DEPTH_MAX 16

/* What this landing made, undone in reverse on an error. */
struct made {
	char path[PATH_MAX];	/* below dst */
	ino_t ino;		/* what it was when made */
	int dir;
};

struct land {
	const char *src, *dst;
	int cachefd;		/* src's: staged links resolve beneath it */
	int binary_only;	/* IR files stay behind */
	struct land_stats *st;
	struct made *made;
	size_t nmade, cap;
};

static int remember(struct land *l, const char *rel, ino_t ino, int dir)
{
	struct made *m = tcfs_vec_push(&l->made, &l->nmade, &l->cap,
				       sizeof(*m));

	if (!m)
		return -ENOMEM;
	if ((size_t)snprintf(m->path, sizeof(m->path), "%s/%s", l->dst, rel) >=
	    sizeof(m->path)) {
		l->nmade--;
		return tcfs_err_set(-ENAMETOOLONG, "%s/%s: too long", l->dst,
				    rel);
	}
	m->ino = ino;
	m->dir = dir;
	return 0;
}

/* Removes what was made, each only while its path still holds the very
 * inode made there: a writer's file that replaced it stays, and so does
 * a dir a writer filled (rmdir refuses it). */
static void undo(struct land *l)
{
	while (l->nmade) {
		const struct made *m = &l->made[--l->nmade];
		struct stat st;

		if (lstat(m->path, &st) < 0 || st.st_ino != m->ino)
			continue;
		if (m->dir)
			rmdir(m->path);
		else
			unlink(m->path);
	}
}

/* "a/b" or "b" for b in dir a ("" at the top). */
static int join(char *buf, const char *rel, const char *name)
{
	if ((size_t)snprintf(buf, PATH_MAX, "%s%s%s", rel, rel[0] ? "/" : "",
			     name) >= PATH_MAX)
		return tcfs_err_set(-ENAMETOOLONG, "%s/%s: too long", rel,
				    name);
	return 0;
}

/* Writes the bytes of in to dstfd/name under Triton 3.0's temp name
 * (the mount skips it as a write in flight), then renames it into place
 * unless something is there by then.  1 when it was (nothing written), 0
 * when landed, or -errno with a message. */
static int copy_file(struct land *l, int in, int dstfd, const char *name,
		     const char *rel, mode_t mode)
{
	char tmp[NAME_MAX + 64], rnd[64];
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int out, rc;

	rc = tcfs_io_read_small(in, SIZE_MAX, &buf, &len);
	if (rc == 0)
		rc = tcfs_io_temp_name(rnd, sizeof(rnd));
	if (rc < 0) {
		free(buf);
		return tcfs_err_errno(rc, "%s/%s", l->src, rel);
	}
	snprintf(tmp, sizeof(tmp), "%.*s.%s", NAME_MAX - 40, name, rnd);
	out = openat(dstfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					 O_CLOEXEC,
		     mode & 0111 ? 0755 : 0644);
	rc = out < 0 ? -errno : tcfs_io_write_all(out, buf, len);
	free(buf);
	if (rc == 0 && fstat(out, &st) < 0)
		rc = -errno;
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat2(dstfd, tmp, dstfd, name, RENAME_NOREPLACE) < 0)
		rc = errno == EEXIST ? 1 : -errno;
	if (rc != 0 && out >= 0)
		unlinkat(dstfd, tmp, 0);
	if (rc < 0)
		return tcfs_err_errno(rc, "%s/%s", l->dst, rel);
	if (rc == 1)
		return 1;
	l->st->bytes += len;
	return remember(l, rel, st.st_ino, 0);
}

/* The source of a staged file: the file, or what a link among the staged
 * files leads to.  A link that leads nowhere in the cache, or to anything
 * but a file, is skipped, as import skips it, and said so.  The
 * descriptor, -ENOENT to skip, or -errno. */
static int open_source(struct land *l, int srcfd, const char *name,
		       const char *rel, const struct stat *st)
{
	struct stat to;
	int fd;

	if (!S_ISLNK(st->st_mode)) {
		fd = openat(srcfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	fd = tcfs_io_open_beneath(l->cachefd, rel, O_RDONLY | O_NONBLOCK, 0);
	if (fd >= 0 && (fstat(fd, &to) < 0 || !S_ISREG(to.st_mode))) {
		close(fd);
		fd = -EISDIR;
	}
	if (fd < 0) {
		cli_err("unpack", "%s: a symlink that leads to no file of the "
			"image's cache; skipped", rel);
		return -ENOENT;
	}
	return fd;
}

static int land_dir(struct land *l, int srcfd, int dstfd, const char *rel,
		    int depth);

/* A staged dir: made in the mount, or entered when it is there already
 * (a writer may have made it a moment ago). */
static int land_subdir(struct land *l, int srcfd, int dstfd,
		       const char *name, const char *rel, int depth)
{
	struct stat st;
	int from, to, rc = 0;

	if (mkdirat(dstfd, name, 0755) == 0) {
		rc = fstatat(dstfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0
			     ? -errno
			     : remember(l, rel, st.st_ino, 1);
	} else if (errno != EEXIST) {
		rc = -errno;
	}
	if (rc < 0)
		return tcfs_err_errno(rc, "%s/%s", l->dst, rel);
	to = openat(dstfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (to < 0) {
		l->st->kept++;	/* a file there: kept, as import keeps it */
		return 0;
	}
	from = openat(srcfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					   O_CLOEXEC);
	rc = from < 0 ? tcfs_err_errno(-errno, "%s/%s", l->src, rel)
		      : land_dir(l, from, to, rel, depth + 1);
	if (from >= 0)
		close(from);
	close(to);
	return rc;
}

/* One entry of a staged dir. */
static int land_entry(struct land *l, int srcfd, int dstfd, const char *name,
		      const char *rel, int depth)
{
	struct stat st, there;
	int fd, rc;

	if (fstatat(srcfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return tcfs_err_errno(-errno, "%s/%s", l->src, rel);
	if (l->binary_only && !S_ISDIR(st.st_mode) &&
	    tcfs_name_artifact(name) == TCFS_ART_IR)
		return 0;	/* as import --binary-only drops them */
	if (S_ISDIR(st.st_mode))
		return land_subdir(l, srcfd, dstfd, name, rel, depth);
	if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return 0;	/* the layer's vetting let none in */
	if (fstatat(dstfd, name, &there, AT_SYMLINK_NOFOLLOW) == 0) {
		l->st->kept++;	/* there already: kept, as import keeps it */
		return 0;
	}
	fd = open_source(l, srcfd, name, rel, &st);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return tcfs_err_errno(fd, "%s/%s", l->src, rel);
	rc = copy_file(l, fd, dstfd, name, rel, st.st_mode);
	close(fd);
	if (rc == 1) {
		l->st->kept++;
		return 0;
	}
	l->st->files += rc == 0;
	l->st->kernels += rc == 0 &&
			  tcfs_name_artifact(name) == TCFS_ART_GROUP;
	return rc;
}

/* A staged dir's entries, in the order Triton writes a kernel: group
 * files last, so no reader sees one before its children. */
static int land_dir(struct land *l, int srcfd, int dstfd, const char *rel,
		    int depth)
{
	char **names = NULL, sub[PATH_MAX];
	size_t n = 0;
	int rc;

	if (depth > DEPTH_MAX)
		return tcfs_err_set(-ELOOP, "%s/%s: nested too deep", l->src,
				    rel);
	rc = tcfs_io_list_names(srcfd, tcfs_name_cmp_commit_order, &names, &n);
	if (rc < 0)
		rc = tcfs_err_errno(rc, "%s/%s", l->src, rel);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = join(sub, rel, names[i]);
		if (rc == 0)
			rc = land_entry(l, srcfd, dstfd, names[i], sub, depth);
	}
	tcfs_io_names_free(names, n);
	return rc;
}

int land_tree(const char *src, const char *dst, int binary_only,
	      struct land_stats *st)
{
	struct land l = { src, dst, -1, binary_only, st, NULL, 0, 0 };
	int dstfd, rc = 0;

	*st = (struct land_stats){ 0 };
	l.cachefd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	dstfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l.cachefd < 0 || dstfd < 0)
		rc = tcfs_err_errno(-errno, "%s", l.cachefd < 0 ? src : dst);
	if (rc == 0)
		rc = land_dir(&l, l.cachefd, dstfd, "", 1);
	if (rc < 0) {
		undo(&l);
		*st = (struct land_stats){ 0 };
	}
	if (l.cachefd >= 0)
		close(l.cachefd);
	if (dstfd >= 0)
		close(dstfd);
	free(l.made);
	return rc;
}
