/*
 * config: how the mount reaches its remote tier, and what it accepts from
 * it.  Filled from a URL (redis://[USER@]HOST[:PORT][/DB]) and the mount's
 * remote_* options (or the store's config keys of the same meaning), then
 * handed to tcfs_remote_open.  Secrets (the password, the HMAC key) are
 * read from files only, never taken from a command line: a file that
 * another user could read or write is refused.
 */
#ifndef TCFS_REMOTE_CONFIG_H
#define TCFS_REMOTE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* What is published of a kernel that lands here. */
enum tcfs_remote_publish {
	TCFS_PUBLISH_BINARY,	/* no IR, as binary-only/ shows (default) */
	TCFS_PUBLISH_ALL,	/* every file of the group */
	TCFS_PUBLISH_OFF,	/* a read-only node */
};

/* What is accepted from the remote. */
enum tcfs_remote_trust {
	TCFS_TRUST_CHECKED,	/* a sidecar whose sizes and SHA-256 match
				 * (default) */
	TCFS_TRUST_ANY,		/* also stock Triton's groups, with no
				 * sidecar: only their bounds are checked */
	TCFS_TRUST_SIGNED,	/* a sidecar with a valid HMAC-SHA256 */
};

/* Whether Inductor's and vLLM's entries (pickles: code, once read) go
 * through the tier, both ways. */
enum tcfs_remote_inductor {
	TCFS_INDUCTOR_OFF,	/* never (default) */
	TCFS_INDUCTOR_SIGNED,	/* only entries whose sidecar carries a
				 * valid HMAC (needs remote_key_file) */
	TCFS_INDUCTOR_ANY,	/* also unsigned ones, and what stock
				 * PyTorch wrote: as safe as PyTorch's own
				 * remote cache, which is not at all */
};

#define TCFS_REMOTE_HOST_MAX 255
#define TCFS_REMOTE_USER_MAX 128
#define TCFS_REMOTE_SECRET_MAX 512
#define TCFS_REMOTE_KEYFMT_MAX 512

struct tcfs_remote_cfg {
	char host[TCFS_REMOTE_HOST_MAX + 1];
	int port;			/* default 6379 */
	int db;				/* SELECT; default 0 */
	char user[TCFS_REMOTE_USER_MAX + 1];	/* "" : AUTH with a
						 * password only */
	char pass[TCFS_REMOTE_SECRET_MAX + 1];	/* "" : no AUTH */
	char key_format[TCFS_REMOTE_KEYFMT_MAX + 1];	/* keyfmt.h */
	unsigned char hmac_key[TCFS_REMOTE_SECRET_MAX];
	size_t hmac_len;		/* 0: no key (nothing is signed) */
	int connect_ms;			/* default 50 */
	int io_ms;			/* per reply; default 200 */
	int budget_ms;			/* per probe, all calls; default 500 */
	int breaker_fails;		/* failures in a row; default 3 */
	int breaker_open_ms;		/* default 30000 */
	int miss_ttl_ms;		/* a remote miss remembered; 30000 */
	int conns;			/* connections at most, so callers
					 * that may wait at once; default 4 */
	enum tcfs_remote_publish publish;
	enum tcfs_remote_trust trust;
	int modules;			/* fetch launcher .so files (code
					 * every node dlopens); default 0 */
	enum tcfs_remote_inductor inductor;
	int64_t ttl_s;			/* EXPIRE of what is published;
					 * 0: none */
	uint64_t file_max;		/* bytes of one value; 64 MiB */
	uint64_t kernel_max;		/* bytes of one kernel; 256 MiB */
	int queue_max;			/* publish queue; default 1024 */
};

/* The defaults above, no host. */
void tcfs_remote_cfg_init(struct tcfs_remote_cfg *c);

/* Sets host, port, user and db from redis://[USER@]HOST[:PORT][/DB]
 * (HOST may be [v6addr]).  A password in the URL is refused: it would be
 * seen in ps and in fstab.  0, or -EINVAL with a message (err.h). */
int tcfs_remote_cfg_url(struct tcfs_remote_cfg *c, const char *url);

/* Sets one option by its mount-option name without the "remote_" prefix:
 * key_format, auth_file, key_file, publish (all|binary|off), trust
 * (any|checked|signed), modules (on|off), inductor (off|signed|any), ttl
 * (seconds), connect_timeout and timeout (ms), budget (ms), breaker (FAILS
 * or FAILS:MS), miss_ttl (ms), conns, file_max, kernel_max (bytes, with K/M/G).  auth_file and
 * key_file are read now (tcfs_remote_read_secret).  0, -ENOENT for a name
 * that is not an option, or -EINVAL with a message naming it. */
int tcfs_remote_cfg_set(struct tcfs_remote_cfg *c, const char *name,
			const char *value);

/* Whether c, its settings all given, makes sense as a whole: 0, or
 * -EINVAL with a message (remote_trust=signed with no remote_key_file,
 * which would refuse every kernel). */
int tcfs_remote_cfg_check(const struct tcfs_remote_cfg *c);

/* Reads a secret of 1 to len bytes from path (one trailing newline
 * dropped) into buf, *n its length.  The file must be a regular file owned
 * by the caller's euid (or root) with no permission for group or others
 * (0600 or 0400), opened without following a link.  0 or -errno with a
 * message naming the file and what is wrong with it. */
int tcfs_remote_read_secret(const char *path, unsigned char *buf,
			    size_t len, size_t *n);

/* The URL again, for messages and status: no secret in it. */
void tcfs_remote_cfg_url_of(const struct tcfs_remote_cfg *c, char *buf,
			    size_t len);

#endif
