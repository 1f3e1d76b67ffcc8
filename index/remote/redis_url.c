/* redis_url: the Redis engine's own settings: its URL, rendered back
 * without the password, and remote_auth_file. */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "index/base/err.h"
#include "index/base/utf8.h"
#include "index/remote/redis.h"

_Static_assert(sizeof(struct tcfs_redis_own) <= TCFS_REMOTE_OWN_MAX,
	       "Redis's settings fit the cfg's engine area");

void tcfs_redis_init(void *own)
{
	struct tcfs_redis_own *c = own;

	memset(c, 0, sizeof(*c));
	c->port = 6379;
}

/* What a URL's parts may hold: no controls, space or URL delimiters. */
static int url_text(const char *s, size_t n, const char *also_bad)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch <= 0x20 || ch >= 0x7f || strchr("/?#@%", ch) ||
		    strchr(also_bad, ch))
			return 0;
	}
	return 1;
}

static int url_bad(const char *what, const char *s, size_t n)
{
	char part[TCFS_REMOTE_HOST_MAX + 1], show[TCFS_UTF8_SHOW_MAX];

	snprintf(part, sizeof(part), "%.*s", (int)n, s);
	tcfs_utf8_printable(part, show, sizeof(show));
	return tcfs_err_set(-EINVAL, "remote URL: %s '%s'", what, show);
}

/* The user part, before '@' (s, n bytes).  A ':' in it is a password. */
static int url_user(struct tcfs_redis_own *c, const char *s, size_t n)
{
	if (memchr(s, ':', n))
		return tcfs_err_set(-EINVAL,
				    "remote URL: a password in the URL is "
				    "refused (ps and fstab show it): put it "
				    "in a file named by remote_auth_file");
	if (n == 0 || n > TCFS_REMOTE_USER_MAX || !url_text(s, n, ""))
		return url_bad("bad user", s, n);
	memcpy(c->user, s, n);
	c->user[n] = '\0';
	return 0;
}

/* HOST or [V6], then :PORT or nothing (s, n bytes). */
static int url_host(struct tcfs_redis_own *c, const char *s, size_t n)
{
	const char *h = s, *end = s + n, *colon;
	size_t hn;
	uint64_t port = 6379;
	unsigned char v6[16];

	if (n && *s == '[') {
		const char *rb = memchr(s, ']', n);

		if (!rb)
			return url_bad("no ']' after IPv6 host", s, n);
		h = s + 1;
		hn = (size_t)(rb - h);
		colon = rb + 1 < end ? rb + 1 : NULL;
		if (colon && *colon != ':')
			return url_bad("bad text after IPv6 host", rb + 1,
				       (size_t)(end - rb - 1));
	} else {
		colon = memchr(s, ':', n);
		hn = colon ? (size_t)(colon - s) : n;
	}
	if (hn == 0 || hn > TCFS_REMOTE_HOST_MAX ||
	    !url_text(h, hn, h == s ? "[]:" : "[]"))
		return url_bad("bad host", h, hn);
	memcpy(c->host, h, hn);
	c->host[hn] = '\0';
	if (h != s && inet_pton(AF_INET6, c->host, v6) != 1)
		return url_bad("bad IPv6 address", h, hn);
	if (colon && (tcfs_remote_parse_u64(colon + 1,
					    (size_t)(end - colon - 1), 65535,
					    &port) < 0 ||
		      port == 0))
		return url_bad("bad port", colon + 1,
			       (size_t)(end - colon - 1));
	c->port = (int)port;
	return 0;
}

/* [USER@]HOST[:PORT][/DB], parsed apart (t) until the whole is good, so
 * that a bad URL leaves c as it was; the password is c's and is kept. */
int tcfs_redis_parse_url(void *own, const char *rest)
{
	struct tcfs_redis_own *c = own, t = { .port = 6379 };
	const char *a = rest, *slash, *at;
	uint64_t db = 0;
	int rc;

	slash = strchr(a, '/');
	if (!slash)
		slash = a + strlen(a);
	at = memchr(a, '@', (size_t)(slash - a));
	if (at) {
		rc = url_user(&t, a, (size_t)(at - a));
		if (rc < 0)
			return rc;
		a = at + 1;
	}
	rc = url_host(&t, a, (size_t)(slash - a));
	if (rc < 0)
		return rc;
	if (*slash && slash[1] &&
	    tcfs_remote_parse_u64(slash + 1, strlen(slash + 1), INT_MAX,
				  &db) < 0)
		return url_bad("bad database number", slash + 1,
			       strlen(slash + 1));
	memcpy(c->host, t.host, sizeof(c->host));
	memcpy(c->user, t.user, sizeof(c->user));
	c->port = t.port;
	c->db = (int)db;
	return 0;
}

void tcfs_redis_url_of(const void *own, char *buf, size_t len)
{
	const struct tcfs_redis_own *c = own;
	int v6 = strchr(c->host, ':') != NULL;

	snprintf(buf, len, "redis://%s%s%s%s%s:%d/%d", c->user,
		 c->user[0] ? "@" : "", v6 ? "[" : "", c->host, v6 ? "]" : "",
		 c->port, c->db);
}

/* The password goes to AUTH as text: a NUL in it would cut it short. */
static int set_auth_file(struct tcfs_redis_own *c, const char *v)
{
	unsigned char pw[TCFS_REMOTE_SECRET_MAX];
	size_t n = 0;
	int rc;

	rc = tcfs_remote_read_secret(v, pw, sizeof(pw), &n);
	if (rc == 0 && memchr(pw, '\0', n))
		rc = tcfs_err_set(-EINVAL, "%s: holds a NUL byte: a password "
				  "is text", v);
	if (rc == 0) {
		memcpy(c->pass, pw, n);
		c->pass[n] = '\0';
	}
	explicit_bzero(pw, sizeof(pw));
	return rc < 0 ? tcfs_err_prefix(rc, "remote_auth_file") : 0;
}

const struct tcfs_remote_optdoc tcfs_redis_docs[] = {
	{ "auth_file", "FILE", "the Redis password, from a file of mode 0600 "
	  "(never in the URL, which ps and fstab show)" },
	{ NULL, NULL, NULL },
};

int tcfs_redis_set(void *own, const char *name, const char *value)
{
	if (strcmp(name, "auth_file") == 0)
		return set_auth_file(own, value);
	return -ENOENT;
}
