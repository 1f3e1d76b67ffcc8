/* remote_redis: the remote tier against a real redis-server of its own:
 * round trips, bounds, timeouts, the breaker, the pool, refusals. */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/remote/keyfmt.h"
#include "index/remote/redis.h"
#include "index/remote/remote.h"
#include "index/remote/wire.h"
#include "tap.h"

#define KEY "XU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* A port nothing listens on now: the kernel's pick, let go. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		perror("free_port");
		exit(2);
	}
	close(fd);
	return ntohs(a.sin_port);
}

/* A direct connection, for what the test checks behind the library. */
static redisContext *direct(int port, const char *pass)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
	redisReply *r;

	if (!c || c->err) {
		if (c)
			redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	if (pass) {
		r = redisCommand(c, "AUTH %s", pass);
		freeReplyObject(r);
	}
	return c;
}

/* redis-server on a free port (with a password when pass), up. */
static pid_t redis_start(int *port, const char *pass)
{
	char p[16];
	pid_t pid;

	*port = free_port();
	snprintf(p, sizeof(p), "%d", *port);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execlp("redis-server", "redis-server", "--port", p, "--bind",
		       "127.0.0.1", "--save", "", "--appendonly", "no",
		       "--daemonize", "no", pass ? "--requirepass" : NULL,
		       pass, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 250; i++) {
		redisContext *c = direct(*port, NULL);
		redisReply *r = c ? redisCommand(c, "PING") : NULL;

		freeReplyObject(r);
		if (c)
			redisFree(c);
		if (r)
			return pid;
		sleep_ms(20);
	}
	fprintf(stderr, "redis-server did not start\n");
	kill(pid, SIGKILL);
	exit(2);
}

static void redis_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void cfg_make(struct tcfs_remote_cfg *c, int port)
{
	struct tcfs_redis_own *o;

	tcfs_remote_cfg_init(c);
	o = tcfs_redis_own(c);
	snprintf(o->host, sizeof(o->host), "127.0.0.1");
	o->port = port;
}

static struct tcfs_remote *open_at(int port, struct tcfs_remote_cfg *cfg)
{
	struct tcfs_remote *r = NULL;
	struct tcfs_remote_cfg c;

	if (!cfg) {
		cfg_make(&c, port);
		cfg = &c;
	}
	if (tcfs_remote_open(cfg, &r)) {
		fprintf(stderr, "tcfs_remote_open failed\n");
		exit(2);
	}
	return r;
}

static long long direct_int(int port, const char *cmd, const char *arg)
{
	redisContext *c = direct(port, NULL);
	redisReply *r = c ? redisCommand(c, "%s %s", cmd, arg) : NULL;
	long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -999;

	freeReplyObject(r);
	if (c)
		redisFree(c);
	return v;
}

/* How many MGETs the server has run since its stats were reset. */
static long long mget_calls(int port, int reset)
{
	redisContext *c = direct(port, NULL);
	redisReply *r = c ? redisCommand(c, reset ? "CONFIG RESETSTAT"
						 : "INFO commandstats")
			  : NULL;
	const char *p = r && r->str ? strstr(r->str, "cmdstat_mget:calls=")
				    : NULL;
	long long v = p ? atoll(p + 19) : 0;

	freeReplyObject(r);
	if (c)
		redisFree(c);
	return v;
}

/* A command straight to r's server: KEY [VAL]. */
static void direct_cmd(struct tcfs_remote *r, const char *cmd, const char *k,
		       const void *val, size_t len)
{
	redisContext *c = direct(tcfs_redis_own_of(tcfs_remote_cfg_of(r))->port,
				   NULL);
	redisReply *rep = NULL;

	if (c && val)
		rep = redisCommand(c, "%s %s %b", cmd, k, val, len);
	else if (c)
		rep = redisCommand(c, "%s %s", cmd, k);
	freeReplyObject(rep);
	if (c)
		redisFree(c);
}

static int count_key(void *ctx, const char *key)
{
	(void)key;
	(*(int *)ctx)++;
	return 0;
}

static void free_vals(char **vals, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(vals[i]);
}

