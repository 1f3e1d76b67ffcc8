/*
 * rows: the kinds that show the store's rows.  The store's own
 * (FS_KIND_STORE), binary-only/ (FS_KIND_BIN), a filter over it, and
 * .tcfs/kernels/ (FS_KIND_BROWSE), the tree that by-name/ and by-arch/
 * link into: the same operations (lookup.c, dir.c, file.c), each told by
 * the fs_ino it is given which kind it serves, so that what it hides,
 * renders and replies is that kind's (base.c).  Writes land in the one
 * tree the first two show; the browse tree has none (EROFS, ops.c), and
 * its lookups are no probes (lookup.c): someone browsing the cache never
 * changes the figures of the workload it measures.
 */
#include "kind.h"

/* Once binary-only/ is looked in, changes through either kind tell the
 * other (fs_changed). */
static void bin_lookup(fuse_req_t req, const struct fs_ino *parent,
		       const struct fs_name *nm)
{
	struct tcfs_fs *fs = fs_of(req);

	if (!atomic_load(&fs->bin_used))
		atomic_store(&fs->bin_used, 1);
	fs_row_lookup(req, parent, nm);
}

/* What every kind of row reads; the browse tree has nothing more. */
#define FS_ROW_READS(lookup_fn)			\
	.lookup = lookup_fn,			\
	.forget = fs_row_forget,		\
	.getattr = fs_row_getattr,		\
	.readlink = fs_row_readlink,		\
	.readdir = fs_row_readdir,		\
	.read = fs_row_read

#define FS_ROW_OPS(lookup_fn)			\
	{					\
		FS_ROW_READS(lookup_fn),	\
		.mkdir = fs_row_mkdir,		\
		.symlink = fs_row_symlink,	\
		.link = fs_row_link,		\
		.mknod = fs_row_mknod,		\
		.create = fs_row_create,	\
		.unlink = fs_row_unlink,	\
		.rmdir = fs_row_rmdir,		\
		.rename = fs_row_rename,	\
		.write = fs_row_write,		\
		.setattr = fs_row_setattr,	\
		.commit = fs_row_commit,	\
	}

const struct fs_kind_ops fs_store_ops = FS_ROW_OPS(fs_row_lookup);
const struct fs_kind_ops fs_bin_ops = FS_ROW_OPS(bin_lookup);
const struct fs_kind_ops fs_browse_ops = { FS_ROW_READS(fs_row_lookup) };
