/*
 * tcfs export: write the store out as a plain Triton cache.
 *
 * Every file is written under a temporary name and renamed into place, and
 * a key dir's group files come last, as Triton itself writes: a Triton
 * already using DEST never sees half a kernel.  Blobs are verified while
 * they are copied; a kernel with a damaged blob gets no group file, so
 * Triton recompiles it instead of loading wrong bytes.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "export_flat.h"
#include "progress.h"
#include "index/base/text.h"
#include "index/blob/cas.h"
#include "index/base/err.h"
#include "index/model/group.h"
#include "index/base/io.h"
#include "index/model/kernel.h"
#include "index/tree/ns.h"
#include "index/store/store.h"
#include "index/tree/walk.h"

/* Dirs open at once: DEST and the walk's (walk.c) below it. */
#define EXPORT_DEPTH_MAX 24

struct export {
	struct tcfs_store *s;
	char root[PATH_MAX];	/* DEST made absolute: group files name it */
	uint64_t kernels, keydirs, files, bytes, failed;
	enum tcfs_group_filter filter;	/* --binary-only: no IR */
	int dirfd[EXPORT_DEPTH_MAX];	/* DEST, then each dir entered */
	int depth;
	int64_t user;		/* --user: with that user's own kernels;
				 * -1: the shared ones only */
};

static const struct opt_cmd cmd = {
	"export", "DEST", 1, 1, "no destination given",
	"Writes the store (or the kernels the filters select) to DEST as a\n"
	"plain Triton cache that real Triton uses: every file byte for byte,\n"
	"except group files, whose child paths point into DEST.  DEST is\n"
	"created if missing; files already there are replaced atomically.\n"
	"Nothing is written through a symlink under DEST: a key dir or file\n"
	"there that is one is refused, naming it.  setuid, setgid, sticky and\n"
	"world-writable bits are not exported.\n"
	"Without filters everything is exported, module (.so) and autotune\n"
	"dirs included; with filters only the kernels that match all of them.\n",
	NULL,
	"Exit status: 0 all exported, 1 something was not (a damaged blob,\n"
	"an I/O error: see the errors), 2 usage error.\n",
};

/* A DEST entry that is a symlink is never written through or replaced:
 * whoever planted it meant export to write elsewhere. */
static int refuse_symlink(struct export *ex, int dirfd, const char *name,
			  const char *path)
{
	char shown[2 * PATH_MAX + 2];

	snprintf(shown, sizeof(shown), "%s/%s", ex->root, path);
	return tcfs_io_refuse_symlink(dirfd, name, shown);
}

/* The directory being written: the innermost one entered. */
static int cur_dir(const struct export *ex)
{
	assert(ex->depth > 0);
	return ex->dirfd[ex->depth - 1];
}

static int sink_enter(void *ctx, const char *path, const struct tcfs_node *n)
{
	struct export *ex = ctx;
	int parent = cur_dir(ex), fd, rc;

	if (ex->depth >= EXPORT_DEPTH_MAX)
		return tcfs_err_set(-ELOOP, "%s: nested too deep", path);
	if (mkdirat(parent, n->name, 0700) < 0 && errno != EEXIST)
		return tcfs_err_errno(-errno, "%s/%s", ex->root, path);
	fd = tcfs_io_open_beneath(parent, n->name,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 1);
	if (fd == -ELOOP || fd == -ENOTDIR) {
		rc = refuse_symlink(ex, parent, n->name, path);
		if (rc < 0)
			return rc;
	}
	if (fd < 0)
		return tcfs_err_errno(fd, "%s/%s", ex->root, path);
	ex->dirfd[ex->depth++] = fd;
	return 0;
}

/* The tree is written; now the directory may look as stored. */
static int sink_leave(void *ctx, const char *path, const struct tcfs_node *n,
		      int rc)
{
	struct export *ex = ctx;
	struct timespec times[2] = { { 0, UTIME_OMIT },
				     { n->mtime_ns / 1000000000,
				       n->mtime_ns % 1000000000 } };
	int fd = ex->dirfd[--ex->depth];

	if ((fchmod(fd, tcfs_ns_portable_mode(n->mode)) < 0 ||
	     futimens(fd, times) < 0) &&
	    rc == 0)
		rc = tcfs_err_errno(-errno, "%s/%s", ex->root, path);
	close(fd);
	return rc;
}