/* put, sizes, get and scan agree, with binary values. */
static void round_trip(int port)
{
	struct tcfs_remote *r = open_at(port, NULL);
	static const char bin[] = "a\0b\0\0c\r\n$-1\r\n";
	struct tcfs_remote_kv kv[] = {
		{ "t:rt:1", "one", 3 },
		{ "t:rt:2", bin, sizeof(bin) },
		{ "t:rt:3", "", 0 },
	};
	const char *keys[] = { "t:rt:1", "t:rt:2", "t:rt:3", "t:rt:none" };
	int64_t sizes[4];
	char *vals[4];
	size_t lens[4];
	char info[128] = "";
	int64_t lat = 0;
	int n = 0;

	tap_eq(tcfs_remote_put(r, kv, 3, 0), 0, "put 3 keys");
	tap_eq(tcfs_remote_sizes(r, keys, 4, sizes), 0, "sizes");
	tap_ok(sizes[0] == 3 && sizes[1] == (int64_t)sizeof(bin) &&
		       sizes[2] == 0 && sizes[3] == -1,
	       "sizes: 3, %zu, 0, absent", sizeof(bin));
	tap_eq(tcfs_remote_get(r, keys, 4, 1024, vals, lens), 0, "get");
	tap_ok(lens[0] == 3 && !memcmp(vals[0], "one", 3), "value 1");
	tap_ok(lens[1] == sizeof(bin) && !memcmp(vals[1], bin, sizeof(bin)),
	       "a binary value with NULs, byte for byte");
	tap_ok(vals[2] && lens[2] == 0, "an empty value is present");
	tap_ok(vals[3] == NULL, "an absent key is NULL");
	free_vals(vals, 4);
	tap_eq(tcfs_remote_scan(r, "t:rt:*", 100, count_key, &n), 0, "scan");
	tap_eq(n, 3, "scan finds the 3 keys");
	n = 0;
	tap_eq(tcfs_remote_scan(r, "t:rt:*", 2, count_key, &n), 0,
	       "scan, max 2");
	tap_eq(n, 2, "scan stops at max");
	tap_eq(tcfs_remote_ping(r, &lat, info, sizeof(info)), 0, "ping");
	tap_ok(strncmp(info, "redis 7", 7) == 0 || strncmp(info, "redis ", 6) == 0,
	       "ping: %s", info);
	tap_ok(strstr(info, "master") != NULL, "ping: the role");
	tap_ok(lat > 0, "ping: a latency");
	tcfs_remote_close(r);
}

/* The last natomic keys go in one MULTI/EXEC, with the ttl. */
static void atomic_ttl(int port)
{
	struct tcfs_remote_cfg cfg;
	struct tcfs_remote *r;
	struct tcfs_remote_kv kv[] = {
		{ "t:mx:1", "1", 1 }, { "t:mx:2", "22", 2 },
		{ "t:mx:3", "333", 3 }, { "t:mx:4", "4444", 4 },
	};
	const char *keys[] = { "t:mx:1", "t:mx:2", "t:mx:3", "t:mx:4" };
	char *vals[4];
	size_t lens[4];
	int ok = 1;

	cfg_make(&cfg, port);
	cfg.ttl_s = 100;
	r = open_at(port, &cfg);
	tap_eq(tcfs_remote_put(r, kv, 4, 2), 0, "put 2 plain, 2 in MULTI");
	tap_eq(tcfs_remote_get(r, keys, 4, 1024, vals, lens), 0, "get them");
	for (int i = 0; i < 4; i++)
		ok &= vals[i] && lens[i] == (size_t)i + 1;
	tap_ok(ok, "all 4 values there");
	free_vals(vals, 4);
	tap_ok(direct_int(port, "TTL", "t:mx:1") > 0 &&
		       direct_int(port, "TTL", "t:mx:4") > 0,
	       "the ttl applies to plain and atomic keys");
	tap_eq(tcfs_remote_put(r, kv, 4, 4), 0, "put all 4 in MULTI");
	tcfs_remote_close(r);
}

static void too_big_large(struct tcfs_remote *r, int port)
{
	size_t big = (5u << 20) + 1;
	char *buf = calloc(1, big);
	struct tcfs_remote_kv kv = { "t:huge", buf, big };
	const char *keys[] = { "t:rt:1", "t:huge" };
	char *vals[2];
	size_t lens[2];

	tap_eq(tcfs_remote_put(r, &kv, 1, 0), 0, "put a 5 MiB + 1 value");
	mget_calls(port, 1);
	tap_eq(tcfs_remote_get(r, keys, 2, 5u << 20, vals, lens), -EFBIG,
	       "get with max 5 MiB: -EFBIG");
	tap_eq(mget_calls(port, 0), 0, "a large bound: sizes first, no MGET");
	free(buf);
}

