/*
 * remote: a second tier of kernels behind the local store, shared by a
 * fleet.  Knows nothing of FUSE nor of the store; the engine behind it
 * (Redis, redis.c) fills a small table of functions, so that another (an
 * S3 bucket, an OCI registry) could be a second table.
 *
 * Never a stall: every call is bounded by the engine's connect and reply
 * timeouts, and a fetch as a whole by its budget (every read of it); at most cfg.conns callers use the remote at once (a caller
 * that finds every connection busy gets -EBUSY at once, never waits); and
 * a circuit breaker stops asking a remote that failed cfg.breaker_fails
 * times in a row, for cfg.breaker_open_ms, then lets one caller try again
 * (half-open).  All functions are safe to call from any thread.
 *
 * Errors: -ENOENT (absent), -EBUSY (no connection free), -EAGAIN (breaker
 * open), -ETIMEDOUT, -ECONNREFUSED, -EPROTO (an answer that is not the
 * protocol's), -EACCES (refused: wrong password, ACL), -EFBIG (over a
 * bound), -EBADMSG (bytes refused by a check), -EREMOTEIO (another error
 * reply: READONLY, OOM, LOADING...), and a connection's own (-ECONNRESET,
 * -EHOSTUNREACH...), with a message (err.h).
 */
#ifndef TCFS_REMOTE_H
#define TCFS_REMOTE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "index/remote/config.h"
#include "index/remote/wire.h"

struct tcfs_remote;

/* One key and value to put (not owned). */
struct tcfs_remote_kv {
	const char *key;
	const void *val;
	size_t len;
};

/* An engine.  conn is the engine's own connection (one per caller at a
 * time: never shared by two threads at once).  Each call is bounded by
 * cfg's timeouts and by the deadline last given (until_ns, monotonic;
 * 0: none), which bounds every read and write of the call as a whole,
 * whatever sizes the peer claims; an error other than -ENOENT or -EFBIG
 * leaves the connection to be closed. */
struct tcfs_remote_ops {
	const char *scheme;	/* "redis": URLs of it are this engine's */
	/* The engine's settings (own: the cfg's engine area, config.h), to
	 * its defaults; from the URL after "SCHEME://" (0, or -EINVAL with a
	 * message, own as it was); back as a URL with no secret; and one
	 * remote_NAME option of the engine's own (-ENOENT: not one). */
	void (*init)(void *own);
	int (*parse_url)(void *own, const char *rest);
	void (*url_of)(const void *own, char *buf, size_t len);
	int (*set)(void *own, const char *name, const char *value);
	/* What set takes, for help; ends with a NULL name. */
	const struct tcfs_remote_optdoc *docs;
	/* Connects and logs in, within connect_ms and until_ns. */
	int (*connect)(const struct tcfs_remote_cfg *cfg, int64_t until_ns,
		       void **conn);
	/* The deadline of the calls to come on conn. */
	void (*until)(void *conn, int64_t until_ns);
	void (*close)(void *conn);
	/* sizes[i]: the length of keys[i]'s value, -1 when absent. */
	int (*sizes)(void *conn, const char *const *keys, size_t n,
		     int64_t *sizes);
	/* vals[i]: keys[i]'s value (malloc'd; caller frees) or NULL when
	 * absent; lens[i] its length.  A value longer than max is -EFBIG
	 * for the whole call (nothing returned). */
	int (*get)(void *conn, const char *const *keys, size_t n,
		   uint64_t max, char **vals, size_t *lens);
	/* kv[0 .. n - natomic) set one by one (pipelined), then the last
	 * natomic in one MULTI/EXEC; each with EXPIRE ttl_s when > 0. */
	int (*put)(void *conn, const struct tcfs_remote_kv *kv, size_t n,
		   size_t natomic, int64_t ttl_s);
	/* One round trip; *info a line about the server (version, role),
	 * into info (len bytes). */
	int (*ping)(void *conn, char *info, size_t len);
	/* Every key matching pattern (keyfmt.h), each given to fn, at most
	 * max keys; stops early when fn returns non-zero (returned). */
	int (*scan)(void *conn, const char *pattern, size_t max,
		    int (*fn)(void *ctx, const char *key), void *ctx);
};

extern const struct tcfs_remote_ops tcfs_remote_redis;

/* What the remote did, counted since open (read with atomic loads). */
struct tcfs_remote_stats {
	atomic_ullong kernel_hits;	/* kernels fetched and accepted */
	atomic_ullong module_hits;	/* single files fetched and accepted */
	atomic_ullong entry_hits;	/* Inductor's and vLLM's entries */
	atomic_ullong misses;		/* asked, and absent or partial */
	atomic_ullong errors;		/* calls that failed (timeouts...) */
	atomic_ullong refused;		/* bytes a check refused */
	atomic_ullong bytes_fetched;
	atomic_ullong published;	/* kernels and files published */
	atomic_ullong queue_drops;	/* publishes dropped: queue full, or
					 * the remote not asked (the mount's
					 * publisher moves them here) */
	atomic_ullong skipped;		/* asked nothing: breaker open or no
					 * connection free; in a mount, of
					 * its probes only */
	atomic_ullong breaker_opens;
};

/* The figures as the store's counters name them ("remote_kernel_hits",
 * ...: the stats' fields in order), where the mount saves them and tcfs
 * stats reads them; and their values now, in that order. */
#define TCFS_REMOTE_FIGS 11
extern const char *const tcfs_remote_fig_names[TCFS_REMOTE_FIGS];
void tcfs_remote_figs(struct tcfs_remote *r, uint64_t v[TCFS_REMOTE_FIGS]);

