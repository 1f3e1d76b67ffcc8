/*
 * base: what every layer of the mount shares and that calls nothing above
 * it: a request's names classified, what each kind of row shows of the
 * store (binary-only/ hides the IR), the other kind told of a change,
 * and where a path lies.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ino.h"
#include "priv.h"

void fs_name_of(struct fs_name *nm, const char *s)
{
	nm->s = s;
	nm->apart = 0;	/* users.c's route says otherwise */
	nm->temp = tcfs_name_is_temp(s, 0);
	nm->art = tcfs_name_artifact(s);
	nm->landing = tcfs_name_landing(s);
	nm->entry = tcfs_entry_named(s);
	nm->group = tcfs_name_group_kernel(s, nm->kernel, sizeof(nm->kernel));
	if (!nm->group)
		nm->kernel[0] = '\0';
}

int fs_name_uncached(const struct fs_name *nm)
{
	/* Triton 3.0/3.1 write FILE.tmp.pid_* and rename it onto FILE; a
	 * name that is another entry for another user is cached for none. */
	if (nm->temp || nm->apart)
		return 1;
	return nm->entry && !tcfs_probe_kind(nm->entry)->cached;
}

int fs_probe_name(const char *name)
{
	struct fs_name nm;

	fs_name_of(&nm, name);
	return fs_name_uncached(&nm);
}

int fs_shows_binary_only(const struct tcfs_fs *fs, enum fs_kind kind)
{
	return kind == FS_KIND_BIN || fs->binary_only;
}

const char *fs_root_of(const struct tcfs_fs *fs, enum fs_kind kind)
{
	return kind == FS_KIND_BIN ? fs->bin_root : fs->root;
}

double fs_kind_ttl(enum fs_kind kind)
{
	/* The browse tree is never on Triton's path, and nothing tells the
	 * kernel when the root's rows change under it: it asks each time. */
	return kind == FS_KIND_BROWSE ? 0 : FS_TTL;
}

int fs_hides(const struct tcfs_fs *fs, enum fs_kind kind,
	     const struct fs_name *nm)
{
	return fs_shows_binary_only(fs, kind) && nm->art == TCFS_ART_IR;
}

int fs_drops(const struct tcfs_fs *fs, const struct fs_name *nm)
{
	return fs->store_binary_only && nm->landing == TCFS_ART_IR;
}

enum tcfs_group_filter fs_store_filter(const struct tcfs_fs *fs)
{
	return fs->store_binary_only ? TCFS_GROUP_BINARY_ONLY : TCFS_GROUP_ALL;
}

enum tcfs_group_filter fs_filter(const struct tcfs_fs *fs, enum fs_kind kind)
{
	return fs_shows_binary_only(fs, kind) ? TCFS_GROUP_BINARY_ONLY
					      : TCFS_GROUP_ALL;
}

void fs_changed(struct tcfs_fs *fs, uint64_t parent, enum fs_kind kind,
		const char *name)
{
	enum fs_kind other = kind == FS_KIND_BIN ? FS_KIND_STORE : FS_KIND_BIN;

	if (atomic_load(&fs->bin_used))
		fs_events_inval(fs, fs_ino_make(other, parent), name);
}

mode_t fs_type(enum tcfs_kind kind)
{
	switch (kind) {
	case TCFS_DIR:
		return S_IFDIR;
	case TCFS_SYMLINK:
		return S_IFLNK;
	default:
		return S_IFREG;
	}
}

/* The rest of path, below its nearest existing ancestor, is taken as it
 * is. */
int fs_lies_within(const char *path, const char *root)
{
	char buf[PATH_MAX], real[PATH_MAX];
	size_t n = strlen(root);
	char *cut;

	snprintf(buf, sizeof(buf), "%s", path);
	while (!realpath(buf, real)) {
		cut = strrchr(buf, '/');
		if (!cut)
			snprintf(buf, sizeof(buf), ".");
		else if (cut == buf)
			buf[1] = '\0';
		else
			*cut = '\0';
	}
	return strncmp(real, root, n) == 0 &&
	       (real[n] == '\0' || real[n] == '/' || n == 1);
}