/* A value over max: -EFBIG, nothing returned.  A small bound is one MGET
 * whose reply is read no further than the bound; a large one asks the
 * sizes first, and sends no MGET. */
static void too_big(int port)
{
	struct tcfs_remote *r = open_at(port, NULL);
	struct tcfs_remote_kv kv = { "t:big", "0123456789", 10 };
	const char *keys[] = { "t:rt:1", "t:big" };
	char *vals[2] = { (char *)1, (char *)1 };
	size_t lens[2];

	tap_eq(tcfs_remote_put(r, &kv, 1, 0), 0, "put a 10-byte value");
	mget_calls(port, 1);
	tap_eq(tcfs_remote_get(r, keys, 2, 9, vals, lens), -EFBIG,
	       "get with max 9: -EFBIG");
	tap_ok(vals[0] == NULL && vals[1] == NULL, "nothing returned");
	tap_eq(mget_calls(port, 0), 1, "a small bound: one MGET");
	tap_ok(strstr(tcfs_err_msg(), "t:big") != NULL, "message: %s",
	       tcfs_err_msg());
	tap_eq(tcfs_remote_get(r, keys, 2, 10, vals, lens), 0,
	       "the same connection serves the next call");
	free_vals(vals, 2);
	too_big_large(r, port);
	tcfs_remote_close(r);
}

static void refused(void)
{
	int port = free_port();
	struct tcfs_remote *r = open_at(port, NULL);
	const char *keys[] = { "t:x" };
	int64_t size, t0 = now_ms();

	tap_eq(tcfs_remote_sizes(r, keys, 1, &size), -ECONNREFUSED,
	       "no server: -ECONNREFUSED");
	tap_ok(now_ms() - t0 < 1000, "at once (%lld ms)",
	       (long long)(now_ms() - t0));
	tap_ok(strstr(tcfs_err_msg(), "127.0.0.1:") != NULL, "message: %s",
	       tcfs_err_msg());
	tcfs_remote_close(r);
}

struct held {
	struct tcfs_remote *r;
	sem_t in, out;
	int rc;
};

static int hold_fn(void *ctx, const char *key)
{
	struct held *h = ctx;

	(void)key;
	sem_post(&h->in);
	sem_wait(&h->out);
	return 1;
}

static void *hold_slot(void *arg)
{
	struct held *h = arg;

	h->rc = tcfs_remote_scan(h->r, "t:rt:1", 1, hold_fn, h);
	return NULL;
}

/* With conns=1 and the one connection held, a caller waits one reply's
 * timeout for it, then gets -EBUSY. */
static void busy(int port)
{
	struct tcfs_remote_cfg cfg;
	struct held h;
	pthread_t t;
	int64_t size, t0;
	const char *keys[] = { "t:rt:1" };

	cfg_make(&cfg, port);
	cfg.conns = 1;
	cfg.io_ms = 150;
	h.r = open_at(port, &cfg);
	sem_init(&h.in, 0, 0);
	sem_init(&h.out, 0, 0);
	pthread_create(&t, NULL, hold_slot, &h);
	sem_wait(&h.in);
	t0 = now_ms();
	tap_eq(tcfs_remote_sizes(h.r, keys, 1, &size), -EBUSY,
	       "the one connection held: -EBUSY");
	tap_ok(now_ms() - t0 >= 140 && now_ms() - t0 < 1000,
	       "after waiting one reply's timeout for it (%lld ms)",
	       (long long)(now_ms() - t0));
	tap_eq(atomic_load(&tcfs_remote_stats(h.r)->skipped), 1,
	       "counted skipped");
	sem_post(&h.out);
	pthread_join(t, NULL);
	tap_eq(h.rc, 1, "scan returns what its callback returned");
	tap_eq(tcfs_remote_sizes(h.r, keys, 1, &size), 0, "free again");
	sem_destroy(&h.in);
	sem_destroy(&h.out);
	tcfs_remote_close(h.r);
}

