/*
 * untar: tar streams extracted under a vet and a budget (untar.h).
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "index/base/err.h"
#include "untar.h"

/* Copies the data of the entry just written (charged already: libarchive
 * gives no more than its size). */
static int copy_data(const struct untar *u, struct archive *a,
		     struct archive *w)
{
	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(a, &buf, &len, &off);

		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK)
			return tcfs_err_set(-EBADMSG, "%s: %s", u->where,
					    archive_error_string(a));
		if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK)
			return tcfs_err_set(-EIO, "%s: %s", u->where,
					    archive_error_string(w));
	}
}

int untar_charge(const char *where, struct archive_entry *e,
		 uint64_t *budget)
{
	la_int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e)
						       : 0;
	uint64_t cost = (uint64_t)size + UNTAR_ENTRY_COST;

	if (size < 0 || cost > *budget)
		return tcfs_err_set(-EFBIG, "%s: entry '%s' expands past the "
				    "limit on unpacked bytes (a "
				    "decompression bomb?)", where,
				    archive_entry_pathname(e));
	*budget -= cost;
	return 0;
}

int untar_run(const struct untar *u)
{
	struct archive *a = archive_read_new();
	struct archive *w = archive_write_disk_new();
	struct archive_entry *e;
	int rc = 0, r = ARCHIVE_OK;
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (!a || !w) {
		rc = -ENOMEM;
		goto out;
	}
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (lseek(u->fd, 0, SEEK_SET) < 0) {
		rc = tcfs_err_errno(-errno, "%s", u->where);
		goto out;
	}
	if (archive_read_open_fd(a, u->fd, 1 << 16) != ARCHIVE_OK) {
		rc = tcfs_err_set(-EBADMSG, "%s: %s", u->where,
				  archive_error_string(a));
		goto out;
	}
	/* Entries are written relative to dir, the secure options of
	 * libarchive refusing any that would leave it. */
	if (cwd < 0 || chdir(u->dir) < 0) {
		rc = tcfs_err_errno(-errno, "%s", u->dir);
		goto out;
	}
	archive_write_disk_set_options(
		w, ARCHIVE_EXTRACT_SECURE_NODOTDOT |
			   ARCHIVE_EXTRACT_SECURE_SYMLINKS |
			   ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS |
			   ARCHIVE_EXTRACT_PERM |
			   (u->overwrite ? 0 : ARCHIVE_EXTRACT_NO_OVERWRITE));
	while (rc == 0 && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		rc = u->vet(u->ctx, e);
		if (rc == 1) {
			rc = 0;
			continue;
		}
		if (rc == 0)
			rc = untar_charge(u->where, e, u->budget);
		if (rc == 0 && archive_write_header(w, e) != ARCHIVE_OK)
			rc = tcfs_err_set(-EPERM, "%s: entry '%s': %s",
					  u->where, archive_entry_pathname(e),
					  archive_error_string(w));
		if (rc == 0)
			rc = copy_data(u, a, w);
		if (rc == 0 && archive_write_finish_entry(w) != ARCHIVE_OK)
			rc = tcfs_err_set(-EIO, "%s: entry '%s': %s", u->where,
					  archive_entry_pathname(e),
					  archive_error_string(w));
	}
	if (rc == 0 && r != ARCHIVE_EOF)
		rc = tcfs_err_set(-EBADMSG, "%s: %s", u->where,
				  archive_error_string(a));
out:
	if (cwd >= 0) {
		if (fchdir(cwd) < 0 && rc == 0)
			rc = -errno;
		close(cwd);
	}
	if (a)
		archive_read_free(a);
	if (w)
		archive_write_free(w);
	return rc;
}
