/*
 * land: a staged tree copied into a mount as Triton writes (land.h).
 *
 * Both trees are walked by descriptor, never through a symlink.  Triton's
 * own processes may be writing the same kernels through the mount at the
 * same time, so nothing here replaces what they land (a file, or a dir
 * written whole in a temp dir, is renamed into place with
 * RENAME_NOREPLACE; a dir that appears meanwhile is entered and filled
 * file by file), and a rollback removes only what this landing created,
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
#include "tools/progress.h"
#include "index/base/err.h"
#include "index/base/io.h"
#include "index/base/name.h"
#include "index/base/vec.h"
#include "land.h"

/* Key dirs are flat; vLLM's caches sit a few levels down. */
#define DEPTH_MAX 16

/* What this landing made, undone in reverse on an error. */
struct made {
	char rel[PATH_MAX];	/* below dst */
	dev_t dev;		/* what it was when made */
	ino_t ino;
	int dir;
};

struct land {
	const char *src, *dst;
	int cachefd;		/* src's: staged links resolve beneath it */
	int dstfd;		/* dst's: what is undone is reached beneath it */
	int binary_only;	/* IR files stay behind */
	struct land_stats *st;
	struct progress *prog;	/* may be NULL */
	struct made *made;
	size_t nmade, cap;
	int direct;		/* writing in a private temp dir: no renames */
};

static int remember(struct land *l, const char *rel, const struct stat *st,
		    int dir)
{
	struct made *m = tcfs_vec_push(&l->made, &l->nmade, &l->cap,
				       sizeof(*m));

	if (!m)
		return -ENOMEM;
	snprintf(m->rel, sizeof(m->rel), "%s", rel);
	m->dev = st->st_dev;
	m->ino = st->st_ino;
	m->dir = dir;
	return 0;
}

static int is_made(const struct made *m, int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       st.st_dev == m->dev && st.st_ino == m->ino;
}

/* Removes file name of dirfd if it is still the one m made.  A writer's
 * os.replace may land between a check and an unlink, so the file is
 * first moved aside under a temp name (which the mount and Triton skip),
 * checked there, and put back if it is not ours after all. */
static void unmake_file(const struct made *m, int dirfd, const char *name)
{
	char tomb[64];

	if (!is_made(m, dirfd, name) || tcfs_io_temp_name(tomb, sizeof(tomb)) ||
	    renameat2(dirfd, name, dirfd, tomb, RENAME_NOREPLACE) < 0)
		return;
	if (is_made(m, dirfd, tomb) ||
	    renameat2(dirfd, tomb, dirfd, name, RENAME_NOREPLACE) < 0)
		unlinkat(dirfd, tomb, 0);	/* ours, or replaced since */
}

/* Removes what was made, each only while its path still holds the very
 * inode made there: a writer's file that replaced it stays, and so does
 * a dir a writer filled (rmdir refuses it).  Each is reached beneath the
 * mount without following a link. */
