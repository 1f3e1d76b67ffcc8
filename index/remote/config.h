/*
 * config: how the mount reaches its remote tier, and what it accepts from
 * it.  Filled from a URL (SCHEME://REST: the scheme picks the engine from
 * one table, config.c's engines; only redis:// today) and the mount's
 * remote_* options (or the store's config keys of the same meaning), then
 * handed to tcfs_remote_open.  What every engine shares is kept here; what
 * one engine alone needs (Redis: host, port, db, user, password) is its
 * own, kept in the cfg's engine area, which only the engine reads.
 * Secrets (the password, the HMAC key) are read from files only, never
 * taken from a command line: a file that another user could read or
 * write is refused.
 */
#ifndef TCFS_REMOTE_CONFIG_H
#define TCFS_REMOTE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct tcfs_remote_ops;

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

#define TCFS_REMOTE_SECRET_MAX 512
/* Room for an engine's own settings (Redis needs about 900 bytes). */
#define TCFS_REMOTE_OWN_MAX 2048
#define TCFS_REMOTE_KEYFMT_MAX 512

struct tcfs_remote_cfg {
	const struct tcfs_remote_ops *engine;	/* the URL's scheme's */
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
	/* The engine's own settings: opaque here, laid out by the engine
	 * (redis.h), aligned for any type it may hold. */
	_Alignas(max_align_t) unsigned char own[TCFS_REMOTE_OWN_MAX];
};

/* The defaults above, the first engine's (Redis) with its defaults, no
 * host. */
void tcfs_remote_cfg_init(struct tcfs_remote_cfg *c);

/* Picks the engine of url's scheme (SCHEME://REST) and has it parse REST:
 * Redis takes redis://[USER@]HOST[:PORT][/DB] (HOST may be [v6addr]) and
 * refuses a password in it (ps and fstab would show it).  The engine's
 * settings not in the URL (a password) are kept when the engine stays the
 * same.  0, or -EINVAL with a message (err.h), c unchanged: an unknown
 * scheme, or none, is named with the schemes known. */
int tcfs_remote_cfg_url(struct tcfs_remote_cfg *c, const char *url);

/* Sets one option by its mount-option name without the "remote_" prefix:
 * key_format, auth_file, key_file, publish (all|binary|off), trust
 * (any|checked|signed), modules (on|off), inductor (off|signed|any), ttl
 * (seconds), connect_timeout and timeout (ms), budget (ms), breaker (FAILS
 * or FAILS:MS), miss_ttl (ms), conns, file_max, kernel_max (bytes, with
 * K/M/G); then any name the engine knows (Redis: auth_file).  auth_file
 * and key_file are read now (tcfs_remote_read_secret).  0, -ENOENT for a
 * name that is not an option, or -EINVAL with a message naming it. */
int tcfs_remote_cfg_set(struct tcfs_remote_cfg *c, const char *name,
			const char *value);

/* One remote_NAME option, for help: NAME ("ttl"), the form of its value
 * ("SECS") and one sentence on what it does. */
struct tcfs_remote_optdoc {
	const char *name, *arg, *help;
};

/* The i-th remote_NAME option tcfs_remote_cfg_set takes, those of every
 * engine first, then each engine's own; NULL past the last.  Static: not
 * owned by the caller. */
const struct tcfs_remote_optdoc *tcfs_remote_cfg_doc(size_t i);

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

/* The URL again, as c's engine renders it, for messages and status: no
 * secret in it. */
/* Strict decimal: digits only (no sign, space or base prefix), s n
 * bytes, at most max.  0, or -EINVAL (no message). */
int tcfs_remote_parse_u64(const char *s, size_t n, uint64_t max,
			  uint64_t *out);

void tcfs_remote_cfg_url_of(const struct tcfs_remote_cfg *c, char *buf,
			    size_t len);

#endif
