/*
 * pt2: PyTorch's own remote cache format (torch 2.11,
 * _inductor/remote_cache.py: RedisRemoteCache, RemoteCacheJsonSerde), so
 * that a tcfs node and a node running stock PyTorch with
 * TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE=1 share one Redis, both ways:
 *
 *   key    pt2:{CACHE_ID}::{KEY}:c1        (CACHE_ID "fx-graph-v1" for FX
 *                                           graphs, "autograd-experimental"
 *                                           for AOTAutograd: entry.h's rows)
 *   value  json.dumps({"data": base64(ENTRY), "time_taken_ms": N})
 *
 * where ENTRY is the bytes of one local entry, KEY/NAME (entry.h), and
 * NAME = sha256_hash(ENTRY) = base32(sha256(ENTRY))[:51].lower().  One value
 * per key: a later put replaces an earlier variant, as PyTorch's does.
 *
 * Beside it tcfs keeps a sidecar (wire.h), which PyTorch never reads:
 *
 *   sidecar  pt2:{CACHE_ID}::{KEY}:c1:tcfs
 *
 * The value is hostile until checked: parsed within its bound, its base64
 * strict, and only then handed to the sidecar's check.
 */
#ifndef TCFS_REMOTE_PT2_H
#define TCFS_REMOTE_PT2_H

#include <stddef.h>
#include <stdint.h>

/* An entry's name: 51 lowercase base32 characters. */
#define TCFS_PT2_NAME_LEN 51

/* The key of KEY's value, and of its sidecar, into buf (len bytes): 0 or
 * -ENAMETOOLONG; -EINVAL for a key or cache_id that is not a plain name
 * (empty, or holding ':', '/', a space or a control byte). */
int tcfs_pt2_key(const char *cache_id, const char *key, char *buf,
		 size_t len);
int tcfs_pt2_sidecar_key(const char *cache_id, const char *key, char *buf,
			 size_t len);

/* sha256_hash(bytes) into name (TCFS_PT2_NAME_LEN + 1 bytes). */
void tcfs_pt2_entry_name(const void *bytes, size_t len,
			 char name[TCFS_PT2_NAME_LEN + 1]);

/* The value of an entry as PyTorch's json.dumps writes it, time_taken_ms
 * an integer (0 when unknown).  *out owned by the caller (free()).  0 or
 * -ENOMEM. */
int tcfs_pt2_value_render(const void *entry, size_t len,
			  uint64_t time_taken_ms, char **out, size_t *outlen);

/* The entry in a value: a JSON object whose "data" is standard base64
 * (padded, no whitespace), decoded to at most max bytes; "time_taken_ms",
 * when there, a number; other members are ignored, as PyTorch ignores
 * them.  *entry owned by the caller (free()).  0, -ENOMEM, -EFBIG (over
 * max), or -EBADMSG with a message saying what is wrong. */
int tcfs_pt2_value_parse(const char *val, size_t len, uint64_t max,
			 char **entry, size_t *entry_len);

/* The size of the entry a value of len bytes holds at most: for the
 * bounds, before it is fetched. */
uint64_t tcfs_pt2_value_max(uint64_t entry_max);

#endif
