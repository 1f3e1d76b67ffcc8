/* keyfmt: Triton's TRITON_REDIS_KEY_FORMAT, read as Python's str.format
 * reads it, restricted to {key} and {filename}; expanded, globbed and
 * parsed back. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "index/base/err.h"
#include "index/base/name.h"
#include "index/base/utf8.h"
#include "index/remote/keyfmt.h"

/* One step of a format: a literal byte, or a field. */
enum tok {
	TOK_END,
	TOK_CHAR,
	TOK_KEY,
	TOK_FILE,
};

/* Reads the token at fmt[*i] as str.format would (MarkupIterator): "{{"
 * and "}}" are literal braces, "{key}" and "{filename}" the two fields;
 * any other field, and a brace alone, are errors.  The byte of a literal
 * in *c.  The token, or -EINVAL with *i at the offending brace (no
 * message: the callers say what they are doing). */
static int tok_next(const char *fmt, size_t *i, char *c)
{
	const char *p = fmt + *i;

	if (!*p)
		return TOK_END;
	if (*p == '}') {
		if (p[1] != '}')
			return -EINVAL;
		*c = '}';
		*i += 2;
		return TOK_CHAR;
	}
	if (*p != '{') {
		*c = *p;
		*i += 1;
		return TOK_CHAR;
	}
	if (p[1] == '{') {
		*c = '{';
		*i += 2;
		return TOK_CHAR;
	}
	if (strncmp(p, "{key}", 5) == 0) {
		*i += 5;
		return TOK_KEY;
	}
	if (strncmp(p, "{filename}", 10) == 0) {
		*i += 10;
		return TOK_FILE;
	}
	return -EINVAL;
}

/* The message for a format that tok_next refused at fmt[at]. */
static int refuse(const char *fmt, size_t at)
{
	char show[TCFS_UTF8_SHOW_MAX];
	const char *p = fmt + at;
	const char *why;

	if (*p == '}')
		why = "a single '}' (write '}}' for a literal one)";
	else if (!strchr(p, '}'))
		why = "a '{' with no '}' (write '{{' for a literal one)";
	else
		why = "a field other than {key} and {filename} (no positional "
		      "fields, conversions or format specs)";
	tcfs_utf8_printable(fmt, show, sizeof(show));
	return tcfs_err_set(-EINVAL, "key format '%s': %s at offset %zu",
			    show, why, at);
}

int tcfs_keyfmt_check(const char *fmt)
{
	char show[TCFS_UTF8_SHOW_MAX];
	int has_key = 0, has_file = 0;
	size_t i = 0;
	char c;
	int t;

	if (strlen(fmt) > TCFS_KEYFMT_KEY_MAX)
		return tcfs_err_set(-EINVAL, "key format: longer than %d bytes",
				    TCFS_KEYFMT_KEY_MAX);
	for (;;) {
		size_t at = i;

		t = tok_next(fmt, &i, &c);
		if (t < 0)
			return refuse(fmt, at);
		if (t == TOK_END)
			break;
		has_key |= t == TOK_KEY;
		has_file |= t == TOK_FILE;
	}
	if (has_key && has_file)
		return 0;
	tcfs_utf8_printable(fmt, show, sizeof(show));
	return tcfs_err_set(-EINVAL, "key format '%s': names no %s", show,
			    has_key ? "{filename}" : "{key}");
}

/* Appends n bytes of s to buf (len bytes) at *at, keeping room for a NUL;
 * -ENAMETOOLONG when they do not fit. */
static int put(char *buf, size_t len, size_t *at, const char *s, size_t n)
{
	if (n >= len - *at)
		return -ENAMETOOLONG;
	memcpy(buf + *at, s, n);
	*at += n;
	buf[*at] = '\0';
	return 0;
}

