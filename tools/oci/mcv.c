/*
 * mcv: MCV's manifest and labels, written and read (mcv.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/model/kernel.h"
#include "index/base/vec.h"
#include "mcv.h"
#include "oci.h"

#define MCV_LABELS_TRITON "cache.triton.image"
#define MCV_LABELS_VLLM "cache.vllm.image"

const struct mcv_layout mcv_triton = {
	"io.triton.cache", "io.triton.manifest", MCV_LABELS_TRITON, "triton",
};
const struct mcv_layout mcv_vllm = {
	"io.vllm.cache", "io.vllm.manifest", MCV_LABELS_VLLM, "vllm",
};

/* A string as Go writes it; the fields here are hashes and arch names,
 * but a hostile metadata file may hold anything. */
static void put_gostr(FILE *b, const char *s)
{
	fputc('"', b);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(b, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
			fprintf(b, "\\u%04x", *p);
		else
			fputc(*p, b);
	}
	fputc('"', b);
}

/* Closes b, open_memstream's over *out: 0, or -ENOMEM (and *out freed)
 * when a write failed. */
static int put_done(FILE *b, char **out)
{
	int bad = ferror(b);

	if (fclose(b) != 0 || bad) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void copy_field(char *dst, size_t len, const cJSON *v)
{
	if (cJSON_IsString(v))
		snprintf(dst, len, "%s", v->valuestring);
	else if (cJSON_IsNumber(v))
		snprintf(dst, len, "%.0f", v->valuedouble);
	else
		dst[0] = '\0';
}

static int64_t int_field(const cJSON *o, const char *name, int *has)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (has)
		*has = cJSON_IsNumber(v);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static void hex_of(const char *s, char *hex)
{
	char d[OCI_DIGEST_LEN + 1];

	oci_sha256_buf(s, strlen(s), d);
	memcpy(hex, d + 7, 65);
}

/* MCV's dummy key (dummytritonkey.go) as it comes out where Triton is
 * not installed: no Triton key, no cache-invalidating variables. */
static void dummy_key(struct mcv_entry *e)
{
	char target[128], options[256], comp[512];
	char src[65], tgt[65], opt[65], env[65];

	snprintf(target, sizeof(target), "%s-%s-%" PRId64, e->backend,
		 e->arch, e->warp_size);
	snprintf(options, sizeof(options),
		 "{\"debug\":%s,\"num_stages\":%" PRId64 ",\"num_warps\":%" PRId64
		 ",\"ptx\":%" PRId64 "}",
		 e->debug ? "true" : "false", e->num_stages, e->num_warps,
		 e->has_ptx ? e->ptx_version : 0);
	hex_of("dummy_source_content", src);
	hex_of(target, tgt);
	hex_of(options, opt);
	hex_of("{}", env);
	snprintf(comp, sizeof(comp), "unknown-triton-key-%s-%s-%s-%s", src,
		 tgt, opt, env);
	hex_of(comp, e->dummy_key);
}

int mcv_entries_add(struct mcv_entries *l, const struct mcv_entry *e)
{
	struct mcv_entry *slot = tcfs_vec_push(&l->v, &l->n, &l->cap,
					       sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	*slot = *e;
	return 0;
}

static int same_target(const struct mcv_target *a, const struct mcv_target *b)
{
	return !strcmp(a->backend, b->backend) && !strcmp(a->arch, b->arch) &&
	       a->warp_size == b->warp_size;
}

int mcv_targets_add(struct mcv_targets *l, const struct mcv_target *t)
{
	struct mcv_target *slot;

	for (size_t i = 0; i < l->n; i++)
		if (same_target(&l->v[i], t))
			return 0;
	slot = tcfs_vec_push(&l->v, &l->n, &l->cap, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	*slot = *t;
	return 0;
}

/* An entry's fields: the target's from target (nested in a kernel's
 * metadata, beside the rest in MCV's manifest), the others from o. */
static void entry_fields(struct mcv_entry *e, const cJSON *o,
			 const cJSON *target)
{
	memset(e, 0, sizeof(*e));
	copy_field(e->hash, sizeof(e->hash),
		   cJSON_GetObjectItemCaseSensitive(o, "hash"));
	copy_field(e->backend, sizeof(e->backend),
		   cJSON_GetObjectItemCaseSensitive(target, "backend"));
	copy_field(e->arch, sizeof(e->arch),
		   cJSON_GetObjectItemCaseSensitive(target, "arch"));
	e->warp_size = int_field(target, "warp_size", NULL);
	e->ptx_version = int_field(o, "ptx_version", &e->has_ptx);
	e->num_stages = int_field(o, "num_stages", NULL);
	e->num_warps = int_field(o, "num_warps", NULL);
	e->debug = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "debug"));
}

int mcv_entry_of_meta(const char *json, size_t len, struct mcv_entry *e)
{
	cJSON *doc = cJSON_ParseWithLength(json, len);
	const cJSON *hash = cJSON_GetObjectItemCaseSensitive(doc, "hash");
	const cJSON *target = cJSON_GetObjectItemCaseSensitive(doc, "target");

	if (!cJSON_IsString(hash) || !hash->valuestring[0] ||
	    !cJSON_IsObject(target)) {
		cJSON_Delete(doc);
		return 0;
	}
	entry_fields(e, doc, target);
	cJSON_Delete(doc);
	dummy_key(e);
	return 1;
}

/* One entry, indented as MarshalIndent does at depth ind. */
static void put_entry(FILE *b, const struct mcv_entry *e, const char *ind)
{
	fprintf(b, "%s{\n%s  \"hash\": ", ind, ind);
	put_gostr(b, e->hash);
	fprintf(b, ",\n%s  \"backend\": ", ind);
	put_gostr(b, e->backend);
	fprintf(b, ",\n%s  \"arch\": ", ind);
	put_gostr(b, e->arch);
	fprintf(b, ",\n%s  \"warp_size\": %" PRId64, ind, e->warp_size);
	if (e->has_ptx)
		fprintf(b, ",\n%s  \"ptx_version\": %" PRId64, ind,
			e->ptx_version);
	if (e->num_stages)
		fprintf(b, ",\n%s  \"num_stages\": %" PRId64, ind,
			e->num_stages);
	if (e->num_warps)
		fprintf(b, ",\n%s  \"num_warps\": %" PRId64, ind,
			e->num_warps);
	if (e->debug)
		fprintf(b, ",\n%s  \"debug\": true", ind);
	fprintf(b, ",\n%s  \"dummy_key\": \"%s\"\n%s}", ind, e->dummy_key,
		ind);
}

int mcv_manifest_write(const struct mcv_entries *l, const char *kind,
		       char **out, size_t *len)
{
	const struct mcv_entry *v = l->v;
	const size_t n = l->n;
	FILE *b = open_memstream(out, len);

	if (!b)
		return -ENOMEM;
	if (!n) {
		fprintf(b, "{\n  \"%s\": []\n}", kind);
	} else if (!strcmp(kind, "vllm")) {
		/* VLLMCacheMetadata: {vllmHash, TritonCacheEntries}; one
		 * for all, as tcfs keeps no per-hash split of entries. */
		fputs("{\n  \"vllm\": [\n    {\n      \"vllmHash\": \"\",\n"
		      "      \"TritonCacheEntries\": [\n", b);
		for (size_t i = 0; i < n; i++) {
			put_entry(b, &v[i], "        ");
			fputs(i + 1 < n ? ",\n" : "\n", b);
		}
		fputs("      ]\n    }\n  ]\n}", b);
	} else {
		fprintf(b, "{\n  \"%s\": [\n", kind);
		for (size_t i = 0; i < n; i++) {
			put_entry(b, &v[i], "    ");
			fputs(i + 1 < n ? ",\n" : "\n", b);
		}
		fputs("  ]\n}", b);
	}
	return put_done(b, out);
}

static int append_entries(const cJSON *arr, struct mcv_entries *l)
{
	const cJSON *j;

	cJSON_ArrayForEach(j, arr) {
		struct mcv_entry e;
		const cJSON *hash = cJSON_GetObjectItemCaseSensitive(j, "hash");
		const cJSON *nested = cJSON_GetObjectItemCaseSensitive(
			j, "TritonCacheEntries");

		if (cJSON_IsArray(nested)) {
			int rc = append_entries(nested, l);

			if (rc < 0)
				return rc;
			continue;
		}
		if (!cJSON_IsString(hash))
			continue;
		entry_fields(&e, j, j);
		copy_field(e.dummy_key, sizeof(e.dummy_key),
			   cJSON_GetObjectItemCaseSensitive(j, "dummy_key"));
		if (mcv_entries_add(l, &e) < 0)
			return -ENOMEM;
	}
	return 0;
}

int mcv_manifest_read(const char *json, size_t len, struct mcv_entries *l)
{
	cJSON *doc = cJSON_ParseWithLength(json, len);
	const cJSON *arr = doc;
	int rc;

	if (cJSON_IsObject(doc)) {
		arr = cJSON_GetObjectItemCaseSensitive(doc, "triton");
		if (!arr)
			arr = cJSON_GetObjectItemCaseSensitive(doc, "vllm");
	}
	if (!cJSON_IsArray(arr)) {
		cJSON_Delete(doc);
		return -EBADMSG;
	}
	rc = append_entries(arr, l);
	cJSON_Delete(doc);
	return rc;
}

int mcv_labels_add(cJSON *labels, const char *prefix,
		   const struct mcv_entries *l, uint64_t cache_bytes)
{
	struct mcv_targets t = { 0 };
	char key[128], num[32], *summary = NULL;
	size_t slen = 0;
	FILE *b;
	int rc = 0;

	/* Distinct targets in order of first appearance: the entries come
	 * sorted, so the label is the same for the same content. */
	for (size_t i = 0; rc == 0 && i < l->n; i++) {
		struct mcv_target c = { .warp_size = l->v[i].warp_size };

		snprintf(c.backend, sizeof(c.backend), "%s", l->v[i].backend);
		snprintf(c.arch, sizeof(c.arch), "%s", l->v[i].arch);
		rc = mcv_targets_add(&t, &c);
	}
	b = rc == 0 ? open_memstream(&summary, &slen) : NULL;
	if (!b) {
		free(t.v);
		return -ENOMEM;
	}
	fputs("{\"targets\":[", b);
	for (size_t i = 0; i < t.n; i++) {
		fprintf(b, "%s{\"backend\":", i ? "," : "");
		put_gostr(b, t.v[i].backend);
		fputs(",\"arch\":", b);
		put_gostr(b, t.v[i].arch);
		fprintf(b, ",\"warp_size\":%" PRId64 "}", t.v[i].warp_size);
	}
	fputs("]}", b);
	free(t.v);
	rc = put_done(b, &summary);
	if (rc < 0)
		return rc;
	snprintf(key, sizeof(key), "%s/summary", prefix);
	if (!cJSON_AddStringToObject(labels, key, summary))
		rc = -ENOMEM;
	free(summary);
	snprintf(key, sizeof(key), "%s/entry-count", prefix);
	snprintf(num, sizeof(num), "%zu", l->n);
	if (rc == 0 && !cJSON_AddStringToObject(labels, key, num))
		rc = -ENOMEM;
	snprintf(key, sizeof(key), "%s/cache-size-bytes", prefix);
	snprintf(num, sizeof(num), "%" PRIu64, cache_bytes);
	if (rc == 0 && !cJSON_AddStringToObject(labels, key, num))
		rc = -ENOMEM;
	return rc;
}

/* Targets of a JSON array of {backend, arch, warp_size}. */
static int targets_of(const cJSON *arr, struct mcv_targets *out)
{
	const cJSON *j;

	cJSON_ArrayForEach(j, arr) {
		struct mcv_target t = { 0 };

		copy_field(t.backend, sizeof(t.backend),
			   cJSON_GetObjectItemCaseSensitive(j, "backend"));
		copy_field(t.arch, sizeof(t.arch),
			   cJSON_GetObjectItemCaseSensitive(j, "arch"));
		t.warp_size = int_field(j, "warp_size", NULL);
		if (t.backend[0] && mcv_targets_add(out, &t) < 0)
			return -ENOMEM;
	}
	return 0;
}

int mcv_labels_targets(const cJSON *labels, struct mcv_targets *out)
{
	static const char *const names[] = {
		MCV_LABELS_TRITON "/summary",
		MCV_LABELS_VLLM "/summary",
		MCV_LABELS_TRITON "/metadata",	/* older images */
	};
	int rc = 0;

	for (size_t i = 0; rc == 0 && !out->n && i < 3; i++) {
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(labels,
								  names[i]);
		cJSON *doc = cJSON_IsString(l) ? cJSON_Parse(l->valuestring)
					       : NULL;
		const cJSON *arr = cJSON_IsArray(doc)
					   ? doc
					   : cJSON_GetObjectItemCaseSensitive(
						     doc, "targets");

		if (cJSON_IsArray(arr))
			rc = targets_of(arr, out);
		cJSON_Delete(doc);
	}
	return rc;
}

int mcv_target_fits(const struct mcv_target *k, const struct mcv_target *g)
{
	return !strcmp(k->backend, g->backend) &&
	       tcfs_kernel_same_arch(k->arch, g->arch) &&
	       (k->warp_size <= 0 || k->warp_size == g->warp_size);
}
