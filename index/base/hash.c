/* hash: XXH3-128 through libxxhash, the name of every blob. */
#include "index/base/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

struct tcfs_hasher {
	XXH3_state_t *st;
};

static void hash_from_xxh(XXH128_hash_t x, struct tcfs_hash *out)
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, x);
	memcpy(out->b, c.digest, sizeof(out->b));
}

void tcfs_hash_buf(const void *buf, size_t len, struct tcfs_hash *out)
{
	hash_from_xxh(XXH3_128bits(buf, len), out);
}

struct tcfs_hasher *tcfs_hash_new(void)
{
	struct tcfs_hasher *h = malloc(sizeof(*h));

	if (!h)
		return NULL;
	h->st = XXH3_createState();
	if (!h->st) {
		free(h);
		return NULL;
	}
	XXH3_128bits_reset(h->st);
	return h;
}

void tcfs_hash_update(struct tcfs_hasher *h, const void *buf, size_t len)
{
	XXH3_128bits_update(h->st, buf, len);
}

void tcfs_hash_final(const struct tcfs_hasher *h, struct tcfs_hash *out)
{
	hash_from_xxh(XXH3_128bits_digest(h->st), out);
}

void tcfs_hash_free(struct tcfs_hasher *h)
{
	if (!h)
		return;
	XXH3_freeState(h->st);
	free(h);
}

void tcfs_hash_hex(const struct tcfs_hash *h, char out[TCFS_HASH_HEXLEN])
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < sizeof(h->b); i++) {
		out[2 * i] = digits[h->b[i] >> 4];
		out[2 * i + 1] = digits[h->b[i] & 15];
	}
	out[32] = '\0';
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int tcfs_hash_parse(const char *hex, struct tcfs_hash *out)
{
	for (size_t i = 0; i < sizeof(out->b); i++) {
		int hi = hex_value(hex[2 * i]);
		int lo = hi < 0 ? -1 : hex_value(hex[2 * i + 1]);

		if (lo < 0)
			return -EINVAL;
		out->b[i] = (unsigned char)(hi << 4 | lo);
	}
	return hex[32] == '\0' ? 0 : -EINVAL;
}

int tcfs_hash_equal(const struct tcfs_hash *a, const struct tcfs_hash *b)
{
	return memcmp(a->b, b->b, sizeof(a->b)) == 0;
}
