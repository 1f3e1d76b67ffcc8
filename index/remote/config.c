/* config: the remote tier's settings, from a URL, mount options and
 * secret files, each checked before it is taken. */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/base/utf8.h"
#include "index/remote/config.h"
#include "index/remote/keyfmt.h"
#include "index/remote/remote.h"

/* The longest wait any option may ask for: an hour. */
#define MS_MAX 3600000
/* The longest scheme a message shows. */
#define SCHEME_SHOW_MAX 32

/* Every engine, picked by its URL's scheme; the first is the default.  A
 * new engine is its file and one row here. */
static const struct tcfs_remote_ops *const engines[] = {
	&tcfs_remote_redis,
};

#define NENGINES (sizeof(engines) / sizeof(engines[0]))

void tcfs_remote_cfg_init(struct tcfs_remote_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->engine = engines[0];
	c->engine->init(c->own);
	snprintf(c->key_format, sizeof(c->key_format), "%s",
		 TCFS_KEYFMT_DEFAULT);
	c->connect_ms = 50;
	c->io_ms = 200;
	c->budget_ms = 500;
	c->breaker_fails = 3;
	c->breaker_open_ms = 30000;
	c->miss_ttl_ms = 30000;
	c->conns = 4;
	c->publish = TCFS_PUBLISH_BINARY;
	c->trust = TCFS_TRUST_CHECKED;
	c->modules = 0;
	c->ttl_s = 0;
	c->file_max = UINT64_C(64) << 20;
	c->kernel_max = UINT64_C(256) << 20;
	c->queue_max = 1024;
}

