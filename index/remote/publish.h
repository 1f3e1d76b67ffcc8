/*
 * publish: a kernel or a single file of the store, to the fleet tier, in
 * Triton's own format (wire.h), so stock Triton's RemoteCacheManager reads
 * it too: every child as one value, then the sidecar and the group in one
 * MULTI/EXEC, so a reader that finds the group finds the whole kernel.
 * What is published is read back from the store's blobs, each checked
 * against its name: a damaged blob is never sent.
 */
#ifndef TCFS_REMOTE_PUBLISH_H
#define TCFS_REMOTE_PUBLISH_H

#include <stdint.h>

#include "index/remote/remote.h"

struct tcfs_store;

/* Publishes kernel name of the key dir dir (named key) as cfg.publish
 * says (binary: IR left out of the values and the group).  Returns 1 when
 * published; 0 when there was nothing to do: publishing is off, the kernel
 * came from the remote (kernels.origin), the remote holds it already (its
 * sidecar), or it is not whole here (a child missing); else -errno with a
 * message. */
int tcfs_remote_publish_kernel(struct tcfs_remote *r, struct tcfs_store *s,
			       uint64_t dir, const char *key,
			       const char *name);
/* The same for a single file of the key dir (a launcher module, an
 * autotune result). */
int tcfs_remote_publish_file(struct tcfs_remote *r, struct tcfs_store *s,
			     uint64_t dir, const char *key, const char *file);

/* An entry of Inductor's (file name of the key dir dir, named key), in
 * PyTorch's own format (pt2.h) under cache_id, with its sidecar, both in
 * one MULTI/EXEC.  1 when published; 0 when there was nothing to do:
 * publishing or remote_inductor is off, the file is not an entry (its
 * name is not its bytes' hash), or the remote's sidecar names it already;
 * else -errno with a message. */
int tcfs_remote_publish_entry(struct tcfs_remote *r, struct tcfs_store *s,
			      uint64_t dir, const char *cache_id,
			      const char *key, const char *name);
/* A dir of entries (vLLM's rank dir name, the dir dir, in key below the
 * kind's root) as one pack (pack.h) under prefix, with its sidecar, both
 * in one MULTI/EXEC: only when every file in it was written by a trusted
 * user.  1 when published; 0 when there was nothing to do (off, empty,
 * an untrusted writer, or the remote holds that pack already); else
 * -errno with a message. */
int tcfs_remote_publish_pack(struct tcfs_remote *r, struct tcfs_store *s,
			     uint64_t dir, const char *prefix, const char *key,
			     const char *name);

#endif
