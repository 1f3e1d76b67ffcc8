/*
 * tcfs export: write the store out as a plain Triton cache.
 *
 * Every file is written under a temporary name and renamed into place, and
 * a key dir's group files come last, as Triton itself writes: a Triton
 * already using DEST never sees half a kernel.  Blobs are verified while
 * they are copied; a kernel with a damaged blob gets no group file, so
 * Triton recompiles it instead of loading wrong bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "export_flat.h"
#include "index/cas.h"
#include "index/err.h"
#include "index/group.h"
#include "index/io.h"
#include "index/kernel.h"
#include "index/ns.h"
#include "index/store.h"

#define DEPTH_MAX 8

struct export {
	struct tcfs_store *s;
	char root[PATH_MAX];	/* DEST made absolute: group files name it */
	uint64_t kernels, keydirs, files, bytes, failed;
	unsigned long seq;
	enum tcfs_group_filter filter;	/* --binary-only: no IR */
};

static const char *const help =
	"Usage: tcfs export [OPTIONS] DEST\n"
	"\n"
	"Writes the store (or the kernels the filters select) to DEST as a\n"
	"plain Triton cache that real Triton uses: every file byte for byte,\n"
	"except group files, whose child paths point into DEST.  DEST is\n"
	"created if missing; files already there are replaced atomically.\n"
	"Nothing is written through a symlink under DEST: a key dir or file\n"
	"there that is one is refused, naming it.  setuid, setgid, sticky and\n"
	"world-writable bits are not exported.\n"
	"Without filters everything is exported, module (.so) and autotune\n"
	"dirs included; with filters only the kernels that match all of them.\n"
	"\n"
	"Options:\n"
	"  -s, --store DIR      the store (default as for tcfs import)\n"
	"  -n, --name GLOB      kernels whose name matches GLOB\n"
	"  -b, --backend NAME   kernels for this backend (cuda, hip, ...)\n"
	"  -a, --arch ARCH      kernels for this arch (90, sm90, gfx942, ...)\n"
	"      --binary-only    leave IR files (.ttir .ttgir .llir .ptx\n"
	"                       .amdgcn) out, and out of the group files\n"
	"      --flat           instead, per kernel DEST/NAME.json and its\n"
	"                       binary (NAME.hsaco or NAME.cubin), byte for\n"
	"                       byte, as AMD aiter's redirect and tcfs mount\n"
	"                       -o redirect=NAME:DEST read them; a name that\n"
	"                       several selected kernels share goes to\n"
	"                       DEST/KEY/NAME.* for each (none at the top)\n"
	"      --json           print the summary as JSON\n"
	"  -q, --quiet          print nothing but errors\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 all exported, 1 something was not (a damaged blob,\n"
	"an I/O error: see the errors), 2 usage error.\n";

/* Writes a blob's bytes to fd, checking them against the blob's name. */
static int copy_blob(struct export *ex, const struct tcfs_node *n,
		     const char *key, int out, uint64_t *written)
{
	struct tcfs_hash got;
	char *buf = NULL, *r = NULL;
	size_t len = 0, rlen = 0;
	int fd, rc;

	fd = tcfs_cas_open_blob(tcfs_store_cas(ex->s), &n->blob);
	if (fd < 0)
		return fd;
	rc = tcfs_io_read_small(fd, n->fmt == TCFS_FMT_GROUP ? TCFS_GROUP_MAX
							     : SIZE_MAX,
				&buf, &len);
	close(fd);
	if (rc < 0)
		goto out;
	tcfs_hash_buf(buf, len, &got);
	if (!tcfs_hash_equal(&got, &n->blob)) {
		char hex[TCFS_HASH_HEXLEN];

		tcfs_hash_hex(&n->blob, hex);
		rc = tcfs_err_set(-EBADMSG, "blob %s is damaged (run tcfs "
				  "fsck)", hex);
		goto out;
	}
	if (n->fmt == TCFS_FMT_GROUP) {
		rc = tcfs_group_render(buf, len, ex->root, key, ex->filter, &r,
				       &rlen);
		if (rc < 0)
			goto out;
	}
	rc = tcfs_io_write_all(out, r ? r : buf, r ? rlen : len);
	*written = r ? rlen : len;
out:
	free(r);
	free(buf);
	return rc;
}

