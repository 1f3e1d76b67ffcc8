/*
 * mcv: what Red Hat's MCV (Triton Cache Vault, github redhat-et/MCU) puts
 * in an image beside the cache, so that its images and ours are one
 * format: io.triton.manifest/manifest.json (one entry per kernel) and the
 * image labels cache.triton.image/summary, entry-count, cache-size-bytes.
 * Written as MCV writes them (Go's encoding/json), read in its current
 * and older forms.
 */
#ifndef TCFS_TOOLS_MCV_H
#define TCFS_TOOLS_MCV_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Where an image keeps a cache and what it says of it: MCV ships Triton
 * caches and vLLM's trees (VLLM_CACHE_ROOT) alike, under names of each's
 * own. */
struct mcv_layout {
	const char *cache;	/* the cache's dir in the layer */
	const char *manifest;	/* the dir of its manifest.json */
	const char *labels;	/* the labels' prefix */
	const char *kind;	/* the manifest's key: "triton", "vllm" */
};
extern const struct mcv_layout mcv_triton, mcv_vllm;

/* A kernel as MCV's manifest lists it (TritonCacheMetadata). */
struct mcv_entry {
	char hash[96];
	char backend[32];
	char arch[32];
	int64_t warp_size;
	int has_ptx;		/* ptx_version is a pointer in Go: may be 0 */
	int64_t ptx_version;
	int64_t num_stages, num_warps;
	int debug;
	char dummy_key[65];	/* as MCV computes it with no Triton at hand */
};

/* A target: what a kernel needs of a GPU, and what a GPU offers. */
struct mcv_target {
	char backend[32];
	char arch[32];
	int64_t warp_size;
};

/* Growing lists of them (index/base/vec.h): v owned by the holder (free()). */
struct mcv_entries {
	struct mcv_entry *v;
	size_t n, cap;
};
struct mcv_targets {
	struct mcv_target *v;
	size_t n, cap;
};

/* Appends e: 0 or -ENOMEM. */
int mcv_entries_add(struct mcv_entries *l, const struct mcv_entry *e);
/* Appends t unless l has it: 0 or -ENOMEM. */
int mcv_targets_add(struct mcv_targets *l, const struct mcv_target *t);

/* 1 and *e when json is a kernel's metadata (a "hash" and a "target"),
 * as MCV recognises it; 0 when it is not. */
int mcv_entry_of_meta(const char *json, size_t len, struct mcv_entry *e);

/* The manifest.json MCV writes: {"KIND": [entries]} (kind "triton" or
 * "vllm"), Go's MarshalIndent.  *out owned by the caller (free()). */
int mcv_manifest_write(const struct mcv_entries *l, const char *kind,
		       char **out, size_t *len);

/* Entries of a manifest.json, current ({"triton": [...]}) or older (a
 * bare array) form, appended to l.  -EBADMSG when it is not JSON of
 * either form. */
int mcv_manifest_read(const char *json, size_t len, struct mcv_entries *l);

/* Adds the labels for entries l, the cache being cache_bytes, under
 * prefix (MCV_LABELS_*) to labels. */
int mcv_labels_add(cJSON *labels, const char *prefix,
		   const struct mcv_entries *l, uint64_t cache_bytes);

/* The targets an image's labels name (its summary, else the older
 * metadata label), appended to out. */
int mcv_labels_targets(const cJSON *labels, struct mcv_targets *out);

/* Whether a kernel of target k runs on a GPU of target g ("90", "sm90"
 * and "sm_90" are one arch). */
int mcv_target_fits(const struct mcv_target *k, const struct mcv_target *g);

#endif
