/* redis: the Redis engine of the remote tier (hiredis 0.14), every reply
 * bounded in bytes, array elements and time. */
#include <assert.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/base/err.h"
#include "index/base/text.h"
#include "index/remote/keyfmt.h"
#include "index/remote/redis.h"
#include "index/remote/remote.h"

/* A reply may read this much past its own bound: one read of hiredis
 * (16 KiB) can hold the start of the next pipelined reply. */
#define RD_READ_SLACK (16u << 10)
/* Framing of one bulk string ("$N\r\n...\r\n") at most. */
#define RD_FRAME 32u
/* A small reply: a status, an integer, an error. */
#define RD_SMALL 4096u
/* INFO's reply, and SCAN's: bounds of what a real server sends. */
#define RD_INFO_MAX (64u << 10)
#define RD_SCAN_BYTES (16u << 20)
#define RD_SCAN_ELEMS 100000
/* SCAN rounds at most (at COUNT 1000: 100 M keys looked at). */
#define RD_SCAN_ROUNDS 100000

struct rd_conn {
	redisContext *ctx;
	/* hiredis's reply functions, with createArray bounded: hiredis
	 * allocates an array of the peer's length before reading it. */
	redisReplyObjectFunctions fns;
	void *(*array)(const redisReadTask *t, int n);
	int elems_max;		/* the reply being read: arrays at most */
	int elems_over;		/* an array over elems_max was refused */
	int io_ms;
	int armed_ms;		/* the socket's timeouts now */
	int64_t until_ms;	/* the call's deadline (monotonic); 0: none */
	char where[TCFS_REMOTE_HOST_MAX + 16];	/* host:port, for messages */
};

static void *rd_array(const redisReadTask *t, int n)
{
	struct rd_conn *c = t->privdata;

	if (n < 0 || n > c->elems_max) {
		c->elems_over = 1;
		return NULL;	/* hiredis: an error, the reply dropped */
	}
	return c->array(t, n);
}

static int64_t rd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timeval rd_tv(int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };

	return tv;
}

/* The errno behind an I/O error of hiredis: from its message, as errno
 * itself may have been changed by its cleanup since. */
static int rd_io_errno(const char *errstr, int saved)
{
	static const int known[] = { ETIMEDOUT, EAGAIN, EINPROGRESS,
				     ECONNREFUSED, ECONNRESET, EPIPE,
				     EHOSTUNREACH, ENETUNREACH };
	int e = saved;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(errstr, strerror(known[i]))) {
			e = known[i];
			break;
		}
	/* A blocking socket's SO_RCVTIMEO ends a read with EAGAIN. */
	if (e == EAGAIN || e == EWOULDBLOCK || e == EINPROGRESS)
		return ETIMEDOUT;
	return e > 0 ? e : EIO;
}

/* The context's error as -errno, with a message. */
static int rd_ctx_err(struct rd_conn *c, int saved, const char *what)
{
	const redisContext *ctx = c->ctx;
	int rc;

	switch (ctx->err) {
	case REDIS_ERR_IO:
		rc = -rd_io_errno(ctx->errstr, saved);
		break;
	case REDIS_ERR_EOF:
		rc = -ECONNRESET;
		break;
	case REDIS_ERR_PROTOCOL:
		rc = -EPROTO;
		break;
	case REDIS_ERR_OOM:
		if (c->elems_over)
			return tcfs_err_set(-EPROTO,
					    "redis %s: %s: an array longer than"
					    " %d elements (not Redis?)",
					    c->where, what, c->elems_max);
		rc = -ENOMEM;
		break;
	default:	/* REDIS_ERR_OTHER: the name did not resolve */
		rc = -EHOSTUNREACH;
		break;
	}
	if (rc == -EPROTO)
		return tcfs_err_set(rc, "redis %s: %s: %s (not Redis?)",
				    c->where, what, ctx->errstr);
	return tcfs_err_set(rc, "redis %s: %s: %s", c->where, what,
			    ctx->errstr);
}

