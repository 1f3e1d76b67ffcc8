/*
 * tcfs import: ingest existing Triton cache directories into the store.
 *
 * Each key directory is one transaction: it lands whole or not at all, so a
 * failure (an unreadable file, a full disk) never leaves half a kernel in
 * the store, and the blobs it had added are taken out again.  Files are
 * imported in name order with group files last, as Triton writes them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "index/cas.h"
#include "index/err.h"
#include "index/group.h"
#include "index/io.h"
#include "index/name.h"
#include "index/ns.h"
#include "index/store.h"

/* Group files are a few KiB; anything bigger is not one of Triton's. */
/* Key dirs are flat; deeper trees are followed this far. */
#define DEPTH_MAX 8
/* Key dirs committed together.  A COMMIT per key dir wrote each index
 * page it touched once per key dir: 77 WAL pages a kernel, 30% of an
 * import's time.  Each key dir is a savepoint of the batch, so it still
 * lands whole or not at all. */
#define BATCH_DIRS 256

struct import_stats {
	uint64_t kernels;	/* group files in imported key dirs */
	uint64_t keydirs;
	uint64_t files;		/* files now in the store from the sources */
	uint64_t new_files;	/* of those, not there before */
	uint64_t bytes;		/* their logical size */
	uint64_t new_blob_bytes;	/* bytes of blobs this import added */
	uint64_t skipped;	/* temp files, foreign entries, links out */
	uint64_t conflicts;	/* same name, different bytes: kept stored */
	uint64_t failed_dirs;
};

struct import {
	struct tcfs_store *s;
	const char *src;	/* as given, for messages */
	int srcfd;		/* symlinks may not lead out of it */
	char realsrc[PATH_MAX];	/* its absolute path */
	int quiet;
	int binary_only;	/* --binary-only: IR files stay out */
	int progress;		/* a terminal gets a progress line */
	double last_progress;
	struct import_stats st;
	int fatal;		/* the store cannot take more: stop */
	size_t batch_dirs;	/* key dirs in the batch not yet committed */
	int lost;		/* that batch's commit failed (store_lost) */
	/* Blobs the current key dir added; removed if it rolls back. */
	struct tcfs_hash *added;
	uint64_t *added_size;
	size_t nadded;
};

static const char *const help =
	"Usage: tcfs import [OPTIONS] SRC...\n"
	"\n"
	"Adds existing Triton cache directories (e.g. ~/.triton/cache, or one\n"
	"copied from another machine) to the store.  Every distinct file is\n"
	"stored once; group files are stored relative to their key dir, so the\n"
	"store serves them under any path.  Importing again changes nothing;\n"
	"the same key in two sources is one key.  Temp dirs and files of\n"
	"unfinished writes are skipped, and so are symlinks leading out of SRC.\n"
	"Each key dir lands whole or not at all.  setuid, setgid, sticky and\n"
	"world-writable bits are dropped.\n"
	"\n"
	"Options:\n"
	"  -s, --store DIR   the store (default: $TCFS_STORE, else\n"
	"                    $XDG_DATA_HOME/tcfs, else ~/.local/share/tcfs);\n"
	"                    created, mode 0700, if missing\n"
	"  -w, --wait SECS   wait this long for another writer (default 10)\n"
	"      --binary-only leave IR files (.ttir .ttgir .llir .ptx .amdgcn)\n"
	"                    out, and out of the group files stored\n"
	"  -q, --quiet       print nothing but errors\n"
	"      --json        print the summary as JSON\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 all imported (entries skipped as above are not errors),\n"
	"1 a key dir or source could not be imported (see the errors), 2 usage\n"
	"error.\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void show_progress(struct import *im, int final)
{
	char b[16];
	double t = now_s();

	if (!im->progress || (!final && t - im->last_progress < 0.1))
		return;
	im->last_progress = t;
	fprintf(stderr, "\r\033[Kimporting: %llu kernels, %llu files, %s",
		(unsigned long long)im->st.kernels,
		(unsigned long long)im->st.files,
		cli_human(im->st.bytes, b, sizeof(b)));
	if (final)
		fputs("\r\033[K", stderr);
}

/* An error about one source file: its path, then the library's message if
 * it left one (naming the store's file it failed on), else the cause. */
static void file_err(struct import *im, int rc, const char *path)
{
	const char *msg = tcfs_err_msg();

	if (im->progress)
		fputs("\r\033[K", stderr);
	if (msg[0] && strncmp(msg, path, strlen(path)) != 0)
		cli_err("import", "%s: %s", path, msg);
	else
		cli_err("import", "%s: %s", path, strerror(-rc));
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
	if (im->quiet)
		return;
	if (im->progress)
		fputs("\r\033[K", stderr);
	cli_err("import", "%s: %s", path, why);
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

/* Stores a group file as the group policy says (index/group.h). */
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
				    im->binary_only ? TCFS_GROUP_BINARY_ONLY
						    : TCFS_GROUP_ALL,
				    c, put);
	free(buf);
	return rc;
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
	if (tcfs_group_candidate(name, (uint64_t)st->st_size))
		rc = put_group(im, fd, key, &c, &put);
	else
		rc = tcfs_cas_put_fd(tcfs_store_cas(im->s), fd, &c.blob,
				     &c.size, &put);
	if (rc < 0)
		return rc;
	if (put == TCFS_CAS_CREATED) {
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
				    &c, NULL);
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

