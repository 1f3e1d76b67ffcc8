/* remote_config: the remote tier's URL, options, secret files and key
 * format take what Triton and the header say, and refuse the rest. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/remote/config.h"
#include "index/remote/keyfmt.h"
#include "index/remote/option.h"
#include "index/remote/redis.h"
#include "index/remote/remote.h"
#include "tap.h"

static const char *dir;

static void defaults(void)
{
	struct tcfs_remote_cfg c;
	const struct tcfs_redis_own *o;

	tcfs_remote_cfg_init(&c);
	o = tcfs_redis_own_of(&c);
	tap_ok(o->port == 6379 && o->db == 0 && !o->host[0] && !o->user[0] &&
		       !o->pass[0] && c.hmac_len == 0,
	       "defaults: port 6379, db 0, no host, user or secret");
	tap_ok(strcmp(c.key_format, TCFS_KEYFMT_DEFAULT) == 0 &&
		       c.connect_ms == 50 && c.io_ms == 200 &&
		       c.budget_ms == 500 && c.breaker_fails == 3 &&
		       c.breaker_open_ms == 30000 && c.miss_ttl_ms == 30000 &&
		       c.conns == 4 && c.publish == TCFS_PUBLISH_BINARY &&
		       c.trust == TCFS_TRUST_CHECKED && c.modules == 0 &&
		       c.ttl_s == 0 && c.file_max == 64u << 20 &&
		       c.kernel_max == 256u << 20 && c.queue_max == 1024,
	       "defaults: as the header says");
}

static void url_ok(const char *url, const char *host, int port,
		   const char *user, int db, const char *back)
{
	struct tcfs_remote_cfg c;
	const struct tcfs_redis_own *o;
	char buf[600];
	int rc;

	tcfs_remote_cfg_init(&c);
	o = tcfs_redis_own_of(&c);
	rc = tcfs_remote_cfg_url(&c, url);
	tcfs_remote_cfg_url_of(&c, buf, sizeof(buf));
	tap_ok(rc == 0 && strcmp(o->host, host) == 0 && o->port == port &&
		       strcmp(o->user, user) == 0 && o->db == db &&
		       strcmp(buf, back) == 0,
	       "url %s: host %s port %d user '%s' db %d, shown %s", url, host,
	       port, user, db, buf);
}

/* A refused URL leaves the cfg as it was, and its message says why
 * (with want in it) and never holds the password. */
static void url_bad(const char *url, const char *want)
{
	struct tcfs_remote_cfg c;
	const struct tcfs_redis_own *o;
	int rc;

	tcfs_remote_cfg_init(&c);
	o = tcfs_redis_own_of(&c);
	tcfs_remote_cfg_url(&c, "redis://keep:7000/3");
	rc = tcfs_remote_cfg_url(&c, url);
	tap_ok(rc == -EINVAL && strstr(tcfs_err_msg(), want) &&
		       !strstr(tcfs_err_msg(), "s3cret") &&
		       strcmp(o->host, "keep") == 0 && o->port == 7000 &&
		       o->db == 3,
	       "url '%s' refused: %s", url, tcfs_err_msg());
}