static int64_t timed_sizes(struct tcfs_remote *r, int want, const char *what)
{
	const char *keys[] = { "t:rt:1" };
	int64_t size, t0 = now_ms(), dt;

	tap_eq(tcfs_remote_sizes(r, keys, 1, &size), want, "%s", what);
	dt = now_ms() - t0;
	return dt;
}

struct probe {
	struct tcfs_remote *r;
	int rc;
};

static void *probe_thread(void *arg)
{
	struct probe *p = arg;
	const char *keys[] = { "t:rt:1" };
	int64_t size;

	p->rc = tcfs_remote_sizes(p->r, keys, 1, &size);
	return NULL;
}

/* Half-open: one caller tries, the others are turned away meanwhile. */
static void half_open(struct tcfs_remote *r)
{
	struct tcfs_remote_stats *st = tcfs_remote_stats(r);
	struct probe p = { r, 0 };
	pthread_t t;

	sleep_ms(350);
	tap_eq(tcfs_remote_breaker(r), TCFS_BREAKER_HALF_OPEN,
	       "half-open after breaker_open_ms");
	pthread_create(&t, NULL, probe_thread, &p);
	/* Well inside the probe's io_ms (200). */
	sleep_ms(100);
	timed_sizes(r, -EAGAIN, "half-open, a probe in flight: -EAGAIN");
	pthread_join(t, NULL);
	tap_eq(p.rc, -ETIMEDOUT, "the probe times out");
	tap_eq(tcfs_remote_breaker(r), TCFS_BREAKER_OPEN, "open again");
	tap_eq(atomic_load(&st->breaker_opens), 2, "counted 2 opens");
}

/* A stopped server: -ETIMEDOUT within io_ms; the breaker opens after 3
 * failures, half-opens, and closes when the server answers again. */
static void stalled(void)
{
	struct tcfs_remote_cfg cfg;
	struct tcfs_remote *r;
	int port;
	pid_t pid = redis_start(&port, NULL);
	struct tcfs_remote_stats *st;
	int64_t dt;

	cfg_make(&cfg, port);
	cfg.breaker_fails = 3;
	cfg.breaker_open_ms = 300;
	r = open_at(port, &cfg);
	st = tcfs_remote_stats(r);
	timed_sizes(r, 0, "answers before the stop");
	kill(pid, SIGSTOP);
	dt = timed_sizes(r, -ETIMEDOUT, "stopped server: -ETIMEDOUT");
	tap_ok(dt < 5 * cfg.io_ms, "within 5 x io_ms (%lld ms, io_ms %d)",
	       (long long)dt, cfg.io_ms);
	printf("# a stalled reply: %lld ms (io_ms %d)\n", (long long)dt,
	       cfg.io_ms);
	tap_eq(tcfs_remote_breaker(r), TCFS_BREAKER_CLOSED, "closed after 1");
	timed_sizes(r, -ETIMEDOUT, "again, reconnecting: -ETIMEDOUT");
	timed_sizes(r, -ETIMEDOUT, "a third time");
	tap_eq(tcfs_remote_breaker(r), TCFS_BREAKER_OPEN, "open after 3");
	dt = timed_sizes(r, -EAGAIN, "open: -EAGAIN");
	tap_ok(dt < 20, "without I/O (%lld ms)", (long long)dt);
	tap_eq(atomic_load(&st->skipped), 1, "counted skipped");
	tap_eq(atomic_load(&st->errors), 3, "counted 3 errors");
	tap_eq(atomic_load(&st->breaker_opens), 1, "counted 1 open");
	half_open(r);
	kill(pid, SIGCONT);
	sleep_ms(350);
	timed_sizes(r, 0, "half-open, server back: answers");
	tap_eq(tcfs_remote_breaker(r), TCFS_BREAKER_CLOSED, "closed again");
	tcfs_remote_close(r);
	redis_stop(pid);
}