/* A DEST entry that is a symlink is never written through or replaced:
 * whoever planted it meant export to write elsewhere.  -ELOOP (with a
 * message) for one, 0 for anything else or nothing. */
static int refuse_symlink(struct export *ex, int dirfd, const char *name,
			  const char *path)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return tcfs_err_set(-ELOOP, "%s/%s: is a symlink; not "
				    "written through (remove it)", ex->root,
				    path);
	return 0;
}

/* A temp name nobody can guess, so nothing planted there is ever opened:
 * one that Triton's tools and tcfs import skip.  0 or -errno. */
static int temp_name(char *tmp, size_t len)
{
	unsigned char r[8];

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -errno;
	snprintf(tmp, len, "tmp.pid_%ld_%02x%02x%02x%02x%02x%02x%02x%02x",
		 (long)getpid(), r[0], r[1], r[2], r[3], r[4], r[5], r[6],
		 r[7]);
	return 0;
}

/* Creates a temp file for name's bytes in dirfd, exclusively. */
static int create_temp(int dirfd, char *tmp, size_t len)
{
	int fd;

	do {
		fd = temp_name(tmp, len);
		if (fd == 0)
			fd = tcfs_io_open_beneath(dirfd, tmp,
						  O_WRONLY | O_CREAT | O_EXCL |
							  O_NOFOLLOW,
						  1);
	} while (fd == -EEXIST);
	return fd;
}

static int export_file(struct export *ex, int dirfd, const struct tcfs_node *n,
		       const char *key, const char *path)
{
	struct timespec times[2] = { { 0, UTIME_OMIT },
				     { n->mtime_ns / 1000000000,
				       n->mtime_ns % 1000000000 } };
	uint64_t written = 0;
	char tmp[64];
	int fd, rc;

	tcfs_err_clear();
	rc = refuse_symlink(ex, dirfd, n->name, path);
	if (rc < 0)
		return rc;
	fd = create_temp(dirfd, tmp, sizeof(tmp));
	if (fd < 0)
		return tcfs_err_errno(fd, "%s/%s", ex->root, path);
	rc = copy_blob(ex, n, key, fd, &written);
	if (rc == 0 && (fchmod(fd, tcfs_ns_portable_mode(n->mode)) < 0 ||
			futimens(fd, times) < 0))
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dirfd, tmp, dirfd, n->name) < 0)
		rc = -errno;
	if (rc < 0) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", tcfs_err_msg());
		unlinkat(dirfd, tmp, 0);
		if (msg[0])
			return tcfs_err_set(rc, "%s: %s", path, msg);
		return tcfs_err_errno(rc, "%s/%s", ex->root, path);
	}
	ex->files++;
	ex->bytes += written;
	return 0;
}

/* A symlink is written as one: made under a temp name, exclusively (a
 * symlink is never followed by its own creation), then renamed over
 * name, which replaces whatever was there without writing through it. */
static int export_symlink(struct export *ex, int dirfd,
			  const struct tcfs_node *n, const char *path)
{
	char target[TCFS_SYMLINK_MAX + 1], tmp[64];
	int rc = tcfs_ns_readlink(ex->s, n->ino, target, sizeof(target));

	if (rc < 0)
		return tcfs_err_errno(rc, "%s", path);
	do {
		rc = temp_name(tmp, sizeof(tmp));
		if (rc == 0 && symlinkat(target, dirfd, tmp) < 0)
			rc = -errno;
	} while (rc == -EEXIST);
	if (rc == 0 && renameat(dirfd, tmp, dirfd, n->name) < 0) {
		rc = -errno;
		unlinkat(dirfd, tmp, 0);
	}
	if (rc < 0)
		return tcfs_err_errno(rc, "%s/%s", ex->root, path);
	ex->files++;
	return 0;
}

static int export_dir(struct export *ex, int parentfd,
		      const struct tcfs_node *dir, const char *key,
		      const char *path, int depth);

static int is_group(const struct tcfs_node *n)
{
	return n->kind == TCFS_FILE &&
	       tcfs_name_artifact(n->name) == TCFS_ART_GROUP;
}

/* Exports dir's children: plain files and subdirs first, then (only if
 * all of those made it) the group files.  Returns the first error. */
