/*
 * redirect: -o redirect=NAME:DIR, the group files of kernel NAME rendered
 * with its metadata and binary read from DIR when DIR has them.
 *
 * AMD's aiter patches Triton's CompiledKernel so that, for a kernel name it
 * was given, NAME.json and NAME.hsaco come from a directory of the user's
 * instead of the cache.  A group file names every child by path, so the
 * mount can do the same for any program, unchanged: the two children point
 * into DIR.  Whether DIR has each file is asked at every rendering, never
 * kept, so a file copied into DIR (tcfs export --flat) counts at the next
 * probe, and one removed sends the reader back to the cache.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/model/group.h"
#include "index/base/name.h"
#include "index/base/vec.h"
#include "priv.h"

struct fs_redirect {
	char *name;		/* the kernel's name */
	char *dir;		/* absolute, resolved at mount */
};

struct fs_redirects {
	struct fs_redirect *v;
	size_t n, cap;
};

/* The children of kernel NAME that a redirect moves: its metadata and
 * its binary, as aiter reads them. */
static const char *const moved_suffix[] = { ".json", ".hsaco", ".cubin" };
#define MOVED (sizeof(moved_suffix) / sizeof(*moved_suffix))

/* Entries of DIR looked at for KEY dirs when it holds none of NAME's
 * files: the mount waits for the look, and DIR may be any size. */
#define KEYDIRS_SCAN_MAX 4096

void fs_redirects_free(struct fs_redirects *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].name);
		free(r->v[i].dir);
	}
	free(r->v);
	free(r);
}

static const struct fs_redirect *find(const struct fs_redirects *r,
				      const char *name)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (strcmp(r->v[i].name, name) == 0)
			return &r->v[i];
	return NULL;
}

/* NAME of "NAME:DIR" into name (TCFS_NAME_MAX + 1 bytes): one that a group
 * file __grp__NAME.json can carry.  0 or -EINVAL, with a message. */
static int parse_name(const char *spec, char *name)
{
	const char *colon = strchr(spec, ':');
	char grp[2 * TCFS_NAME_MAX];
	size_t len = colon ? (size_t)(colon - spec) : 0;

	if (!colon || len == 0 || !colon[1])
		return tcfs_err_set(-EINVAL, "-o redirect=%s: give NAME:DIR, "
				    "a kernel name and a directory", spec);
	if (len > TCFS_NAME_MAX)
		len = TCFS_NAME_MAX;	/* too long all the same */
	memcpy(name, spec, len);
	name[len] = '\0';
	snprintf(grp, sizeof(grp), "__grp__%s.json", name);
	if (tcfs_name_check(grp) < 0)
		return tcfs_err_set(-EINVAL, "-o redirect=%s: '%s' cannot be a "
				    "kernel name (no '/', at most %zu bytes)",
				    spec, name, (size_t)TCFS_NAME_MAX - 12);
	return 0;
}

/* DIR of "NAME:DIR" made absolute into dir (PATH_MAX bytes): a directory
 * there now, whose path group files can name, out of the mount's way.
 * 0 or -errno, with a message. */
static int parse_dir(const char *spec, const char *root, char *dir)
{
	const char *given = strchr(spec, ':') + 1;
	struct stat st;

	if (!realpath(given, dir) || stat(dir, &st) < 0)
		return tcfs_err_errno(-errno, "-o redirect=%s: %s", spec, given);
	if (!S_ISDIR(st.st_mode))
		return tcfs_err_set(-ENOTDIR, "-o redirect=%s: %s is not a "
				    "directory", spec, given);
	if (tcfs_group_root_ok(dir) < 0)
		return tcfs_err_set(-EILSEQ, "-o redirect=%s: %s is not valid "
				    "UTF-8, so group files could not name it",
				    spec, dir);
	/* The mount would hide it, and asking whether a file is there would
	 * be a request to this very daemon. */
	if (fs_lies_within(dir, root))
		return tcfs_err_set(-EINVAL, "-o redirect=%s: %s lies inside "
				    "the mount point %s", spec, dir, root);
	return 0;
}

