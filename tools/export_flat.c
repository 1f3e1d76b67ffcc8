/*
 * export_flat: tcfs export --flat, the files AMD aiter's redirect reads:
 * per kernel NAME.json and its binary, byte for byte, in one directory.
 *
 * aiter's redirect (and tcfs mount -o redirect) maps a kernel NAME to a
 * directory and reads DIR/NAME.json and DIR/NAME.hsaco there: names only.
 * So a name that one selected kernel has goes to the top, and the
 * kernels of a name that several share (variants under other keys) go
 * to DEST/KEY/ each, none at the top: the user picks a variant's
 * directory, as aiter asks of them anyway.
 *
 * Files are written as export writes them: under a temp name, created
 * exclusively, renamed into place, never through a symlink; each blob's
 * bytes are checked against its name first.  The binary lands before
 * NAME.json, which a reader takes as the kernel's mark.
 */
#include "export_flat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/base/text.h"
#include "index/blob/cas.h"
#include "index/base/err.h"
#include "index/base/io.h"
#include "index/base/utf8.h"
#include "index/model/kernel.h"
#include "index/tree/ns.h"
#include "index/store/store.h"
#include "progress.h"

/* What a kernel's flat files are, by suffix of its name: binaries first,
 * the metadata last. */
static const char *const flat_suffix[] = { ".hsaco", ".cubin", ".json" };
#define FLAT_FILES (sizeof(flat_suffix) / sizeof(*flat_suffix))

struct flat {
	struct tcfs_store *s;
	char root[PATH_MAX];	/* DEST made absolute, for messages */
	int destfd;
	uint64_t kernels, in_keys, files, bytes, failed;
	/* The kernels exported to DEST/KEY/, in order (pointers into the
	 * list exported, room for all of it): the summary names each dir,
	 * as a redirect must name one. */
	const struct tcfs_kernel **keyed;
	size_t nkeyed;
};

/* Kernels of one name together, and each key once: a key under several
 * cache roots (vLLM's ranks) is one kernel, its oldest dir taken. */
static int by_name_key(const void *a, const void *b)
{
	const struct tcfs_kernel *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c == 0)
		c = strcmp(x->key, y->key);
	if (c == 0)
		c = (x->dir_ino > y->dir_ino) - (x->dir_ino < y->dir_ino);
	return c;
}

/* "KEY/NAME.json" (name NULL: "KEY") as the store has it, its path from
 * the top, for messages: what the user finds with ls. */
static const char *store_path(struct flat *fl, uint64_t dir, const char *name,
			      char *buf, size_t len)
{
	size_t used;

	if (tcfs_ns_path(fl->s, dir, buf, len) < 0)
		snprintf(buf, len, "?");
	used = strlen(buf);
	if (name)
		snprintf(buf + used, len - used, "/%s", name);
	return buf;
}

/* An entry of DEST that is a symlink is refused (the rename that puts a
 * file in place would replace the link, never write through it, but
 * whoever planted it meant the export to write elsewhere).  at is its
 * path below DEST. */
static int refuse_symlink(struct flat *fl, int dirfd, const char *name,
			  const char *at)
{
	char shown[2 * PATH_MAX];

	snprintf(shown, sizeof(shown), "%s/%s", fl->root, at);
	return tcfs_io_refuse_symlink(dirfd, name, shown);
}

/* A file of the kernel's, and its bytes once read. */
struct flat_file {
	struct tcfs_node n;
	char *bytes;		/* owned; NULL until read */
	size_t len;
};

/* Reads f's bytes, checked against their blob's name, so that wrong
 * bytes are never written.  0, or -errno with a message naming the
 * file in the store. */
static int read_file(struct flat *fl, uint64_t dir, struct flat_file *f)
{
	char from[PATH_MAX];
	int rc;

	store_path(fl, dir, f->n.name, from, sizeof(from));
	if (f->n.fmt != TCFS_FMT_RAW)
		return tcfs_err_set(-EINVAL, "%s: not a plain file in the "
				    "store", from);
	rc = tcfs_cas_read_checked(tcfs_store_cas(fl->s), &f->n.blob,
				   SIZE_MAX, &f->bytes, &f->len);
	if (rc == 0)
		return 0;
	f->bytes = NULL;
	return tcfs_err_prefix(rc, "%s", from);
}

/* Writes f to dirfd/NAME under a temp name, then renames it into place;
 * shown as DEST/at in messages.  0, or -errno with a message. */
static int put_file(struct flat *fl, int dirfd, const struct flat_file *f,
		    const char *at)
{
	int rc = tcfs_io_put_at(dirfd, f->n.name, f->bytes, f->len,
				tcfs_ns_portable_mode(f->n.mode),
				f->n.mtime_ns);

	if (rc < 0)
		return tcfs_err_errno(rc, "%s/%s", fl->root, at);
	fl->files++;
	fl->bytes += f->len;
	return 0;
}

