/*
 * import: brings Triton cache directories into the store (import.h).
 *
 * Each key directory is one transaction: it lands whole or not at all, so a
 * failure (an unreadable file, a full disk) never leaves half a kernel in
 * the store, and the blobs it had added are taken out again.  Files are
 * imported in name order with group files last, as Triton writes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "import.h"
#include "progress.h"
#include "putq.h"
#include "index/blob/cas.h"
#include "index/blob/durable.h"
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
 * 1,024 key dirs (8,000 files) write each such page once for several
 * files even at 100,000 kernels (tcfs_store_bulk holds them).  The key
 * dir's savepoint is the only one: its rows open none of their own
 * (tcfs_store_begin_whole). */
#define BATCH_DIRS 1024

static void show_progress(struct import *im)
{
	char b[16];

	if (!im->o.progress || !progress_due(im->o.progress))
		return;
	progress_show(im->o.progress, "%llu kernels, %llu files, %s",
		      (unsigned long long)im->st.kernels,
		      (unsigned long long)im->st.files,
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

/* Stores a group file as the group policy says (index/model/group.h). */
static int put_group(struct import *im, int fd, const char *key,
		     struct tcfs_content *c, enum tcfs_cas_put *put)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = tcfs_io_read_small(fd, TCFS_GROUP_MAX, &buf, &len);
	if (rc == -EFBIG) {	/* grew since its stat: not Triton's */
		free(buf);
		if (lseek(fd, 0, SEEK_SET) < 0)
			return -errno;
		c->fmt = TCFS_FMT_RAW;
		return tcfs_cas_put_fd(tcfs_store_cas(im->s), fd, &c->blob,
				       &c->size, put);
	}
	if (rc == 0)
		rc = tcfs_group_put(tcfs_store_cas(im->s), key, buf, len,
				    im->o.binary_only ? TCFS_GROUP_BINARY_ONLY
						    : TCFS_GROUP_ALL,
				    c, put);
	free(buf);
	return rc;
}

/* Files up to this size have their blobs stored by the queue's thread
 * (putq.h); bigger ones are streamed here. */
#define QUEUED_MAX (1u << 20)

/* A queued put's result: a new blob is the key dir's, to take back if it
 * rolls back; a failed one fails it. */
static int put_done(void *ctx, const struct putq_result *r)
{
	struct import *im = ctx;

	if (r->rc < 0) {
		if (r->msg[0])
			tcfs_err_set(r->rc, "%s", r->msg);
		file_err(im, r->rc, r->path);
		im->shown = 1;
		return r->rc;
	}
	return r->put == TCFS_CAS_CREATED
		       ? remember_added(im, &r->blob, r->stored)
		       : 0;
}

/* Waits for the queued puts; rc, or else the first that failed. */
static int wait_puts(struct import *im, int rc)
{
	int d = im->q ? putq_drain(im->q, put_done, im) : 0;

	return rc < 0 ? rc : d;
}

/* Reads fd and queues its bytes to be stored, their hash in c: 1, else
 * (too big to queue) stored here as tcfs_cas_put_fd does, 0; or -errno. */
static int queue_put(struct import *im, int fd, struct tcfs_content *c,
		     const char *path, enum tcfs_cas_put *put)
{
	char *buf = NULL, *small;
	size_t len = 0;
	int rc = tcfs_io_read_small(fd, QUEUED_MAX, &buf, &len);

	if (rc == -EFBIG) {
		free(buf);
		if (lseek(fd, 0, SEEK_SET) < 0)
			return -errno;
		return tcfs_cas_put_fd(tcfs_store_cas(im->s), fd, &c->blob,
				       &c->size, put);
	}
	if (rc < 0)
		return rc;
	small = len ? realloc(buf, len) : NULL;	/* read 64 KiB at least */
	if (small)
		buf = small;
	tcfs_hash_buf(buf, len, &c->blob);
	c->size = len;
	rc = putq_add(im->q, buf, len, &c->blob, path);
	return rc < 0 ? rc : 1;
}

/* Stores fd's bytes into c: 1 when queued (putq.h), 0 when stored with
 * *put saying how, or -errno.  A group file's row reads its kernel's
 * metadata blob, so what is queued is stored first; so too in a key dir
 * that has group files' rows already, where every new row does. */
static int put_file(struct import *im, int fd, const struct stat *st,
		    const char *name, const char *key, const char *path,
		    struct tcfs_content *c, enum tcfs_cas_put *put)
{
	int group = tcfs_group_candidate(name, (uint64_t)st->st_size);
	int rc = 0;

	if (group || im->wait_puts)
		rc = wait_puts(im, 0);
	if (rc < 0)
		return rc;
	if (group)
		return put_group(im, fd, key, c, put);
	if (im->q && !im->wait_puts)
		return queue_put(im, fd, c, path, put);
	return tcfs_cas_put_fd(tcfs_store_cas(im->s), fd, &c->blob, &c->size,
			       put);
}

static int import_file(struct import *im, int fd, const struct stat *st,
		       const struct tcfs_node *dir, const char *name,
		       const char *key, const char *path)
{
	struct tcfs_content c = { 0 };
	enum tcfs_cas_put put;
	struct tcfs_node old;
	uint64_t stored;
	int rc;

	tcfs_err_clear();
	rc = put_file(im, fd, st, name, key, path, &c, &put);
	if (rc < 0)
		return rc;
	if (rc == 0 && put == TCFS_CAS_CREATED) {
		tcfs_cas_stat(tcfs_store_cas(im->s), &c.blob, &stored);
		rc = remember_added(im, &c.blob, stored);
		if (rc < 0)
			return rc;
	}
	rc = tcfs_ns_lookup(im->s, dir->ino, name, &old);
	if (rc == -ENOENT) {
		rc = tcfs_ns_create(im->s, dir->ino, name,
				    tcfs_ns_portable_mode(st->st_mode),
				    (int64_t)st->st_mtim.tv_sec * 1000000000 +
					    st->st_mtim.tv_nsec,
				    &c, NULL, NULL);
		im->st.new_files += rc == 0;
	} else if (rc == 0 && (old.kind != TCFS_FILE ||
			       !tcfs_hash_equal(&old.blob, &c.blob))) {
		im->st.conflicts++;
		warn(im, path, "differs from the copy already in the store; "
			       "kept that one");
		return 0;
	}
	if (rc < 0)
		return rc;
	im->st.files++;
	im->st.bytes += c.size;
	if (tcfs_name_artifact(name) == TCFS_ART_GROUP)
		im->st.kernels++;
	return 0;
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

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* The node for a directory: the stored one, or a new one like the source. */
static int ensure_dir(struct import *im, uint64_t parent, const char *name,
		      const struct stat *st, struct tcfs_node *out)
{
	int rc = tcfs_ns_lookup(im->s, parent, name, out);

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

static int import_entry(struct import *im, int dirfd,
			const struct tcfs_node *dir, const char *name,
			const char *key, const char *path, int depth)
{
	struct tcfs_node sub;
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
		if (depth >= DEPTH_MAX) {
			im->st.skipped++;
			warn(im, path, "nested too deep; skipped");
			return 0;
		}
		fd = openat(dirfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		rc = ensure_dir(im, dir->ino, name, &st, &sub);
		if (rc == 0)
			rc = import_tree(im, fd, &sub, key, path, depth + 1);
		close(fd);
		return rc;
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

static int import_tree(struct import *im, int fd, const struct tcfs_node *dir,
		       const char *key, const char *path, int depth)
{
	char **names;
	size_t n;
	int rc = tcfs_io_list_names(fd, tcfs_name_cmp_commit_order, &names,
				    &n);

	if (rc < 0) {
		file_err(im, rc, path);
		return rc;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char sub[PATH_MAX];

		snprintf(sub, sizeof(sub), "%s/%s", path, names[i]);
		rc = import_entry(im, fd, dir, names[i], key, sub, depth);
		if (rc < 0 && !im->shown)
			file_err(im, rc, sub);
		im->shown = 0;
		show_progress(im);
	}
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
		cli_err(im->o.cmd, "%s: the last %zu key dirs were not "
			"committed: %s", im->src, im->batch_dirs,
			strerror(rc < 0 ? -rc : EIO));
	im->batch_dirs = 0;
	im->lost = 0;
	im->fatal = 1;
}

/* Takes back the blobs a rolled-back key dir had added: nothing names
 * them, and only this import could have. */
static void drop_added(struct import *im, size_t from)
{
	for (size_t i = from; i < im->nadded; i++)
		tcfs_cas_remove(tcfs_store_cas(im->s), &im->added[i]);
	im->nadded = from;
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

/* Imports key dir name of dir parent (at path, below SRC) as one
 * transaction: it lands whole or not at all. */
static void import_keydir(struct import *im, int dirfd,
			  const struct tcfs_node *parent, const char *name,
			  const char *path, const struct stat *st)
{
	struct tcfs_node dir;
	struct import_stats before = im->st;
	size_t nadded = im->nadded;
	int fd, rc, commit;

	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		im->st.failed_dirs++;
		file_err(im, -errno, path);
		return;
	}
	rc = tcfs_store_begin_whole(im->s);
	if (rc == 0) {
		im->wait_puts = tcfs_ns_lookup(im->s, parent->ino, name,
					       &dir) == 0;
		rc = ensure_dir(im, parent->ino, name, st, &dir);
		if (rc == 0)
			rc = import_tree(im, fd, &dir, name, path, 1);
		else
			file_err(im, rc, path);
		rc = wait_puts(im, rc);
		im->shown = 0;
		if (rc == 0) {
			struct tcfs_attrs a = { .mtime_ns = mtime_ns(st) };

			rc = tcfs_ns_setattr(im->s, dir.ino, TCFS_SET_MTIME,
					     &a);
		}
		/* Entries report their own errors; this catches the commit. */
		commit = tcfs_store_end(im->s, rc);
		if (rc == 0 && commit < 0)
			file_err(im, commit, path);
		rc = commit;
	} else {
		file_err(im, rc, path);
	}
	close(fd);
	if (settle(im, &before, nadded, rc) < 0)
		return;
	im->st.keydirs++;
	if (!im->o.atomic && ++im->batch_dirs >= BATCH_DIRS)
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
		im->wait_puts = 1;	/* one file: nothing to overlap */
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

/* The entries of a cache root: key dirs, and with tree mode the dirs
 * and files beside them, whose key-named dirs are key dirs in turn. */
static void import_level(struct import *im, int fd,
			 const struct tcfs_node *dir, const char *path,
			 int depth)
{
	char **names;
	size_t n;
	int rc = tcfs_io_list_names(fd, tcfs_name_cmp_commit_order, &names,
				    &n);

	if (rc < 0) {
		entry_failed(im, rc, path);
		return;
	}
	for (size_t i = 0; i < n && !im->fatal; i++) {
		char sub[PATH_MAX];
		struct tcfs_node d;
		struct stat st;
		int sfd;

		snprintf(sub, sizeof(sub), "%s/%s", path, names[i]);
		if (tcfs_name_is_temp(names[i], 1) ||
		    tcfs_name_is_temp(names[i], 0)) {
			im->st.skipped++;
			continue;
		}
		if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			entry_failed(im, -errno, sub);
			continue;
		}
		if (S_ISDIR(st.st_mode) && tcfs_name_is_key(names[i])) {
			import_keydir(im, fd, dir, names[i], sub, &st);
			continue;
		}
		if (!im->o.tree) {
			im->st.skipped++;
			warn(im, sub, "not a Triton key directory; skipped");
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			import_loose(im, fd, dir, names[i], sub, depth);
			continue;
		}
		if (depth >= DEPTH_MAX) {
			im->st.skipped++;
			warn(im, sub, "nested too deep; skipped");
			continue;
		}
		sfd = openat(fd, names[i],
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = sfd < 0 ? -errno : tcfs_store_begin(im->s);
		if (rc == 0)
			rc = tcfs_store_end(im->s, ensure_dir(im, dir->ino,
							      names[i], &st,
							      &d));
		if (rc < 0)
			entry_failed(im, rc, sub);
		else
			import_level(im, sfd, &d, sub, depth + 1);
		if (sfd >= 0)
			close(sfd);
	}
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
	/* Without its threads, blobs are stored here: slower, not wrong. */
	if (putq_start(tcfs_store_cas(s), online_cpus(), &im->q) < 0)
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
	free(im->added);
	free(im->added_size);
	im->added = NULL;
	im->added_size = NULL;
	return rc;
}