int fs_redirects_add(struct fs_redirects **r, const char *spec,
		     const char *root)
{
	char name[TCFS_NAME_MAX + 1], dir[PATH_MAX];
	struct fs_redirect *e;
	int rc;

	rc = parse_name(spec, name);
	if (rc == 0)
		rc = parse_dir(spec, root, dir);
	if (rc < 0)
		return rc;
	if (find(*r, name))
		return tcfs_err_set(-EINVAL, "-o redirect=%s: kernel %s is "
				    "redirected twice", spec, name);
	if (!*r && !(*r = calloc(1, sizeof(**r))))
		return -ENOMEM;
	e = tcfs_vec_push(&(*r)->v, &(*r)->n, &(*r)->cap, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->name = strdup(name);
	e->dir = strdup(dir);
	/* A half-made entry matches no group file, and is freed with r. */
	return e->name && e->dir ? 0 : -ENOMEM;
}

size_t fs_redirects_count(const struct fs_redirects *r)
{
	return r ? r->n : 0;
}

const struct fs_redirect *fs_redirect_of(const struct fs_redirects *r,
					 const char *kernel)
{
	return find(r, kernel);
}

/* Whether dirfd holds, at sub/ (or itself: sub ""), a file of name's
 * that a redirect moves: a regular file, through symlinks, as a
 * rendering's look finds it. */
static int holds_moved(int dirfd, const char *sub, const char *name)
{
	char path[NAME_MAX + TCFS_NAME_MAX + 16];
	struct stat st;

	for (size_t i = 0; i < MOVED; i++) {
		snprintf(path, sizeof(path), "%s%s%s%s", sub, *sub ? "/" : "",
			 name, moved_suffix[i]);
		if (fstatat(dirfd, path, &st, 0) == 0 && S_ISREG(st.st_mode))
			return 1;
	}
	return 0;
}

/* The first dir below dirfd that holds a moved file of name's (a KEY dir
 * of tcfs export --flat, which puts a name several kernels share there)
 * into key; 0 when none is among the first KEYDIRS_SCAN_MAX entries. */
static int find_key_dir(int dirfd, const char *name, char *key, size_t len)
{
	int fd = dup(dirfd), found = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	for (size_t n = 0; !found && n < KEYDIRS_SCAN_MAX && (e = readdir(d));
	     n++) {
		if (e->d_name[0] == '.' || !holds_moved(dirfd, e->d_name, name))
			continue;
		snprintf(key, len, "%s", e->d_name);
		found = 1;
	}
	closedir(d);
	return found;
}

int fs_redirect_unmatched(const struct fs_redirects *r, size_t i, char *why,
			  size_t len)
{
	const struct fs_redirect *rd;
	char key[NAME_MAX + 1];
	int dirfd, matched, in_key;

	assert(r && i < r->n);
	rd = &r->v[i];
	dirfd = open(rd->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		snprintf(why, len, "redirect %s:%s: %s", rd->name, rd->dir,
			 strerror(errno));
		return 1;
	}
	matched = holds_moved(dirfd, "", rd->name);
	in_key = !matched && find_key_dir(dirfd, rd->name, key, sizeof(key));
	close(dirfd);
	if (matched)
		return 0;
	if (in_key)
		snprintf(why, len, "redirect %s:%s: no %s kernel in %s (it "
			 "holds KEY dirs of it, as tcfs export --flat writes a "
			 "name several kernels share: give redirect=%s:%s/KEY, "
			 "e.g. redirect=%s:%s/%s)", rd->name, rd->dir,
			 rd->name, rd->dir, rd->name, rd->dir, rd->name,
			 rd->dir, key);
	else
		snprintf(why, len, "redirect %s:%s: no %s kernel in %s (no "
			 "%s.json, %s.hsaco nor %s.cubin): it redirects "
			 "nothing until one is put there", rd->name, rd->dir,
			 rd->name, rd->dir, rd->name, rd->name, rd->name);
	return 1;
}

/* A rendering's look at DIR: the path it hands out, and the newest
 * change of the files it found there. */
struct look {
	const struct fs_redirect *rd;
	char path[PATH_MAX];
	int64_t newest_ns;	/* -1: nothing found */
};

/* tcfs_group_path_fn: DIR/CHILD when CHILD is NAME.json or NAME's binary
 * and DIR has it (a regular file, through symlinks, as Triton's
 * os.path.exists sees it), else NULL. */
static const char *look_in_dir(void *ctx, const char *child)
{
	struct look *l = ctx;
	size_t n = strlen(l->rd->name);
	struct stat st;
	int moved = 0;
	int64_t ns;

	if (strncmp(child, l->rd->name, n) != 0)
		return NULL;
	for (size_t i = 0; i < MOVED; i++)
		moved |= strcmp(child + n, moved_suffix[i]) == 0;
	if (!moved ||
	    (size_t)snprintf(l->path, sizeof(l->path), "%s/%s", l->rd->dir,
			     child) >= sizeof(l->path) ||
	    stat(l->path, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	if (ns > l->newest_ns)
		l->newest_ns = ns;
	return l->path;
}

int fs_redirect_render(const struct fs_redirect *rd, const char *tmpl,
		       size_t len, const char *root, const char *key,
		       enum tcfs_group_filter f, char **out, size_t *olen,
		       int64_t *mtime_ns)
{
	struct look l = { .rd = rd, .newest_ns = -1 };
	int rc;

	assert(rd && rd->dir[0] == '/');
	rc = tcfs_group_render_with(tmpl, len, root, key, f, look_in_dir, &l,
				    out, olen);
	/* The kernel keeps a file's pages while its size and mtime stay
	 * (the probe's lookup brings both): a rendering that names DIR must
	 * show a time of its own, or a reader might get the bytes of the
	 * last one.  A file's ctime changes whenever it is put in DIR,
	 * copied or renamed; past the group file's own time, so that taking
	 * every file out of DIR changes it too. */
	if (rc == 0 && mtime_ns && l.newest_ns >= 0)
		*mtime_ns = (l.newest_ns > *mtime_ns ? l.newest_ns : *mtime_ns) +
			    1;
	return rc;
}
