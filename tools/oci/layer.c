/*
 * layer: image layers written from entries and read back safely (layer.h).
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/base/io.h"
#include "layer.h"
#include "strset.h"
#include "untar.h"
#include "tools/progress.h"

/* ---- writing ---- */

/* Entries go into a tar writer whose output feeds, through tar_out, a
 * raw writer that gzips it into the file: one pass gives both the
 * layer's digest and its uncompressed tar's (the config's diff_id). */
struct layer_writer {
	struct archive *tar;
	struct archive *gz;
	struct oci_sha256 *diff;	/* of the tar */
	struct oci_sha256 *dig;	/* of the gzip stream */
	int fd;
	char path[PATH_MAX];
	uint64_t size;		/* gzip bytes written */
	uint64_t data;		/* file bytes added */
	int err;		/* the first write error (-errno) */
};

static la_ssize_t gz_out(struct archive *a, void *ctx, const void *buf,
			 size_t n)
{
	struct layer_writer *w = ctx;
	int rc;

	(void)a;
	oci_sha256_add(w->dig, buf, n);
	rc = tcfs_io_write_all(w->fd, buf, n);
	if (rc < 0) {
		w->err = w->err ? w->err : rc;
		return -1;
	}
	w->size += n;
	return (la_ssize_t)n;
}

static la_ssize_t tar_out(struct archive *a, void *ctx, const void *buf,
			  size_t n)
{
	struct layer_writer *w = ctx;

	(void)a;
	oci_sha256_add(w->diff, buf, n);
	if (archive_write_data(w->gz, buf, n) != (la_ssize_t)n) {
		w->err = w->err ? w->err : -EIO;
		return -1;
	}
	return (la_ssize_t)n;
}

static void writer_free(struct layer_writer *w, int remove)
{
	char ignore[OCI_DIGEST_LEN + 1];

	if (w->tar)
		archive_write_free(w->tar);
	if (w->gz)
		archive_write_free(w->gz);
	if (w->diff)
		oci_sha256_done(w->diff, ignore);
	if (w->dig)
		oci_sha256_done(w->dig, ignore);
	if (w->fd >= 0)
		close(w->fd);
	if (remove)
		unlink(w->path);
	free(w);
}

int layer_writer_open(const char *dir, struct layer_writer **out)
{
	struct layer_writer *w = calloc(1, sizeof(*w));
	struct archive_entry *e = NULL;
	int rc = 0;

	if (!w)
		return -ENOMEM;
	snprintf(w->path, sizeof(w->path), "%s/.layer.XXXXXX", dir);
	w->fd = mkostemp(w->path, O_CLOEXEC);
	/* mkostemp makes it 0600; it becomes a blob anyone may read, as
	 * the others are that skopeo and umoci write. */
	if (w->fd >= 0 && fchmod(w->fd, 0644) < 0) {
		int saved = errno;

		close(w->fd);
		unlink(w->path);
		w->fd = -1;
		errno = saved;
	}
	if (w->fd < 0) {
		rc = tcfs_err_errno(-errno, "%s", w->path);
		w->path[0] = '\0';
		goto out;
	}
	w->diff = oci_sha256_new();
	w->dig = oci_sha256_new();
	w->gz = archive_write_new();
	w->tar = archive_write_new();
	e = archive_entry_new();
	if (!w->diff || !w->dig || !w->gz || !w->tar || !e) {
		rc = -ENOMEM;
		goto out;
	}
	/* gzip without a timestamp, and no padding after its stream. */
	if (archive_write_set_format_raw(w->gz) != ARCHIVE_OK ||
	    archive_write_add_filter_gzip(w->gz) != ARCHIVE_OK ||
	    archive_write_set_filter_option(w->gz, "gzip", "timestamp",
					    NULL) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w->gz, 0) != ARCHIVE_OK ||
	    archive_write_open2(w->gz, w, NULL, gz_out, NULL, NULL) !=
		    ARCHIVE_OK) {
		rc = tcfs_err_set(-EIO, "gzip: %s",
				  archive_error_string(w->gz));
		goto out;
	}
	archive_entry_set_pathname(e, "layer.tar");
	archive_entry_set_filetype(e, AE_IFREG);
	if (archive_write_header(w->gz, e) != ARCHIVE_OK ||
	    archive_write_set_format_pax_restricted(w->tar) != ARCHIVE_OK ||
	    archive_write_open2(w->tar, w, NULL, tar_out, NULL, NULL) !=
		    ARCHIVE_OK) {
		rc = tcfs_err_set(-EIO, "tar: %s",
				  archive_error_string(w->tar));
		goto out;
	}
