/*
 * prune: taking whole kernels out of the store (tcfs prune, and the
 * mount's eviction under a size limit), or only their IR.
 *
 * A kernel goes with its key dir, in one transaction: a probe sees it
 * whole or not at all, never a group file whose children are gone.  The
 * blobs that no row names any more are freed after the commit.  In a
 * store opened by the mount (keep_unlinked) the removed nodes stay
 * readable by inode number until the kernel forgets them (ns.h), so a
 * process that holds one open keeps its bytes; their blobs are freed
 * once nothing names them, by a later tcfs_prune_free.
 */
#ifndef TCFS_PRUNE_H
#define TCFS_PRUNE_H

#include <stddef.h>
#include <stdint.h>

#include "index/base/hash.h"
#include "index/model/kernel.h"

struct tcfs_store;

/* Which kernels: all of filter, and not used since unused_since_ns (-1:
 * any), where a kernel never hit counts from its creation. */
struct tcfs_prune_select {
	struct tcfs_kernel_filter filter;
	int64_t unused_since_ns;
};

/* A key dir chosen, with what it holds. */
struct tcfs_prune_victim {
	uint64_t dir_ino;
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];	/* its kernel's (the first, if more) */
	char backend[32], arch[32];
	uint64_t total_bytes, ir_bytes;
	int64_t last_used_ns;	/* last hit, else created */
	int64_t uid;		/* its kernel's writer (kernel.h) */
};

/* The kernels sel picks, least recently used first, one per key dir.
 * *out is owned by the caller (free()). */
int tcfs_prune_pick(struct tcfs_store *s, const struct tcfs_prune_select *sel,
		    struct tcfs_prune_victim **out, size_t *n);

/* What one removal did.  nodes and blobs (owned by the caller, free())
 * are the inode numbers taken out of the tree and the blobs they named,
 * for tcfs_prune_free and for the mount to forget what the kernel does
 * not hold. */
struct tcfs_prune_done {
	uint64_t parent;	/* of the key dir */
	uint64_t files;		/* files removed */
	uint64_t bytes;		/* their logical bytes */
	uint64_t *nodes;
	size_t nnodes, ncap;
	struct tcfs_hash *blobs;
	size_t nblobs, bcap;
};

/* What tcfs_prune_remove does with a key dir. */
enum tcfs_prune_how {
	TCFS_PRUNE_WHOLE,	/* the kernel goes */
	TCFS_PRUNE_EVICT,	/* the same, noted as evicted (schema v8) */
	TCFS_PRUNE_IR,		/* its IR files go, its group files are
				 * rewritten to list only what is left */
};

/* Removes v as how says, in one transaction.  -ENOENT when v's key dir
 * is no longer there (removed or replaced meanwhile); -EUCLEAN for
 * TCFS_PRUNE_IR when a group file is not relocatable (not Triton's
 * format), which no rewrite could keep loadable: nothing changes then.
 * done is filled on success and must be released: tcfs_prune_done_free. */
int tcfs_prune_remove(struct tcfs_store *s, const struct tcfs_prune_victim *v,
		      enum tcfs_prune_how how, struct tcfs_prune_done *done);
void tcfs_prune_done_free(struct tcfs_prune_done *done);

/* Frees those of blobs[] that no row names any more and that hooks (may
 * be NULL) does not hold (cas.h: tcfs_cas_free); *kept (optional) gets
 * how many stayed.  Adds the bytes freed to *freed.  The caller has
 * committed what unnamed them (tcfs_store_sync). */
struct tcfs_prune_hooks;
int tcfs_prune_free(struct tcfs_store *s, const struct tcfs_hash *blobs,
		    size_t n, const struct tcfs_prune_hooks *hooks,
		    uint64_t *freed, size_t *kept);

/* How tcfs_prune_run and tcfs_prune_free ask their caller (all
 * optional). */
struct tcfs_prune_hooks {
	/* 1: take v; 0: skip it (the mount: a process holds its files);
	 * negative: stop before it. */
	int (*want)(void *ctx, const struct tcfs_prune_victim *v);
	/* After each v that want took, removed or not. */
	void (*release)(void *ctx);
	/* v is out of the tree (committed); its blobs are freed next. */
	void (*removed)(void *ctx, const struct tcfs_prune_victim *v,
			const struct tcfs_prune_done *d);
	/* 1 when the caller holds blob h though no row names it (the
	 * mount: a file's writes stored, its row's commit to be tried
	 * again): never freed then, whatever its age. */
	int (*held)(void *ctx, const struct tcfs_hash *h);
	void *ctx;
};

/* What a run did, or would do (dry_run).  Arrays owned by the report:
 * tcfs_prune_report_free; what taken points to is the run's victims,
 * which must outlive it (100,000 copies of them cost a prune of every
 * kernel a tenth of its time). */
struct tcfs_prune_report {
	const struct tcfs_prune_victim **taken;	/* removed, in order */
	size_t ntaken, cap;
	uint64_t files, bytes;		/* logical: what the tree lost */
	uint64_t freed_bytes;		/* blobs deleted */
	size_t skipped;			/* held, gone meanwhile, or IR kept */
	/* Blobs the tree no longer names but that could not go yet: named
	 * by nodes the kernel holds (limbo), or put a moment ago (cas.h).
	 * The mount frees them later with tcfs_prune_free. */
	struct tcfs_hash *pending;
	size_t npending, pcap;
	uint64_t pending_bytes;
	uint64_t fresh_bytes;	/* of those, put a moment ago: they go
				 * within TCFS_CAS_GRACE_NS, held or not */
};

/* Removes victims[] in order, as how says, each alone in a transaction,
 * freeing what it leaves unnamed; with dry_run, only reports them. */
int tcfs_prune_run(struct tcfs_store *s,
		   const struct tcfs_prune_victim *victims, size_t n,
		   enum tcfs_prune_how how, int dry_run,
		   const struct tcfs_prune_hooks *hooks,
		   struct tcfs_prune_report *report);
void tcfs_prune_report_free(struct tcfs_prune_report *r);

/* v's target as reports show it: "backend-arch", either alone when the
 * other is unknown.  Returns buf. */
const char *tcfs_prune_target(const struct tcfs_prune_victim *v, char *buf,
			      size_t len);

/* The report as tcfs prune --json prints it: {dry_run, ir, kernels:
 * [{key, name, target, bytes, last_used}], files, bytes, freed_bytes,
 * pending_bytes, skipped}.  Owned by the caller (cJSON_Delete); NULL when out of
 * memory. */
struct cJSON *tcfs_prune_report_json(const struct tcfs_prune_report *r,
				     enum tcfs_prune_how how, int dry_run);

/* Counts an eviction of bytes in the store's counters. */
int tcfs_prune_count_eviction(struct tcfs_store *s, uint64_t kernels,
			      uint64_t bytes);

/* The eviction counters: kernels evicted, bytes freed, and misses on
 * keys the limit had evicted. */
struct tcfs_prune_counters {
	uint64_t evictions, evicted_bytes, evicted_requested;
};
int tcfs_prune_counters(struct tcfs_store *s, struct tcfs_prune_counters *c);

#endif
