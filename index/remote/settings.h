/*
 * settings: the remote a store names (tcfs config remote URL, and the
 * remote-* settings beside it), as a tcfs_remote_cfg: what a mount with no
 * -o remote, and tcfs remote, use.
 */
#ifndef TCFS_REMOTE_SETTINGS_H
#define TCFS_REMOTE_SETTINGS_H

#include "index/remote/config.h"

struct tcfs_store;

/* Fills c (its defaults first) from the store's settings; *named says
 * whether the store names a remote (config remote).  0, or -errno with a
 * message naming the setting (a secret file no longer 0600, say). */
int tcfs_remote_cfg_from_store(struct tcfs_store *s, struct tcfs_remote_cfg *c,
			       int *named);

#endif