/* A deadline for bytes to cross: io_ms, and io_ms more per MiB, never
 * past the call's own: what a peer claims never extends a caller's time. */
static int64_t rd_deadline(const struct rd_conn *c, uint64_t bytes)
{
	int64_t end = rd_now_ms() +
		      (int64_t)c->io_ms * (int64_t)(1 + (bytes >> 20));

	return c->until_ms && c->until_ms < end ? c->until_ms : end;
}

static int rd_late(struct rd_conn *c, const char *what)
{
	return tcfs_err_set(-ETIMEDOUT, "redis %s: %s: no whole reply in time",
			    c->where, what);
}

/* Arms the socket's timeouts for one read or write: io_ms, or what is
 * left before end when less.  A peer that drips a byte at a time has
 * every read return; so each must stop at end, not io_ms after it. */
static int rd_arm(struct rd_conn *c, int64_t end, const char *what)
{
	int64_t left = end - rd_now_ms();
	int ms = left < c->io_ms ? (int)left : c->io_ms;

	if (ms <= 0)
		return rd_late(c, what);
	if (ms != c->armed_ms) {
		if (redisSetTimeout(c->ctx, rd_tv(ms)) != REDIS_OK)
			return rd_ctx_err(c, errno, "timeout");
		c->armed_ms = ms;
	}
	return 0;
}

/* A read or write that failed: a timeout (its socket armed with what was
 * left) is the deadline's, said so. */
static int rd_io_err(struct rd_conn *c, const char *what)
{
	int rc = rd_ctx_err(c, errno, what);

	return rc == -ETIMEDOUT ? rd_late(c, what) : rc;
}

/* Sends what is appended, within its deadline. */
static int rd_flush(struct rd_conn *c, const char *what)
{
	uint64_t len = c->ctx->obuf ? sdslen(c->ctx->obuf) : 0;
	int64_t end = rd_deadline(c, len);
	int done = 0, rc = 0;

	while (!done && !rc) {
		rc = rd_arm(c, end, what);
		if (!rc && redisBufferWrite(c->ctx, &done) != REDIS_OK)
			rc = rd_io_err(c, what);
	}
	return rc;
}

/* Reads one reply of at most max bytes (framing included) whose arrays
 * hold at most elems elements, within its deadline.  *out: the caller's
 * (freeReplyObject). */
static int rd_reply(struct rd_conn *c, uint64_t max, int elems,
		    const char *what, redisReply **out)
{
	redisReader *rd = c->ctx->reader;
	int64_t end = rd_deadline(c, max);
	uint64_t got = 0;
	void *reply = NULL;
	size_t before;
	int rc;

	c->elems_max = elems;
	c->elems_over = 0;
	for (;;) {
		if (redisGetReplyFromReader(c->ctx, &reply) != REDIS_OK)
			return rd_ctx_err(c, errno, what);
		if (reply)
			break;
		rc = rd_arm(c, end, what);
		if (rc)
			return rc;
		before = rd->len;
		if (redisBufferRead(c->ctx) != REDIS_OK)
			return rd_io_err(c, what);
		got += rd->len - before;
		if (got > max + RD_READ_SLACK)
			return tcfs_err_set(-EPROTO,
					    "redis %s: %s: a reply over %" PRIu64
					    " bytes (not Redis, or values"
					    " changed while read)",
					    c->where, what, max);
	}
	*out = reply;
	return 0;
}

/* An error reply's text, bounded and printable, for a message. */
static void rd_errtext(const redisReply *r, char *buf, size_t len)
{
	size_t n = r->len < len - 1 ? r->len : len - 1;

	for (size_t i = 0; i < n; i++)
		buf[i] = (r->str[i] >= 0x20 && r->str[i] < 0x7f) ? r->str[i]
								  : '?';
	buf[n] = '\0';
}

