/*
 * option: the remote's settings by the names people write them: the
 * mount's -o items (remote=URL, remote_NAME=VALUE) and the store's config
 * keys (remote, remote-NAME).  Both end in tcfs_remote_cfg_url and
 * tcfs_remote_cfg_set (config.h), where each setting is written once.
 */
#ifndef TCFS_REMOTE_OPTION_H
#define TCFS_REMOTE_OPTION_H

#include "index/remote/config.h"

/* Config key setting ("remote", or "remote-NAME" for remote_NAME) set to
 * value in c.  0, -ENOENT (no such setting), or -EINVAL with a message. */
int tcfs_remote_cfg_setting(struct tcfs_remote_cfg *c, const char *setting,
			    const char *value);

/* Takes the remote's items out of opts, a -o list (split at commas as
 * libfuse splits it: "\," is no split), into c (its defaults first);
 * *named says whether there were any, and *rest (owned by the caller,
 * free()) is the other items, in order.  A remote_* item with no
 * remote=URL is an error, as is a whole that tcfs_remote_cfg_check
 * refuses.  0, or -EINVAL with a message naming the item,
 * or -ENOMEM. */
int tcfs_remote_cfg_opts(struct tcfs_remote_cfg *c, const char *opts,
			 int *named, char **rest);

/* The i-th -o item of the remote, for help: remote=URL, then each
 * remote_NAME of tcfs_remote_cfg_doc.  Its name ("remote_ttl") into name
 * (len bytes), *arg and *help static.  0, or -ENOENT past the last. */
int tcfs_remote_opt_doc(size_t i, char *name, size_t len, const char **arg,
			const char **help);

#endif
