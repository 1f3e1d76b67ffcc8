/* text: growing texts, and JSON strings as Python's json.dumps writes them. */
#include "index/base/text.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/utf8.h"

void tcfs_text_add(struct tcfs_text *t, const char *s, size_t n)
{
	if (t->err)
		return;
	if (t->max && t->len + n > t->max) {
		t->err = -E2BIG;
		return;
	}
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		char *p;

		while (cap < t->len + n + 1)
			cap *= 2;
		p = realloc(t->p, cap);
		if (!p) {
			t->err = -ENOMEM;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

void tcfs_text_str(struct tcfs_text *t, const char *s)
{
	tcfs_text_add(t, s, strlen(s));
}

static void add_u(struct tcfs_text *t, unsigned cp)
{
	static const char hex[] = "0123456789abcdef";
	char e[6] = { '\\', 'u', hex[cp >> 12 & 15], hex[cp >> 8 & 15],
		      hex[cp >> 4 & 15], hex[cp & 15] };

	tcfs_text_add(t, e, sizeof(e));
}

/* One character of p: the bytes of p it took.  Bytes that are not UTF-8
 * are -EILSEQ: no Python str is made of them. */
static size_t add_pychar(struct tcfs_text *t, const unsigned char *p)
{
	static const char *const esc[0x80] = {
		['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n",
		['\r'] = "\\r", ['\t'] = "\\t", ['\b'] = "\\b",
		['\f'] = "\\f",
	};
	unsigned cp;
	size_t n;

	if (*p < 0x80 && esc[*p]) {
		tcfs_text_str(t, esc[*p]);
		return 1;
	}
	if (*p < 0x80) {
		if (*p >= 0x20 && *p < 0x7f)
			tcfs_text_add(t, (const char *)p, 1);
		else
			add_u(t, *p);
		return 1;
	}
	n = tcfs_utf8_next(p, &cp);
	if (n == 0) {
		if (!t->err)
			t->err = -EILSEQ;
		return 1;
	}
	if (cp >= 0x10000) {
		cp -= 0x10000;
		add_u(t, 0xd800 | cp >> 10);
		add_u(t, 0xdc00 | (cp & 0x3ff));
	} else {
		add_u(t, cp);
	}
	return n;
}

void tcfs_text_pystr(struct tcfs_text *t, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	tcfs_text_add(t, "\"", 1);
	while (*p && !t->err)
		p += add_pychar(t, p);
	tcfs_text_add(t, "\"", 1);
}

const char *tcfs_plural(unsigned long long n, const char *one,
			const char *many)
{
	return n == 1 ? one : many;
}

const char *tcfs_decimal(int64_t v, char buf[24])
{
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	char *p = buf + 23;

	*p = '\0';
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	assert(p >= buf);
	return p;
}