static int export_children(struct export *ex, int fd,
			   const struct tcfs_node *dir, const char *key,
			   const char *path, int depth)
{
	struct tcfs_node *kids;
	size_t n;
	int rc, first = 0;

	rc = tcfs_ns_list(ex->s, dir->ino, 0, 0, &kids, &n);
	if (rc < 0)
		return rc;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			char sub[PATH_MAX];

			if (is_group(&kids[i]) != pass)
				continue;
			if (ex->filter == TCFS_GROUP_BINARY_ONLY &&
			    kids[i].kind == TCFS_FILE &&
			    tcfs_name_artifact(kids[i].name) == TCFS_ART_IR)
				continue;
			if (pass == 1 && first < 0)
				break;	/* no group for a partial kernel */
			snprintf(sub, sizeof(sub), "%s/%s", path,
				 kids[i].name);
			if (kids[i].kind == TCFS_DIR)
				rc = export_dir(ex, fd, &kids[i], key, sub,
						depth + 1);
			else if (kids[i].kind == TCFS_SYMLINK)
				rc = export_symlink(ex, fd, &kids[i], sub);
			else
				rc = export_file(ex, fd, &kids[i], key, sub);
			if (rc < 0) {
				cli_lib_err("export", rc, sub);
				first = first ? first : rc;
				continue;
			}
			ex->kernels += pass;
		}
	}
	free(kids);
	return first;
}

static int export_dir(struct export *ex, int parentfd,
		      const struct tcfs_node *dir, const char *key,
		      const char *path, int depth)
{
	struct timespec times[2] = { { 0, UTIME_OMIT },
				     { dir->mtime_ns / 1000000000,
				       dir->mtime_ns % 1000000000 } };
	int fd, rc;

	if (depth > DEPTH_MAX)
		return tcfs_err_set(-ELOOP, "%s: nested too deep", path);
	if (mkdirat(parentfd, dir->name, 0700) < 0 && errno != EEXIST)
		return tcfs_err_errno(-errno, "%s/%s", ex->root, path);
	fd = tcfs_io_open_beneath(parentfd, dir->name,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 1);
	if (fd == -ELOOP || fd == -ENOTDIR) {
		rc = refuse_symlink(ex, parentfd, dir->name, path);
		if (rc < 0)
			return rc;
	}
	if (fd < 0)
		return tcfs_err_errno(fd, "%s/%s", ex->root, path);
	rc = export_children(ex, fd, dir, key, path, depth);
	/* The tree is written; now the directory may look as stored. */
	if (fchmod(fd, tcfs_ns_portable_mode(dir->mode)) < 0 ||
	    futimens(fd, times) < 0) {
		if (rc == 0)
			rc = tcfs_err_errno(-errno, "%s/%s", ex->root, path);
	}
	close(fd);
	return rc;
}

