/*
 * kernel: the kernels table, one row per compiled kernel (a key dir with a
 * group file), parsed from its NAME.json metadata with cJSON.
 *
 * Rows are kept by ns: whenever the files of a key directory change,
 * tcfs_kernel_files_changed runs in the same transaction, and when a
 * directory moves, tcfs_kernel_refresh_dir.  Metadata
 * that is missing or does not parse is recorded as such, never fatal.
 */
#ifndef TCFS_KERNEL_H
#define TCFS_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "index/base/hash.h"
#include "index/base/name.h"

struct tcfs_node;
struct tcfs_store;

/* Metadata (NAME.json) larger than this is not Triton's: recorded as
 * invalid, and never read. */
#define TCFS_KERNEL_META_MAX (4u << 20)

enum tcfs_meta {
	TCFS_META_OK,		/* NAME.json parsed */
	TCFS_META_MISSING,	/* no NAME.json beside the group file */
	TCFS_META_INVALID,	/* NAME.json is not a JSON object */
};

/* Text fields are "" and numbers -1 when the metadata lacks them. */
struct tcfs_kernel {
	uint64_t grp_ino;
	uint64_t dir_ino;
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];
	enum tcfs_meta meta;
	char backend[32];	/* "cuda", "hip", ... */
	char arch[32];		/* "90", "gfx942", ... */
	char triton_version[32];
	int64_t warp_size, num_warps, num_stages, num_ctas;
	uint64_t total_bytes;	/* every file of the key dir */
	uint64_t binary_bytes;	/* .cubin, .hsaco */
	uint64_t ir_bytes;	/* .ttir .ttgir .llir .ptx .amdgcn */
	int64_t created_ns;	/* when the group file landed */
	char origin[16];	/* TCFS_ORIGIN_* (store.h); "" if unknown */
	int64_t own_uid;	/* -1: shared; else the user whose own it
				 * is (on a cache many users share) */
	int64_t uid;		/* who wrote its group file (ns.h's owner):
				 * -1 whoever mounts the store */
	uint64_t root_ino;	/* its cache root: the key dir's parent */
	int shared;		/* every user's, and the fleet's: its
				 * writers were trusted (kernels.shared) */
};

/* NULL fields match anything.  name is a glob (fnmatch); arch matches
 * "90", "sm90" and "sm_90" alike. */
struct tcfs_kernel_filter {
	const char *name;
	const char *backend;
	const char *arch;
};

/* *yes = whether an entry named name in dir parent is a key dir, by the
 * one rule (kernel.c): named like a Triton key, in a cache root (the mount
 * root, or a dir not named like a key), at any depth.  Kernels live only
 * there; a group file still in a temp dir (Inductor's tmp.*, Triton's
 * tmp.pid_*) is not a kernel yet, as temp names are never keys. */
int tcfs_kernel_key_dir_at(struct tcfs_store *s, uint64_t parent,
			   const char *name, int *yes);
/* The same for the dir dir (a file is none). */
int tcfs_kernel_is_key_dir(struct tcfs_store *s, uint64_t dir, int *yes);

/* The cache root of key dir dir: its parent's path from the mount root
 * ("triton/0"), "" for a key dir at the top. */
int tcfs_kernel_root(struct tcfs_store *s, uint64_t dir, char *buf,
		     size_t len);
/* The same from the cache root's own inode (struct tcfs_kernel's
 * root_ino), without a read of the key dir. */
int tcfs_kernel_root_at(struct tcfs_store *s, uint64_t root, char *buf,
			size_t len);

/* Recomputes the rows of every group file in dir, a key dir; for any other dir, drops its rows.  Cheap when dir has none. */
int tcfs_kernel_refresh_dir(struct tcfs_store *s, uint64_t dir);
/* The same after a file of dir changed: only a key dir has rows to
 * recompute (a dir stops being one only by moving), so any other dir,
 * such as the temp dirs every put makes, costs one node lookup. */
int tcfs_kernel_files_changed(struct tcfs_store *s, uint64_t dir);
/* The same for a dir its caller has read already (borrowed). */
int tcfs_kernel_dir_files_changed(struct tcfs_store *s,
				  const struct tcfs_node *dir);

/* *yes = 0 when a kernel of key dir dir is not shared (a user's own:
 * kernels.shared), else 1, as for any dir without kernels: whether what
 * the dir holds may leave the user's view (export, pack). */
int tcfs_kernel_dir_shared(struct tcfs_store *s, uint64_t dir, int *yes);
/* tcfs trust promote: the kernels of key dir dir made shared.  Whoever
 * wrote them, a trusted user vouches for them now. */
int tcfs_kernel_set_shared(struct tcfs_store *s, uint64_t dir);

/* Fills the metadata fields of k from NAME.json bytes; -EINVAL (and
 * meta = TCFS_META_INVALID) when they are not a JSON object. */
int tcfs_kernel_parse_meta(const char *json, size_t len,
			   struct tcfs_kernel *k);

/* Tells this thread's refreshes what blob h, a NAME.json, parses to (k's
 * metadata fields, as tcfs_kernel_parse_meta filled them), so that they
 * need not read it: an import's storing threads read and parse it as
 * they store it.  A blob never changes, so what is told stays true; the
 * last few are kept. */
void tcfs_kernel_meta_known(const struct tcfs_hash *h,
			    const struct tcfs_kernel *k);

/* Whether two spellings name one arch: "90", "sm90" and "sm_90" do. */
int tcfs_kernel_same_arch(const char *a, const char *b);

int tcfs_kernel_match(const struct tcfs_kernel *k,
		      const struct tcfs_kernel_filter *f);

/* Every kernel matching f (NULL: all), ordered by key.  *out is owned by the
 * caller (free()). */