static void urls(void)
{
	url_ok("redis://h", "h", 6379, "", 0, "redis://h:6379/0");
	url_ok("redis://cache.example.com:7000/2", "cache.example.com", 7000,
	       "", 2, "redis://cache.example.com:7000/2");
	url_ok("redis://10.0.0.1/", "10.0.0.1", 6379, "", 0,
	       "redis://10.0.0.1:6379/0");
	url_ok("redis://reader@h:1", "h", 1, "reader", 0,
	       "redis://reader@h:1/0");
	url_ok("redis://[::1]:6380/15", "::1", 6380, "", 15,
	       "redis://[::1]:6380/15");
	url_ok("redis://u@[fe80::1]", "fe80::1", 6379, "u", 0,
	       "redis://u@[fe80::1]:6379/0");
	url_bad("redis://u:s3cret@h", "remote_auth_file");
	url_bad("redis://:s3cret@h", "remote_auth_file");
	url_bad("redis://u:@h", "remote_auth_file");
	url_bad("rediss://h", "redis://");
	url_bad("http://h", "redis://");
	url_bad("unix:///tmp/r.sock", "redis://");
	url_bad("h:6379", "redis://");
	url_bad("redis://", "host");
	url_bad("redis://:6379", "host");
	url_bad("redis://@h", "user");
	url_bad("redis://h:0", "port");
	url_bad("redis://h:65536", "port");
	url_bad("redis://h:", "port");
	url_bad("redis://h:-1", "port");
	url_bad("redis://h:+80", "port");
	url_bad("redis://h:80x", "port");
	url_bad("redis://h:99999999999999999999999", "port");
	url_bad("redis://h/x", "database");
	url_bad("redis://h/-1", "database");
	url_bad("redis://h/1/2", "database");
	url_bad("redis://h/99999999999", "database");
	url_bad("redis://h?db=1", "host");
	url_bad("redis://h h", "host");
	url_bad("redis://::1", "host");
	url_bad("redis://[::1", "]");
	url_bad("redis://[::1]x", "after IPv6");
	url_bad("redis://[zz::1]", "IPv6");
	url_bad("redis://[]", "host");
}

static void set_ok(struct tcfs_remote_cfg *c, const char *name,
		   const char *v)
{
	int rc = tcfs_remote_cfg_set(c, name, v);

	tap_ok(rc == 0, "remote_%s=%s taken%s%s", name, v, rc ? ": " : "",
	       rc ? tcfs_err_msg() : "");
}

static void set_bad(const char *name, const char *v)
{
	struct tcfs_remote_cfg c, was;
	char want[64];
	int rc;

	tcfs_remote_cfg_init(&c);
	was = c;
	rc = tcfs_remote_cfg_set(&c, name, v);
	snprintf(want, sizeof(want), "remote_%s", name);
	tap_ok(rc == -EINVAL && strstr(tcfs_err_msg(), want) &&
		       memcmp(&c, &was, sizeof(c)) == 0,
	       "remote_%s='%s' refused, cfg kept: %s", name, v,
	       tcfs_err_msg());
}

static void options(void)
{
	struct tcfs_remote_cfg c;

	tcfs_remote_cfg_init(&c);
	set_ok(&c, "key_format", "{{literal}}:{key}:{filename}");
	set_ok(&c, "publish", "all");
	set_ok(&c, "trust", "signed");
	set_ok(&c, "modules", "on");
	set_ok(&c, "ttl", "86400");
	set_ok(&c, "connect_timeout", "20");
	set_ok(&c, "timeout", "100");
	set_ok(&c, "budget", "300");
	set_ok(&c, "breaker", "5");
	set_ok(&c, "miss_ttl", "0");
	set_ok(&c, "conns", "2");
	set_ok(&c, "file_max", "1M");
	set_ok(&c, "kernel_max", "2GiB");
	tap_ok(strcmp(c.key_format, "{{literal}}:{key}:{filename}") == 0 &&
		       c.publish == TCFS_PUBLISH_ALL &&
		       c.trust == TCFS_TRUST_SIGNED && c.modules == 1 &&
		       c.ttl_s == 86400 && c.connect_ms == 20 &&
		       c.io_ms == 100 && c.budget_ms == 300 &&
		       c.breaker_fails == 5 && c.breaker_open_ms == 30000 &&
		       c.miss_ttl_ms == 0 && c.conns == 2 &&
		       c.file_max == 1u << 20 &&
		       c.kernel_max == UINT64_C(2) << 30,
	       "options: each one set");
	set_ok(&c, "breaker", "7:1500");
	set_ok(&c, "publish", "off");
	set_ok(&c, "trust", "any");
	set_ok(&c, "modules", "off");
	set_ok(&c, "file_max", "4096");
	set_ok(&c, "kernel_max", "64k");
	tap_ok(c.breaker_fails == 7 && c.breaker_open_ms == 1500 &&
		       c.publish == TCFS_PUBLISH_OFF &&
		       c.trust == TCFS_TRUST_ANY && c.modules == 0 &&
		       c.file_max == 4096 && c.kernel_max == 64u << 10,
	       "options: set again");
	tap_eq(tcfs_remote_cfg_set(&c, "url", "redis://h"), -ENOENT,
	       "an unknown option is -ENOENT");
	tap_eq(tcfs_remote_cfg_set(&c, "remote_ttl", "1"), -ENOENT,
	       "the remote_ prefix is not part of the name");
}