static int sink_file(void *ctx, const char *path, const char *keydir,
		     const struct tcfs_node *n, const char *bytes, size_t len)
{
	struct export *ex = ctx;
	int dirfd = cur_dir(ex), rc;
	char *r = NULL;
	size_t rlen = 0;

	rc = refuse_symlink(ex, dirfd, n->name, path);
	if (rc < 0)
		return rc;
	if (n->fmt == TCFS_FMT_GROUP) {
		rc = tcfs_group_render(bytes, len, ex->root, keydir, ex->filter,
				       &r, &rlen);
		if (rc < 0)
			return tcfs_err_errno(rc, "%s", path);
		bytes = r;
		len = rlen;
	}
	rc = tcfs_io_put_at(dirfd, n->name, bytes, len,
			    tcfs_ns_portable_mode(n->mode), n->mtime_ns);
	free(r);
	if (rc < 0)
		return tcfs_err_errno(rc, "%s/%s", ex->root, path);
	ex->files++;
	ex->bytes += len;
	ex->kernels += tcfs_name_artifact(n->name) == TCFS_ART_GROUP;
	return 0;
}

/* A symlink is written as one: made under a temp name, exclusively (a
 * symlink is never followed by its own creation), then renamed over
 * name, which replaces whatever was there without writing through it. */