int tcfs_kernel_list(struct tcfs_store *s, const struct tcfs_kernel_filter *f,
		     struct tcfs_kernel **out, size_t *n);

/* How many candidates an ambiguous key's error names. */
#define TCFS_KERNEL_CANDIDATES 5

/*
 * The whole key of the kernel that key names, into out (len bytes): key
 * itself when a kernel has it, else the one key of a kernel that begins
 * with it (as git takes an abbreviated hash), else the one that begins
 * with it in upper or lower case (Triton's base32 keys are upper case,
 * its hex keys lower).  With fx_dir (entry.h's dir of FX graphs, NULL
 * for none), the FX graphs below it count as keys too.  An indexed range
 * of key dirs' names, never a read of every kernel.  -ENOENT: none;
 * -ENOTUNIQ: several, recorded (tcfs_err_set) with the first
 * TCFS_KERNEL_CANDIDATES of them; -ENAMETOOLONG: out is too small.
 */
int tcfs_kernel_resolve(struct tcfs_store *s, const char *key,
			const char *fx_dir, char *out, size_t len);

/* The kernel of group file grp_ino: -ENOENT when it is none. */
int tcfs_kernel_get(struct tcfs_store *s, uint64_t grp_ino,
		    struct tcfs_kernel *k);

/* A kernel with what the cache knows of its use (tcfs list). */
struct tcfs_kernel_use {
	struct tcfs_kernel k;
	uint64_t files;		/* in its key dir */
	uint64_t hits, misses;	/* its probes, ever (probe_counts) */
	int64_t last_hit_ns;	/* 0: never hit */
};

/* Every kernel matching f (NULL: all) with its use, one at a time, by key
 * and name: cb (a negative return stops the walk and is returned) sees
 * each, owned by the walk; for callers that keep little of each of
 * 100,000 kernels. */
int tcfs_kernel_each_use(struct tcfs_store *s,
			 const struct tcfs_kernel_filter *f,
			 int (*cb)(void *ctx, const struct tcfs_kernel_use *u),
			 void *ctx);
/* The same in no order: SQLite's sort of 100,000 rows is most of what
 * the walk costs, for callers that sort what they keep themselves. */
int tcfs_kernel_each_use_unsorted(
	struct tcfs_store *s, const struct tcfs_kernel_filter *f,
	int (*cb)(void *ctx, const struct tcfs_kernel_use *u), void *ctx);

/* The kernels each user wrote (their group files' owners), and the bytes
 * of their key dirs: the figures a user's share of the size limit
 * (config user-max-size) is held to. */
struct tcfs_kernel_user {
	int64_t uid;		/* -1: whoever mounts the store */
	uint64_t bytes;		/* total_bytes of its kernels */
	uint64_t kernels;
};
/* Every user with a kernel, by uid.  *out is owned by the caller
 * (free()). */
int tcfs_kernel_users(struct tcfs_store *s, struct tcfs_kernel_user **out,
		      size_t *n);
/* Every owner of files that no kernel holds (plain files, key dirs with
 * no group file), by uid: kernels is the count of those files, bytes
 * theirs.  Eviction cannot take them, yet they count toward the owner's
 * share.  *out is owned by the caller (free()). */
int tcfs_kernel_users_loose(struct tcfs_store *s,
			    struct tcfs_kernel_user **out, size_t *n);
/* When a kernel was last of use: its last hit, else (never hit) its
 * creation. */
int64_t tcfs_kernel_last_use(const struct tcfs_kernel_use *u);

/* Keeps, in order, the first n of u not of use since t_ns; returns how
 * many. */
size_t tcfs_kernel_unused_since(struct tcfs_kernel_use *u, size_t n,
				int64_t t_ns);

/* Every kernel matching f (NULL: all) with its use, in no order (the
 * caller sorts them as it shows them).  *out is owned by the caller
 * (free()). */
int tcfs_kernel_uses(struct tcfs_store *s, const struct tcfs_kernel_filter *f,
		     struct tcfs_kernel_use **out, size_t *n);

/*
 * Indexed queries for browsing (the mount's by-name/ and by-arch/ views):
 * each reads only the rows it answers with, never every kernel.  A target
 * is a backend and an arch; NULL for both means any.  Results are sorted
 * and paged: offset rows skipped, at most limit returned.  Arrays are
 * owned by the caller (free()).
 */
struct tcfs_kernel_name {
	char s[TCFS_NAME_MAX + 1];
};
struct tcfs_kernel_target {
	char backend[32];
	char arch[32];
};
/* Caches at several roots may hold the same key (one per vLLM rank): in
 * a view, the first of its key dirs by inode is named KEY and the N-th
 * KEY@N, so every entry has a name of its own, and the oldest the plain
 * key. */
struct tcfs_kernel_at {
	uint64_t dir_ino;	/* the key dir */
	char key[TCFS_NAME_MAX + 1];
	char entry[TCFS_NAME_MAX + 24];	/* KEY, or KEY@N */
};

/* The names of kernels (of a target). */
int tcfs_kernel_names(struct tcfs_store *s, const char *backend,
		      const char *arch, uint64_t offset, size_t limit,
		      struct tcfs_kernel_name **out, size_t *n);
/* The targets that kernels were compiled for (with metadata naming one). */
int tcfs_kernel_targets(struct tcfs_store *s, uint64_t offset, size_t limit,
			struct tcfs_kernel_target **out, size_t *n);
/* The key dirs of kernels named name (of a target), by key then inode;
 * with entry, only the one of that entry name (*n 0 or 1). */
int tcfs_kernel_keys(struct tcfs_store *s, const char *name,
		     const char *backend, const char *arch, const char *entry,
		     uint64_t offset, size_t limit, struct tcfs_kernel_at **out,
		     size_t *n);

#endif
