/* utf8: decoding UTF-8, and text made safe to show on a terminal. */
#include "index/base/utf8.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

size_t tcfs_utf8_next(const unsigned char *s, unsigned *cp)
{
	size_t n;
	unsigned c = s[0], min;

	if (c < 0x80) {
		*cp = c;
		return c ? 1 : 0;
	}
	if (c < 0xc0)
		return 0;
	if (c < 0xe0) {
		n = 2, c &= 0x1f, min = 0x80;
	} else if (c < 0xf0) {
		n = 3, c &= 0x0f, min = 0x800;
	} else if (c < 0xf5) {
		n = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Whether a terminal acts on the code point rather than showing it. */
static int is_control(unsigned cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
}

const char *tcfs_utf8_printable(const char *s, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t used = 0;

	while (*p) {
		char esc[5 * 4 + 1];
		size_t n, len;
		unsigned cp;

		/* Printable ASCII, nearly every byte tcfs shows, as it is. */
		if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
			if (used + 1 >= outlen)
				break;
			out[used++] = (char)*p++;
			continue;
		}
		n = tcfs_utf8_next(p, &cp);
		if (n == 0 || is_control(cp)) {
			/* Each byte of an invalid or control sequence. */
			len = 0;
			for (size_t i = 0; i < (n ? n : 1); i++)
				len += (size_t)snprintf(esc + len,
							sizeof(esc) - len,
							"\\x%02x", p[i]);
			n = n ? n : 1;
		} else if (cp == '\\') {
			memcpy(esc, "\\\\", 2);
			len = 2;
		} else {
			memcpy(esc, p, n);
			len = n;
		}
		if (used + len >= outlen)
			break;
		memcpy(out + used, esc, len);
		used += len;
		p += n;
	}
	if (outlen)
		out[used] = '\0';
	return out;
}

/* The length of the sequence at s, or 1 for a byte that starts none. */
static size_t step(const char *s)
{
	unsigned cp;
	size_t n = tcfs_utf8_next((const unsigned char *)s, &cp);

	return n ? n : 1;
}

size_t tcfs_utf8_width(const char *s)
{
	size_t w = 0;

	for (;;) {
		/* Nearly every name, key and number is ASCII: a byte each. */
		while (*s && (unsigned char)*s < 0x80) {
			s++;
			w++;
		}
		if (!*s)
			return w;
		s += step(s);
		w++;
	}
}

const char *tcfs_utf8_cut(const char *s, size_t width, char *out,
			  size_t outlen)
{
	static const char ellipsis[] = "\u2026";
	size_t used = 0, w = 0;
	const char *p = s;

	assert(width >= 1 && outlen > sizeof(ellipsis));
	if (tcfs_utf8_width(s) <= width) {
		snprintf(out, outlen, "%s", s);
		return out;
	}
	/* width - 1 columns of s, then the ellipsis in the last. */
	while (*p && w + 1 < width) {
		size_t n = step(p);

		if (used + n + sizeof(ellipsis) > outlen)
			break;
		memcpy(out + used, p, n);
		used += n;
		p += n;
		w++;
	}
	memcpy(out + used, ellipsis, sizeof(ellipsis));
	return out;
}