static int cmp_names(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int gx = tcfs_name_artifact(x) == TCFS_ART_GROUP;
	int gy = tcfs_name_artifact(y) == TCFS_ART_GROUP;

	/* Group files last: they are the commit marker of a kernel. */
	return gx != gy ? gx - gy : strcmp(x, y);
}

/* The names in a directory, sorted by cmp_names; *out owned by caller. */
static int list_dir(int fd, char ***out, size_t *n)
{
	int dfd = dup(fd);
	char **v = NULL;
	size_t used = 0;
	struct dirent *de;
	DIR *d;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		char **nv;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		nv = realloc(v, (used + 1) * sizeof(*v));
		if (!nv || !(nv[used] = strdup(de->d_name))) {
			v = nv ? nv : v;
			errno = ENOMEM;
			break;
		}
		v = nv;
		used++;
		errno = 0;
	}
	if (errno) {
		int rc = -errno;

		while (used)
			free(v[--used]);
		free(v);
		closedir(d);
		return rc;
	}
	closedir(d);
	qsort(v, used, sizeof(*v), cmp_names);
	*out = v;
	*n = used;
	return 0;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
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
				   mtime_ns(st), out);
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
	if (im->binary_only && tcfs_name_artifact(name) == TCFS_ART_IR) {
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
	int rc = list_dir(fd, &names, &n);

	if (rc < 0) {
		file_err(im, rc, path);
		return rc;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char sub[PATH_MAX];

		snprintf(sub, sizeof(sub), "%s/%s", path, names[i]);
		rc = import_entry(im, fd, dir, names[i], key, sub, depth);
		if (rc < 0)
			file_err(im, rc, sub);
		show_progress(im, 0);
	}
	free_names(names, n);
	return rc;
}

/* The batch's transaction failed: its key dirs are not in the store.
 * Their blobs are left for tcfs gc, since after a commit that the disk
 * made tight (index/db.h) some of them may be named by committed rows. */
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
	if (!im->quiet || rc < 0)
		cli_err("import", "%s: the last %zu key dirs were not "
			"committed: %s", im->src, im->batch_dirs,
			strerror(rc < 0 ? -rc : EIO));
	im->batch_dirs = 0;
	im->lost = 0;
	im->fatal = 1;
}

/* Takes back the blobs a rolled-back key dir had added: nothing names
 * them, and only this import could have. */
static void drop_added(struct import *im)
{
	for (size_t i = 0; i < im->nadded; i++)
		tcfs_cas_remove(tcfs_store_cas(im->s), &im->added[i]);
	im->nadded = 0;
}

static void import_keydir(struct import *im, int srcfd, const char *key,
			  const struct stat *st)
{
	struct tcfs_node dir;
	struct import_stats before = im->st;
	char path[PATH_MAX];
	int fd, rc, commit;

	snprintf(path, sizeof(path), "%s/%s", im->src, key);
	fd = openat(srcfd, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		im->st.failed_dirs++;
		file_err(im, -errno, path);
		return;
	}
	im->nadded = 0;
	rc = tcfs_store_begin(im->s);
	if (rc == 0) {
		rc = ensure_dir(im, TCFS_ROOT_INO, key, st, &dir);
		if (rc == 0)
			rc = import_tree(im, fd, &dir, key, path, 1);
		else
			file_err(im, rc, path);
		if (rc == 0)
			rc = tcfs_ns_setattr(im->s, dir.ino, TCFS_SET_MTIME, 0,
					     mtime_ns(st));
		/* Entries report their own errors; this catches the commit. */
		commit = tcfs_store_end(im->s, rc);
		if (rc == 0 && commit < 0)
			file_err(im, commit, path);
		rc = commit;
	} else {
		file_err(im, rc, path);
	}
	close(fd);
	if (rc < 0) {
		drop_added(im);
		before.failed_dirs++;
		before.skipped = im->st.skipped;
		im->st = before;
		return;
	}
	for (size_t i = 0; i < im->nadded; i++)
		im->st.new_blob_bytes += im->added_size[i];
	im->st.keydirs++;
	if (++im->batch_dirs >= BATCH_DIRS)
		commit_batch(im);
}

