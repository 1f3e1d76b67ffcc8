/*
 * text: a text that grows as it is written, and JSON strings exactly as
 * Python's json.dumps (ensure_ascii) writes them, which Triton's group
 * files are (model/group.c) and its Redis format too (remote/wire.c).
 */
#ifndef TCFS_TEXT_H
#define TCFS_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Zero it to start, with max the most bytes it may hold (0: no bound).
 * p (NUL-terminated, owned by the caller: free()) and len are the text;
 * err is the first error: -ENOMEM, -E2BIG past max, -EILSEQ for a string
 * that is not UTF-8.  After an error, writes do nothing. */
struct tcfs_text {
	char *p;
	size_t len, cap, max;
	int err;
};

void tcfs_text_add(struct tcfs_text *t, const char *s, size_t n);
void tcfs_text_str(struct tcfs_text *t, const char *s);
/* s as a JSON string, quotes and all: the short escapes json.dumps
 * knows, everything else outside ' '..'~' as \uXXXX (lowercase), astral
 * characters as a surrogate pair. */
void tcfs_text_pystr(struct tcfs_text *t, const char *s);

/* The noun of a count of n: one for 1, else many ("1 blob", "0 blobs",
 * "2 entries"); TCFS_NOUN for a noun whose plural takes an s.  The
 * strings are the caller's (literals). */
const char *tcfs_plural(unsigned long long n, const char *one,
			const char *many);
#define TCFS_NOUN(n, one) tcfs_plural((n), one, one "s")

/* v in decimal, in buf (24 bytes); returns where in buf it starts.
 * printf's own parse of "%lld" was a tenth of tcfs list --json at
 * 100,000 kernels, eight numbers each. */
const char *tcfs_decimal(int64_t v, char buf[24]);

#endif