static int sink_symlink(void *ctx, const char *path, const struct tcfs_node *n,
			const char *target)
{
	struct export *ex = ctx;
	int dirfd = cur_dir(ex), rc;
	char tmp[64];

	do {
		rc = tcfs_io_temp_name(tmp, sizeof(tmp));
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

static void sink_error(void *ctx, const char *path, int rc)
{
	(void)ctx;
	cli_lib_err("export", rc, path);
}

static const struct tcfs_walk_sink dir_sink = {
	sink_enter, sink_leave, sink_file, sink_symlink, sink_error,
};

static uint64_t own_dir(struct export *ex);

/* Exports one entry of the root: a key dir (or, unfiltered, a stray file). */
static void export_top(struct export *ex, int destfd, const struct tcfs_node *n)
{
	struct tcfs_walk w = { ex->s, ex->filter, &dir_sink, ex };

	/* A user's own kernels are theirs alone, but with --user. */
	if (tcfs_name_private(n->name, NULL) ||
	    (n->parent != own_dir(ex) && !tcfs_walk_shared(ex->s, n)))
		return;
	ex->dirfd[0] = destfd;
	ex->depth = 1;
	if (tcfs_walk(&w, n, n->name) < 0) {
		ex->failed++;
		return;
	}
	ex->keydirs += n->kind == TCFS_DIR;
}

/* With --user U, the dir of U's own key dirs at the root (fs/users.c),
 * exported as if they were at the root: the cache as U sees it. */
static uint64_t own_dir(struct export *ex)
{
	char name[sizeof(TCFS_NAME_PRIVATE_PREFIX) + 24];
	struct tcfs_node d;

	if (ex->user < 0)
		return 0;
	snprintf(name, sizeof(name), TCFS_NAME_PRIVATE_PREFIX "%lld",
		 (long long)ex->user);
	return tcfs_ns_lookup(ex->s, TCFS_ROOT_INO, name, &d) == 0 ? d.ino : 0;
}

/* The root's entries, with U's own key dirs in place of shared ones of
 * the same name. */
static int root_entries(struct export *ex, uint64_t own,
			struct tcfs_node **out, size_t *n)
{
	struct tcfs_node *mine = NULL, *all, x;
	size_t nmine = 0, used = 0;
	int rc = tcfs_ns_list(ex->s, TCFS_ROOT_INO, 0, 0, out, n);

	if (rc < 0 || !own)
		return rc;
	rc = tcfs_ns_list(ex->s, own, 0, 0, &mine, &nmine);
	all = rc < 0 ? NULL : realloc(*out, (*n + nmine + 1) * sizeof(**out));
	if (!all) {
		free(mine);
		return rc < 0 ? rc : -ENOMEM;
	}
	for (size_t i = 0; i < *n; i++)
		if (tcfs_ns_lookup(ex->s, own, all[i].name, &x) != 0)
			all[used++] = all[i];
	memcpy(all + used, mine, nmine * sizeof(*mine));
	free(mine);
	*out = all;
	*n = used + nmine;
	return 0;
}

/* The root entries to export: all of them, or the filtered kernels' dirs. */
static int select_top(struct export *ex, const struct tcfs_kernel_filter *f,
		      struct tcfs_node **out, size_t *n)
{
	uint64_t own = own_dir(ex);
	struct tcfs_kernel *k;
	size_t nk, used = 0;
	int rc;

	if (!f)
		return root_entries(ex, own, out, n);
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
		if ((d.parent == TCFS_ROOT_INO && k[i].shared) ||
		    (own && d.parent == own))
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
	printf("exported %llu %s in %llu %s: %llu %s, %s, to %s\n",
	       (unsigned long long)ex->kernels, TCFS_NOUN(ex->kernels, "kernel"),
	       (unsigned long long)ex->keydirs,
	       TCFS_NOUN(ex->keydirs, "key dir"),
	       (unsigned long long)ex->files, TCFS_NOUN(ex->files, "file"),
	       cli_human(ex->bytes, b, sizeof(b)), ex->root);
	if (ex->failed)
		printf("%llu %s not (completely) exported\n",
		       (unsigned long long)ex->failed,
		       TCFS_NOUN(ex->failed, "key dir"));
	return CLI_OK;
}

/* Exports what f selects (all when NULL) into dest. */
static int run(const struct cli_common *co, const struct tcfs_kernel_filter *f,
	       enum tcfs_group_filter filter, int quiet, const char *dest,
	       int64_t user)
{
	struct export ex = { .filter = filter, .user = user };
	struct progress prog;
	struct tcfs_node *top = NULL;
	size_t ntop = 0;
	int destfd, rc;

	rc = tcfs_io_mkdirs(dest);
	if (rc < 0 || !realpath(dest, ex.root)) {
		cli_err("export", "%s: %s", dest, strerror(rc < 0 ? -rc : errno));
		return CLI_FAIL;
	}
	destfd = open(ex.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (destfd < 0) {
		cli_err("export", "%s: %s", ex.root, strerror(errno));
		return CLI_FAIL;
	}
	if (cli_open_store("export", &co->store, 0, 0, &ex.s) != CLI_OK) {
		close(destfd);
		return CLI_FAIL;
	}
	progress_init(&prog, "exporting", "key dirs", quiet);
	rc = select_top(&ex, f, &top, &ntop);
	if (rc < 0)
		cli_lib_err("export", rc, tcfs_store_path(ex.s));
	for (size_t i = 0; rc == 0 && i < ntop; i++) {
		progress_tick(&prog, i, ntop);
		export_top(&ex, destfd, &top[i]);
	}
	progress_end(&prog);
	free(top);
	close(destfd);
	if (rc == 0 && !quiet && print_summary(&ex, co->json) != CLI_OK)
		rc = -ENOMEM;
	tcfs_store_close(ex.s);
	return rc < 0 || ex.failed ? CLI_FAIL : CLI_OK;
}

int cmd_export(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_kernel_filter f = { 0 };
	const struct tcfs_kernel_filter *sel;
	int quiet = 0, binary_only = 0, flat = 0, rc;
	enum tcfs_group_filter filter;
	int64_t user = -1;
	char **args;
	struct opt opts[] = {
		CLI_OPTS_FILTER(&f),
		OPT_FN('u', "user", "USER", &user, cli_opt_user,
		       "on a cache many users share: that user's own kernels "
		       "too, in place of shared ones of the same key (by "
		       "default only the shared ones)"),
		OPT_FLAG(0, "binary-only", &binary_only, "leave IR files (.ttir "
			 ".ttgir .llir .ptx .amdgcn) out, and out of the group "
			 "files"),
		OPT_FLAG(0, "flat", &flat, "instead, per kernel DEST/NAME.json "
			 "and its binary (NAME.hsaco or NAME.cubin), byte for "
			 "byte, as AMD aiter's redirect and tcfs mount -o "
			 "redirect=NAME:DEST read them; a name that several "
			 "selected kernels share goes to DEST/KEY/NAME.* for "
			 "each (none at the top), and the summary lists those "
			 "KEY dirs"),
		CLI_OPT_QUIET(&quiet),
		CLI_OPTS_COMMON(&co, "print the summary as JSON"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	filter = binary_only ? TCFS_GROUP_BINARY_ONLY : TCFS_GROUP_ALL;
	sel = f.name || f.backend || f.arch ? &f : NULL;
	if (flat && user >= 0)
		return cli_usage_err("export", "--flat takes no --user");
	if (flat)
		return export_flat_run(&co, sel, filter, quiet, args[0]);
	return run(&co, sel, filter, quiet, args[0], user);
}
