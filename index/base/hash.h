/*
 * hash: XXH3-128, the name of every blob in the store.
 */
#ifndef TCFS_HASH_H
#define TCFS_HASH_H

#include <stddef.h>

/* Big-endian canonical bytes, so the hex form sorts like the digest. */
struct tcfs_hash {
	unsigned char b[16];
};

/* 32 hex digits and a NUL. */
#define TCFS_HASH_HEXLEN 33

/* An incremental hasher; opaque, owned by whoever called _new. */
struct tcfs_hasher;

void tcfs_hash_buf(const void *buf, size_t len, struct tcfs_hash *out);

/* Returns NULL when out of memory. */
struct tcfs_hasher *tcfs_hash_new(void);
void tcfs_hash_update(struct tcfs_hasher *h, const void *buf, size_t len);
void tcfs_hash_final(const struct tcfs_hasher *h, struct tcfs_hash *out);
void tcfs_hash_free(struct tcfs_hasher *h);

/* Writes 32 lowercase hex digits and a NUL into out. */
void tcfs_hash_hex(const struct tcfs_hash *h, char out[TCFS_HASH_HEXLEN]);

/* Parses exactly 32 hex digits (either case); -EINVAL otherwise. */
int tcfs_hash_parse(const char *hex, struct tcfs_hash *out);

int tcfs_hash_equal(const struct tcfs_hash *a, const struct tcfs_hash *b);

#endif