static int import_source(struct import *im, const char *src)
{
	char **names;
	size_t n;
	int fd, rc;

	im->src = src;
	fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	im->srcfd = fd;
	if (fd < 0 || !realpath(src, im->realsrc)) {
		rc = -errno;
		cli_err("import", "%s: %s", src, strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	rc = list_dir(fd, &names, &n);
	if (rc < 0) {
		cli_err("import", "%s: %s", src, strerror(-rc));
		close(fd);
		return rc;
	}
	for (size_t i = 0; i < n && !im->fatal; i++) {
		char path[PATH_MAX];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", src, names[i]);
		if (tcfs_name_is_temp(names[i], 1)) {
			im->st.skipped++;
			continue;
		}
		if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			file_err(im, -errno, path);
			continue;
		}
		if (!S_ISDIR(st.st_mode) || !tcfs_name_is_key(names[i])) {
			im->st.skipped++;
			warn(im, path, "not a Triton key directory; skipped");
			continue;
		}
		import_keydir(im, fd, names[i], &st);
	}
	free_names(names, n);
	close(fd);
	return 0;
}

static int print_summary(const struct import *im, int nsrc, int json)
{
	const struct import_stats *s = &im->st;
	uint64_t saved = s->bytes > s->new_blob_bytes
				 ? s->bytes - s->new_blob_bytes : 0;
	char b1[16], b2[16], b3[16];

	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "store", tcfs_store_path(im->s));
		cJSON_AddNumberToObject(o, "sources", nsrc);
		cJSON_AddNumberToObject(o, "kernels", (double)s->kernels);
		cJSON_AddNumberToObject(o, "key_dirs", (double)s->keydirs);
		cJSON_AddNumberToObject(o, "files", (double)s->files);
		cJSON_AddNumberToObject(o, "new_files", (double)s->new_files);
		cJSON_AddNumberToObject(o, "bytes", (double)s->bytes);
		cJSON_AddNumberToObject(o, "new_blob_bytes",
					(double)s->new_blob_bytes);
		cJSON_AddNumberToObject(o, "dedup_saved_bytes", (double)saved);
		cJSON_AddNumberToObject(o, "skipped", (double)s->skipped);
		cJSON_AddNumberToObject(o, "conflicts", (double)s->conflicts);
		cJSON_AddNumberToObject(o, "failed_key_dirs",
					(double)s->failed_dirs);
		return cli_print_json(o);
	}
	printf("imported %llu kernels in %llu key dirs from %d source%s: "
	       "%llu files (%llu new), %s\n",
	       (unsigned long long)s->kernels,
	       (unsigned long long)s->keydirs, nsrc, nsrc == 1 ? "" : "s",
	       (unsigned long long)s->files,
	       (unsigned long long)s->new_files,
	       cli_human(s->bytes, b1, sizeof(b1)));
	printf("stored %s of new blobs; dedup saved %s (%.1f%%)\n",
	       cli_human(s->new_blob_bytes, b2, sizeof(b2)),
	       cli_human(saved, b3, sizeof(b3)),
	       s->bytes ? 100.0 * (double)saved / (double)s->bytes : 0.0);
	if (s->skipped || s->conflicts || s->failed_dirs)
		printf("skipped %llu entries, %llu conflicts, %llu key dirs "
		       "not imported\n",
		       (unsigned long long)s->skipped,
		       (unsigned long long)s->conflicts,
		       (unsigned long long)s->failed_dirs);
	return CLI_OK;
}

int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "binary-only", no_argument, NULL, 'B' },
		CLI_COMMON_LONGOPTS,
		{ 0 },
	};
	struct cli_common co = CLI_COMMON_INIT;
	struct import im = { 0 };
	int c, rc = CLI_OK;

	while ((c = getopt_long(argc, argv, "+" CLI_COMMON_SHORTOPTS "q",
				opts, NULL)) != -1) {
		switch (cli_common_opt("import", help, c, &co, &rc)) {
		case 1:
			continue;
		case -1:
			return rc;
		}
		switch (c) {
		case 'q':
			im.quiet = 1;
			break;
		case 'B':
			im.binary_only = 1;
			break;
		default:
			return cli_usage_err("import", "bad option");
		}
	}
	if (optind >= argc)
		return cli_usage_err("import", "no source directory given");
	if (cli_open_store("import", &co.store, 1, 1, &im.s) != CLI_OK)
		return CLI_FAIL;
	im.progress = !im.quiet && !co.json && isatty(STDERR_FILENO);
	tcfs_store_defer(im.s, store_lost, &im);
	for (int i = optind; i < argc && !im.fatal; i++) {
		if (import_source(&im, argv[i]) < 0)
			rc = CLI_FAIL;
		commit_batch(&im);
	}
	show_progress(&im, 1);
	if (im.fatal) {
		cli_err("import", "stopped; the store keeps every key dir "
				  "imported before the error");
		rc = CLI_FAIL;
	}
	if (im.st.failed_dirs)
		rc = CLI_FAIL;
	if (!im.quiet && print_summary(&im, argc - optind, co.json) != CLI_OK)
		rc = CLI_FAIL;
	free(im.added);
	free(im.added_size);
	tcfs_store_close(im.s);
	return rc;
}