static void password(void)
{
	struct tcfs_remote_cfg cfg;
	struct tcfs_redis_own *rd = tcfs_redis_own(&cfg);
	struct tcfs_remote *r;
	int port;
	pid_t pid = redis_start(&port, "sesame");

	cfg_make(&cfg, port);
	snprintf(rd->pass, sizeof(rd->pass), "wrong");
	r = open_at(port, &cfg);
	timed_sizes(r, -EACCES, "a wrong password: -EACCES");
	tap_ok(strstr(tcfs_err_msg(), "AUTH") != NULL, "message: %s",
	       tcfs_err_msg());
	tcfs_remote_close(r);
	rd->pass[0] = '\0';
	r = open_at(port, &cfg);
	timed_sizes(r, -EACCES, "no password: -EACCES (NOAUTH)");
	tcfs_remote_close(r);
	snprintf(rd->pass, sizeof(rd->pass), "sesame");
	r = open_at(port, &cfg);
	timed_sizes(r, 0, "the password: answers");
	tcfs_remote_close(r);
	snprintf(rd->user, sizeof(rd->user), "default");
	r = open_at(port, &cfg);
	timed_sizes(r, 0, "user and password (AUTH user pass): answers");
	tcfs_remote_close(r);
	redis_stop(pid);
}

/* A listener that is not Redis: answers each connection with what,
 * then, when endless, bytes until the peer goes (with drip_ms, one byte
 * each drip_ms); else holds it open. */
struct garbage {
	int fd;
	const char *what;
	int endless;
	int drip_ms;
	pthread_t t;
};

static void *garbage_serve(void *arg)
{
	struct garbage *g = arg;
	char chunk[4096];
	int c;

	memset(chunk, 'x', sizeof(chunk));
	while ((c = accept(g->fd, NULL, NULL)) >= 0) {
		if (send(c, g->what, strlen(g->what), MSG_NOSIGNAL) < 0)
			continue;
		while (g->endless &&
		       send(c, chunk, g->drip_ms ? 1 : sizeof(chunk),
			    MSG_NOSIGNAL) > 0)
			sleep_ms(g->drip_ms);
		if (!g->endless)
			sleep_ms(1000);
		close(c);
	}
	return NULL;
}

static int garbage_start(struct garbage *g)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(g->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(g->fd, 8) || getsockname(g->fd, (struct sockaddr *)&a, &len))
		exit(2);
	pthread_create(&g->t, NULL, garbage_serve, g);
	return ntohs(a.sin_port);
}

static void garbage_stop(struct garbage *g)
{
	shutdown(g->fd, SHUT_RDWR);
	pthread_join(g->t, NULL);
	close(g->fd);
}

static void garbage(const char *what, int endless, const char *name)
{
	struct garbage g = { .what = what, .endless = endless };
	int port = garbage_start(&g);
	struct tcfs_remote *r = open_at(port, NULL);
	int64_t dt = timed_sizes(r, -EPROTO, name);

	tap_ok(dt < 1000, "%s: no hang (%lld ms)", name, (long long)dt);
	tap_ok(strstr(tcfs_err_msg(), "not Redis") != NULL, "message: %s",
	       tcfs_err_msg());
	tcfs_remote_close(r);
	garbage_stop(&g);
}

/* A reply that claims 4 MiB and comes a byte every 20 ms: every read
 * returns, so only a deadline on the whole call ends it, at until_ns, not
 * when the claim would allow (io_ms per MiB: 5 s here). */
static void dripped(void)
{
	struct garbage g = { .what = "*1\r\n$4194304\r\n", .endless = 1,
			     .drip_ms = 20 };
	int port = garbage_start(&g);
	const char *keys[] = { "t:rt:1" };
	struct tcfs_remote_cfg cfg;
	struct tcfs_remote *r;
	char *val = NULL;
	size_t len = 0;
	int64_t t0 = now_ms(), dt;

	cfg_make(&cfg, port);
	cfg.io_ms = 1000;
	r = open_at(port, &cfg);
	tap_eq(tcfs_remote_get_until(r, keys, 1, 4u << 20, &val, &len,
				     (t0 + 300) * 1000000),
	       -ETIMEDOUT, "a dripped reply: -ETIMEDOUT");
	dt = now_ms() - t0;
	tap_ok(dt < 2000, "at the call's deadline, 300 ms (%lld ms), not the"
	       " claim's 5 s", (long long)dt);
	printf("# a dripped reply, deadline 300 ms: %lld ms\n",
	       (long long)dt);
	tap_ok(val == NULL, "nothing returned");
	tcfs_remote_close(r);
	garbage_stop(&g);
}

