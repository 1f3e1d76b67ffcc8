/* utf8: names are shown as a terminal cannot act on them. */
#include "index/base/utf8.h"
#include "tap.h"

static void shows(const char *in, const char *want, const char *what)
{
	char out[TCFS_UTF8_SHOW_MAX];

	tcfs_utf8_printable(in, out, sizeof(out));
	if (!tap_ok(strcmp(out, want) == 0, "%s", what))
		printf("#   got '%s', want '%s'\n", out, want);
}

int main(void)
{
	char small[8], out[64];
	unsigned cp;

	shows("add_kernel.cubin", "add_kernel.cubin", "plain ASCII as it is");
	shows("caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80",
	      "printable UTF-8 as it is");
	shows("\x1b[2Jx", "\\x1b[2Jx", "ESC escaped");
	shows("a\nb\tc\x7f", "a\\x0ab\\x09c\\x7f", "newline, tab and DEL escaped");
	shows("\xc2\x9b" "31m", "\\xc2\\x9b31m", "a C1 control (CSI) escaped");
	shows("caf\xe9", "caf\\xe9", "a byte that is not UTF-8 escaped");
	shows("\xed\xa0\x80", "\\xed\\xa0\\x80", "an encoded surrogate escaped");
	shows("a\\b", "a\\\\b", "a backslash doubled, so escapes are unambiguous");
	tcfs_utf8_printable("\x1b\x1b\x1b", small, sizeof(small));
	tap_ok(strcmp(small, "\\x1b") == 0, "cut short at an escape, never in one");
	{
		char four[4];

		tcfs_utf8_printable("abcdef", four, sizeof(four));
		tap_ok(strcmp(four, "abc") == 0, "plain ASCII cut short to fit");
	}
	tap_eq(tcfs_utf8_next((const unsigned char *)"\xc0\xaf", &cp), 0,
	       "an overlong form is no UTF-8");
	tap_eq(tcfs_utf8_next((const unsigned char *)"\xe2\x82\xac", &cp), 3,
	       "a three-byte sequence decodes");
	tap_eq(cp, 0x20ac, "to its code point");

	tap_eq(tcfs_utf8_width("caf\xc3\xa9"), 4, "width: a column a code point");
	tap_eq(tcfs_utf8_width("a\xff" "b"), 3, "... a stray byte one column");
	tap_eq(tcfs_utf8_width(""), 0, "... nothing none");
	tap_eq(tcfs_utf8_width("kernel_00001"), 12, "... ASCII a byte each");
	tap_eq(tcfs_utf8_width("\xe2\x80\xa6" "ab\xf0\x9f\x98\x80" "c\xc3"),
	       6, "... ASCII between others, and a sequence cut at the end");
	tap_ok(strcmp(tcfs_utf8_cut("matmul_kernel", 13, out, sizeof(out)),
		      "matmul_kernel") == 0, "cut: what fits is whole");
	tap_ok(strcmp(tcfs_utf8_cut("matmul_kernel", 8, out, sizeof(out)),
		      "matmul_\xe2\x80\xa6") == 0,
	       "... what does not ends in an ellipsis, in the width");
	tap_ok(strcmp(tcfs_utf8_cut("caf\xc3\xa9" "s", 4, out, sizeof(out)),
		      "caf\xe2\x80\xa6") == 0,
	       "... never inside a character");
	tap_ok(strcmp(tcfs_utf8_cut("\xc3\xa9\xc3\xa9\xc3\xa9", 2, out,
				    sizeof(out)), "\xc3\xa9\xe2\x80\xa6") == 0,
	       "... counting characters, not bytes");
	tap_ok(strcmp(tcfs_utf8_cut("abc", 1, out, sizeof(out)),
		      "\xe2\x80\xa6") == 0, "... to the ellipsis alone at width 1");
	return tap_done();
}