int tcfs_remote_parse_u64(const char *s, size_t n, uint64_t max,
			  uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (v > (max - (uint64_t)(s[i] - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Checks what fstat says of a secret file: 0, or -EACCES/-EINVAL with a
 * message naming path. */
static int secret_stat(const char *path, const struct stat *st, size_t len)
{
	if (!S_ISREG(st->st_mode))
		return tcfs_err_set(-EINVAL, "%s: not a regular file", path);
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return tcfs_err_set(-EACCES,
				    "%s: owned by uid %u: a secret must be "
				    "owned by its reader (uid %u) or root",
				    path, (unsigned)st->st_uid,
				    (unsigned)geteuid());
	if (st->st_mode & 077)
		return tcfs_err_set(-EACCES,
				    "%s: mode %04o: a secret must be readable "
				    "by its owner only (chmod 600)",
				    path, (unsigned)(st->st_mode & 07777));
	if (st->st_size == 0)
		return tcfs_err_set(-EINVAL, "%s: empty", path);
	if ((uint64_t)st->st_size > len + 2)
		return tcfs_err_set(-EINVAL, "%s: longer than %zu bytes", path,
				    len);
	return 0;
}

/* Reads at most cap bytes of fd into buf: their count, or -errno. */
static ssize_t read_upto(int fd, unsigned char *buf, size_t cap)
{
	size_t got = 0;

	while (got < cap) {
		ssize_t r = read(fd, buf + got, cap - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int tcfs_remote_read_secret(const char *path, unsigned char *buf,
			    size_t len, size_t *n)
{
	/* Room for the secret, its newline ("\r\n") and one byte more, to
	 * see a file that grew past its fstat. */
	unsigned char tmp[TCFS_REMOTE_SECRET_MAX + 3];
	struct stat st;
	ssize_t got;
	int fd, rc;

	assert(len >= 1 && len <= TCFS_REMOTE_SECRET_MAX);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
				O_NOCTTY);
	if (fd < 0 && errno == ELOOP)
		return tcfs_err_set(-ELOOP, "%s: a symbolic link: a secret "
				    "is never read through one", path);
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s", path);
	rc = fstat(fd, &st) < 0 ? tcfs_err_errno(-errno, "%s", path)
				: secret_stat(path, &st, len);
	got = rc < 0 ? 0 : read_upto(fd, tmp, len + 3);
	close(fd);
	if (rc == 0 && got < 0)
		rc = tcfs_err_errno((int)got, "%s", path);
	if (rc < 0)
		goto out;
	if (got > 0 && tmp[got - 1] == '\n')
		got -= got > 1 && tmp[got - 2] == '\r' ? 2 : 1;
	if (got == 0)
		rc = tcfs_err_set(-EINVAL, "%s: empty", path);
	else if ((size_t)got > len)
		rc = tcfs_err_set(-EINVAL, "%s: longer than %zu bytes", path,
				  len);
	if (rc == 0) {
		memcpy(buf, tmp, (size_t)got);
		*n = (size_t)got;
	}
out:
	explicit_bzero(tmp, sizeof(tmp));
	return rc;
}

static int bad_value(const char *name, const char *v, const char *what)
{
	char show[TCFS_UTF8_SHOW_MAX];

	tcfs_utf8_printable(v, show, sizeof(show));
	return tcfs_err_set(-EINVAL, "remote_%s: '%s' is not %s", name, show,
			    what);
}

/* A whole number from min to max into *out. */
static int set_int(const char *name, const char *v, int min, int max,
		   int *out)
{
	char what[64];
	uint64_t u;

	assert(min >= 0 && min <= max);
	snprintf(what, sizeof(what), "a whole number from %d to %d", min, max);
	if (tcfs_remote_parse_u64(v, strlen(v), (uint64_t)max, &u) < 0 ||
	    u < (uint64_t)min)
		return bad_value(name, v, what);
	*out = (int)u;
	return 0;
}

/* A size: bytes, or K, M, G (also KB, KiB...), 1 byte to 1 TiB. */
static int set_size(const char *name, const char *v, uint64_t *out)
{
	static const char units[] = "KMG";
	const uint64_t max = UINT64_C(1) << 40;
	size_t n = strspn(v, "0123456789");
	const char *u = v + n, *k;
	unsigned shift = 0;
	uint64_t x;

	if (*u && (k = strchr(units, u[0] & ~0x20)) &&
	    (!u[1] || strcmp(u + 1, "B") == 0 || strcmp(u + 1, "iB") == 0)) {
		shift = 10 * (unsigned)(k - units + 1);
		u += strlen(u);
	}
	if (*u || tcfs_remote_parse_u64(v, n, max, &x) < 0 || x == 0 ||
	    x > max >> shift)
		return bad_value(name, v, "a size from 1 to 1024G "
					  "(bytes, or with K, M or G)");
	*out = x << shift;
	return 0;
}

/* One of words (NULL-ended), its index into *out. */
static int set_word(const char *name, const char *v,
		    const char *const *words, const char *what, int *out)
{
	for (int i = 0; words[i]; i++)
		if (strcmp(v, words[i]) == 0) {
			*out = i;
			return 0;
		}
	return bad_value(name, v, what);
}

static int set_key_format(struct tcfs_remote_cfg *c, const char *v)
{
	int rc;

	if (strlen(v) > TCFS_REMOTE_KEYFMT_MAX)
		return tcfs_err_set(-EINVAL, "remote_key_format: longer than "
				    "%d bytes", TCFS_REMOTE_KEYFMT_MAX);
	rc = tcfs_keyfmt_check(v);
	if (rc < 0)
		return tcfs_err_prefix(rc, "remote_key_format");
	snprintf(c->key_format, sizeof(c->key_format), "%s", v);
	return 0;
}

static int set_key_file(struct tcfs_remote_cfg *c, const char *v)
{
	int rc = tcfs_remote_read_secret(v, c->hmac_key, sizeof(c->hmac_key),
					 &c->hmac_len);

	return rc < 0 ? tcfs_err_prefix(rc, "remote_key_file") : 0;
}

static int set_publish(struct tcfs_remote_cfg *c, const char *v)
{
	static const char *const w[] = { [TCFS_PUBLISH_BINARY] = "binary",
					 [TCFS_PUBLISH_ALL] = "all",
					 [TCFS_PUBLISH_OFF] = "off", NULL };
	int i = 0, rc = set_word("publish", v, w, "all, binary or off", &i);

	if (rc == 0)
		c->publish = (enum tcfs_remote_publish)i;
	return rc;
}

static int set_trust(struct tcfs_remote_cfg *c, const char *v)
{
	static const char *const w[] = { [TCFS_TRUST_CHECKED] = "checked",
					 [TCFS_TRUST_ANY] = "any",
					 [TCFS_TRUST_SIGNED] = "signed", NULL };
	int i = 0, rc = set_word("trust", v, w, "any, checked or signed", &i);

	if (rc == 0)
		c->trust = (enum tcfs_remote_trust)i;
	return rc;
}

static int set_inductor(struct tcfs_remote_cfg *c, const char *v)
{
	static const char *const w[] = { [TCFS_INDUCTOR_OFF] = "off",
					 [TCFS_INDUCTOR_SIGNED] = "signed",
					 [TCFS_INDUCTOR_ANY] = "any", NULL };
	int i = 0, rc = set_word("inductor", v, w, "any, signed or off", &i);

	if (rc == 0)
		c->inductor = (enum tcfs_remote_inductor)i;
	return rc;
}

static int set_modules(struct tcfs_remote_cfg *c, const char *v)
{
	static const char *const w[] = { "off", "on", NULL };

	return set_word("modules", v, w, "on or off", &c->modules);
}

/* Seconds, up to what Redis's EXPIRE takes without overflowing its
 * milliseconds on any version. */
static int set_ttl(struct tcfs_remote_cfg *c, const char *v)
{
	int s = 0, rc = set_int("ttl", v, 0, INT_MAX, &s);

	if (rc == 0)
		c->ttl_s = s;
	return rc;
}

static int set_breaker(struct tcfs_remote_cfg *c, const char *v)
{
	const char *colon = strchr(v, ':');
	size_t fn = colon ? (size_t)(colon - v) : strlen(v);
	uint64_t f, ms = (uint64_t)c->breaker_open_ms;

	if (tcfs_remote_parse_u64(v, fn, 1000000, &f) < 0 || f == 0 ||
	    (colon && (tcfs_remote_parse_u64(colon + 1, strlen(colon + 1),
						MS_MAX, &ms) <
			       0 ||
		       ms == 0)))
		return bad_value("breaker", v, "FAILS or FAILS:MS (failures in "
					       "a row, 1 to 1000000; ms open, "
					       "1 to 3600000)");
	c->breaker_fails = (int)f;
	c->breaker_open_ms = (int)ms;
	return 0;
}

static int set_connect_timeout(struct tcfs_remote_cfg *c, const char *v)
{
	return set_int("connect_timeout", v, 1, MS_MAX, &c->connect_ms);
}

static int set_timeout(struct tcfs_remote_cfg *c, const char *v)
{
	return set_int("timeout", v, 1, MS_MAX, &c->io_ms);
}

static int set_budget(struct tcfs_remote_cfg *c, const char *v)
{
	return set_int("budget", v, 1, MS_MAX, &c->budget_ms);
}

/* 0: a miss is not remembered at all. */
static int set_miss_ttl(struct tcfs_remote_cfg *c, const char *v)
{
	return set_int("miss_ttl", v, 0, MS_MAX, &c->miss_ttl_ms);
}

static int set_conns(struct tcfs_remote_cfg *c, const char *v)
{
	return set_int("conns", v, 1, 256, &c->conns);
}

static int set_file_max(struct tcfs_remote_cfg *c, const char *v)
{
	return set_size("file_max", v, &c->file_max);
}

static int set_kernel_max(struct tcfs_remote_cfg *c, const char *v)
{
	return set_size("kernel_max", v, &c->kernel_max);
}

/* The remote_NAME options every engine shares: how each is parsed, and
 * what tcfs mount --help says of it, in one row. */
static const struct {
	struct tcfs_remote_optdoc doc;
	int (*set)(struct tcfs_remote_cfg *c, const char *v);
} options[] = {
	{ { "key_file", "FILE", "the key (a file of mode 0600) that signs "
	    "what is published and checks what is fetched (HMAC-SHA256)" },
	  set_key_file },
	{ { "publish", "binary|all|off", "what is published: no IR (the "
	    "default), every file, or nothing" }, set_publish },
	{ { "trust", "checked|signed|any", "what is accepted: a tcfs "
	    "sidecar matching every byte (the default), one signed with "
	    "remote_key_file's key, or also stock Triton's entries" },
	  set_trust },
	{ { "modules", "on|off", "fetch launcher modules (.so), code every "
	    "node loads, too (default off)" }, set_modules },
	{ { "inductor", "off|signed|any", "Inductor's and vLLM's entries "
	    "(pickles) through the remote: never (the default), only "
	    "HMAC-signed ones, or any, as PyTorch's own remote cache" },
	  set_inductor },
	{ { "ttl", "SECS", "an expiry for what is published (default "
	    "none)" }, set_ttl },
	{ { "key_format", "FMT", "Redis key names, as "
	    "TRITON_REDIS_KEY_FORMAT (default triton:{key}:{filename})" },
	  set_key_format },
	{ { "connect_timeout", "MS", "to connect (default 50)" },
	  set_connect_timeout },
	{ { "timeout", "MS", "per reply (default 200)" }, set_timeout },
	{ { "budget", "MS", "a probe's wait on the remote in all, every byte "
	    "fetched included (default 500)" }, set_budget },
	{ { "breaker", "N[:MS]", "after N failures in a row the remote is "
	    "not asked for MS (default 3:30000)" }, set_breaker },
	{ { "miss_ttl", "MS", "how long a remote miss is remembered "
	    "(default 30000)" }, set_miss_ttl },
	{ { "conns", "N", "requests that may wait on the remote at once "
	    "(default 4; a probe finding none free is a local miss)" },
	  set_conns },
	{ { "file_max", "SIZE", "a value over this is refused before it is "
	    "fetched (default 64M)" }, set_file_max },
	{ { "kernel_max", "SIZE", "a kernel over this is refused before it "
	    "is fetched (default 256M)" }, set_kernel_max },
};
#define NOPTIONS (sizeof(options) / sizeof(*options))

const struct tcfs_remote_optdoc *tcfs_remote_cfg_doc(size_t i)
{
	const struct tcfs_remote_optdoc *own;

	if (i < NOPTIONS)
		return &options[i].doc;
	i -= NOPTIONS;
	for (size_t e = 0; e < NENGINES; e++)
		for (own = engines[e]->docs; own->name; own++)
			if (i-- == 0)
				return own;
	return NULL;
}

int tcfs_remote_cfg_check(const struct tcfs_remote_cfg *c)
{
	if (c->trust == TCFS_TRUST_SIGNED && c->hmac_len == 0)
		return tcfs_err_set(-EINVAL, "remote_trust=signed: needs "
				    "remote_key_file, the key signatures are "
				    "checked with");
	/* Entries are pickles: a sidecar without an HMAC proves nothing of
	 * who wrote one, so "signed" with no key would take none. */
	if (c->inductor == TCFS_INDUCTOR_SIGNED && c->hmac_len == 0)
		return tcfs_err_set(-EINVAL, "remote_inductor=signed: needs "
				    "remote_key_file, the key entries are "
				    "signed and checked with");
	return 0;
}

int tcfs_remote_cfg_set(struct tcfs_remote_cfg *c, const char *name,
			const char *value)
{
	char show[TCFS_UTF8_SHOW_MAX];
	int rc;

	assert(c->engine);
	for (size_t i = 0; i < NOPTIONS; i++)
		if (strcmp(name, options[i].doc.name) == 0)
			return options[i].set(c, value);
	rc = c->engine->set(c->own, name, value);
	if (rc != -ENOENT)
		return rc;
	tcfs_utf8_printable(name, show, sizeof(show));
	return tcfs_err_set(-ENOENT, "remote_%s: no such option", show);
}

/* The engines' schemes, for a message: "redis://, s3://". */
static void schemes_known(char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NENGINES && at < len; i++) {
		int n = snprintf(buf + at, len - at, "%s%s://", i ? ", " : "",
				 engines[i]->scheme);

		at += n > 0 ? (size_t)n : 0;
	}
}

/* Only the scheme is shown, never the URL: its rest may hold a password
 * (an unknown scheme's rules are not known). */
static int scheme_bad(const char *url, size_t n)
{
	char part[SCHEME_SHOW_MAX + 1], show[TCFS_UTF8_SHOW_MAX];
	char known[256];

	schemes_known(known, sizeof(known));
	if (n == 0)
		return tcfs_err_set(-EINVAL, "remote URL: no scheme (known: "
				    "%s, as in redis://HOST)", known);
	snprintf(part, sizeof(part), "%.*s", (int)n, url);
	tcfs_utf8_printable(part, show, sizeof(show));
	return tcfs_err_set(-EINVAL, "remote URL: unknown scheme '%s' "
			    "(known: %s)", show, known);
}

static const struct tcfs_remote_ops *engine_of(const char *url, size_t n)
{
	for (size_t i = 0; i < NENGINES; i++)
		if (strlen(engines[i]->scheme) == n &&
		    strncmp(url, engines[i]->scheme, n) == 0)
			return engines[i];
	return NULL;
}

int tcfs_remote_cfg_url(struct tcfs_remote_cfg *c, const char *url)
{
	_Alignas(max_align_t) unsigned char own[TCFS_REMOTE_OWN_MAX];
	const char *sep = strstr(url, "://");
	size_t n = sep ? (size_t)(sep - url) : 0;
	const struct tcfs_remote_ops *e = sep ? engine_of(url, n) : NULL;
	int rc;

	if (!e)
		return scheme_bad(url, n);
	/* The same engine keeps what the URL does not say (a password); a
	 * new one starts from its defaults.  Either way, a copy until the
	 * whole URL is good. */
	if (e == c->engine)
		memcpy(own, c->own, sizeof(own));
	else
		e->init(own);
	rc = e->parse_url(own, sep + 3);
	if (rc == 0) {
		memcpy(c->own, own, sizeof(own));
		c->engine = e;
	}
	explicit_bzero(own, sizeof(own));
	return rc;
}

void tcfs_remote_cfg_url_of(const struct tcfs_remote_cfg *c, char *buf,
			    size_t len)
{
	assert(c->engine);
	c->engine->url_of(c->own, buf, len);
}