/* A kernel as tcfs publishes it: children, then sidecar and group. */
#define KNAME "add_kernel"
#define GROUP "{\"child_paths\": [\"add_kernel.cubin\", \"add_kernel.json\"]}"
static const char cubin[] = "\x7f" "ELF\0\0\1\2cubin\0bytes";
static const char meta[] = "{\"name\": \"add_kernel\", \"num_warps\": 4}";

static void rkey(const char *file, char *buf)
{
	tcfs_keyfmt_expand(TCFS_KEYFMT_DEFAULT, KEY, file, buf,
			   TCFS_KEYFMT_KEY_MAX + 1);
}

/* Publishes KNAME: with a sidecar when sidecar, signed with hkey. */
static void publish(struct tcfs_remote *r, const char *group, int sidecar,
		    const char *hkey)
{
	static char k[4][TCFS_KEYFMT_KEY_MAX + 1];
	struct tcfs_sidecar *sc = calloc(1, sizeof(*sc));
	char *side = NULL;
	size_t slen = 0;

	snprintf(sc->key, sizeof(sc->key), "%s", KEY);
	snprintf(sc->name, sizeof(sc->name), "%s", KNAME);
	sc->group = 1;
	tcfs_sidecar_add(sc, "add_kernel.cubin", cubin, sizeof(cubin));
	tcfs_sidecar_add(sc, "add_kernel.json", meta, strlen(meta));
	tcfs_sidecar_add(sc, "__grp__" KNAME ".json", group, strlen(group));
	tcfs_sidecar_render(sc, (const unsigned char *)hkey,
			    hkey ? strlen(hkey) : 0, &side, &slen);
	rkey("add_kernel.cubin", k[0]);
	rkey("add_kernel.json", k[1]);
	rkey("__tcfs__" KNAME ".json", k[2]);
	rkey("__grp__" KNAME ".json", k[3]);
	struct tcfs_remote_kv kv[] = {
		{ k[0], cubin, sizeof(cubin) }, { k[1], meta, strlen(meta) },
		{ k[2], side, slen }, { k[3], group, strlen(group) },
	};
	tap_eq(tcfs_remote_put(r, kv, 4, 2), 0,
	       "publish a kernel");
	if (!sidecar)
		direct_cmd(r, "DEL", k[2], NULL, 0);
	free(side);
	free(sc);
}

static struct tcfs_remote *open_trust(int port, enum tcfs_remote_trust t,
				      const char *hkey)
{
	struct tcfs_remote_cfg cfg;

	cfg_make(&cfg, port);
	cfg.trust = t;
	if (hkey) {
		cfg.hmac_len = strlen(hkey);
		memcpy(cfg.hmac_key, hkey, cfg.hmac_len);
	}
	return open_at(port, &cfg);
}

static int fetch_rc(struct tcfs_remote *r, struct tcfs_fetched *f)
{
	int rc = tcfs_remote_fetch_kernel(r, KEY, KNAME, f);

	if (rc)
		printf("# %s\n", tcfs_err_msg());
	return rc;
}

/* A whole kernel, checked: its children only, byte for byte. */
static void fetch_whole(int port)
{
	struct tcfs_remote *r = open_trust(port, TCFS_TRUST_CHECKED, NULL);
	struct tcfs_remote_stats *st = tcfs_remote_stats(r);
	struct tcfs_fetched f;

	publish(r, GROUP, 1, NULL);
	tap_eq(fetch_rc(r, &f), 0, "fetch a kernel");
	tap_ok(f.n == 2 && f.group && f.sidecar && !f.signed_ok,
	       "its 2 children, with a sidecar, unsigned");
	tap_ok(!strcmp(f.f[0].name, "add_kernel.cubin") &&
		       f.f[0].len == sizeof(cubin) &&
		       !memcmp(f.f[0].bytes, cubin, sizeof(cubin)),
	       "the cubin, byte for byte");
	tap_ok(!strcmp(f.f[1].name, "add_kernel.json") &&
		       f.f[1].len == strlen(meta),
	       "the metadata");
	tap_eq(f.bytes, sizeof(cubin) + strlen(meta), "bytes: the children's");
	tap_eq(atomic_load(&st->kernel_hits), 1, "counted a kernel hit");
	tap_ok(atomic_load(&st->bytes_fetched) >= f.bytes,
	       "counted bytes fetched");
	tcfs_fetched_free(&f);
	tcfs_remote_close(r);
}

