/* remote_keyfmt: Redis key names as Triton's str.format makes them, and
 * read back only where they name a real cache key and a plain file. */
#include <errno.h>

#include "index/base/err.h"
#include "index/base/name.h"
#include "index/remote/keyfmt.h"
#include "tap.h"

#define K52 "XU5DT2AO5BD5AEHEYGLPP5LRDFHHCUEJT4LGDVLB4STXUGVGHFPA"
#define K43 "-aB3_xyz0123456789abcdefghijklmnopqrstuvwxy"
#define K64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void checks(void)
{
	static const char *const good[] = {
		TCFS_KEYFMT_DEFAULT,
		"{{literal}}:{key}:{filename}",
		"{filename}{key}",
		"}}{{x{key}/{filename}{{",
		"a{key}b{key}{filename}",
		"*?[]\\{key}:{filename}",
	};
	/* Each one Python's str.format refuses, or expands with a field
	 * that is not key nor filename. */
	static const char *const bad[][2] = {
		{ "triton:{key}", "{filename}" },
		{ "triton:{filename}", "{key}" },
		{ "", "{key}" },
		{ "plain", "{key}" },
		{ "{key}:{filename}}", "single '}'" },
		{ "}{key}:{filename}", "single '}'" },
		{ "{key}:{filename}{", "no '}'" },
		{ "{key:{filename}", "other" },
		{ "{key}:{filename", "no '}'" },
		{ "{0}:{key}:{filename}", "other" },
		{ "{}:{key}:{filename}", "other" },
		{ "{key!r}:{filename}", "other" },
		{ "{key:>3}:{filename}", "other" },
		{ "{foo}:{key}:{filename}", "other" },
		{ "{ key}:{filename}", "other" },
		{ "{key }:{filename}", "other" },
		{ "{key.x}:{filename}", "other" },
		{ "{key[0]}:{filename}", "other" },
		{ "{{key}}:{filename}", "{key}" },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		tap_eq(tcfs_keyfmt_check(good[i]), 0, "format '%s' valid",
		       good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		int rc = tcfs_keyfmt_check(bad[i][0]);

		tap_ok(rc == -EINVAL && strstr(tcfs_err_msg(), bad[i][1]),
		       "format '%s' refused: %s", bad[i][0], tcfs_err_msg());
	}
}

/* Each as python3 -c 'print(FMT.format(key=K, filename=F))' prints it. */
static void expands(void)
{
	static const char *const cases[][4] = {
		{ TCFS_KEYFMT_DEFAULT, K52, "__grp__k.json",
		  "triton:" K52 ":__grp__k.json" },
		{ "{{literal}}:{key}:{filename}", K52, "k.cubin",
		  "{literal}:" K52 ":k.cubin" },
		{ "}}{{x{key}/{filename}{{", "K", "F", "}{xK/F{" },
		{ "a{key}b{key}{filename}", "K", "F", "aKbKF" },
	};
	char buf[TCFS_KEYFMT_KEY_MAX + 1], big[300];

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		int rc = tcfs_keyfmt_expand(cases[i][0], cases[i][1],
					    cases[i][2], buf, sizeof(buf));

		tap_ok(rc == 0 && strcmp(buf, cases[i][3]) == 0,
		       "'%s' expands to '%s'", cases[i][0], buf);
	}
	tap_eq(tcfs_keyfmt_expand(TCFS_KEYFMT_DEFAULT, K52, "k.json", buf,
				  7 + 52 + 1 + 6),
	       -ENAMETOOLONG, "one byte short: -ENAMETOOLONG");
	tap_eq(tcfs_keyfmt_expand(TCFS_KEYFMT_DEFAULT, K52, "k.json", buf,
				  7 + 52 + 1 + 6 + 1),
	       0, "just room: expanded");
	memset(big, 'f', 255);
	big[255] = '\0';
	tap_eq(tcfs_keyfmt_expand("{key}{filename}{filename}{filename}"
				  "{filename}{filename}{filename}{filename}"
				  "{filename}{filename}",
				  K52, big, buf, sizeof(buf)),
	       -ENAMETOOLONG, "a key over TCFS_KEYFMT_KEY_MAX: -ENAMETOOLONG");
	tap_eq(tcfs_keyfmt_expand("{key}", K52, "f", buf, sizeof(buf)), 0,
	       "expand does not insist on both fields");
	tap_eq(tcfs_keyfmt_expand("{key}}", K52, "f", buf, sizeof(buf)),
	       -EINVAL, "expand refuses a bad format");
}