static int rd_prefix(const redisReply *r, const char *p)
{
	size_t n = strlen(p);

	return r->len >= n && !memcmp(r->str, p, n);
}

/* 0 when r is of type type; else -EACCES for a refusal of access,
 * -EREMOTEIO for another error reply, -EPROTO for another type. */
static int rd_check(struct rd_conn *c, const redisReply *r, int type,
		    const char *what)
{
	char text[200];

	if (r->type == type)
		return 0;
	if (r->type != REDIS_REPLY_ERROR)
		return tcfs_err_set(-EPROTO,
				    "redis %s: %s: a reply of type %d, not %d",
				    c->where, what, r->type, type);
	rd_errtext(r, text, sizeof(text));
	if (rd_prefix(r, "WRONGPASS") || rd_prefix(r, "NOAUTH") ||
	    rd_prefix(r, "NOPERM"))
		return tcfs_err_set(-EACCES, "redis %s: %s: %s", c->where,
				    what, text);
	return tcfs_err_set(-EREMOTEIO, "redis %s: %s: %s", c->where, what,
			    text);
}

/* Appends one command (binary safe). */
static int rd_append(struct rd_conn *c, int argc, const char **argv,
		     const size_t *lens, const char *what)
{
	if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK)
		return rd_ctx_err(c, errno, what);
	return 0;
}

/* One command, one reply of type type and at most max bytes. */
static int rd_call(struct rd_conn *c, int argc, const char **argv,
		   const size_t *lens, int type, uint64_t max,
		   const char *what, redisReply **out)
{
	redisReply *r = NULL;
	int rc;

	rc = rd_append(c, argc, argv, lens, what);
	if (!rc)
		rc = rd_flush(c, what);
	if (!rc)
		rc = rd_reply(c, max, 0, what, &r);
	if (!rc)
		rc = rd_check(c, r, type, what);
	if (rc || !out)
		freeReplyObject(r);
	else
		*out = r;
	return rc;
}

static int rd_status(struct rd_conn *c, int argc, const char **argv,
		     const char *what)
{
	size_t lens[4];

	assert(argc <= 4);
	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	return rd_call(c, argc, argv, lens, REDIS_REPLY_STATUS, RD_SMALL,
		       what, NULL);
}

/* AUTH and SELECT as cfg says.  An error reply to AUTH, whatever its
 * words (older servers say "ERR invalid password"), is a refusal. */
static int rd_login(struct rd_conn *c, const struct tcfs_redis_own *cfg)
{
	const char *argv[3] = { "AUTH", cfg->user, cfg->pass };
	char db[16];
	int rc = 0;

	if (cfg->pass[0]) {
		rc = cfg->user[0] ? rd_status(c, 3, argv, "AUTH")
				  : rd_status(c, 2, (const char *[]){ "AUTH",
								     cfg->pass },
					      "AUTH");
		if (rc == -EREMOTEIO)
			rc = tcfs_err_set(-EACCES, "%s", tcfs_err_msg());
	}
	if (!rc && cfg->db > 0) {
		snprintf(db, sizeof(db), "%d", cfg->db);
		rc = rd_status(c, 2, (const char *[]){ "SELECT", db },
			       "SELECT");
	}
	return rc;
}

static void rd_close(void *conn)
{
	struct rd_conn *c = conn;

	if (!c)
		return;
	if (c->ctx)
		redisFree(c->ctx);	/* before c: it holds c->fns */
	free(c);
}

/* The deadline of the calls to come: until_ns (monotonic), 0 for none. */
static void rd_until(void *conn, int64_t until_ns)
{
	struct rd_conn *c = conn;

	c->until_ms = until_ns > 0 ? until_ns / 1000000 : 0;
}

/* connect_ms, or what is left before the deadline when less. */
static int rd_connect_ms(const struct rd_conn *c, int connect_ms)
{
	int64_t left = c->until_ms ? c->until_ms - rd_now_ms() : connect_ms;

	return left < connect_ms ? (int)left : connect_ms;
}