out:
	archive_entry_free(e);
	if (rc < 0) {
		writer_free(w, w->path[0] != '\0');
		return rc;
	}
	*out = w;
	return 0;
}

static int add(struct layer_writer *w, const char *path, mode_t type,
	       unsigned perm, const void *bytes, size_t len,
	       const char *target)
{
	struct archive_entry *e = archive_entry_new();
	int rc = 0;

	if (!e)
		return -ENOMEM;
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_size(e, type == AE_IFREG ? (la_int64_t)len : 0);
	archive_entry_set_mtime(e, 0, 0);
	if (target)
		archive_entry_set_symlink(e, target);
	if (archive_write_header(w->tar, e) != ARCHIVE_OK ||
	    (len && archive_write_data(w->tar, bytes, len) != (la_ssize_t)len))
		rc = w->err ? tcfs_err_errno(w->err, "%s", w->path)
			    : tcfs_err_set(-EIO, "%s: %s", path,
					   archive_error_string(w->tar));
	archive_entry_free(e);
	w->data += len;
	return rc;
}

int layer_add_dir(struct layer_writer *w, const char *path)
{
	return add(w, path, AE_IFDIR, 0755, NULL, 0, NULL);
}

int layer_add_file(struct layer_writer *w, const char *path, unsigned mode,
		   const void *bytes, size_t len)
{
	return add(w, path, AE_IFREG, mode & 0111 ? 0755 : 0644, bytes, len,
		   NULL);
}

int layer_add_symlink(struct layer_writer *w, const char *path,
		      const char *target)
{
	return add(w, path, AE_IFLNK, 0777, NULL, 0, target);
}

uint64_t layer_bytes(const struct layer_writer *w)
{
	return w->data;
}

int layer_writer_close(struct layer_writer *w, struct oci_desc *d,
		       char *diff_id, char *path)
{
	int rc = 0;

	if (archive_write_close(w->tar) != ARCHIVE_OK ||
	    archive_write_close(w->gz) != ARCHIVE_OK)
		rc = w->err ? tcfs_err_errno(w->err, "%s", w->path)
			    : tcfs_err_set(-EIO, "%s: %s", w->path,
					   archive_error_string(w->gz));
	if (rc == 0 && fsync(w->fd) < 0)
		rc = tcfs_err_errno(-errno, "%s", w->path);
	if (rc < 0) {
		writer_free(w, 1);
		return rc;
	}
	oci_sha256_done(w->diff, diff_id);
	oci_sha256_done(w->dig, d->digest);
	w->diff = w->dig = NULL;
	snprintf(d->media_type, sizeof(d->media_type), "%s",
		 OCI_MT_LAYER_GZIP);
	d->size = w->size;
	snprintf(path, PATH_MAX, "%s", w->path);
	writer_free(w, 0);
	return 0;
}

void layer_writer_abort(struct layer_writer *w)
{
	if (w)
		writer_free(w, 1);
}

/* ---- reading ---- */

/* The entry's name made canonical in buf: "./" prefixes and a trailing
 * "/" dropped.  -EPERM (with a message) for an absolute path, a ".." or
 * "." component, an empty one, a name over 255 bytes or more than
 * UNTAR_DEPTH_MAX of them; 1 for the layer root itself (nothing to
 * write). */
