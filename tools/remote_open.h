/*
 * remote_open: a command's remote, as tcfs remote and tcfs why --remote
 * name it: -o's options (as tcfs mount -o takes them), else the store's.
 */
#ifndef TCFS_TOOLS_REMOTE_OPEN_H
#define TCFS_TOOLS_REMOTE_OPEN_H

struct tcfs_remote;
struct tcfs_remote_cfg;
struct tcfs_store;

/* OPT_FN's function for -o: may come again, the lists joined as mount(8)
 * joins them.  value is a const char ** (the joined text lives until the
 * command exits). */
const char *remote_open_join(void *value, const char *arg);

/* Opens the remote opts (-o's, NULL without) or else s's configuration
 * names into *r (owned: tcfs_remote_close), cfg filled (the caller wipes
 * it: it may hold a key).  CLI_OK, or the exit status with the cause on
 * stderr under cmd's name. */
int remote_open(const char *cmd, const char *opts, struct tcfs_store *s,
		struct tcfs_remote_cfg *cfg, struct tcfs_remote **r);

#endif
