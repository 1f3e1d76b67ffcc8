/*
 * import: brings Triton cache directories into the store (import.h).
 *
 * Each key directory is one transaction: it lands whole or not at all, so a
 * failure (an unreadable file, a full disk) never leaves half a kernel in
 * the store, and the blobs it had added are taken out again.  Files are
 * imported in name order with group files last, as Triton writes them.
 * While one key dir's rows are written, a thread per core reads, hashes
 * and stores the files of the key dirs after it (putq.h); the rows still
 * come one key dir at a time, in order, each file's once its blob is in.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "import.h"
#include "progress.h"
#include "putq.h"
#include "index/base/text.h"
#include "index/base/vec.h"
#include "index/blob/cas.h"
#include "index/blob/durable.h"
#include "index/blob/space.h"
#include "index/base/err.h"
#include "index/model/group.h"
#include "index/base/io.h"
#include "index/base/name.h"
#include "index/tree/ns.h"
#include "index/store/store.h"

/* Key dirs are flat; Inductor's and vLLM's caches sit a few levels down,
 * and deeper trees are followed this far. */
#define DEPTH_MAX 12
/* Key dirs committed together.  A COMMIT per key dir wrote each index
 * page it touched once per key dir: 77 WAL pages a kernel, 30% of an
 * import's time.  Each key dir is a savepoint of the batch, so it still
 * lands whole or not at all.  The indexes keyed by random names (blobs,
 * keys) grow with the store, and a batch changes pages all over them:
 * a batch writes each such page once for several files even at 100,000
 * kernels (tcfs_store_bulk holds them), and syncs the file system
 * (durable.h) once.  1,024 made an import of 10,000 kernels 18% slower
 * than 4,096; on the GPU host, 16,384 (150,000 files) took an import of
 * 100,000 kernels from 1.06x and 1.00x of cp's time to 0.91x and 0.86x:
 * its thread waited on 25 syncs of the file system, now 7.  A kill -9
 * loses at most a batch, which a new import does again.  The key dir's
 * savepoint is the only one: its rows open none of their own
 * (tcfs_store_begin_whole).  tcfs import --commit-every sets another. */
static_assert(IMPORT_BATCH_DIRS > 0, "a batch holds a key dir at least");

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static void show_progress(struct import *im)
{
	char b[16];

	if (!im->o.progress || !progress_due(im->o.progress))
		return;
	progress_show(im->o.progress, "%llu %s, %llu %s, %s",
		      (unsigned long long)im->st.kernels,
		      TCFS_NOUN(im->st.kernels, "kernel"),
		      (unsigned long long)im->st.files,
		      TCFS_NOUN(im->st.files, "file"),
		      cli_human(im->st.bytes, b, sizeof(b)));
}

/* An error about one source file: its path, then the library's message if
 * it left one (naming the store's file it failed on), else the cause. */
static void file_err(struct import *im, int rc, const char *path)
{
	const char *msg = tcfs_err_msg();

	if (msg[0] && strncmp(msg, path, strlen(path)) != 0)
		cli_err(im->o.cmd, "%s: %s", path, msg);
	else
		cli_err(im->o.cmd, "%s: %s", path, strerror(-rc));
	tcfs_err_clear();
	switch (rc) {
	case -ENOSPC:
	case -EDQUOT:
	case -EROFS:
	case -EUCLEAN:
	case -ENOMEM:
	case -EBUSY:
		im->fatal = 1;
		break;
	}
}

/* Something not imported that is not an error: a note on stderr. */
static void warn(struct import *im, const char *path, const char *why)
{
	if (im->o.quiet)
		return;
	cli_err(im->o.cmd, "%s: %s", path, why);
}