static int canon(const char *where, const char *name, char *buf, size_t len)
{
	const char *p = name;
	int depth = 1;
	size_t n;

	while (p[0] == '.' && p[1] == '/')
		p += 2;
	if (!strcmp(p, ".") || !p[0])
		return 1;
	if (p[0] == '/')
		return tcfs_err_set(-EPERM, "%s: entry '%s' is an absolute "
				    "path", where, name);
	n = strlen(p);
	if (n >= len)
		return tcfs_err_set(-ENAMETOOLONG, "%s: entry '%.64s...' has "
				    "a path too long", where, name);
	memcpy(buf, p, n + 1);
	while (n > 0 && buf[n - 1] == '/')
		buf[--n] = '\0';
	for (char *c = buf; *c; depth++) {
		char *end = strchrnul(c, '/');
		size_t clen = (size_t)(end - c);

		if (depth > UNTAR_DEPTH_MAX)
			return tcfs_err_set(-ELOOP, "%s: entry '%.64s...' is "
					    "nested over %d levels deep",
					    where, name, UNTAR_DEPTH_MAX);
		if (clen == 0 || (clen == 1 && c[0] == '.') ||
		    (clen == 2 && c[0] == '.' && c[1] == '.'))
			return tcfs_err_set(-EPERM, "%s: entry '%s' leaves or "
					    "bends its path ('..', '.' or "
					    "'//')", where, name);
		if (clen > 255)
			return tcfs_err_set(-ENAMETOOLONG, "%s: entry '%.64s...'"
					    " has a name over 255 bytes", where,
					    name);
		c = *end ? end + 1 : end;
	}
	return 0;
}

int layer_link_ok(const char *target)
{
	if (!target || !target[0] || target[0] == '/')
		return 0;
	for (const char *c = target; *c;) {
		const char *end = strchrnul(c, '/');

		if (end - c == 2 && c[0] == '.' && c[1] == '.')
			return 0;
		c = *end ? end + 1 : end;
	}
	return 1;
}

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

/* Whether base (the last part of an entry's name) is an OCI whiteout:
 * 1 if so, 0 if not, -EPERM with a message when it names nothing a
 * whiteout can remove. */
static int whiteout_of(const char *where, const char *name, const char *base)
{
	const char *victim = base + strlen(WH_PREFIX);

	if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) != 0)
		return 0;
	if (!strcmp(base, WH_OPAQUE))
		return 1;
	if (!victim[0] || !strcmp(victim, ".") || !strcmp(victim, "..") ||
	    !strncmp(victim, WH_PREFIX, strlen(WH_PREFIX)))
		return tcfs_err_set(-EPERM, "%s: whiteout '%s' names no "
				    "entry", where, name);
	return 1;
}

/* Applies whiteout name (canonical; base its last part) to what lower
 * layers put in the staging dir stagefd: ".wh.NAME" removes NAME,
 * ".wh..wh..opq" everything its dir holds.  Its dir is reached beneath
 * stagefd without following any symlink, and nothing is removed through
 * one: a whiteout whose path crosses a link is refused, as only a hostile
 * image would have one. */
static int whiteout(int stagefd, const char *where, const char *name,
		    const char *base)
{
	char parent[PATH_MAX];
	char **names = NULL;
	size_t n = 0;
	int pfd, rc;

	snprintf(parent, sizeof(parent), "%.*s", (int)(base - name), name);
	pfd = parent[0] ? tcfs_io_open_beneath(stagefd, parent,
					       O_RDONLY | O_DIRECTORY, 1)
			: dup(stagefd);
	if (pfd == -1 && !parent[0])
		pfd = -errno;
	if (pfd == -ENOENT || pfd == -ENOTDIR)
		return 0;	/* nothing of a lower layer to remove */
	if (pfd == -ELOOP || pfd == -EXDEV)
		return tcfs_err_set(-EPERM, "%s: whiteout '%s' goes through a "
				    "symlink", where, name);
	if (pfd < 0)
		return tcfs_err_errno(pfd, "%s: %s", where, name);
	if (strcmp(base, WH_OPAQUE) != 0) {
		rc = tcfs_io_rm_tree_at(pfd, base + strlen(WH_PREFIX));
	} else {
		rc = tcfs_io_list_names(pfd, NULL, &names, &n);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = tcfs_io_rm_tree_at(pfd, names[i]);
		tcfs_io_names_free(names, n);
	}
	close(pfd);
	return rc < 0 ? tcfs_err_errno(rc, "%s: whiteout %s", where, name) : 0;
}