static void undo(struct land *l)
{
	while (l->nmade) {
		const struct made *m = &l->made[--l->nmade];
		const char *slash = strrchr(m->rel, '/');
		const char *name = slash ? slash + 1 : m->rel;
		char parent[PATH_MAX];
		int pfd;

		snprintf(parent, sizeof(parent), "%.*s",
			 slash ? (int)(slash - m->rel) : 0, m->rel);
		pfd = parent[0] ? tcfs_io_open_beneath(l->dstfd, parent,
						       O_RDONLY | O_DIRECTORY,
						       1)
				: dup(l->dstfd);
		if (pfd < 0)
			continue;
		if (!m->dir)
			unmake_file(m, pfd, name);
		else if (is_made(m, pfd, name))
			unlinkat(pfd, name, AT_REMOVEDIR);
		close(pfd);
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

/* Writes buf as a new file dstfd/name, its inode into st; removed again
 * on an error. */
static int write_new(int dstfd, const char *name, mode_t mode,
		     const char *buf, size_t len, struct stat *st)
{
	int out, rc;

	out = openat(dstfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					  O_CLOEXEC,
		     mode & 0111 ? 0755 : 0644);
	rc = out < 0 ? -errno : tcfs_io_write_all(out, buf, len);
	if (rc == 0 && fstat(out, st) < 0)
		rc = -errno;	/* the inode it keeps once renamed */
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0 && out >= 0)
		unlinkat(dstfd, name, 0);	/* O_EXCL: ours */
	return rc;
}

/* Writes the bytes of in to dstfd/name: straight under its name in a
 * private temp dir (l->direct), else under Triton 3.0's temp name (the
 * mount skips it as a write in flight), renamed into place unless
 * something is there by then.  1 when it was (nothing written), 0 when
 * landed, or -errno with a message. */
static int copy_file(struct land *l, int in, int dstfd, const char *name,
		     const char *rel, mode_t mode)
{
	char tmp[NAME_MAX + 64], rnd[64];
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int rc;

	rc = tcfs_io_read_small(in, SIZE_MAX, &buf, &len);
	if (rc == 0 && !l->direct)
		rc = tcfs_io_temp_name(rnd, sizeof(rnd));
	if (rc < 0) {
		free(buf);
		return tcfs_err_errno(rc, "%s/%s", l->src, rel);
	}
	snprintf(tmp, sizeof(tmp), "%.*s.%s", NAME_MAX - 40, name,
		 l->direct ? "" : rnd);
	rc = write_new(dstfd, l->direct ? name : tmp, mode, buf, len, &st);
	free(buf);
	if (rc == 0 && !l->direct &&
	    renameat2(dstfd, tmp, dstfd, name, RENAME_NOREPLACE) < 0) {
		rc = errno == EEXIST ? 1 : -errno;
		unlinkat(dstfd, tmp, 0);
	}
	if (rc < 0)
		return tcfs_err_errno(rc, "%s/%s", l->dst, rel);
	if (rc == 1)
		return 1;
	l->st->bytes += len;
	return remember(l, rel, &st, 0);
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

/* Removes what land_whole made in its temp dir tmp of dstfd (entries
 * mark + 1 on, named below rel) and the dir itself; forgets them all. */
static void unmake_temp(struct land *l, int dstfd, const char *tmp,
			int tofd, size_t mark, size_t rlen)
{
	while (l->nmade > mark + 1) {
		const struct made *m = &l->made[--l->nmade];

		unlinkat(tofd, m->rel + rlen + 1, m->dir ? AT_REMOVEDIR : 0);
	}
	l->nmade = mark;
	unlinkat(dstfd, tmp, AT_REMOVEDIR);
}

/* A staged dir missing from the mount lands whole, as Inductor lands its
 * key dirs: written in a private temp dir (a write in flight to the
 * mount), then renamed into place, unless a writer made it meanwhile:
 * one rename for the whole kernel, visible at once.  1 when the name was
 * taken (nothing landed), 0 when landed, or -errno with a message. */
static int land_whole(struct land *l, int srcfd, int dstfd, const char *name,
		      const char *rel, int depth)
{
	struct land_stats before = *l->st;
	size_t mark = l->nmade;
	char tmp[64];
	struct stat st;
	int from = -1, to = -1, rc = tcfs_io_temp_name(tmp, sizeof(tmp));

	if (rc == 0 && mkdirat(dstfd, tmp, 0755) < 0)
		rc = -errno;
	if (rc < 0)
		return tcfs_err_errno(rc, "%s/%s", l->dst, rel);
	to = openat(dstfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);
	rc = to < 0 || fstat(to, &st) < 0 ? -errno : remember(l, rel, &st, 1);
	if (rc == 0) {
		from = openat(srcfd, name, O_RDONLY | O_DIRECTORY |
						   O_NOFOLLOW | O_CLOEXEC);
		rc = from < 0 ? -errno : 0;
	}
	if (rc < 0)
		rc = tcfs_err_errno(rc, "%s/%s", l->src, rel);
	l->direct = 1;
	if (rc == 0)
		rc = land_dir(l, from, to, rel, depth + 1);
	l->direct = 0;
	if (rc == 0 && renameat2(dstfd, tmp, dstfd, name,
				 RENAME_NOREPLACE) < 0)
		rc = errno == EEXIST ? 1 : tcfs_err_errno(-errno, "%s/%s",
							  l->dst, rel);
	if (rc != 0) {
		unmake_temp(l, dstfd, tmp, to, mark, strlen(rel));
		*l->st = before;
	}
	if (from >= 0)
		close(from);
	if (to >= 0)
		close(to);
	return rc;
}

/* A staged dir: landed whole when missing, else entered (a writer may
 * have made it a moment ago) and filled file by file; in a temp dir of
 * land_whole's, made. */
static int land_subdir(struct land *l, int srcfd, int dstfd,
		       const char *name, const char *rel, int depth)
{
	struct stat st;
	int from, to, rc = 0;

	if (!l->direct && fstatat(dstfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno == ENOENT) {
		rc = land_whole(l, srcfd, dstfd, name, rel, depth);
		if (rc <= 0)
			return rc;
	}
	if (mkdirat(dstfd, name, 0755) == 0) {
		rc = fstatat(dstfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0
			     ? -errno
			     : remember(l, rel, &st, 1);
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

/* A file of the image's already in the mount, left as it was: counted,
 * and its kernel with it when it is a group file. */
static int kept(struct land *l, const char *name)
{
	l->st->kept++;
	l->st->kept_kernels += tcfs_name_artifact(name) == TCFS_ART_GROUP;
	return 0;
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
	/* There already: kept, as import keeps it. */
	if (!l->direct &&
	    fstatat(dstfd, name, &there, AT_SYMLINK_NOFOLLOW) == 0)
		return kept(l, name);
	fd = open_source(l, srcfd, name, rel, &st);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return tcfs_err_errno(fd, "%s/%s", l->src, rel);
	rc = copy_file(l, fd, dstfd, name, rel, st.st_mode);
	close(fd);
	if (rc == 1)
		return kept(l, name);
	l->st->files += rc == 0;
	l->st->kernels += rc == 0 &&
			  tcfs_name_artifact(name) == TCFS_ART_GROUP;
	return rc;
}

static void show_progress(struct land *l)
{
	char b[16];

	if (!l->prog || !progress_due(l->prog))
		return;
	progress_show(l->prog, "%llu kernels, %llu files, %s",
		      (unsigned long long)l->st->kernels,
		      (unsigned long long)(l->st->files + l->st->kept),
		      cli_human(l->st->bytes, b, sizeof(b)));
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
		show_progress(l);
	}
	tcfs_io_names_free(names, n);
	return rc;
}

int land_tree(const char *src, const char *dst, int binary_only,
	      struct land_stats *st, struct progress *prog)
{
	struct land l = { src, dst, -1, -1, binary_only, st, prog, NULL, 0, 0,
			  0 };
	int rc = 0;

	*st = (struct land_stats){ 0 };
	l.cachefd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	l.dstfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l.cachefd < 0 || l.dstfd < 0)
		rc = tcfs_err_errno(-errno, "%s", l.cachefd < 0 ? src : dst);
	if (rc == 0)
		rc = land_dir(&l, l.cachefd, l.dstfd, "", 1);
	if (rc < 0) {
		undo(&l);
		*st = (struct land_stats){ 0 };
	}
	if (l.cachefd >= 0)
		close(l.cachefd);
	if (l.dstfd >= 0)
		close(l.dstfd);
	free(l.made);
	return rc;
}
