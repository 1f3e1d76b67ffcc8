/*
 * redis: the Redis engine's own settings, which it keeps in the cfg's
 * engine area (config.h): redis://[USER@]HOST[:PORT][/DB] and the
 * password of remote_auth_file.  The engine's functions are
 * tcfs_remote_redis (remote.h).
 */
#ifndef TCFS_REMOTE_REDIS_H
#define TCFS_REMOTE_REDIS_H

#include <stddef.h>

#include "index/remote/config.h"

#define TCFS_REMOTE_HOST_MAX 255
#define TCFS_REMOTE_USER_MAX 128

struct tcfs_redis_own {
	char host[TCFS_REMOTE_HOST_MAX + 1];
	int port;			/* default 6379 */
	int db;				/* SELECT; default 0 */
	char user[TCFS_REMOTE_USER_MAX + 1];	/* "" : AUTH with a
						 * password only */
	char pass[TCFS_REMOTE_SECRET_MAX + 1];	/* "" : no AUTH */
};

/* c's Redis settings (in c, not owned); c's engine must be Redis. */
static inline struct tcfs_redis_own *
tcfs_redis_own(struct tcfs_remote_cfg *c)
{
	return (struct tcfs_redis_own *)(void *)c->own;
}

static inline const struct tcfs_redis_own *
tcfs_redis_own_of(const struct tcfs_remote_cfg *c)
{
	return (const struct tcfs_redis_own *)(const void *)c->own;
}

/* The engine's parts of the cfg (see struct tcfs_remote_ops). */
void tcfs_redis_init(void *own);
int tcfs_redis_parse_url(void *own, const char *rest);
void tcfs_redis_url_of(const void *own, char *buf, size_t len);
int tcfs_redis_set(void *own, const char *name, const char *value);
extern const struct tcfs_remote_optdoc tcfs_redis_docs[];

#endif