/* A child gone, flipped, truncated or too big: never part of a kernel. */
static void fetch_damaged(int port)
{
	struct tcfs_remote *r = open_trust(port, TCFS_TRUST_CHECKED, NULL);
	struct tcfs_remote_stats *st = tcfs_remote_stats(r);
	char k[TCFS_KEYFMT_KEY_MAX + 1], bad[sizeof(cubin)];
	struct tcfs_fetched f;

	rkey("add_kernel.cubin", k);
	publish(r, GROUP, 1, NULL);
	direct_cmd(r, "DEL", k, NULL, 0);
	tap_eq(fetch_rc(r, &f), -ENOENT, "a child missing: -ENOENT");
	tap_eq(f.n, 0, "nothing handed out");
	tap_eq(atomic_load(&st->misses), 1, "counted a miss");
	memcpy(bad, cubin, sizeof(bad));
	bad[5] ^= 0x40;
	direct_cmd(r, "SET", k, bad, sizeof(bad));
	tap_eq(fetch_rc(r, &f), -EBADMSG, "a flipped byte: -EBADMSG");
	tap_ok(strstr(tcfs_err_msg(), k) != NULL, "message names the key");
	tap_eq(atomic_load(&st->refused), 1, "counted refused");
	direct_cmd(r, "SET", k, cubin, sizeof(cubin) - 1);
	mget_calls(port, 1);
	tap_eq(fetch_rc(r, &f), -EBADMSG, "truncated: -EBADMSG");
	tap_eq(mget_calls(port, 0), 1, "refused from its size: only the"
	       " group fetched");
	tcfs_remote_close(r);
	r = open_trust(port, TCFS_TRUST_ANY, NULL);
	tap_eq(fetch_rc(r, &f), -EBADMSG,
	       "trust any, a sidecar that disagrees: still refused");
	tcfs_remote_close(r);
}

static void fetch_bounds(int port)
{
	struct tcfs_remote_cfg cfg;
	struct tcfs_remote *r;
	struct tcfs_fetched f;

	cfg_make(&cfg, port);
	cfg.file_max = sizeof(cubin) - 1;
	r = open_at(port, &cfg);
	publish(r, GROUP, 1, NULL);
	mget_calls(port, 1);
	tap_eq(fetch_rc(r, &f), -EFBIG, "a child over file_max: -EFBIG");
	tap_eq(mget_calls(port, 0), 1, "the children not fetched");
	tcfs_remote_close(r);
	cfg.file_max = 1 << 20;
	cfg.kernel_max = sizeof(cubin) + strlen(meta);
	r = open_at(port, &cfg);
	tap_eq(fetch_rc(r, &f), -EFBIG, "a kernel over kernel_max: -EFBIG");
	tcfs_remote_close(r);
}

/* Stock Triton's groups have no sidecar: only trust=any takes them. */
static void fetch_trust_levels(int port)
{
	struct tcfs_remote *r = open_trust(port, TCFS_TRUST_CHECKED, NULL);
	struct tcfs_fetched f;

	publish(r, GROUP, 0, NULL);
	tap_eq(fetch_rc(r, &f), -EBADMSG, "no sidecar, trust checked: refused");
	tcfs_remote_close(r);
	r = open_trust(port, TCFS_TRUST_ANY, NULL);
	tap_eq(fetch_rc(r, &f), 0, "no sidecar, trust any: accepted");
	tap_ok(f.n == 2 && !f.sidecar, "its 2 children, no sidecar");
	tcfs_fetched_free(&f);
	tcfs_remote_close(r);
	r = open_trust(port, TCFS_TRUST_SIGNED, "fleet-key");
	tap_eq(fetch_rc(r, &f), -EPERM, "no sidecar, trust signed: -EPERM");
	publish(r, GROUP, 1, NULL);
	tap_eq(fetch_rc(r, &f), -EPERM, "unsigned, trust signed: -EPERM");
	publish(r, GROUP, 1, "other-key");
	tap_eq(fetch_rc(r, &f), -EPERM, "signed with another key: -EPERM");
	publish(r, GROUP, 1, "fleet-key");
	tap_eq(fetch_rc(r, &f), 0, "signed with the key: accepted");
	tap_ok(f.signed_ok, "signed_ok");
	tcfs_fetched_free(&f);
	tcfs_remote_close(r);
	/* With a key, any sidecar must be signed with it, whatever the
	 * trust: an unsigned one is a writer without the key. */
	r = open_trust(port, TCFS_TRUST_CHECKED, "fleet-key");
	publish(r, GROUP, 1, NULL);
	tap_eq(fetch_rc(r, &f), -EPERM, "unsigned, trust checked, a key: "
	       "-EPERM");
	tcfs_remote_close(r);
}

