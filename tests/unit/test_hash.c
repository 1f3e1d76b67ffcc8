/* hash: XXH3-128 names, the same as `xxhsum -H2` prints. */
#include <errno.h>

#include "index/base/hash.h"
#include "tap.h"

static void check_vector(const char *in, const char *want)
{
	struct tcfs_hash h, inc, parsed;
	struct tcfs_hasher *st = tcfs_hash_new();
	char hex[TCFS_HASH_HEXLEN];
	size_t n = strlen(in);

	tcfs_hash_buf(in, n, &h);
	tcfs_hash_hex(&h, hex);
	tap_ok(strcmp(hex, want) == 0, "XXH3-128 of \"%s\" is %s (got %s)", in,
	       want, hex);
	/* Fed a byte at a time, the digest is the same. */
	for (size_t i = 0; i < n; i++)
		tcfs_hash_update(st, in + i, 1);
	tcfs_hash_final(st, &inc);
	tcfs_hash_free(st);
	tap_ok(tcfs_hash_equal(&h, &inc), "incremental hash of \"%s\" agrees",
	       in);
	tap_ok(tcfs_hash_parse(hex, &parsed) == 0 &&
		       tcfs_hash_equal(&parsed, &h),
	       "hex of \"%s\" parses back", in);
}

int main(void)
{
	struct tcfs_hash h;

	check_vector("", "99aa06d3014798d86001c324468d497f");
	check_vector("abc", "06b05ab6733a618578af5f94892f3950");
	tap_eq(tcfs_hash_parse("99AA06D3014798D86001C324468D497F", &h), 0,
	       "upper-case hex parses");
	tap_eq(tcfs_hash_parse("99aa06d3014798d86001c324468d497", &h), -EINVAL,
	       "31 digits are refused");
	tap_eq(tcfs_hash_parse("99aa06d3014798d86001c324468d497f0", &h),
	       -EINVAL, "33 digits are refused");
	tap_eq(tcfs_hash_parse("99aa06d3014798d86001c324468d497g", &h),
	       -EINVAL, "a non-hex digit is refused");
	tap_eq(tcfs_hash_parse("", &h), -EINVAL, "an empty name is refused");
	return tap_done();
}