static void options_bad(void)
{
	static const char *const bad[][2] = {
		{ "key_format", "triton:{key}" },
		{ "key_format", "{0}:{key}:{filename}" },
		{ "publish", "binary-only" }, { "publish", "" },
		{ "trust", "none" }, { "trust", "Checked" },
		{ "modules", "yes" }, { "modules", "1" },
		{ "ttl", "-1" }, { "ttl", "1h" }, { "ttl", "" },
		{ "ttl", "99999999999" },
		{ "connect_timeout", "0" }, { "connect_timeout", "50ms" },
		{ "timeout", " 200" }, { "timeout", "3600001" },
		{ "budget", "0x10" }, { "budget", "1e3" },
		{ "breaker", "0" }, { "breaker", "3:" }, { "breaker", ":5" },
		{ "breaker", "3:0" }, { "breaker", "3:1:2" },
		{ "breaker", "000000000000003xyz" },
		{ "miss_ttl", "-5" }, { "conns", "0" }, { "conns", "257" },
		{ "file_max", "0" }, { "file_max", "1X" },
		{ "file_max", "M" }, { "file_max", "1MM" },
		{ "file_max", "2T" }, { "kernel_max", "1025G" },
		{ "kernel_max", "-1" }, { "kernel_max", "18446744073709551617" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		set_bad(bad[i][0], bad[i][1]);
}

/* A file of mode mode holding len bytes of text; its path. */
static const char *secret(const char *name, const char *text, size_t len,
			  mode_t mode)
{
	static char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || close(fd) ||
	    chmod(path, mode)) {
		perror(path);
		exit(2);
	}
	return path;
}

static void secret_ok(const char *text, size_t len, mode_t mode,
		      const char *want, const char *what)
{
	unsigned char buf[TCFS_REMOTE_SECRET_MAX];
	const char *p = secret("s", text, len, mode);
	size_t n = 0;
	int rc = tcfs_remote_read_secret(p, buf, sizeof(buf), &n);

	tap_ok(rc == 0 && n == strlen(want) && !memcmp(buf, want, n),
	       "secret %s: read, %zu bytes", what, n);
}

static void secret_bad(const char *p, int want_rc, const char *want,
		       const char *what)
{
	unsigned char buf[16];
	size_t n = 99;
	int rc = tcfs_remote_read_secret(p, buf, sizeof(buf), &n);

	tap_ok(rc == want_rc && strstr(tcfs_err_msg(), p) &&
		       strstr(tcfs_err_msg(), want) && n == 99,
	       "secret %s: refused: %s", what, tcfs_err_msg());
}

static void secrets(void)
{
	char big[TCFS_REMOTE_SECRET_MAX + 8], want[TCFS_REMOTE_SECRET_MAX + 1];

	secret_ok("pw", 2, 0600, "pw", "0600");
	secret_ok("pw\n", 3, 0400, "pw", "0400, newline dropped");
	secret_ok("pw\r\n", 4, 0600, "pw", "CRLF dropped");
	secret_ok("pw\n\n", 4, 0600, "pw\n", "only one newline dropped");
	secret_ok("a b\tc", 5, 0600, "a b\tc", "inner blanks kept");
	memset(big, 'x', sizeof(big));
	big[TCFS_REMOTE_SECRET_MAX] = '\n';
	memcpy(want, big, TCFS_REMOTE_SECRET_MAX);
	want[TCFS_REMOTE_SECRET_MAX] = '\0';
	secret_ok(big, TCFS_REMOTE_SECRET_MAX + 1, 0600, want, "of 512 bytes");
	secret_bad(secret("s", big, TCFS_REMOTE_SECRET_MAX + 2, 0600), -EINVAL,
		   "longer than", "513 bytes for 16");
	secret_bad(secret("s", "pw", 2, 0644), -EACCES,
		   "mode 0644: a secret must be readable by its owner only "
		   "(chmod 600)",
		   "0644");
	secret_bad(secret("s", "pw", 2, 0620), -EACCES, "mode 0620",
		   "group-writable");
	secret_bad(secret("s", "pw", 2, 0604), -EACCES, "mode 0604",
		   "others may read");
	secret_bad(secret("s", "", 0, 0600), -EINVAL, "empty", "empty");
	secret_bad(secret("s", "\n", 1, 0600), -EINVAL, "empty",
		   "a newline only");
	secret_bad(secret("s", "0123456789abcdefg", 17, 0600), -EINVAL,
		   "longer than 16 bytes", "17 bytes for 16");
	secret_ok("0123456789abcdef\n", 17, 0600, "0123456789abcdef",
		  "16 bytes and a newline for 16");
}

/* What is not a file of the reader's own is refused, whatever it holds. */
static void secret_kinds(void)
{
	char link[PATH_MAX + 8];

	snprintf(link, sizeof(link), "%s/link", dir);
	unlink(link);
	if (symlink(secret("s", "pw", 2, 0600), link) < 0)
		perror("symlink");
	secret_bad(link, -ELOOP, "symbolic link", "a symlink to a good one");
	secret_bad(dir, -EINVAL, "not a regular file", "a directory");
	secret_bad("/dev/null", -EINVAL, "not a regular file", "a device");
	snprintf(link, sizeof(link), "%s/none", dir);
	secret_bad(link, -ENOENT, "No such file", "missing");
	if (geteuid() != 0) {
		tap_ok(1, "another owner: not tried, needs root");
	} else {
		const char *p = secret("s", "pw", 2, 0600);

		if (chown(p, 65534, 65534) < 0)
			perror("chown");
		secret_bad(p, -EACCES, "owned by uid 65534", "another owner");
	}
}

/* auth_file and key_file, read through tcfs_remote_cfg_set. */
static void secret_options(void)
{
	struct tcfs_remote_cfg c;

	tcfs_remote_cfg_init(&c);
	set_ok(&c, "auth_file", secret("s", "hunter2\n", 8, 0600));
	tap_ok(strcmp(tcfs_redis_own(&c)->pass, "hunter2") == 0,
	       "auth_file fills the password");
	set_ok(&c, "key_file", secret("s", "k\0ey", 4, 0600));
	tap_ok(c.hmac_len == 4 && !memcmp(c.hmac_key, "k\0ey", 4),
	       "key_file fills the HMAC key, bytes as they are");
	tap_eq(tcfs_remote_cfg_set(&c, "auth_file",
				   secret("s", "a\0b", 3, 0600)),
	       -EINVAL, "a password with a NUL refused");
	tap_ok(strcmp(tcfs_redis_own(&c)->pass, "hunter2") == 0 &&
		       strstr(tcfs_err_msg(), "remote_auth_file"),
	       "and the password kept: %s", tcfs_err_msg());
	tap_eq(tcfs_remote_cfg_set(&c, "key_file",
				   secret("s", "k", 1, 0666)),
	       -EACCES, "remote_key_file of mode 0666 refused");
}

/* The URL's scheme picks the engine from the table; an unknown one, or
 * none, is refused naming the schemes known, and never shows the rest of
 * the URL (a password may be in it). */
static void engines(void)
{
	struct tcfs_remote_cfg c;

	tcfs_remote_cfg_init(&c);
	tap_ok(c.engine == &tcfs_remote_redis, "the default engine: redis");
	c.engine = NULL;
	tap_eq(tcfs_remote_cfg_url(&c, "redis://h:7000"), 0, "redis:// taken");
	tap_ok(c.engine == &tcfs_remote_redis &&
		       tcfs_redis_own(&c)->port == 7000,
	       "redis:// picks the redis engine, which parses the rest");
	tap_eq(tcfs_remote_cfg_url(&c, "http://u:s3cret@x"), -EINVAL,
	       "http:// refused");
	tap_ok(strstr(tcfs_err_msg(), "unknown scheme 'http' (known: "
				      "redis://)") &&
		       !strstr(tcfs_err_msg(), "s3cret") &&
		       c.engine == &tcfs_remote_redis,
	       "named with the schemes known, no secret: %s", tcfs_err_msg());
	tap_eq(tcfs_remote_cfg_url(&c, "cache:6379"), -EINVAL,
	       "no scheme refused");
	tap_ok(!!strstr(tcfs_err_msg(), "no scheme (known: redis://"),
	       "named with the schemes known: %s", tcfs_err_msg());
	tap_eq(tcfs_remote_cfg_url(&c, "://h"), -EINVAL, "empty scheme");
}

/* The engine's own option goes to the engine; a URL given later keeps
 * it, and the URL rendered back never holds it. */
static void engine_options(void)
{
	struct tcfs_remote_cfg c;
	char buf[600];

	tcfs_remote_cfg_init(&c);
	set_ok(&c, "auth_file", secret("s", "pw-s3cret", 9, 0600));
	tap_eq(tcfs_remote_cfg_url(&c, "redis://u@h:1/2"), 0, "then a URL");
	tcfs_remote_cfg_url_of(&c, buf, sizeof(buf));
	tap_ok(strcmp(tcfs_redis_own(&c)->pass, "pw-s3cret") == 0 &&
		       strcmp(buf, "redis://u@h:1/2") == 0,
	       "the password kept by the engine, not shown: %s", buf);
	tap_eq(tcfs_remote_redis.set(c.own, "timeout", "5"), -ENOENT,
	       "the engine knows its own options only");
	tap_eq(tcfs_remote_cfg_set(&c, "nosuch", "1"), -ENOENT,
	       "a name neither knows: -ENOENT");
	tap_ok(!!strstr(tcfs_err_msg(), "remote_nosuch: no such option"),
	       "named: %s", tcfs_err_msg());
}

/* remote_trust=signed with no key would refuse every kernel, each
 * logged as "no key": a mount that can never hit, so a usage error. */
static void signed_needs_key(void)
{
	struct tcfs_remote_cfg c;
	char opts[PATH_MAX + 128], *rest = NULL;
	int named = 0, rc;

	rc = tcfs_remote_cfg_opts(&c, "ro,remote=redis://h,"
				  "remote_trust=signed", &named, &rest);
	tap_ok(rc == -EINVAL && strstr(tcfs_err_msg(), "remote_key_file"),
	       "remote_trust=signed without remote_key_file: -EINVAL: %s",
	       tcfs_err_msg());
	free(rest);
	rest = NULL;
	snprintf(opts, sizeof(opts), "remote_trust=signed,remote=redis://h,"
		 "remote_key_file=%s", secret("k", "key", 3, 0600));
	rc = tcfs_remote_cfg_opts(&c, opts, &named, &rest);
	tap_ok(rc == 0 && c.trust == TCFS_TRUST_SIGNED && c.hmac_len == 3,
	       "... with one, given after it: taken");
	free(rest);
	rest = NULL;
	rc = tcfs_remote_cfg_opts(&c, "remote=redis://h,remote_trust=checked",
				  &named, &rest);
	tap_ok(rc == 0, "remote_trust=checked needs no key");
	free(rest);
}

int main(void)
{
	dir = tap_tmpdir();
	defaults();
	urls();
	options();
	options_bad();
	secrets();
	secret_kinds();
	secret_options();
	engines();
	engine_options();
	signed_needs_key();
	tap_rmtree(dir);
	return tap_done();
}