static void patterns(void)
{
	char buf[256];

	tap_ok(tcfs_keyfmt_pattern(TCFS_KEYFMT_DEFAULT, "__grp__*.json", buf,
				   sizeof(buf)) == 0 &&
		       strcmp(buf, "triton:*:__grp__*.json") == 0,
	       "default pattern: %s", buf);
	tap_ok(tcfs_keyfmt_pattern("a*b?c[d]e\\{{{key}}}:{filename}", "*",
				   buf, sizeof(buf)) == 0 &&
		       strcmp(buf, "a\\*b\\?c\\[d\\]e\\\\{*}:*") == 0,
	       "glob specials escaped, braces not: %s", buf);
	tap_eq(tcfs_keyfmt_pattern(TCFS_KEYFMT_DEFAULT, "*", buf, 10),
	       -ENAMETOOLONG, "pattern too long: -ENAMETOOLONG");
}

static void parse_ok(const char *fmt, const char *rkey, const char *key,
		     const char *file)
{
	char k[TCFS_NAME_MAX + 1] = "", f[TCFS_NAME_MAX + 1] = "";
	int rc = tcfs_keyfmt_parse(fmt, rkey, k, sizeof(k), f, sizeof(f));

	tap_ok(rc == 1 && strcmp(k, key) == 0 && strcmp(f, file) == 0,
	       "'%s' of '%s': key %s file %s", rkey, fmt, k, f);
}

static void parse_no(const char *fmt, const char *rkey, const char *what)
{
	char k[TCFS_NAME_MAX + 1], f[TCFS_NAME_MAX + 1];

	tap_eq(tcfs_keyfmt_parse(fmt, rkey, k, sizeof(k), f, sizeof(f)), 0,
	       "'%s' of '%s' not parsed: %s", rkey, fmt, what);
}

static void parses(void)
{
	char k[TCFS_NAME_MAX + 1], f[8], huge[TCFS_KEYFMT_KEY_MAX + 64];

	parse_ok(TCFS_KEYFMT_DEFAULT, "triton:" K52 ":__grp__k.json", K52,
		 "__grp__k.json");
	parse_ok(TCFS_KEYFMT_DEFAULT, "triton:" K64 ":k.cubin", K64,
		 "k.cubin");
	parse_ok(TCFS_KEYFMT_DEFAULT, "triton:" K43 ":a:b", K43, "a:b");
	parse_ok("{{literal}}:{key}:{filename}", "{literal}:" K52 ":k.ptx",
		 K52, "k.ptx");
	parse_ok("{filename}{key}", "k.json" K52, K52, "k.json");
	parse_ok("{key}{filename}", K64 "k.json", K64, "k.json");
	parse_ok("{filename}:{key}", "a:b:" K52, K52, "a:b");
	parse_ok("a{key}b{key}{filename}", "a" K52 "b" K52 "f", K52, "f");
	parse_ok("*?[]\\{key}:{filename}", "*?[]\\" K52 ":f", K52, "f");
	parse_no(TCFS_KEYFMT_DEFAULT, "triton:" K52 ":", "no file name");
	parse_no(TCFS_KEYFMT_DEFAULT, "triton:" K52 ":..", "'..' as a file");
	parse_no(TCFS_KEYFMT_DEFAULT, "triton:" K52 ":.", "'.' as a file");
	parse_no(TCFS_KEYFMT_DEFAULT, "triton:" K52 ":a/b", "a '/' in a file");
	parse_no(TCFS_KEYFMT_DEFAULT, "triton:" K52 ":../x", "../x as a file");
	parse_no(TCFS_KEYFMT_DEFAULT, "triton:notakey:f", "not a key");
	parse_no(TCFS_KEYFMT_DEFAULT, "triton:" K52 "x:f", "a key too long");
	parse_no(TCFS_KEYFMT_DEFAULT, "Triton:" K52 ":f", "another prefix");
	parse_no(TCFS_KEYFMT_DEFAULT, "triton:../" K52 ":f", "'/' in a key");
	parse_no("a{key}b{key}{filename}", "a" K52 "b" K64 "f",
		 "the key twice, not the same");
	parse_no("{key}}", "x", "a bad format");
	memset(huge, 'f', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	memcpy(huge, "triton:" K52 ":", 7 + 52 + 1);
	parse_no(TCFS_KEYFMT_DEFAULT, huge, "over TCFS_KEYFMT_KEY_MAX");
	huge[7 + 52 + 1 + 256] = '\0';
	parse_no(TCFS_KEYFMT_DEFAULT, huge, "a file name of 256 bytes");
	tap_eq(tcfs_keyfmt_parse(TCFS_KEYFMT_DEFAULT,
				 "triton:" K52 ":k.json.long", k, sizeof(k),
				 f, sizeof(f)),
	       0, "a file name longer than its buffer: not parsed");
}

int main(void)
{
	checks();
	expands();
	patterns();
	parses();
	return tap_done();
}