static int rd_connect(const struct tcfs_remote_cfg *cfg, int64_t until_ns,
		      void **out)
{
	const struct tcfs_redis_own *own = tcfs_redis_own_of(cfg);
	struct rd_conn *c = calloc(1, sizeof(*c));
	int rc, ms;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	snprintf(c->where, sizeof(c->where),
		 strchr(own->host, ':') ? "[%s]:%d" : "%s:%d", own->host,
		 own->port);
	c->io_ms = cfg->io_ms;
	rd_until(c, until_ns);
	ms = rd_connect_ms(c, cfg->connect_ms);
	if (ms <= 0) {
		rc = tcfs_err_set(-ETIMEDOUT, "redis %s: connect: no time"
				  " left", c->where);
		goto fail;
	}
	c->ctx = redisConnectWithTimeout(own->host, own->port, rd_tv(ms));
	if (!c->ctx) {
		rc = -ENOMEM;
		goto fail;
	}
	if (c->ctx->err) {
		rc = rd_ctx_err(c, errno, "connect");
		goto fail;
	}
	c->fns = *c->ctx->reader->fn;
	c->array = c->fns.createArray;
	c->fns.createArray = rd_array;
	c->ctx->reader->fn = &c->fns;
	c->ctx->reader->privdata = c;
	rc = rd_login(c, own);
	if (rc)
		goto fail;
	*out = c;
	return 0;
fail:
	rd_close(c);
	return rc;
}

/* Reads a TYPE and STRLEN pair: the value's length, -1 when it is no
 * string (as MGET answers nil for it). */
static int rd_size_pair(struct rd_conn *c, int64_t *size)
{
	redisReply *t = NULL, *l = NULL;
	int rc;

	rc = rd_reply(c, RD_SMALL, 0, "TYPE", &t);
	if (!rc)
		rc = rd_reply(c, RD_SMALL, 0, "STRLEN", &l);
	if (!rc)
		rc = rd_check(c, t, REDIS_REPLY_STATUS, "TYPE");
	if (!rc && strcmp(t->str, "string") != 0) {
		*size = -1;	/* STRLEN's WRONGTYPE or 0: no matter */
	} else if (!rc) {
		rc = rd_check(c, l, REDIS_REPLY_INTEGER, "STRLEN");
		if (!rc && l->integer < 0)
			rc = tcfs_err_set(-EPROTO, "redis %s: STRLEN: %lld",
					  c->where, l->integer);
		if (!rc)
			*size = l->integer;
	}
	freeReplyObject(t);
	freeReplyObject(l);
	return rc;
}

static int rd_sizes(void *conn, const char *const *keys, size_t n,
		    int64_t *sizes)
{
	struct rd_conn *c = conn;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		rc = rd_append(c, 2, (const char *[]){ "TYPE", keys[i] }, NULL,
			       "TYPE");
		if (!rc)
			rc = rd_append(c, 2,
				       (const char *[]){ "STRLEN", keys[i] },
				       NULL, "STRLEN");
	}
	if (!rc)
		rc = rd_flush(c, "STRLEN");
	for (size_t i = 0; i < n && !rc; i++)
		rc = rd_size_pair(c, &sizes[i]);
	return rc;
}

/* Takes MGET's values from its reply, each at most max bytes. */
static int rd_take(struct rd_conn *c, redisReply *r, const char *const *keys,
		   size_t n, uint64_t max, char **vals, size_t *lens)
{
	int rc = rd_check(c, r, REDIS_REPLY_ARRAY, "MGET");

	if (!rc && r->elements != n)
		rc = tcfs_err_set(-EPROTO, "redis %s: MGET: %zu %s for %zu"
				  " %s", c->where, r->elements,
				  TCFS_NOUN(r->elements, "value"), n,
				  TCFS_NOUN(n, "key"));
	for (size_t i = 0; i < n && !rc; i++) {
		redisReply *e = r->element[i];

		if (e->type == REDIS_REPLY_NIL)
			continue;
		rc = rd_check(c, e, REDIS_REPLY_STRING, "MGET");
		if (!rc && e->len > max)
			rc = tcfs_err_set(-EFBIG, "redis %s: %s: %zu bytes,"
					  " over %" PRIu64, c->where, keys[i],
					  e->len, max);
		if (rc)
			break;
		/* hiredis 0.14 allocates values with malloc: taken, not
		 * copied, so a large value is never held twice. */
		vals[i] = e->str;
		lens[i] = e->len;
		e->str = NULL;
	}
	return rc;
}

