/* report: the bytes of the .tcfs/ files, index/model/report.h's into memory,
 * and whose processes each requester may see in them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "index/model/report.h"
#include "priv.h"

int64_t fs_report_viewer(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (ctx->uid == 0 || ctx->uid == fs_of(req)->uid)
		return TCFS_EVENT_ALL_USERS;
	return (int64_t)ctx->uid;
}

int fs_report_render(struct tcfs_fs *fs, enum fs_view_file f, int64_t viewer,
		     char **bytes, size_t *len)
{
	struct tcfs_report_daemon d = {
		atomic_load(&fs->requests),
		fs->start_ns,
	};
	FILE *out = open_memstream(bytes, len);
	int rc;

	if (!out)
		return -errno;
	if (f == FS_VIEW_METRICS)
		rc = tcfs_report_metrics(fs->store, &d, out);
	else
		rc = tcfs_report_stats(fs->store, 0, fs->root, viewer,
				       f == FS_VIEW_STATS_JSON, out, NULL);
	if (fclose(out) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(*bytes);
		*bytes = NULL;
	}
	return rc;
}