/* The directory a kernel's files go to: DEST, or DEST/KEY for a name
 * several kernels share, made if missing and never a symlink.  The
 * descriptor (the caller closes it unless it is fl->destfd), or -errno
 * with a message. */
static int open_target(struct flat *fl, const struct tcfs_kernel *k,
		       int shared)
{
	int fd, rc;

	if (!shared)
		return fl->destfd;
	if (mkdirat(fl->destfd, k->key, 0755) < 0 && errno != EEXIST)
		return tcfs_err_errno(-errno, "%s/%s", fl->root, k->key);
	fd = tcfs_io_open_beneath(fl->destfd, k->key,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 1);
	if (fd == -ELOOP || fd == -ENOTDIR) {
		rc = refuse_symlink(fl, fl->destfd, k->key, k->key);
		if (rc < 0)
			return rc;
	}
	if (fd < 0)
		return tcfs_err_errno(fd, "%s/%s", fl->root, k->key);
	return fd;
}

/* Finds the kernel's flat files in its key dir: *n of them in found,
 * binaries first.  0, or -errno with a message when NAME.json or every
 * binary is missing (aiter reads both) or the store fails. */
static int find_files(struct flat *fl, const struct tcfs_kernel *k,
		      struct flat_file *found, size_t *n)
{
	char name[TCFS_NAME_MAX + 1], at[PATH_MAX];
	int rc, binaries = 0, meta = 0;

	*n = 0;
	for (size_t i = 0; i < FLAT_FILES; i++) {
		snprintf(name, sizeof(name), "%s%s", k->name, flat_suffix[i]);
		rc = tcfs_ns_lookup(fl->s, k->dir_ino, name, &found[*n].n);
		if (rc == -ENOENT)
			continue;
		if (rc < 0)
			return tcfs_err_errno(rc, "%s", store_path(fl,
				k->dir_ino, name, at, sizeof(at)));
		if (found[*n].n.kind != TCFS_FILE)
			continue;	/* a dir or a symlink: not the file */
		if (i + 1 < FLAT_FILES)
			binaries++;
		else
			meta = 1;
		(*n)++;
	}
	store_path(fl, k->dir_ino, NULL, at, sizeof(at));
	if (!meta)
		return tcfs_err_set(-ENOENT, "%s: no %s.json; kernel %s not "
				    "exported", at, k->name, k->name);
	if (!binaries)
		return tcfs_err_set(-ENOENT, "%s: no %s.hsaco or %s.cubin; "
				    "kernel %s not exported", at, k->name,
				    k->name, k->name);
	return 0;
}

/* Exports one kernel, whole or not at all as far as the store and DEST
 * go: every blob is read and checked, and every name in DEST looked at
 * (a planted link leaves the kernel out), before anything is written.
 * An error is reported and counted, not returned. */
