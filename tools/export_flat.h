/*
 * export_flat: tcfs export --flat, each kernel's metadata and binary as
 * plain files in one directory, where AMD aiter's Triton redirect (and
 * tcfs mount -o redirect) reads them.
 */
#ifndef TCFS_EXPORT_FLAT_H
#define TCFS_EXPORT_FLAT_H

#include "cli.h"
#include "index/model/group.h"

struct tcfs_kernel_filter;

/* Writes DEST/NAME.json and DEST/NAME.hsaco or .cubin for every kernel f
 * selects (NULL: all of them), or DEST/KEY/NAME.* for the kernels whose
 * name other selected kernels share.  co gives the store and --json;
 * filter is export's --binary-only, which --flat refuses.  Returns the
 * exit code (cli.h), having reported every error on stderr. */
int export_flat_run(const struct cli_common *co,
		    const struct tcfs_kernel_filter *f,
		    enum tcfs_group_filter filter, int quiet, const char *dest);

#endif
