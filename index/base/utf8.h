/*
 * utf8: decoding UTF-8, and text made safe to show on a terminal.
 *
 * Names in messages and listings come from caches and processes tcfs does
 * not control: a raw ESC in a file name or a command name could rewrite
 * the user's screen, so everything tcfs prints for a person goes through
 * tcfs_utf8_printable first (JSON output escapes control bytes itself).
 */
#ifndef TCFS_UTF8_H
#define TCFS_UTF8_H

#include <stddef.h>

/* Decodes the UTF-8 sequence at s (a shortest form of a code point up to
 * U+10FFFF) into *cp; returns its length, or 0 when s does not start one. */
size_t tcfs_utf8_next(const unsigned char *s, unsigned *cp);

/* Room for any name of TCFS_NAME_MAX bytes once escaped. */
#define TCFS_UTF8_SHOW_MAX (4 * 255 + 1)

/* Copies s into out (outlen bytes, cut short to fit) with C0 and C1
 * controls, DEL and bytes that are not UTF-8 written as \xNN and a
 * backslash as \\; returns out. */
const char *tcfs_utf8_printable(const char *s, char *out, size_t outlen);

/* The columns printable text (as tcfs_utf8_printable makes it) takes on
 * a terminal: one per code point (names are Latin or CJK-free as a rule;
 * a wide character makes its row one column wider, never garbles it). */
size_t tcfs_utf8_width(const char *s);

/* Copies printable text s into out (outlen bytes) cut to at most width
 * columns, its last one "…" when it was cut (width >= 1); returns out. */
const char *tcfs_utf8_cut(const char *s, size_t width, char *out,
			  size_t outlen);

#endif