static void flat_kernel(struct flat *fl, const struct tcfs_kernel *k,
			int shared)
{
	struct flat_file found[FLAT_FILES] = { 0 };
	char at[FLAT_FILES][PATH_MAX];
	size_t n = 0;
	int dirfd = -1, rc;

	tcfs_err_clear();
	rc = find_files(fl, k, found, &n);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = read_file(fl, k->dir_ino, &found[i]);
	if (rc == 0) {
		dirfd = open_target(fl, k, shared);
		rc = dirfd < 0 ? dirfd : 0;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		snprintf(at[i], sizeof(at[i]), "%s%s%s", shared ? k->key : "",
			 shared ? "/" : "", found[i].n.name);
		rc = refuse_symlink(fl, dirfd, found[i].n.name, at[i]);
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = put_file(fl, dirfd, &found[i], at[i]);
	for (size_t i = 0; i < n; i++)
		free(found[i].bytes);
	if (dirfd >= 0 && dirfd != fl->destfd)
		close(dirfd);
	if (rc < 0) {
		cli_lib_err("export", rc, k->key);
		fl->failed++;
		return;
	}
	fl->kernels++;
	fl->in_keys += shared;
	if (shared)
		fl->keyed[fl->nkeyed++] = k;
}

/* Exports every kernel of ks (sorted by by_name_key). */
static void flat_all(struct flat *fl, const struct tcfs_kernel *ks, size_t n,
		     struct progress *prog)
{
	for (size_t i = 0, end; i < n; i = end) {
		size_t keys = 1;

		progress_tick(prog, i, n);
		/* The run of kernels named so, and how many keys it has. */
		for (end = i + 1; end < n && !strcmp(ks[end].name, ks[i].name);
		     end++)
			keys += strcmp(ks[end].key, ks[end - 1].key) != 0;
		for (size_t j = i; j < end; j++)
			if (j == i || strcmp(ks[j].key, ks[j - 1].key) != 0)
				flat_kernel(fl, &ks[j], keys > 1);
	}
}

/* Each name exported to KEY dirs, and its dirs: -o redirect=NAME:DIR
 * finds nothing in DEST itself, but in one of them.  The names and
 * targets are the store's: shown printable. */
static void print_key_dirs(const struct flat *fl)
{
	char raw[PATH_MAX + 2 * TCFS_NAME_MAX + 128], shown[4 * sizeof(raw)];

	for (size_t i = 0, end; i < fl->nkeyed; i = end) {
		const char *name = fl->keyed[i]->name;

		for (end = i + 1;
		     end < fl->nkeyed && !strcmp(fl->keyed[end]->name, name);
		     end++)
			;
		snprintf(raw, sizeof(raw), "%s, a name %zu kernels share, is in "
			 "their KEY dirs (give one as DIR in -o redirect=%s:DIR):",
			 name, end - i, name);
		printf("%s\n", tcfs_utf8_printable(raw, shown, sizeof(shown)));
		for (size_t j = i; j < end; j++) {
			const struct tcfs_kernel *k = fl->keyed[j];

			snprintf(raw, sizeof(raw), "  %s/%s  %s %s", fl->root,
				 k->key, k->backend, k->arch);
			printf("%s\n", tcfs_utf8_printable(raw, shown,
							   sizeof(shown)));
		}
	}
}

/* key_dirs: [{name, dir}], one for each kernel exported to DEST/KEY/. */
static void add_key_dirs(const struct flat *fl, cJSON *o)
{
	cJSON *a = cJSON_AddArrayToObject(o, "key_dirs");
	char dir[2 * PATH_MAX];

	for (size_t i = 0; a && i < fl->nkeyed; i++) {
		cJSON *e = cJSON_CreateObject();

		snprintf(dir, sizeof(dir), "%s/%s", fl->root,
			 fl->keyed[i]->key);
		cJSON_AddStringToObject(e, "name", fl->keyed[i]->name);
		cJSON_AddStringToObject(e, "dir", dir);
		cJSON_AddItemToArray(a, e);
	}
}

static int print_summary(const struct flat *fl, int json)
{
	char b[16];

	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "dest", fl->root);
		cJSON_AddNumberToObject(o, "kernels", (double)fl->kernels);
		cJSON_AddNumberToObject(o, "in_key_dirs", (double)fl->in_keys);
		cJSON_AddNumberToObject(o, "files", (double)fl->files);
		cJSON_AddNumberToObject(o, "bytes", (double)fl->bytes);
		cJSON_AddNumberToObject(o, "failed_kernels",
					(double)fl->failed);
		add_key_dirs(fl, o);
		return cli_print_json(o);
	}
	printf("exported %llu %s flat (%llu in KEY dirs, their names "
	       "being shared): %llu %s, %s, to %s\n",
	       (unsigned long long)fl->kernels, TCFS_NOUN(fl->kernels, "kernel"),
	       (unsigned long long)fl->in_keys,
	       (unsigned long long)fl->files, TCFS_NOUN(fl->files, "file"),
	       cli_human(fl->bytes, b, sizeof(b)), fl->root);
	print_key_dirs(fl);
	if (fl->failed)
		printf("%llu %s not (completely) exported\n",
		       (unsigned long long)fl->failed,
		       TCFS_NOUN(fl->failed, "kernel"));
	return CLI_OK;
}

int export_flat_run(const struct cli_common *co,
		    const struct tcfs_kernel_filter *f,
		    enum tcfs_group_filter filter, int quiet, const char *dest)
{
	struct flat fl = { .destfd = -1 };
	struct progress prog;
	struct tcfs_kernel *ks = NULL;
	size_t n = 0;
	int rc, code = CLI_FAIL;

	if (filter != TCFS_GROUP_ALL)
		return cli_usage_err("export", "--flat writes no IR anyway: "
				     "leave --binary-only out");
	rc = tcfs_io_mkdirs(dest);
	if (rc < 0 || !realpath(dest, fl.root)) {
		cli_err("export", "%s: %s", dest, strerror(rc < 0 ? -rc : errno));
		return CLI_FAIL;
	}
	fl.destfd = open(fl.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fl.destfd < 0) {
		cli_err("export", "%s: %s", fl.root, strerror(errno));
		return CLI_FAIL;
	}
	if (cli_open_store("export", &co->store, 0, 0, &fl.s) != CLI_OK)
		goto out;
	progress_init(&prog, "exporting", "kernels", quiet);
	rc = tcfs_kernel_list(fl.s, f, &ks, &n);
	if (rc < 0) {
		cli_lib_err("export", rc, tcfs_store_path(fl.s));
		goto out;
	}
	fl.keyed = calloc(n ? n : 1, sizeof(*fl.keyed));
	if (!fl.keyed) {
		cli_lib_err("export", -ENOMEM, fl.root);
		goto out;
	}
	if (n > 1)
		qsort(ks, n, sizeof(*ks), by_name_key);
	flat_all(&fl, ks, n, &prog);
	progress_end(&prog);
	code = fl.failed ? CLI_FAIL : CLI_OK;
	if (!quiet && print_summary(&fl, co->json) != CLI_OK)
		code = CLI_FAIL;
out:
	free(fl.keyed);
	free(ks);
	tcfs_store_close(fl.s);
	close(fl.destfd);
	return code;
}