/* A group naming "../x" or "/etc/passwd" never reaches a key. */
static void fetch_hostile_names(int port)
{
	struct tcfs_remote *r = open_trust(port, TCFS_TRUST_ANY, NULL);
	struct tcfs_fetched f;

	publish(r, "{\"child_paths\": [\"../x\", \"add_kernel.json\"]}", 0,
		NULL);
	tap_eq(fetch_rc(r, &f), -EBADMSG, "a child ../x: -EBADMSG");
	publish(r, "{\"child_paths\": [\"/etc/passwd\"]}", 0, NULL);
	tap_eq(fetch_rc(r, &f), -EBADMSG, "a child /etc/passwd: -EBADMSG");
	publish(r, "{\"child_paths\": [\"add_kernel.cubin\", ", 0, NULL);
	tap_eq(fetch_rc(r, &f), -EBADMSG, "a group cut short: -EBADMSG");
	tcfs_remote_close(r);
}

/* A single file, with its sidecar of kind "file"; modules only when
 * asked for. */
static void fetch_single(int port)
{
	static const char tune[] = "{\"configs_timings\": []}";
	struct tcfs_remote *r = open_trust(port, TCFS_TRUST_CHECKED, NULL);
	struct tcfs_sidecar *sc = calloc(1, sizeof(*sc));
	char k[2][TCFS_KEYFMT_KEY_MAX + 1], *side = NULL;
	struct tcfs_fetched f;
	size_t slen = 0;

	snprintf(sc->key, sizeof(sc->key), "%s", KEY);
	snprintf(sc->name, sizeof(sc->name), "f.autotune.json");
	tcfs_sidecar_add(sc, "f.autotune.json", tune, strlen(tune));
	tcfs_sidecar_render(sc, NULL, 0, &side, &slen);
	rkey("f.autotune.json", k[0]);
	rkey("__tcfs__f.autotune.json.json", k[1]);
	struct tcfs_remote_kv kv[] = { { k[0], tune, strlen(tune) },
				       { k[1], side, slen } };
	tcfs_remote_put(r, kv, 2, 1);
	tap_eq(tcfs_remote_fetch_file(r, KEY, "f.autotune.json", &f), 0,
	       "fetch a single file");
	tap_ok(f.n == 1 && !f.group && f.f[0].len == strlen(tune) &&
		       !memcmp(f.f[0].bytes, tune, strlen(tune)),
	       "its bytes");
	tap_eq(atomic_load(&tcfs_remote_stats(r)->module_hits), 1,
	       "counted a module hit");
	tcfs_fetched_free(&f);
	tap_eq(tcfs_remote_fetch_file(r, KEY, "none.json", &f), -ENOENT,
	       "an absent file: -ENOENT");
	tap_eq(tcfs_remote_fetch_file(r, KEY, "m.so", &f), -EPERM,
	       "a module with remote_modules off: -EPERM");
	free(side);
	free(sc);
	tcfs_remote_close(r);
}

static void fetch_all(void)
{
	int port;
	pid_t pid = redis_start(&port, NULL);

	fetch_whole(port);
	fetch_damaged(port);
	fetch_bounds(port);
	fetch_trust_levels(port);
	fetch_hostile_names(port);
	fetch_single(port);
	redis_stop(pid);
}
int main(void)
{
	int port;
	pid_t pid;

	signal(SIGPIPE, SIG_IGN);
	pid = redis_start(&port, NULL);
	round_trip(port);
	atomic_ttl(port);
	too_big(port);
	busy(port);
	redis_stop(pid);
	refused();
	stalled();
	password();
	garbage("HTTP/1.1 400 Bad\r\n\r\n", 0, "an HTTP answer: -EPROTO");
	garbage("*2147483647\r\n", 0, "an array of 2^31-1: -EPROTO");
	garbage("$1000000000\r\n", 1, "a 1 GB value, streamed: -EPROTO");
	dripped();
	fetch_all();
	return tap_done();
}