static int remember_added(struct import *im, const struct tcfs_hash *h,
			  uint64_t size)
{
	struct tcfs_hash *nh;
	uint64_t *ns;

	nh = realloc(im->added, (im->nadded + 1) * sizeof(*nh));
	if (!nh)
		return -ENOMEM;
	im->added = nh;
	ns = realloc(im->added_size, (im->nadded + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	im->added_size = ns;
	im->added[im->nadded] = *h;
	im->added_size[im->nadded] = size;
	im->nadded++;
	return 0;
}

/* Key dirs read ahead, at most: their files are read, hashed and
 * stored by the queue's threads (putq.h) while the rows of the key dir
 * before them are written. */
#define AHEAD_DIRS 64
/* Bytes of files stored ahead and not yet taken, past which no more key
 * dirs are read ahead (up to PUTQ_JOBS_MAX more files are on their way),
 * and the room blobs must have left for them: blobs of the key dirs
 * ahead must not take the room that the one being imported needs.  A
 * disk near full is read ahead not at all, and fails the key dir it
 * fills up, as without read ahead. */
#define AHEAD_BYTES (64u << 20)

/* A key dir read ahead: its entries listed, its files queued. */
struct ahead {
	size_t idx;		/* its index among its level's names */
	int fd;			/* the key dir; -1: not read ahead */
	char **names;		/* its entries, in commit order */
	size_t n;
	unsigned char *queued;	/* names[i] is in the queue */
	size_t nqueued, taken;
};

static enum tcfs_group_filter group_filter(const struct import *im)
{
	return im->o.binary_only ? TCFS_GROUP_BINARY_ONLY : TCFS_GROUP_ALL;
}

/* The rows of a fresh dir's files, written together (tcfs_ns_create_files):
 * one statement a file, and the dir's own changes once. */
static int flush_fresh(struct import *im)
{
	int rc;

	if (im->npend == 0)
		return 0;
	rc = tcfs_ns_create_files(im->s, im->fresh, im->pend, im->npend);
	im->npend = 0;
	return rc;
}

/* File name's row, to be written with the rest of im->fresh's. */
static int pend_file(struct import *im, const struct stat *st,
		     const char *name, const struct tcfs_content *c)
{
	struct tcfs_ns_file *f = tcfs_vec_push(&im->pend, &im->npend,
					       &im->pend_cap, sizeof(*f));

	if (!f)
		return -ENOMEM;
	*f = (struct tcfs_ns_file){
		.name = name,
		.mode = tcfs_ns_portable_mode(st->st_mode),
		.mtime_ns = mtime_ns(st),
		.c = *c,
	};
	return 0;
}

/* The row of file name in dir, its blob stored as c (put and stored as
 * its put said), st its stat.  In a dir this import made (im->fresh) no
 * name is there yet, and the row waits for the dir's others. */
static int add_file(struct import *im, const struct stat *st,
		    const struct tcfs_node *dir, const char *name,
		    const char *path, const struct tcfs_content *c,
		    enum tcfs_cas_put put, uint64_t stored)
{
	int group = tcfs_name_artifact(name) == TCFS_ART_GROUP;
	struct tcfs_node old;
	int rc = 0;

	if (put == TCFS_CAS_CREATED)
		rc = remember_added(im, &c->blob, stored);
	if (rc < 0)
		return rc;
	rc = dir->ino == im->fresh ? -ENOENT
				   : tcfs_ns_lookup(im->s, dir->ino, name, &old);
	if (rc == 0) {
		im->st.kept_kernels += group;
		if (old.kind != TCFS_FILE ||
		    !tcfs_hash_equal(&old.blob, &c->blob)) {
			im->st.conflicts++;
			warn(im, path, "differs from the copy already in the "
				       "store; kept that one");
			return 0;
		}
	} else if (rc == -ENOENT) {
		rc = dir->ino == im->fresh
			     ? pend_file(im, st, name, c)
			     : tcfs_ns_create(im->s, dir->ino, name,
					      tcfs_ns_portable_mode(st->st_mode),
					      mtime_ns(st), c, NULL, NULL);
		im->st.new_files += rc == 0;
		im->st.new_kernels += rc == 0 && group;
		im->st.new_bytes += rc == 0 ? c->size : 0;
	}
	if (rc < 0)
		return rc;
	im->st.files++;
	im->st.bytes += c->size;
	im->st.kernels += group;
	return 0;
}

/* A file open at fd, stored here. */
static int import_file(struct import *im, int fd, const struct stat *st,
		       const struct tcfs_node *dir, const char *name,
		       const char *key, const char *path)
{
	struct tcfs_content c = { 0 };
	enum tcfs_cas_put put;
	uint64_t stored = 0;
	int rc;

	tcfs_err_clear();
	rc = putq_store_fd(tcfs_store_cas(im->s), fd, st, name, key,
			   group_filter(im), &c, &put, &stored, NULL);
	return rc < 0 ? rc : add_file(im, st, dir, name, path, &c, put,
				      stored);
}

/* The path of a source entry relative to the source (path is SRC/...). */
static const char *below_src(const struct import *im, const char *path)
{
	const char *rel = path + strlen(im->src);

	while (*rel == '/')
		rel++;
	return rel;
}

/* Opens a symlink's target if it stays inside the source.  Resolving and
 * opening are one step beneath the source's descriptor, so a directory
 * swapped on the way cannot lead the open out.  An absolute link that
 * names a file in the source is opened as the path below the source. */
static int open_link(struct import *im, int dirfd, const char *name,
		     const char *path)
{
	char target[PATH_MAX], real[PATH_MAX];
	size_t n = strlen(im->realsrc);
	ssize_t len;
	int fd;

	fd = tcfs_io_open_beneath(im->srcfd, below_src(im, path),
				  O_RDONLY | O_NONBLOCK, 0);
	if (fd == -EXDEV &&
	    (len = readlinkat(dirfd, name, target, sizeof(target) - 1)) > 0 &&
	    target[0] == '/') {
		target[len] = '\0';
		if (realpath(target, real) && strncmp(real, im->realsrc, n) == 0 &&
		    real[n] == '/')
			fd = tcfs_io_open_beneath(im->srcfd, real + n + 1,
						  O_RDONLY | O_NONBLOCK, 0);
	}
	if (fd == -EXDEV) {
		warn(im, path, "symlink leads out of the source; skipped");
	} else if (fd < 0) {
		char why[128];

		snprintf(why, sizeof(why), "symlink cannot be followed (%s); "
			 "skipped", strerror(-fd));
		warn(im, path, why);
		fd = -EXDEV;
	}
	return fd;
}

/* The node for a directory: the stored one, or a new one like the
 * source (then *made is 1, when made is not NULL). */
static int ensure_dir(struct import *im, uint64_t parent, const char *name,
		      const struct stat *st, struct tcfs_node *out, int *made)
{
	int rc = tcfs_ns_lookup(im->s, parent, name, out);

	if (made)
		*made = rc == -ENOENT;
	if (rc == -ENOENT)
		rc = tcfs_ns_mkdir(im->s, parent, name,
				   tcfs_ns_portable_mode(st->st_mode),
				   mtime_ns(st), NULL, out);
	if (rc == 0 && out->kind != TCFS_DIR)
		rc = -ENOTDIR;
	return rc;
}

static int import_tree(struct import *im, int fd, const struct tcfs_node *dir,
		       const char *key, const char *path, int depth);

/* A directory below a key dir or a tree, st its lstat: made in the
 * store, then imported whole, unless nested past DEPTH_MAX. */
static int import_subdir(struct import *im, int dirfd,
			 const struct tcfs_node *dir, const char *name,
			 const struct stat *st, const char *key,
			 const char *path, int depth)
{
	struct tcfs_node sub;
	int fd, rc;

	if (depth >= DEPTH_MAX) {
		im->st.skipped++;
		warn(im, path, "nested too deep; skipped");
		return 0;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = ensure_dir(im, dir->ino, name, st, &sub, NULL);
	if (rc == 0)
		rc = import_tree(im, fd, &sub, key, path, depth + 1);
	close(fd);
	return rc;
}

static int import_entry(struct import *im, int dirfd,
			const struct tcfs_node *dir, const char *name,
			const char *key, const char *path, int depth)
{
	struct stat st;
	int fd, rc;

	if (tcfs_name_is_temp(name, 0)) {
		im->st.skipped++;	/* a write in progress or abandoned */
		return 0;
	}
	if (im->o.binary_only && tcfs_name_artifact(name) == TCFS_ART_IR) {
		im->st.skipped++;
		return 0;
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		fd = open_link(im, dirfd, name, path);
		if (fd == -EXDEV) {
			im->st.skipped++;
			return 0;
		}
		if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			im->st.skipped++;
			warn(im, path, "symlink to something other than a "
				       "regular file; skipped");
			return 0;
		}
	} else if (S_ISDIR(st.st_mode)) {
		return import_subdir(im, dirfd, dir, name, &st, key, path,
				     depth);
	} else if (S_ISREG(st.st_mode)) {
		/* O_NONBLOCK: a file swapped for a FIFO must not hang us. */
		fd = openat(dirfd, name,
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -EINVAL;
		}
	} else {
		im->st.skipped++;
		warn(im, path, "not a regular file or directory; skipped");
		return 0;
	}
	if (fd < 0)
		return fd == -1 ? -errno : fd;
	rc = import_file(im, fd, &st, dir, name, key, path);
	close(fd);
	return rc;
}

/* The next result of the queue, a's file name: 1 when it was stored
 * (then its row is written), 0 when it is the walk's to look at, or
 * -errno when it failed. */
static int take_queued(struct import *im, struct ahead *a,
		       const struct tcfs_node *dir, const char *name,
		       const char *path)
{
	struct putq_result r;
	int rc = putq_next(im->q, &r);

	assert(rc == 0);	/* each queued file has its result */
	a->taken++;
	rc = r.rc;
	if (rc < 0 && r.msg)
		tcfs_err_set(rc, "%s", r.msg);
	if (!r.walk && rc == 0) {
		if (r.meta)
			tcfs_kernel_meta_known(&r.c.blob, r.meta);
		rc = add_file(im, &r.st, dir, name, path, &r.c, r.put,
			      r.stored);
	}
	rc = r.walk ? 0 : rc < 0 ? rc : 1;
	putq_result_free(&r);
	return rc;
}

/* A key dir's top level read ahead (im->cur) was listed then, and its
 * files queued then. */
static int import_tree(struct import *im, int fd, const struct tcfs_node *dir,
		       const char *key, const char *path, int depth)
{
	struct ahead *a = depth == 1 ? im->cur : NULL;
	char **names = a ? a->names : NULL;
	size_t n = a ? a->n : 0;
	int rc = a ? 0 : tcfs_io_list_names(fd, tcfs_name_cmp_commit_order,
					    &names, &n);

	if (rc < 0) {
		file_err(im, rc, path);
		return rc;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char sub[PATH_MAX];

		snprintf(sub, sizeof(sub), "%s/%s", path, names[i]);
		if (a && a->queued[i])
			rc = take_queued(im, a, dir, names[i], sub);
		/* What the walk does may add rows of its own: those
		 * waiting go first, in the order of the names. */
		if (rc == 0)
			rc = flush_fresh(im);
		if (rc == 0)
			rc = import_entry(im, fd, dir, names[i], key, sub,
					  depth);
		rc = rc > 0 ? 0 : rc;
		if (rc < 0 && !im->shown)
			file_err(im, rc, sub);
		im->shown = 0;
		show_progress(im);
	}
	if (rc == 0)
		rc = flush_fresh(im);
	if (rc < 0 && !im->shown)
		file_err(im, rc, path);
	im->npend = 0;
	if (!a)
		tcfs_io_names_free(names, n);
	return rc;
}

/* The batch's transaction failed: its key dirs are not in the store.
 * Their blobs are left for tcfs gc, since after a commit that the disk
 * made tight (index/store/db.h) some of them may be named by committed rows. */
static void store_lost(void *ctx, int rc)
{
	struct import *im = ctx;

	(void)rc;
	im->lost = 1;
}

/* Commits the batch of key dirs; on failure says how many were lost. */
static void commit_batch(struct import *im)
{
	int rc = tcfs_store_sync(im->s);

	if (rc == 0 && !im->lost) {
		im->batch_dirs = 0;
		return;
	}
	im->st.keydirs -= im->batch_dirs;
	im->st.failed_dirs += im->batch_dirs;
	if (!im->o.quiet || rc < 0)
		cli_err(im->o.cmd, "%s: the last %zu %s not committed: %s",
			im->src, im->batch_dirs,
			tcfs_plural(im->batch_dirs, "key dir was",
				    "key dirs were"),
			strerror(rc < 0 ? -rc : EIO));
	im->batch_dirs = 0;
	im->lost = 0;
	im->fatal = 1;
}

/* Takes back a blob this import added, which no row names: unless a
 * key dir read ahead found it there and shares it, which then owns it. */
static void take_back(struct import *im, const struct tcfs_hash *h,
		      uint64_t size)
{
	if (!im->q || !putq_adopt(im->q, h, size))
		tcfs_cas_remove(tcfs_store_cas(im->s), h);
}

/* Takes back the blobs a rolled-back key dir had added: nothing names
 * them, and only this import could have. */
static void drop_added(struct import *im, size_t from)
{
	for (size_t i = from; i < im->nadded; i++)
		take_back(im, &im->added[i], im->added_size[i]);
	im->nadded = from;
}

/* Frees what a read ahead holds, its queued files' results taken
 * already. */
static void ahead_free(struct ahead *a)
{
	assert(a->taken == a->nqueued);
	if (a->fd >= 0)
		close(a->fd);
	tcfs_io_names_free(a->names, a->n);
	free(a->queued);
	memset(a, 0, sizeof(*a));
	a->fd = -1;
}

/* Takes the results of a's queued files that were not imported (its key
 * dir failed first): their new blobs are the key dir's, taken back with
 * it; with keep 0 there is none, and they are taken back now. */
static int ahead_rest(struct import *im, struct ahead *a, int keep)
{
	int rc = 0;

	while (a->taken < a->nqueued) {
		struct putq_result r;

		putq_next(im->q, &r);
		a->taken++;
		if (!r.walk && r.rc == 0 && r.put == TCFS_CAS_CREATED) {
			if (!keep)
				take_back(im, &r.c.blob, r.stored);
			else if (rc == 0)
				rc = remember_added(im, &r.c.blob, r.stored);
			else
				take_back(im, &r.c.blob, r.stored);
		}
		putq_result_free(&r);
	}
	return rc;
}

/* After one transaction (a key dir, a loose file) that began with the
 * stats at *before and nadded blobs added: on failure its blobs taken
 * back and its counts undone but for the skips it made, else its new
 * bytes counted.  Returns rc. */
static int settle(struct import *im, struct import_stats *before,
		  size_t nadded, int rc)
{
	if (rc < 0) {
		drop_added(im, nadded);
		before->failed_dirs++;
		before->skipped = im->st.skipped;
		im->st = *before;
		if (im->o.atomic)
			im->fatal = 1;
		return rc;
	}
	for (size_t i = nadded; i < im->nadded; i++)
		im->st.new_blob_bytes += im->added_size[i];
	if (!im->o.atomic)
		im->nadded = 0;
	return 0;
}

/* Queues a's entry i, key dir key's, unless the walk would skip it by
 * its name.  What it is the queue's threads find out: what they do not
 * store, or cannot, is left to the walk, which says so. */
static void queue_file(struct import *im, struct ahead *a, size_t i,
		       const char *key, const char *dirpath)
{
	const char *name = a->names[i];
	char path[PATH_MAX];

	if (tcfs_name_is_temp(name, 0) ||
	    (im->o.binary_only && tcfs_name_artifact(name) == TCFS_ART_IR))
		return;
	if (snprintf(path, sizeof(path), "%s/%s", dirpath, name) >=
	    (int)sizeof(path))
		return;
	if (putq_add(im->q, a->fd, key, path) == 0) {
		a->queued[i] = 1;
		a->nqueued++;
	}
}

/* Reads key dir name (of the level open at lfd, at lpath) ahead: lists
 * it and queues its files.  a->fd < 0 when it could not: the walk will
 * find out why and say so. */
static void read_ahead(struct import *im, int lfd, const char *lpath,
		       const char *name, struct ahead *a)
{
	char path[PATH_MAX];

	a->fd = openat(lfd, name,
		       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (a->fd < 0)
		return;
	if (tcfs_io_list_names(a->fd, tcfs_name_cmp_commit_order, &a->names,
			       &a->n) < 0) {
		a->names = NULL;
		a->n = 0;
		ahead_free(a);
		return;
	}
	a->queued = calloc(a->n ? a->n : 1, 1);
	if (!a->queued) {
		ahead_free(a);
		return;
	}
	if (snprintf(path, sizeof(path), "%s/%s", lpath, name) >=
	    (int)sizeof(path))
		return;	/* too long to queue: the walk says so */
	for (size_t i = 0; i < a->n; i++)
		queue_file(im, a, i, name, path);
	putq_go(im->q);
}

/* The key dirs of one level read ahead, in order: a ring. */
struct window {
	struct ahead a[AHEAD_DIRS];
	size_t first, count;
	size_t next;		/* the next of the level's names to look at */
	unsigned unchecked;	/* read aheads left before a look at the room */
};

/* Key dirs read ahead between two looks at the room blobs have: a
 * statfs a key dir cost the import thread 2% of its time. */
#define ROOM_EVERY 8

/* Whether blobs have room for AHEAD_BYTES more, and the files stored
 * ahead are not over them. */
static int may_read_ahead(struct import *im, struct window *w)
{
	struct tcfs_space sp;
	int rc;

	if (putq_bytes(im->q) >= AHEAD_BYTES)
		return 0;
	if (w->unchecked > 0) {
		w->unchecked--;
		return 1;
	}
	if (tcfs_space_read(im->spacefd, &sp) < 0)
		return 0;
	rc = tcfs_space_blobs_fit(&sp, AHEAD_BYTES, 0, "");
	tcfs_err_clear();
	w->unchecked = rc == 0 ? ROOM_EVERY - 1 : 0;
	return rc == 0;
}

/* Reads ahead the key dirs from the level's entry i on, up to
 * AHEAD_DIRS.  In tree mode it stops at an entry that is not a key dir
 * until the walk has passed it: what it imports uses the queue too, and
 * results come back only in order. */
static void fill(struct import *im, int lfd, const char *lpath,
		 char **names, size_t n, size_t i, struct window *w)
{
	if (!im->q || im->spacefd < 0)
		return;
	if (w->next < i)
		w->next = i;
	while (w->next < n && w->count < AHEAD_DIRS &&
	       may_read_ahead(im, w)) {
		const char *name = names[w->next];
		struct ahead *a = &w->a[(w->first + w->count) % AHEAD_DIRS];

		if (tcfs_name_is_temp(name, 1) || tcfs_name_is_temp(name, 0)) {
			w->next++;
			continue;
		}
		memset(a, 0, sizeof(*a));
		a->idx = w->next;
		/* Not a key dir, or not a dir (its open fails): the walk
		 * looks at it itself. */
		if (tcfs_name_is_key(name))
			read_ahead(im, lfd, lpath, name, a);
		else
			a->fd = -1;
		if (a->fd < 0 && im->o.tree)
			break;
		w->next++;
		w->count += a->fd >= 0;
	}
}

/* The read ahead of the level's entry i, if any (the caller's to free);
 * those before it, which the walk did not import, are taken back. */
static struct ahead *take(struct import *im, struct window *w, size_t i,
			  struct ahead *out)
{
	while (w->count) {
		struct ahead *a = &w->a[w->first];

		if (a->idx > i)
			break;
		w->first = (w->first + 1) % AHEAD_DIRS;
		w->count--;
		if (a->idx == i) {
			*out = *a;
			return out;
		}
		ahead_rest(im, a, 0);
		ahead_free(a);
	}
	return NULL;
}

/* The rows of key dir name (open at fd) in one savepoint: 0, or -errno
 * with it rolled back.  a's queued files left over are taken here. */
static int keydir_rows(struct import *im, int fd,
		       const struct tcfs_node *parent, const char *name,
		       const char *path, const struct stat *st, struct ahead *a)
{
	struct tcfs_node dir;
	int rc = tcfs_store_begin_whole(im->s), r, commit, made;

	if (rc < 0) {
		file_err(im, rc, path);
		if (a)
			ahead_rest(im, a, 1);
		return rc;
	}
	rc = ensure_dir(im, parent->ino, name, st, &dir, &made);
	if (rc < 0) {
		file_err(im, rc, path);
	} else {
		im->fresh = made ? dir.ino : 0;
		rc = import_tree(im, fd, &dir, name, path, 1);
		im->fresh = 0;
	}
	r = a ? ahead_rest(im, a, 1) : 0;
	rc = rc < 0 ? rc : r;
	im->shown = 0;
	if (rc == 0) {
		struct tcfs_attrs at = { .mtime_ns = mtime_ns(st) };

		rc = tcfs_ns_setattr(im->s, dir.ino, TCFS_SET_MTIME, &at);
	}
	/* Entries report their own errors; this catches the commit. */
	commit = tcfs_store_end(im->s, rc);
	if (rc == 0 && commit < 0)
		file_err(im, commit, path);
	return commit;
}

/* Imports key dir name of dir parent (at path, below SRC) as one
 * transaction: it lands whole or not at all.  a: its read ahead, or
 * NULL; freed here. */
static void import_keydir(struct import *im, int dirfd,
			  const struct tcfs_node *parent, const char *name,
			  const char *path, const struct stat *st,
			  struct ahead *a)
{
	struct import_stats before = im->st;
	size_t nadded = im->nadded;
	int fd, rc;

	fd = a ? dup(a->fd) : openat(dirfd, name, O_RDONLY | O_DIRECTORY |
						       O_NOFOLLOW | O_CLOEXEC);
	rc = fd < 0 ? -errno : 0;
	im->cur = a;
	if (rc == 0)
		rc = keydir_rows(im, fd, parent, name, path, st, a);
	else if (a)
		ahead_rest(im, a, 1);
	im->cur = NULL;
	if (a)
		ahead_free(a);
	if (fd < 0) {
		im->st.failed_dirs++;
		file_err(im, rc, path);
		drop_added(im, nadded);
		return;
	}
	close(fd);
	if (settle(im, &before, nadded, rc) < 0)
		return;
	im->st.keydirs++;
	if (!im->o.atomic &&
	    ++im->batch_dirs >= (im->o.batch_dirs ? im->o.batch_dirs
						   : IMPORT_BATCH_DIRS))
		commit_batch(im);
}

/* A file or symlink beside the caches of a tree (tree mode): vLLM's
 * cache_key_factors.json, Inductor's FX graphs.  Its own transaction. */
static void import_loose(struct import *im, int dirfd,
			 const struct tcfs_node *dir, const char *name,
			 const char *path, int depth)
{
	struct import_stats before = im->st;
	size_t nadded = im->nadded;
	int rc = tcfs_store_begin(im->s);

	if (rc == 0) {
		rc = import_entry(im, dirfd, dir, name, "", path, depth);
		if (rc < 0 && !im->shown)
			file_err(im, rc, path);
		im->shown = 0;
		rc = tcfs_store_end(im->s, rc);
	}
	settle(im, &before, nadded, rc);
}

/* An entry of a tree that could not be imported at all: counted, and
 * with atomic the end of the import. */
static void entry_failed(struct import *im, int rc, const char *path)
{
	im->st.failed_dirs++;
	file_err(im, rc, path);
	if (im->o.atomic)
		im->fatal = 1;
}

static void import_level(struct import *im, int fd,
			 const struct tcfs_node *dir, const char *path,
			 int depth);

/* A directory beside the caches (tree mode): made in the store, then
 * its entries imported as a level. */
static void import_sublevel(struct import *im, int fd,
			    const struct tcfs_node *dir, const char *name,
			    const char *sub, const struct stat *st, int depth)
{
	struct tcfs_node d;
	int sfd, rc;

	if (depth >= DEPTH_MAX) {
		im->st.skipped++;
		warn(im, sub, "nested too deep; skipped");
		return;
	}
	sfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = sfd < 0 ? -errno : tcfs_store_begin(im->s);
	if (rc == 0)
		rc = tcfs_store_end(im->s, ensure_dir(im, dir->ino, name, st,
						      &d, NULL));
	if (rc < 0)
		entry_failed(im, rc, sub);
	else
		import_level(im, sfd, &d, sub, depth + 1);
	if (sfd >= 0)
		close(sfd);
}

/* Entry name of a level (open at fd, at path): 1 when it was a key dir
 * and a (its read ahead, or NULL) was used, else 0. */
static int import_name(struct import *im, int fd, const struct tcfs_node *dir,
		       const char *name, const char *path, int depth,
		       struct ahead *a)
{
	char sub[PATH_MAX];
	struct stat st;

	snprintf(sub, sizeof(sub), "%s/%s", path, name);
	if (tcfs_name_is_temp(name, 1) || tcfs_name_is_temp(name, 0)) {
		im->st.skipped++;
		return 0;
	}
	/* A key dir read ahead is imported as it was opened then. */
	if ((a ? fstat(a->fd, &st) : fstatat(fd, name, &st,
					     AT_SYMLINK_NOFOLLOW)) < 0) {
		entry_failed(im, -errno, sub);
		return 0;
	}
	if (S_ISDIR(st.st_mode) && tcfs_name_is_key(name)) {
		import_keydir(im, fd, dir, name, sub, &st, a);
		return 1;
	}
	assert(!a);	/* read ahead: opened as a directory */
	if (!im->o.tree) {
		im->st.skipped++;
		warn(im, sub, "not a Triton key directory; skipped");
	} else if (!S_ISDIR(st.st_mode)) {
		import_loose(im, fd, dir, name, sub, depth);
	} else {
		import_sublevel(im, fd, dir, name, sub, &st, depth);
	}
	return 0;
}

/* The entries of a cache root: key dirs, and with tree mode the dirs
 * and files beside them, whose key-named dirs are key dirs in turn.  The
 * key dirs ahead of the one imported are read ahead (struct window). */
static void import_level(struct import *im, int fd,
			 const struct tcfs_node *dir, const char *path,
			 int depth)
{
	struct window *w = calloc(1, sizeof(*w));
	struct ahead one;
	char **names;
	size_t n;
	int rc = w ? tcfs_io_list_names(fd, tcfs_name_cmp_commit_order,
					&names, &n)
		   : -ENOMEM;

	if (rc < 0) {
		free(w);
		entry_failed(im, rc, path);
		return;
	}
	for (size_t i = 0; i < n && !im->fatal; i++) {
		struct ahead *a;

		fill(im, fd, path, names, n, i, w);
		a = take(im, w, i, &one);
		if (!import_name(im, fd, dir, names[i], path, depth, a) && a) {
			ahead_rest(im, a, 0);
			ahead_free(a);
		}
	}
	take(im, w, SIZE_MAX, &one);	/* what the walk did not come to */
	free(w);
	tcfs_io_names_free(names, n);
}

int import_source(struct import *im, const char *src)
{
	struct tcfs_node root;
	int fd, rc;

	im->src = src;
	fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	im->srcfd = fd;
	if (fd < 0 || !realpath(src, im->realsrc)) {
		rc = -errno;
		cli_err(im->o.cmd, "%s: %s", src, strerror(-rc));
		if (fd >= 0)
			close(fd);
		if (im->o.atomic)
			im->fatal = 1;
		return rc;
	}
	rc = tcfs_ns_get(im->s, TCFS_ROOT_INO, &root);
	if (rc < 0)
		cli_lib_err(im->o.cmd, rc, tcfs_store_path(im->s));
	else
		import_level(im, fd, &root, src, 1);
	close(fd);
	if (!im->o.atomic)
		commit_batch(im);
	return rc;
}

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : (unsigned)(n > 64 ? 64 : n);
}

int import_begin(struct import *im, struct tcfs_store *s,
		 const struct import_opts *o)
{
	int rc;

	memset(im, 0, sizeof(*im));
	im->s = s;
	im->o = *o;
	im->srcfd = -1;
	im->spacefd = -1;
	tcfs_store_set_origin(s, strcmp(o->cmd, "unpack") == 0
					 ? TCFS_ORIGIN_UNPACK
					 : TCFS_ORIGIN_IMPORT);
	tcfs_store_defer(s, store_lost, im);
	rc = tcfs_store_bulk(s);
	if (rc < 0)
		return rc;
	/* Each batch's COMMIT syncs the file system first: a note per file
	 * in table unsynced, keyed by random names, made the cost of a
	 * file at 100,000 kernels a third higher than at 1,000. */
	tcfs_durable_sync_first(tcfs_store_durable(s));
	/* That sync waited on every byte the batch had written: a quarter of
	 * an import of 100,000 kernels on the GPU host, its thread idle.
	 * Written as they land, an import there took 12% less time. */
	tcfs_cas_write_early(tcfs_store_cas(s));
	im->spacefd = open(tcfs_store_path(s), O_RDONLY | O_DIRECTORY |
						     O_CLOEXEC);
	/* Without its threads, files are read and stored here: slower, not
	 * wrong. */
	if (putq_start(tcfs_store_cas(s), online_cpus(), group_filter(im),
		       &im->q) < 0)
		im->q = NULL;
	/* Atomic: one savepoint around everything, rolled back at the end
	 * when anything failed. */
	return o->atomic ? tcfs_store_begin(s) : 0;
}

int import_end(struct import *im, int rc)
{
	if (im->o.progress)
		progress_end(im->o.progress);
	if (im->o.atomic) {
		if (rc == 0 && (im->fatal || im->st.failed_dirs))
			rc = -EIO;
		rc = tcfs_store_end(im->s, rc);
		if (rc == 0)
			rc = tcfs_store_sync(im->s);
		if (rc == 0 && im->lost)
			rc = -EIO;
		if (rc < 0) {
			drop_added(im, 0);
			im->st = (struct import_stats){
				.failed_dirs = im->st.failed_dirs,
				.skipped = im->st.skipped,
			};
		}
	} else if (im->fatal || im->st.failed_dirs) {
		rc = rc ? rc : -EIO;	/* import_source committed the rest */
	}
	putq_stop(im->q);
	im->q = NULL;
	if (im->spacefd >= 0)
		close(im->spacefd);
	im->spacefd = -1;
	free(im->added);
	free(im->added_size);
	free(im->pend);
	im->added = NULL;
	im->added_size = NULL;
	im->pend = NULL;
	return rc;
}