/* A get whose values could all be max bytes and stay under this is one
 * MGET, its reply read no further than n * max: a round trip fewer than
 * asking their sizes first (a probe's fetch makes two such gets). */
#define RD_DIRECT_MAX (4u << 20)

static int rd_get(void *conn, const char *const *keys, size_t n,
		  uint64_t max, char **vals, size_t *lens)
{
	struct rd_conn *c = conn;
	int64_t *sizes = calloc(n ? n : 1, sizeof(*sizes));
	const char **argv = calloc(n + 1, sizeof(*argv));
	uint64_t bound = 64 + n * RD_FRAME;
	redisReply *r = NULL;
	int rc = sizes && argv ? 0 : -ENOMEM;

	for (size_t i = 0; i < n; i++) {
		vals[i] = NULL;
		lens[i] = 0;
	}
	if (!rc && max <= RD_DIRECT_MAX / (n ? n : 1))
		bound += n * max;	/* sizes stay 0: no value counted */
	else if (!rc)
		rc = rd_sizes(c, keys, n, sizes);
	for (size_t i = 0; i < n && !rc; i++) {
		if (sizes[i] > 0 && (uint64_t)sizes[i] > max)
			rc = tcfs_err_set(-EFBIG, "redis %s: %s: %" PRId64
					  " bytes, over %" PRIu64, c->where,
					  keys[i], sizes[i], max);
		bound += sizes[i] > 0 ? (uint64_t)sizes[i] : 0;
		argv[i + 1] = keys[i];
	}
	if (!rc && n) {
		argv[0] = "MGET";
		rc = rd_append(c, (int)n + 1, argv, NULL, "MGET");
		if (!rc)
			rc = rd_flush(c, "MGET");
		if (!rc)
			rc = rd_reply(c, bound, (int)n, "MGET", &r);
		if (!rc)
			rc = rd_take(c, r, keys, n, max, vals, lens);
	}
	for (size_t i = 0; i < n && rc; i++) {
		free(vals[i]);
		vals[i] = NULL;
	}
	freeReplyObject(r);
	free(sizes);
	free(argv);
	return rc;
}

/* Appends SET key val [EX ttl]. */
static int rd_append_set(struct rd_conn *c, const struct tcfs_remote_kv *kv,
			 const char *ttl)
{
	const char *argv[5] = { "SET", kv->key, kv->val, "EX", ttl };
	size_t lens[5] = { 3, strlen(kv->key), kv->len, 2, strlen(ttl) };

	return rd_append(c, ttl[0] ? 5 : 3, argv, lens, "SET");
}

/* Reads a status reply that must be want. */
static int rd_expect(struct rd_conn *c, const char *want, const char *what)
{
	redisReply *r = NULL;
	int rc = rd_reply(c, RD_SMALL, 0, what, &r);

	if (!rc)
		rc = rd_check(c, r, REDIS_REPLY_STATUS, what);
	if (!rc && strcmp(r->str, want) != 0)
		rc = tcfs_err_set(-EPROTO, "redis %s: %s: not %s", c->where,
				  what, want);
	freeReplyObject(r);
	return rc;
}

