/*
 * keyfmt: Redis key names as Triton's RedisRemoteCacheBackend makes them,
 * TRITON_REDIS_KEY_FORMAT with Python's str.format: "{key}" (the cache
 * key, the key dir's name) and "{filename}" (a file of the key dir), "{{"
 * and "}}" for literal braces.  Nothing else is accepted (no positional
 * fields, conversions or format specs): a format Triton would expand
 * otherwise, or refuse, is refused here too.  Default
 * "triton:{key}:{filename}".
 */
#ifndef TCFS_REMOTE_KEYFMT_H
#define TCFS_REMOTE_KEYFMT_H

#include <stddef.h>

#define TCFS_KEYFMT_DEFAULT "triton:{key}:{filename}"
/* The longest Redis key tcfs makes or reads back. */
#define TCFS_KEYFMT_KEY_MAX 2048

/* 0 when fmt is a valid format that names {key} and {filename} each at
 * least once; else -EINVAL with a message saying what is wrong. */
int tcfs_keyfmt_check(const char *fmt);

/* The Redis key of file filename of cache key key, into buf (len bytes):
 * 0, -ENAMETOOLONG (over len, or over TCFS_KEYFMT_KEY_MAX), or -EINVAL
 * with a message for a fmt that tcfs_keyfmt_check refuses. */
int tcfs_keyfmt_expand(const char *fmt, const char *key,
		       const char *filename, char *buf, size_t len);

/* A SCAN MATCH pattern for the keys of files named like file_glob (a
 * Redis glob, passed as it is) of any cache key: the format's literal
 * parts escaped (Redis glob specials * ? [ ] \), {key} as "*".  0,
 * -ENAMETOOLONG, or -EINVAL as tcfs_keyfmt_expand. */
int tcfs_keyfmt_pattern(const char *fmt, const char *file_glob, char *buf,
			size_t len);

/* The reverse of tcfs_keyfmt_expand: 1 and the cache key and the file name
 * when rkey is a key the format makes (the key a Triton key name,
 * tcfs_name_is_key; the file name a plain name, tcfs_name_check), else 0.
 * Where the format is ambiguous (two fields side by side), the first
 * match that gives valid names wins: the longest key, then the longest
 * file name.  A field named twice must match the same
 * bytes both times.  0 also for a fmt that tcfs_keyfmt_check refuses. */
int tcfs_keyfmt_parse(const char *fmt, const char *rkey, char *key,
		      size_t keylen, char *filename, size_t filelen);

#endif
