/*
 * ttspan: pieces of a TTIR text, for ttir.c and ttconst.c alone.  The
 * text comes from the cache and is never NUL-terminated: every piece is
 * a pointer and a length into it.
 */
#ifndef TCFS_TTSPAN_H
#define TCFS_TTSPAN_H

#include <stddef.h>
#include <string.h>

/* A piece of the text: not NUL-terminated, not owned. */
struct span {
	const char *p;
	size_t n;
};

static inline int tt_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A character of an MLIR identifier (a symbol, an SSA name, an op). */
static inline int tt_is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '.' ||
	       c == '-';
}

static inline struct span tt_trim(const char *p, const char *end)
{
	while (p < end && tt_is_space(*p))
		p++;
	while (end > p && tt_is_space(end[-1]))
		end--;
	return (struct span){ p, (size_t)(end - p) };
}

static inline int tt_span_eq(struct span a, struct span b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static inline int tt_span_cmp(struct span a, struct span b)
{
	size_t n = a.n < b.n ? a.n : b.n;
	int c = n ? memcmp(a.p, b.p, n) : 0;

	return c ? c : (a.n > b.n) - (a.n < b.n);
}

#endif