/* EXEC's reply: one OK per queued SET. */
static int rd_exec_reply(struct rd_conn *c, size_t natomic)
{
	redisReply *r = NULL;
	int rc = rd_reply(c, RD_SMALL + natomic * RD_FRAME, (int)natomic,
			  "EXEC", &r);

	if (!rc && r->type == REDIS_REPLY_NIL)
		rc = tcfs_err_set(-EREMOTEIO, "redis %s: EXEC: aborted",
				  c->where);
	if (!rc)
		rc = rd_check(c, r, REDIS_REPLY_ARRAY, "EXEC");
	if (!rc && r->elements != natomic)
		rc = tcfs_err_set(-EPROTO, "redis %s: EXEC: %zu %s for %zu"
				  " %s", c->where, r->elements,
				  tcfs_plural(r->elements, "reply", "replies"),
				  natomic, TCFS_NOUN(natomic, "command"));
	for (size_t i = 0; !rc && i < natomic; i++)
		rc = rd_check(c, r->element[i], REDIS_REPLY_STATUS, "EXEC");
	freeReplyObject(r);
	return rc;
}

/* Everything in one round trip: the plain SETs, then MULTI, the last
 * natomic SETs and EXEC; every reply checked. */
static int rd_put(void *conn, const struct tcfs_remote_kv *kv, size_t n,
		  size_t natomic, int64_t ttl_s)
{
	struct rd_conn *c = conn;
	size_t plain = n - natomic;
	char ttl[24] = "";
	int rc = 0;

	assert(natomic <= n);
	if (ttl_s > 0)
		snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_s);
	for (size_t i = 0; i < n && !rc; i++) {
		if (i == plain)
			rc = rd_append(c, 1, (const char *[]){ "MULTI" }, NULL,
				       "MULTI");
		if (!rc)
			rc = rd_append_set(c, &kv[i], ttl);
	}
	if (!rc && natomic)
		rc = rd_append(c, 1, (const char *[]){ "EXEC" }, NULL, "EXEC");
	if (!rc)
		rc = rd_flush(c, "SET");
	for (size_t i = 0; i < plain && !rc; i++)
		rc = rd_expect(c, "OK", "SET");
	if (!rc && natomic)
		rc = rd_expect(c, "OK", "MULTI");
	for (size_t i = 0; i < natomic && !rc; i++)
		rc = rd_expect(c, "QUEUED", "SET");
	if (!rc && natomic)
		rc = rd_exec_reply(c, natomic);
	return rc;
}

/* The value of field "name:" in an INFO reply, into buf. */
static void rd_info_field(const redisReply *r, const char *name, char *buf,
			  size_t len)
{
	size_t n = strlen(name);
	const char *p = r->str, *end = r->str + r->len;

	snprintf(buf, len, "?");
	while (p && p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t line = (size_t)((eol ? eol : end) - p);

		if (line > n && !memcmp(p, name, n) && p[n] == ':') {
			size_t v = line - n - 1;

			while (v && (p[n + v] == '\r' || p[n + v] == '\n'))
				v--;
			snprintf(buf, len, "%.*s", (int)(v < 64 ? v : 64),
				 p + n + 1);
			return;
		}
		p = eol ? eol + 1 : NULL;
	}
}

/* One INFO section's field, "?" when the server denies INFO (an ACL
 * may allow PING and not INFO: that is no failure of the remote). */
static int rd_info(struct rd_conn *c, const char *name, char *buf, size_t len)
{
	redisReply *r = NULL;
	int rc = rd_reply(c, RD_INFO_MAX, 0, "INFO", &r);

	snprintf(buf, len, "?");
	if (!rc && r->type != REDIS_REPLY_ERROR) {
		rc = rd_check(c, r, REDIS_REPLY_STRING, "INFO");
		if (!rc)
			rd_info_field(r, name, buf, len);
	}
	freeReplyObject(r);
	return rc;
}