/* Exports one entry of the root: a key dir (or, unfiltered, a stray file). */
static void export_top(struct export *ex, int destfd, const struct tcfs_node *n)
{
	int rc;

	tcfs_err_clear();
	if (n->kind == TCFS_DIR)
		rc = export_dir(ex, destfd, n, n->name, n->name, 1);
	else if (n->kind == TCFS_SYMLINK)
		rc = export_symlink(ex, destfd, n, n->name);
	else
		rc = export_file(ex, destfd, n, "", n->name);
	if (rc < 0) {
		/* Children report their own errors; this reports the dir's. */
		if (tcfs_err_msg()[0])
			cli_lib_err("export", rc, n->name);
		ex->failed++;
		return;
	}
	ex->keydirs += n->kind == TCFS_DIR;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The root entries to export: all of them, or the filtered kernels' dirs. */
static int select_top(struct export *ex, const struct tcfs_kernel_filter *f,
		      struct tcfs_node **out, size_t *n)
{
	struct tcfs_kernel *k;
	size_t nk, used = 0;
	int rc;

	if (!f)
		return tcfs_ns_list(ex->s, TCFS_ROOT_INO, 0, 0, out, n);
	rc = tcfs_kernel_list(ex->s, f, &k, &nk);
	if (rc < 0)
		return rc;
	*out = calloc(nk ? nk : 1, sizeof(**out));
	if (!*out) {
		free(k);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nk; i++) {
		struct tcfs_node d;

		/* Sorted by key: one dir per run of kernels. */
		if (i > 0 && k[i].dir_ino == k[i - 1].dir_ino)
			continue;
		rc = tcfs_ns_get(ex->s, k[i].dir_ino, &d);
		if (rc < 0)
			break;
		if (d.parent == TCFS_ROOT_INO)
			(*out)[used++] = d;
	}
	free(k);
	*n = used;
	if (rc < 0)
		free(*out);
	return rc;
}

static int print_summary(const struct export *ex, int json)
{
	char b[16];

	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "dest", ex->root);
		cJSON_AddNumberToObject(o, "kernels", (double)ex->kernels);
		cJSON_AddNumberToObject(o, "key_dirs", (double)ex->keydirs);
		cJSON_AddNumberToObject(o, "files", (double)ex->files);
		cJSON_AddNumberToObject(o, "bytes", (double)ex->bytes);
		cJSON_AddNumberToObject(o, "failed_key_dirs",
					(double)ex->failed);
		return cli_print_json(o);
	}
	printf("exported %llu kernels in %llu key dirs: %llu files, %s, to %s\n",
	       (unsigned long long)ex->kernels,
	       (unsigned long long)ex->keydirs, (unsigned long long)ex->files,
	       cli_human(ex->bytes, b, sizeof(b)), ex->root);
	if (ex->failed)
		printf("%llu key dirs not (completely) exported\n",
		       (unsigned long long)ex->failed);
	return CLI_OK;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_FILTER_LONGOPTS,
		{ "quiet", no_argument, NULL, 'q' },
		{ "binary-only", no_argument, NULL, 'B' },
		{ "flat", no_argument, NULL, 'F' },
		CLI_COMMON_LONGOPTS,
		{ 0 },
	};
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_kernel_filter f = { 0 };
	struct export ex = { 0 };
	struct tcfs_node *top = NULL;
	size_t ntop = 0;
	int c, quiet = 0, filtered = 0, flat = 0, destfd, rc;

	while ((c = getopt_long(argc, argv,
				"+" CLI_COMMON_SHORTOPTS CLI_FILTER_SHORTOPTS "q",
				opts, NULL)) != -1) {
		switch (cli_common_opt("export", help, c, &co, &rc)) {
		case 1:
			continue;
		case -1:
			return rc;
		}
		if (cli_filter_opt(c, &f)) {
			filtered = 1;
			continue;
		}
		switch (c) {
		case 'q':
			quiet = 1;
			break;
		case 'B':
			ex.filter = TCFS_GROUP_BINARY_ONLY;
			break;
		case 'F':
			flat = 1;
			break;
		default:
			return cli_usage_err("export", "bad option");
		}
	}
	if (optind + 1 != argc)
		return cli_usage_err("export", optind >= argc
						       ? "no destination given"
						       : "one destination only");
	if (flat)
		return export_flat_run(&co, filtered ? &f : NULL, ex.filter,
				       quiet, argv[optind]);
	rc = mkdir_p(argv[optind]);
	if (rc < 0 || !realpath(argv[optind], ex.root)) {
		cli_err("export", "%s: %s", argv[optind],
			strerror(rc < 0 ? -rc : errno));
		return CLI_FAIL;
	}
	destfd = open(ex.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (destfd < 0) {
		cli_err("export", "%s: %s", ex.root, strerror(errno));
		return CLI_FAIL;
	}
	if (cli_open_store("export", &co.store, 0, 0, &ex.s) != CLI_OK) {
		close(destfd);
		return CLI_FAIL;
	}
	rc = select_top(&ex, filtered ? &f : NULL, &top, &ntop);
	if (rc < 0)
		cli_lib_err("export", rc, tcfs_store_path(ex.s));
	for (size_t i = 0; rc == 0 && i < ntop; i++)
		export_top(&ex, destfd, &top[i]);
	free(top);
	close(destfd);
	if (rc == 0 && !quiet && print_summary(&ex, co.json) != CLI_OK)
		rc = -ENOMEM;
	tcfs_store_close(ex.s);
	return rc < 0 || ex.failed ? CLI_FAIL : CLI_OK;
}