/* The last part of a canonical name. */
static const char *base_of(const char *name)
{
	const char *slash = strrchr(name, '/');

	return slash ? slash + 1 : name;
}

/* Checks entry e, found as name, and makes it relative to the staging
 * dir.  0 to write it, 1 to skip it (a whiteout: whiteouts_apply did
 * what it says), or -errno with a message. */
static int vet(const char *where, struct archive_entry *e, struct strset *seen)
{
	char name[PATH_MAX], to[PATH_MAX];
	const char *raw = archive_entry_pathname(e);
	const char *hard = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	int rc;

	if (!raw)
		return tcfs_err_set(-EBADMSG, "%s: an entry without a name",
				    where);
	rc = canon(where, raw, name, sizeof(name));
	if (rc != 0)
		return rc;
	rc = strset_add(seen, name);
	if (rc == 0)
		return tcfs_err_set(-EEXIST, "%s: entry '%s' appears twice",
				    where, name);
	if (rc < 0)
		return rc;
	rc = whiteout_of(where, name, base_of(name));
	if (rc != 0)
		return rc;
	if (hard) {
		rc = canon(where, hard, to, sizeof(to));
		if (rc < 0)
			rc = tcfs_err_set(rc, "%s: hard link '%s' to '%s' leaves "
					  "the image", where, name, hard);
		if (rc == 0 && !strset_has(seen, to))
			rc = tcfs_err_set(-EPERM, "%s: hard link '%s' to '%s', "
					  "which is not an earlier file of "
					  "the layer", where, name, hard);
		if (rc != 0)
			return rc < 0 ? rc : tcfs_err_set(-EPERM, "%s: hard "
							  "link '%s' to the "
							  "layer's root", where,
							  name);
		/* Relative: extraction runs in dir (layer_extract). */
		archive_entry_set_hardlink(e, to);
	} else if (type == AE_IFLNK) {
		const char *t = archive_entry_symlink(e);

		if (!layer_link_ok(t))
			return tcfs_err_set(-EPERM, "%s: symlink '%s' -> '%s' "
					    "points up or out of its dir (a "
					    "cache's links point down)", where,
					    name, t ? t : "");
	} else if (type != AE_IFREG && type != AE_IFDIR) {
		return tcfs_err_set(-EPERM, "%s: entry '%s' is a %s; a cache "
				    "holds only files, dirs and links", where,
				    name,
				    type == AE_IFCHR || type == AE_IFBLK
					    ? "device"
				    : type == AE_IFIFO ? "fifo"
						       : "special file");
	}
	archive_entry_set_pathname(e, name);
	if (type == AE_IFDIR)
		archive_entry_set_perm(e, 0755);
	else if (type == AE_IFREG)
		archive_entry_set_perm(e, archive_entry_perm(e) & 0111 ? 0755
								      : 0644);
	return 0;
}

struct vetting {
	const char *where;
	struct strset seen;	/* the entries so far */
	struct progress *prog;	/* may be NULL */
	uint64_t entries;
};

static int vet_layer(void *ctx, struct archive_entry *e)
{
	struct vetting *v = ctx;

	if (v->prog)
		progress_tick(v->prog, ++v->entries, 0);
	return vet(v->where, e, &v->seen);
}