static int rd_ping(void *conn, char *info, size_t len)
{
	struct rd_conn *c = conn;
	char version[72], role[72];
	int rc;

	rc = rd_append(c, 1, (const char *[]){ "PING" }, NULL, "PING");
	if (!rc)
		rc = rd_append(c, 2, (const char *[]){ "INFO", "server" },
			       NULL, "INFO");
	if (!rc)
		rc = rd_append(c, 2, (const char *[]){ "INFO", "replication" },
			       NULL, "INFO");
	if (!rc)
		rc = rd_flush(c, "PING");
	if (!rc)
		rc = rd_expect(c, "PONG", "PING");
	if (!rc)
		rc = rd_info(c, "redis_version", version, sizeof(version));
	if (!rc)
		rc = rd_info(c, "role", role, sizeof(role));
	if (!rc && len)
		snprintf(info, len, "redis %s, %s", version, role);
	return rc;
}

/* Hands the keys of one SCAN reply to fn: those a format could make
 * (no NUL, at most TCFS_KEYFMT_KEY_MAX bytes), *left at most. */
static int rd_scan_keys(struct rd_conn *c, const redisReply *keys,
			size_t *left, int (*fn)(void *ctx, const char *key),
			void *ctx)
{
	for (size_t i = 0; i < keys->elements && *left; i++) {
		const redisReply *k = keys->element[i];
		int rc = rd_check(c, k, REDIS_REPLY_STRING, "SCAN");

		if (rc)
			return rc;
		if (k->len > TCFS_KEYFMT_KEY_MAX || strlen(k->str) != k->len)
			continue;
		(*left)--;
		rc = fn(ctx, k->str);
		if (rc)
			return rc;
	}
	return 0;
}

/* One SCAN round: *cursor updated ("0" when done). */
static int rd_scan_round(struct rd_conn *c, char *cursor, const char *pattern,
			 size_t *left, int (*fn)(void *ctx, const char *key),
			 void *ctx)
{
	const char *argv[] = { "SCAN", cursor, "MATCH", pattern, "COUNT",
			       "1000" };
	redisReply *r = NULL;
	int rc;

	rc = rd_append(c, 6, argv, NULL, "SCAN");
	if (!rc)
		rc = rd_flush(c, "SCAN");
	if (!rc)
		rc = rd_reply(c, RD_SCAN_BYTES, RD_SCAN_ELEMS, "SCAN", &r);
	if (!rc)
		rc = rd_check(c, r, REDIS_REPLY_ARRAY, "SCAN");
	if (!rc && (r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[0]->len >= 32 ||
		    r->element[1]->type != REDIS_REPLY_ARRAY))
		rc = tcfs_err_set(-EPROTO, "redis %s: SCAN: not a cursor and"
				  " keys", c->where);
	if (!rc) {
		snprintf(cursor, 32, "%s", r->element[0]->str);
		rc = rd_scan_keys(c, r->element[1], left, fn, ctx);
	}
	freeReplyObject(r);
	return rc;
}

static int rd_scan(void *conn, const char *pattern, size_t max,
		   int (*fn)(void *ctx, const char *key), void *ctx)
{
	struct rd_conn *c = conn;
	char cursor[32] = "0";
	size_t left = max;
	int rc = 0;

	for (int round = 0; !rc && left; round++) {
		if (round == RD_SCAN_ROUNDS)
			return tcfs_err_set(-EPROTO, "redis %s: SCAN: no end"
					    " after %d rounds", c->where,
					    round);
		rc = rd_scan_round(c, cursor, pattern, &left, fn, ctx);
		if (!strcmp(cursor, "0"))
			break;
	}
	return rc;
}

const struct tcfs_remote_ops tcfs_remote_redis = {
	.scheme = "redis",
	.init = tcfs_redis_init,
	.parse_url = tcfs_redis_parse_url,
	.url_of = tcfs_redis_url_of,
	.set = tcfs_redis_set,
	.docs = tcfs_redis_docs,
	.connect = rd_connect,
	.until = rd_until,
	.close = rd_close,
	.sizes = rd_sizes,
	.get = rd_get,
	.put = rd_put,
	.ping = rd_ping,
	.scan = rd_scan,
};