/* The counter of kind k's hits the remote served (an enum tcfs_probe,
 * entry.h), "remote_KIND_hits", for the kinds whose entries travel apart
 * from Triton's kernels (those are remote_kernel_hits and
 * remote_module_hits above); "" for the others. */
void tcfs_remote_kind_fig(int k, char *buf, size_t len);

enum tcfs_breaker { TCFS_BREAKER_CLOSED, TCFS_BREAKER_OPEN,
		    TCFS_BREAKER_HALF_OPEN };

/* Opens the remote cfg names (copied), connecting lazily: a remote that
 * is down now is not an error here.  *out owned by the caller:
 * tcfs_remote_close.  0, -EINVAL (no such engine), -ENOMEM. */
int tcfs_remote_open(const struct tcfs_remote_cfg *cfg,
		     struct tcfs_remote **out);
void tcfs_remote_close(struct tcfs_remote *r);
const struct tcfs_remote_cfg *tcfs_remote_cfg_of(const struct tcfs_remote *r);
struct tcfs_remote_stats *tcfs_remote_stats(struct tcfs_remote *r);
enum tcfs_breaker tcfs_remote_breaker(struct tcfs_remote *r);
const char *tcfs_breaker_name(enum tcfs_breaker b);

/* The engine's calls, through a free connection and the breaker: as the
 * table says, plus -EBUSY and -EAGAIN.  Keys are Redis keys already. */
int tcfs_remote_sizes(struct tcfs_remote *r, const char *const *keys,
		      size_t n, int64_t *sizes);
int tcfs_remote_get(struct tcfs_remote *r, const char *const *keys,
		    size_t n, uint64_t max, char **vals, size_t *lens);
/* The same, the wait for a connection and the call done by until_ns
 * (CLOCK_MONOTONIC): a probe's budget.  Past it, -ETIMEDOUT, and the
 * connection, mid-reply, is dropped (a later call connects again). */
int tcfs_remote_sizes_until(struct tcfs_remote *r, const char *const *keys,
			    size_t n, int64_t *sizes, int64_t until_ns);
int tcfs_remote_get_until(struct tcfs_remote *r, const char *const *keys,
			  size_t n, uint64_t max, char **vals, size_t *lens,
			  int64_t until_ns);
int tcfs_remote_put(struct tcfs_remote *r, const struct tcfs_remote_kv *kv,
		    size_t n, size_t natomic);
/* *latency_ns: the round trip. */
int tcfs_remote_ping(struct tcfs_remote *r, int64_t *latency_ns, char *info,
		     size_t len);
int tcfs_remote_scan(struct tcfs_remote *r, const char *pattern, size_t max,
		     int (*fn)(void *ctx, const char *key), void *ctx);

/* The Redis key of a file of cache key key (cfg's key format). */
int tcfs_remote_key(const struct tcfs_remote *r, const char *key,
		    const char *filename, char *buf, size_t len);

/* A kernel or a single file as fetched and checked: every file's bytes. */
struct tcfs_fetched_file {
	char name[TCFS_NAME_MAX + 1];
	char *bytes;		/* owned by the bundle */
	size_t len;
};
struct tcfs_fetched {
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];	/* kernel NAME, or the FILE */
	int group;			/* a kernel: f holds its children,
					 * and the group file is ... */
	size_t n;
	struct tcfs_fetched_file f[TCFS_WIRE_FILES_MAX + 1];
	int signed_ok;			/* its sidecar's HMAC was checked */
	int sidecar;			/* it had a sidecar */
	uint64_t bytes;			/* all files' sizes */
};
void tcfs_fetched_free(struct tcfs_fetched *f);

/* Fetches kernel name of cache key key: the group (and its sidecar), the
 * sizes of its children (checked against cfg's bounds and the sidecar's
 * before any is fetched), then the children in one MGET; every file
 * checked as cfg.trust says.  The group's children only, in f[] (not the
 * group file itself: tcfs writes its own, in its file format).  A child
 * missing makes the whole a miss.  0 (counted a kernel hit), -ENOENT
 * (a miss, counted), -EBADMSG or -EPERM (refused, counted), other errors
 * as tcfs_remote_get: -ETIMEDOUT when the whole is not here within
 * cfg.budget_ms of the call, whatever sizes the remote claims or however
 * slowly it sends (the fetch is then abandoned, its connection dropped).
 * *out is owned by the caller: tcfs_fetched_free. */
int tcfs_remote_fetch_kernel(struct tcfs_remote *r, const char *key,
			     const char *name, struct tcfs_fetched *out);
/* The same for a single file (a launcher module FILE.so, an
 * FN.autotune.json): f[0] is it.  A module only when cfg.modules: else
 * -EPERM, nothing asked nor counted. */
int tcfs_remote_fetch_file(struct tcfs_remote *r, const char *key,
			   const char *file, struct tcfs_fetched *out);
/* The same for an entry of Inductor's, in PyTorch's format (pt2.h): the
 * value of cache_id's key, decoded, its sidecar checked as
 * remote_inductor says (signed: a sidecar with a valid HMAC; any: also
 * none, as stock PyTorch writes).  f[0] is the entry, named as PyTorch
 * names it, and out->name that name.  Only when cfg.inductor is on: else
 * -EPERM, nothing asked nor counted. */
int tcfs_remote_fetch_entry(struct tcfs_remote *r, const char *cache_id,
			    const char *key, struct tcfs_fetched *out);
/* The same for a dir of entries kept as one pack (pack.h: vLLM's rank
 * dir name, in the dir key below the kind's root, prefix the kind's
 * remote id): f[0] is the pack, checked whole against its sidecar,
 * not yet parsed. */
int tcfs_remote_fetch_pack(struct tcfs_remote *r, const char *prefix,
			   const char *key, const char *name,
			   struct tcfs_fetched *out);

#endif
