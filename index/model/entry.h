/*
 * entry: the kinds of cache probes, one row each, and the one recogniser
 * of what a lookup probes.  Triton's key dirs have their rule in kernel.h
 * (tcfs_kernel_key_dir_at); the caches above Triton's, Inductor's and
 * vLLM's, are recognised by their entries' names and the dirs those sit
 * in (tests/fixtures/inductor-2.11-trace.txt):
 *
 *   KEY/__grp__NAME.json      a Triton kernel, in a key dir
 *   KEY/NAME.so, FN.autotune.json   a launcher module, autotune results
 *   fxgraph/XX/FKEY           an FX graph (a dir of entries), XX its
 *                             key's 2nd and 3rd characters
 *   aotautograd/AKEY          an AOTAutograd entry (a dir)
 *   XX/CKEY.py                a compiled module, XX as above
 *   XX/HASH.best_config       autotune results, in a dir of two characters
 *   rank_I_J/[PREFIX/]artifact_compile_range_*   vLLM's compiled artifacts,
 *                             in torch_compile_cache/HASH/rank_I_J
 *
 * Every one of them is looked up before it is read or written.  A user's
 * own dir (fs/users.c: .tcfs-private-UID) holds that user's entries in
 * the place they name, so it is seen through: its parent is the place.
 *
 * A new kind is a row here: fs/, the event log, the reports and the
 * remote tier read the table; the log's kind column is checked in C, so
 * it needs no migration.
 */
#ifndef TCFS_ENTRY_H
#define TCFS_ENTRY_H

#include "index/base/name.h"
#include "index/tree/nsread.h"

struct tcfs_store;

enum tcfs_probe {
	TCFS_PROBE_KERNEL = 1,
	TCFS_PROBE_MODULE,
	TCFS_PROBE_FXGRAPH,
	TCFS_PROBE_AOT,
	TCFS_PROBE_PYCODE,
	TCFS_PROBE_BEST_CONFIG,
	TCFS_PROBE_VLLM,
};
#define TCFS_PROBE_KINDS 7

/* How a kind's entries travel through the fleet tier (index/remote/). */
enum tcfs_entry_remote {
	TCFS_ENTRY_REMOTE_NONE,	  /* never */
	TCFS_ENTRY_REMOTE_TRITON, /* Triton's RemoteCacheManager format */
	TCFS_ENTRY_REMOTE_PT2,	  /* PyTorch's RedisRemoteCache (pt2.h) */
	TCFS_ENTRY_REMOTE_TCFS,	  /* tcfs's own keys: a dir as one pack */
};

struct tcfs_probe_kind {
	enum tcfs_probe id;
	/* events.kind, probe_counts.kind, metrics' kind label */
	const char *name;
	/* Where tcfs stats --json puts its hits and misses: a member of the
	 * top object, or of group (NULL: the top object itself). */
	const char *json_group, *json;
	const char *label;	/* tcfs stats' text: "fx graphs" */
	const char *cache;	/* whose cache: "Triton", "Inductor", "vLLM" */
	/* Whether the kernel's dentry cache may hold lookups of its names:
	 * 0 for a probe that every lookup must reach the mount to be
	 * logged. */
	int cached;
	enum tcfs_entry_remote remote;
	/* PT2: PyTorch's cache id; TCFS: tcfs's own key prefix. */
	const char *remote_id;
	/* The mount option that lets it go remote. */
	const char *option;
	/* The probed name is a dir of entries (fxgraph/XX/FKEY/ENTRY). */
	int holds_entries;
	/* A hit brings Triton's kernels along, unprobed (an FX graph's
	 * _triton_bundle): stats says so rather than a rate of misses. */
	int carries_kernels;
};

/* The row of kind k (1 .. TCFS_PROBE_KINDS: asserted). */
const struct tcfs_probe_kind *tcfs_probe_kind(enum tcfs_probe k);
/* k's name ("unknown" out of range: a row a later tcfs wrote); the kind
 * named name, 0 for none. */
const char *tcfs_probe_name(enum tcfs_probe k);
enum tcfs_probe tcfs_probe_of(const char *name);

/* The kind that looking up name in dir parent probes; 0 for none. */
enum tcfs_probe tcfs_entry_kind(struct tcfs_store *s,
				const struct tcfs_node *parent,
				const char *name);

/* The kind a name may be of, from the name alone (0: none): what a
 * lookup that must not be cached looks like, wherever it is. */
enum tcfs_probe tcfs_entry_named(const char *name);

/* Whether dir is where files that are entries sit (a dir of two
 * characters, a vLLM rank's dir or one below it): a file written there
 * under a temp name and renamed onto an entry's name is one. */
int tcfs_entry_place(struct tcfs_store *s, const struct tcfs_node *dir);

/* The kind whose entries lie below parent/name when name is a dir that
 * Inductor or vLLM looks up on the way to an entry and a fresh node
 * lacks: "fxgraph" and "aotautograd" in a cache root (the mount root, or
 * a dir not named like a Triton key nor of two characters), a dir of two
 * characters in "fxgraph", "torch_compile_cache" in a cache root, a HASH
 * dir in it, "torch_aot_compile" in it and a HASH dir in that.  A user's
 * own dir is seen through.  0 for any other name. */
enum tcfs_probe tcfs_entry_above(struct tcfs_store *s,
				 const struct tcfs_node *parent,
				 const char *name);

/* The kind (TCFS_PROBE_VLLM) when name in parent is a vLLM rank dir,
 * rank_I_J, in a HASH dir of torch_compile_cache or of its
 * torch_aot_compile: the dir one rank writes whole; else 0. */
enum tcfs_probe tcfs_entry_rank_dir(struct tcfs_store *s,
				    const struct tcfs_node *parent,
				    const char *name);

/* The kind of FX graphs, and the name of their dir at a cache root, for
 * what reads their entries (fxwhy.h). */
enum tcfs_probe tcfs_entry_fx_kind(void);
const char *tcfs_entry_fx_dir(void);

#endif