int tcfs_keyfmt_expand(const char *fmt, const char *key,
		       const char *filename, char *buf, size_t len)
{
	size_t i = 0, at = 0;
	int rc = 0, t;
	char c;

	if (len == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	while (rc == 0 && (t = tok_next(fmt, &i, &c)) != TOK_END) {
		if (t < 0)
			return refuse(fmt, i);
		if (t == TOK_KEY)
			rc = put(buf, len, &at, key, strlen(key));
		else if (t == TOK_FILE)
			rc = put(buf, len, &at, filename, strlen(filename));
		else
			rc = put(buf, len, &at, &c, 1);
	}
	if (rc == 0 && at > TCFS_KEYFMT_KEY_MAX)
		rc = -ENAMETOOLONG;
	return rc;
}

int tcfs_keyfmt_pattern(const char *fmt, const char *file_glob, char *buf,
			size_t len)
{
	size_t i = 0, at = 0;
	int rc = 0, t;
	char c;

	if (len == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	while (rc == 0 && (t = tok_next(fmt, &i, &c)) != TOK_END) {
		if (t < 0)
			return refuse(fmt, i);
		if (t == TOK_KEY) {
			rc = put(buf, len, &at, "*", 1);
		} else if (t == TOK_FILE) {
			rc = put(buf, len, &at, file_glob, strlen(file_glob));
		} else {
			/* Redis's stringmatchlen treats these, and
			 * nothing else, as special. */
			if (strchr("*?[]\\", c))
				rc = put(buf, len, &at, "\\", 1);
			if (rc == 0)
				rc = put(buf, len, &at, &c, 1);
		}
	}
	return rc;
}

/* What parse has matched so far: each field's place in rkey, len 0 while
 * it is unmatched. */
struct match {
	const char *fmt;
	const char *rkey;
	size_t key_want;
	size_t key_at, key_len;
	size_t file_at, file_len;
};

static int valid_key(const char *s, size_t n)
{
	char k[65];

	if (n != 43 && n != 52 && n != 64)
		return 0;
	memcpy(k, s, n);
	k[n] = '\0';
	return tcfs_name_is_key(k);
}

static int valid_file(const char *s, size_t n)
{
	char f[TCFS_NAME_MAX + 1];

	if (n == 0 || n > TCFS_NAME_MAX || memchr(s, '/', n))
		return 0;
	memcpy(f, s, n);
	f[n] = '\0';
	return tcfs_name_check(f) == 0;
}

static int match_from(struct match *m, size_t fi, size_t ri);

/* A field at fmt[fi..next), to match at rkey[ri]: a field seen before
 * must match the same bytes again; the key is m->key_want bytes; a new
 * file name tries each length, longest first (as a greedy regex would),
 * and keeps the first with which the rest of the format matches. */
static int match_field(struct match *m, int t, size_t next, size_t ri)
{
	size_t *at = t == TOK_KEY ? &m->key_at : &m->file_at;
	size_t *n = t == TOK_KEY ? &m->key_len : &m->file_len;
	size_t left = strlen(m->rkey + ri);
	size_t k = t == TOK_KEY ? m->key_want : TCFS_NAME_MAX;

	if (*n)
		return left >= *n &&
		       memcmp(m->rkey + *at, m->rkey + ri, *n) == 0 &&
		       match_from(m, next, ri + *n);
	for (k = k < left ? k : left; k > 0; k--) {
		if (t == TOK_KEY ? k != m->key_want ||
					   !valid_key(m->rkey + ri, k)
				 : !valid_file(m->rkey + ri, k))
			continue;
		*at = ri;
		*n = k;
		if (match_from(m, next, ri + k))
			return 1;
	}
	*n = 0;
	return 0;
}

/* 1 when fmt from fi matches rkey from ri.  Literals are walked in a loop,
 * so the recursion is as deep as the format has fields. */
static int match_from(struct match *m, size_t fi, size_t ri)
{
	for (;;) {
		char c;
		int t = tok_next(m->fmt, &fi, &c);

		assert(t >= 0);
		if (t == TOK_END)
			return m->rkey[ri] == '\0';
		if (t != TOK_CHAR)
			return match_field(m, t, fi, ri);
		if (m->rkey[ri] != c)
			return 0;
		ri++;
	}
}

int tcfs_keyfmt_parse(const char *fmt, const char *rkey, char *key,
		      size_t keylen, char *filename, size_t filelen)
{
	/* The key lengths of tcfs_name_is_key, longest first: a key of 52
	 * base32 bytes is never read as one of 43 and a file name that took
	 * 9 of its bytes. */
	static const size_t key_lens[] = { 64, 52, 43 };
	struct match m = { .fmt = fmt, .rkey = rkey };
	size_t i;

	if (tcfs_keyfmt_check(fmt) < 0 ||
	    strnlen(rkey, TCFS_KEYFMT_KEY_MAX + 1) > TCFS_KEYFMT_KEY_MAX)
		return 0;
	for (i = 0; i < sizeof(key_lens) / sizeof(*key_lens); i++) {
		m.key_want = key_lens[i];
		if (match_from(&m, 0, 0))
			break;
	}
	if (i == sizeof(key_lens) / sizeof(*key_lens))
		return 0;
	assert(m.key_len && m.file_len);
	if (m.key_len >= keylen || m.file_len >= filelen)
		return 0;
	memcpy(key, rkey + m.key_at, m.key_len);
	key[m.key_len] = '\0';
	memcpy(filename, rkey + m.file_at, m.file_len);
	filename[m.file_len] = '\0';
	return 1;
}