/* Opens the layer fd (from its start) for reading its entries. */
static int read_open(int fd, const char *where, struct archive **out)
{
	struct archive *a = archive_read_new();

	*out = NULL;
	if (!a)
		return -ENOMEM;
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (lseek(fd, 0, SEEK_SET) < 0 ||
	    archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK) {
		int rc = tcfs_err_set(-EBADMSG, "%s: %s", where,
				      archive_error_string(a));

		archive_read_free(a);
		return rc;
	}
	*out = a;
	return 0;
}

/* A layer's whiteouts apply to the layers below it only, never to its
 * own entries (the OCI image spec): so they are all applied, in a first
 * reading of the layer's headers, before any of its entries is written.
 * That reading decompresses every entry to skip it, so each is charged
 * to (a copy of) the budget first: a bomb stops here as it would when
 * extracted. */
static int whiteouts_apply(int fd, const char *where, int stagefd,
			   uint64_t budget)
{
	struct archive *a;
	struct archive_entry *e;
	int rc = read_open(fd, where, &a), r = ARCHIVE_OK;

	while (rc == 0 && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		char name[PATH_MAX];
		const char *raw = archive_entry_pathname(e);

		int wh = 0;

		rc = untar_charge(where, e, &budget);
		if (rc == 0 && raw)
			rc = canon(where, raw, name, sizeof(name));
		if (rc == 1) {	/* the layer's root */
			rc = 0;
			continue;
		}
		if (rc == 0 && raw)
			wh = whiteout_of(where, name, base_of(name));
		if (wh < 0)
			rc = wh;
		else if (wh == 1)
			rc = whiteout(stagefd, where, name, base_of(name));
	}
	if (rc == 0 && r != ARCHIVE_EOF)
		rc = tcfs_err_set(-EBADMSG, "%s: %s", where,
				  archive_error_string(a));
	if (a)
		archive_read_free(a);
	return rc;
}

int layer_extract(int fd, const char *where, const char *dir, int lower,
		  uint64_t *budget, struct progress *prog)
{
	struct vetting v = { where, { NULL }, prog, 0 };
	struct untar u = { fd, where, dir, budget, 1, vet_layer, &v };
	int stagefd, rc = 0;

	if (lower) {
		stagefd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (stagefd < 0)
			return tcfs_err_errno(-errno, "%s", dir);
		rc = whiteouts_apply(fd, where, stagefd, *budget);
		close(stagefd);
	}
	if (rc == 0)
		rc = untar_run(&u);
	strset_free(&v.seen);
	return rc;
}

/* The manifest.json of a layer is a few KiB per thousand kernels. */
#define SCAN_WANT_MAX (16u << 20)

int layer_scan(int fd, const char *where, const char *want,
	       int (*fn)(void *ctx, const char *path, const void *data,
			 size_t len),
	       void *ctx)
{
	struct archive *a;
	struct archive_entry *e;
	char *data = NULL;
	int rc = read_open(fd, where, &a), r = ARCHIVE_OK;

	if (rc < 0)
		return rc;
	while (rc == 0 && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		char name[PATH_MAX];
		la_int64_t size = archive_entry_size(e);
		size_t len = 0;

		if (archive_entry_filetype(e) != AE_IFREG ||
		    canon(where, archive_entry_pathname(e), name,
			  sizeof(name)) != 0)
			continue;
		if (!strcmp(name, want) && size >= 0 &&
		    (uint64_t)size <= SCAN_WANT_MAX) {
			data = malloc((size_t)size + 1);
			if (!data) {
				rc = -ENOMEM;
				break;
			}
			if (archive_read_data(a, data, (size_t)size) != size) {
				rc = tcfs_err_set(-EBADMSG, "%s: %s", where,
						  archive_error_string(a));
				break;
			}
			len = (size_t)size;
		}
		rc = fn(ctx, name, data, len);
		free(data);
		data = NULL;
	}
	if (rc == 0 && r != ARCHIVE_EOF)
		rc = tcfs_err_set(-EBADMSG, "%s: %s", where,
				  archive_error_string(a));
	free(data);
	archive_read_free(a);
	return rc;
}
