/*
 * tcfs pack: the store (or the kernels selected) as an OCI image, in the
 * format of Red Hat's MCV: the cache under io.triton.cache/ in one layer,
 * its manifest under io.triton.manifest/, the targets in the labels.
 *
 * The layer is the store walk (index/tree/walk.h) written to a tar stream:
 * entries sorted, times and owners fixed, gzip without a timestamp, so
 * the same content gives the same image digest on every run.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "index/base/err.h"
#include "index/base/text.h"
#include "index/model/event.h"
#include "index/model/kernel.h"
#include "index/base/name.h"
#include "index/tree/ns.h"
#include "index/store/store.h"
#include "index/base/vec.h"
#include "index/tree/walk.h"
#include "oci/layer.h"
#include "oci/mcv.h"
#include "oci/oci.h"
#include "oci/strset.h"
#include "progress.h"

/* What the base image of --base is allowed to expand to while read. */
#define BASE_MAX (64ull << 30)

/* A subtree of the store that goes into the layer whole. */
struct unit {
	char path[PATH_MAX];
	struct tcfs_node n;
};

struct pack {
	struct tcfs_store *s;
	struct layer_writer *lw;
	const struct mcv_layout *layout;	/* Triton's cache, or vLLM's */
	enum tcfs_group_filter filter;
	struct mcv_entries entries;	/* of the layer, then of the image */
	uint64_t files, kernels, failed;
	uint64_t links_dropped;	/* symlinks left out (layer_link_ok) */
	struct strset dirs;	/* dirs already in the layer */
	/* --base */
	struct oci_image base;
	int has_base;
	struct strset base_paths;	/* its files, as layer paths */
	char *base_manifest;	/* its io.*.manifest/manifest.json */
	size_t base_manifest_len;
	/* the selection */
	struct unit *units;
	size_t nunits, units_cap;
	int64_t user;		/* --user: that user's own kernels too */
	struct progress prog;
};

static const struct opt_cmd cmd = {
	"pack", "DEST", 1, 1, "no destination given",
	"Writes the store, or the kernels selected, as an OCI image: DEST is\n"
	"an image layout DIR[:TAG] (tag 'latest' when not given; other tags\n"
	"there are kept) or oci-archive:FILE[:TAG].  The format is Red Hat\n"
	"MCV's: the cache under io.triton.cache/ (io.vllm.cache/ for a vLLM\n"
	"tree), io.triton.manifest/manifest.json listing every kernel, the\n"
	"labels cache.triton.image/summary (targets), entry-count and\n"
	"cache-size-bytes; group files name their children relative to the\n"
	"cache.  The same content gives the same image digest.  A symlink\n"
	"pointing up or out of its dir is left out, with a message (unpack\n"
	"refuses such links).  Push the image with skopeo: skopeo copy\n"
	"oci:DIR:TAG docker://REGISTRY/NAME:TAG.\n",
	NULL,
	"Exit status: 0 the image is written, 1 it is not (a damaged blob, an\n"
	"I/O error: see the errors), 2 usage error.\n",
};

/* A dir of the layer, and the dirs above it, each once. */
static int add_dirs(struct pack *p, const char *path)
{
	char buf[PATH_MAX];
	int rc;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *c = strchr(buf, '/'); c; c = strchr(c + 1, '/')) {
		*c = '\0';
		rc = strset_add(&p->dirs, buf);
		if (rc > 0)
			rc = layer_add_dir(p->lw, buf);
		*c = '/';
		if (rc < 0)
			return rc;
	}
	rc = strset_add(&p->dirs, buf);
	return rc > 0 ? layer_add_dir(p->lw, buf) : rc;
}

static int sink_enter(void *ctx, const char *path, const struct tcfs_node *n)
{
	struct pack *p = ctx;
	char full[PATH_MAX];

	(void)n;
	snprintf(full, sizeof(full), "%s/%s", p->layout->cache, path);
	return add_dirs(p, full);
}

static int sink_leave(void *ctx, const char *path, const struct tcfs_node *n,
		      int rc)
{
	(void)ctx;
	(void)path;
	(void)n;
	return rc;
}

/* A kernel's NAME.json (beside its group file) goes into the manifest,
 * as MCV lists every metadata file with a hash. */
static int note_meta(struct pack *p, const struct tcfs_node *n,
		     const char *bytes, size_t len)
{
	struct mcv_entry e;

	if (tcfs_name_artifact(n->name) != TCFS_ART_META ||
	    !mcv_entry_of_meta(bytes, len, &e))
		return 0;
	return mcv_entries_add(&p->entries, &e);
}

static int sink_file(void *ctx, const char *path, const char *keydir,
		     const struct tcfs_node *n, const char *bytes, size_t len)
{
	struct pack *p = ctx;
	char full[PATH_MAX], *r = NULL;
	size_t rlen = 0;
	int rc;

	if (n->fmt == TCFS_FMT_GROUP) {
		rc = tcfs_group_render(bytes, len, TCFS_GROUP_IMAGE_ROOT, keydir,
				       p->filter, &r, &rlen);
		if (rc < 0)
			return tcfs_err_errno(rc, "%s", path);
		bytes = r;
		len = rlen;
	}
	snprintf(full, sizeof(full), "%s/%s", p->layout->cache, path);
	rc = layer_add_file(p->lw, full, n->mode, bytes, len);
	if (rc == 0)
		rc = note_meta(p, n, bytes, len);
	free(r);
	p->files += rc == 0;
	p->kernels += rc == 0 && tcfs_name_artifact(n->name) == TCFS_ART_GROUP;
	if (progress_due(&p->prog))
		progress_show(&p->prog, "%llu %s, %llu %s",
			      (unsigned long long)p->kernels,
			      TCFS_NOUN(p->kernels, "kernel"),
			      (unsigned long long)p->files,
			      TCFS_NOUN(p->files, "file"));
	return rc;
}

static int sink_symlink(void *ctx, const char *path, const struct tcfs_node *n,
			const char *target)
{
	struct pack *p = ctx;
	char full[PATH_MAX];

	(void)n;
	if (!layer_link_ok(target)) {
		/* tcfs unpack would refuse the whole image for it. */
		cli_err("pack", "%s: a symlink to '%s', which points up or out "
			"of its dir; left out of the image", path, target);
		p->links_dropped++;
		return 0;
	}
	snprintf(full, sizeof(full), "%s/%s", p->layout->cache, path);
	p->files++;
	return layer_add_symlink(p->lw, full, target);
}

static void sink_error(void *ctx, const char *path, int rc)
{
	struct pack *p = ctx;

	p->failed++;
	cli_lib_err("pack", rc, path);
}

static const struct tcfs_walk_sink tar_sink = {
	sink_enter, sink_leave, sink_file, sink_symlink, sink_error,
};

/* ---- the selection ---- */

static int add_unit(struct pack *p, const struct tcfs_node *n,
		    const char *path)
{
	struct unit *u = tcfs_vec_push(&p->units, &p->nunits, &p->units_cap,
				       sizeof(*u));

	if (!u)
		return -ENOMEM;
	snprintf(u->path, sizeof(u->path), "%s", path);
	u->n = *n;
	return 0;
}

static int add_unit_ino(struct pack *p, uint64_t ino)
{
	char path[PATH_MAX];
	struct tcfs_node n;
	int rc = tcfs_ns_get(p->s, ino, &n);

	if (rc == 0)
		rc = tcfs_ns_path(p->s, ino, path, sizeof(path));
	/* A user's own key dir (--user) goes where its user reaches it. */
	tcfs_name_path_as_user(path);
	return rc < 0 ? rc : add_unit(p, &n, path);
}

/* Whether every file of the tree at n (path below the cache) is in the
 * base already: then the base has it, and the delta leaves it out. */
static int in_base(struct pack *p, const struct tcfs_node *n,
		   const char *path)
{
	struct tcfs_node *kids;
	char full[PATH_MAX];
	size_t nk;
	int rc, yes = 1;

	if (n->kind != TCFS_DIR) {
		if (p->filter == TCFS_GROUP_BINARY_ONLY &&
		    tcfs_name_artifact(n->name) == TCFS_ART_IR)
			return 1;
		snprintf(full, sizeof(full), "%s/%s", p->layout->cache, path);
		return strset_has(&p->base_paths, full);
	}
	rc = tcfs_ns_list(p->s, n->ino, 0, 0, &kids, &nk);
	if (rc < 0)
		return rc;
	for (size_t i = 0; yes == 1 && i < nk; i++) {
		snprintf(full, sizeof(full), "%s/%s", path, kids[i].name);
		yes = in_base(p, &kids[i], full);
	}
	free(kids);
	return yes;
}

/* Everything below dir.  With a base, whole key dirs and the entries
 * beside them, so that tidy_units can leave out what the base holds
 * without ever splitting a kernel between layers. */
static int select_tree(struct pack *p, uint64_t dir, const char *path,
		       int own)
{
	struct tcfs_node *kids;
	size_t n;
	int rc = tcfs_ns_list(p->s, dir, 0, 0, &kids, &n);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		char sub[PATH_MAX];
		int key = 1;

		uint32_t uid;

		/* A user's own kernels are theirs alone, unless --user
		 * asks for them: then where that user reaches them. */
		if (tcfs_name_private(kids[i].name, &uid)) {
			if ((int64_t)uid == p->user)
				rc = select_tree(p, kids[i].ino, path, 1);
			continue;
		}
		/* Nor is a kernel its writer was not trusted with. */
		if (!own && !tcfs_walk_shared(p->s, &kids[i]))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "/" : "",
			 kids[i].name);
		if (p->has_base && kids[i].kind == TCFS_DIR)
			rc = tcfs_kernel_is_key_dir(p->s, kids[i].ino, &key);
		if (rc == 0 && !key)
			rc = select_tree(p, kids[i].ino, sub, own);
		else if (rc == 0)
			rc = add_unit(p, &kids[i], sub);
	}
	free(kids);
	return rc;
}

struct pick {
	struct pack *p;
	int64_t since;		/* --used-since, or -1 */
	struct strset missed;	/* keys that missed since then */
};

static int pick_kernel(void *ctx, const struct tcfs_kernel_use *u)
{
	struct pick *k = ctx;

	/* A user's own kernel is theirs alone (fs/users.c), unless asked
	 * for by --user. */
	if ((!u->k.shared && (u->k.own_uid < 0 ||
			      u->k.own_uid != k->p->user)) ||
	    (k->since >= 0 && u->last_hit_ns < k->since &&
	     !strset_has(&k->missed, u->k.key)))
		return 0;
	return add_unit_ino(k->p, u->k.dir_ino);
}

/* The kernels selected, and with --used-since the module dirs probed
 * since then: launchers and autotune results a job needs as much. */
static int select_kernels(struct pack *p, const struct tcfs_kernel_filter *f,
			  int filtered, int64_t since)
{
	struct pick k = { p, since, { NULL } };
	struct tcfs_event *ev = NULL;
	size_t nev = 0;
	int rc = 0;

	if (since >= 0)
		rc = tcfs_event_list(p->s, 0, since, 0, &ev, &nev);
	for (size_t i = 0; rc == 0 && i < nev; i++)
		if (ev[i].kind == TCFS_PROBE_KERNEL && !ev[i].hit)
			rc = strset_add(&k.missed, ev[i].key) < 0 ? -ENOMEM
								    : 0;
	if (rc == 0)
		rc = tcfs_kernel_each_use(p->s, filtered ? f : NULL,
					  pick_kernel, &k);
	for (size_t i = 0; rc == 0 && !filtered && i < nev; i++) {
		struct tcfs_node d;

		if (ev[i].kind != TCFS_PROBE_MODULE)
			continue;
		if (tcfs_ns_lookup(p->s, TCFS_ROOT_INO, ev[i].key, &d) == 0 &&
		    d.kind == TCFS_DIR)
			rc = add_unit(p, &d, d.name);
	}
	strset_free(&k.missed);
	free(ev);
	return rc;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct unit *)a)->path,
		      ((const struct unit *)b)->path);
}

/* Sorted, each once, and none the base holds whole. */
static int tidy_units(struct pack *p)
{
	size_t used = 0;

	if (p->nunits)
		qsort(p->units, p->nunits, sizeof(*p->units), by_path);
	for (size_t i = 0; i < p->nunits; i++) {
		int rc;

		if (used && !strcmp(p->units[used - 1].path, p->units[i].path))
			continue;
		rc = p->has_base ? in_base(p, &p->units[i].n,
					   p->units[i].path)
				 : 0;
		if (rc < 0)
			return rc;
		if (!rc)
			p->units[used++] = p->units[i];
	}
	p->nunits = used;
	return 0;
}

/* ---- the base image ---- */

struct base_scan {
	struct pack *p;
	const char *manifest;	/* the manifest's path in a layer */
};

static int base_entry(void *ctx, const char *path, const void *data,
		      size_t len)
{
	struct base_scan *b = ctx;
	char *copy;

	if (!strcmp(path, b->manifest) && data) {
		copy = malloc(len ? len : 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, len);
		free(b->p->base_manifest);
		b->p->base_manifest = copy;
		b->p->base_manifest_len = len;
	}
	return strset_add(&b->p->base_paths, path) < 0 ? -ENOMEM : 0;
}

static int open_base(struct pack *p, const char *arg, const char *tmpdir)
{
	char manifest[64];
	struct base_scan b = { p, manifest };
	struct oci_ref r;
	int rc = oci_ref_parse(arg, 0, &r);

	snprintf(manifest, sizeof(manifest), "%s/manifest.json",
		 p->layout->manifest);
	if (rc == 0)
		rc = oci_image_open(&r, tmpdir, BASE_MAX, &p->base);
	p->has_base = 1;
	for (size_t i = 0; rc == 0 && i < p->base.nlayers; i++) {
		int fd = oci_image_open_layer(&p->base, i);

		rc = fd < 0 ? fd
			    : oci_image_check_layer(&p->base, i, fd, BASE_MAX);
		if (rc == 0)
			rc = layer_scan(fd, p->base.layers[i].digest, manifest,
					base_entry, &b);
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

/* ---- the image ---- */

/* The machine, as OCI names it (Go's GOARCH). */
static const char *host_arch(void)
{
	struct utsname u;

	if (uname(&u) < 0)
		return "amd64";
	if (!strcmp(u.machine, "aarch64"))
		return "arm64";
	if (!strcmp(u.machine, "ppc64le"))
		return "ppc64le";
	return "amd64";
}

/* The config: labels, the layers' diff_ids, the base's history kept. */
static int put_config(struct pack *p, struct oci_out *o, const char *diff_id,
		      uint64_t cache_bytes, struct oci_desc *d)
{
	cJSON *c = cJSON_CreateObject(), *cfg, *labels, *rootfs, *ids, *hist;
	const cJSON *bc = p->has_base ? p->base.config : NULL;
	const cJSON *bh = cJSON_GetObjectItemCaseSensitive(bc, "history");
	const char *arch = NULL, *os = NULL;
	char *text;
	int rc;

	if (!c)
		return -ENOMEM;
	if (bc) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(bc,
								  "architecture");
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(bc, "os");

		arch = cJSON_IsString(a) ? a->valuestring : NULL;
		os = cJSON_IsString(s) ? s->valuestring : NULL;
	}
	cJSON_AddStringToObject(c, "architecture", arch ? arch : host_arch());
	cJSON_AddStringToObject(c, "os", os ? os : "linux");
	cfg = cJSON_AddObjectToObject(c, "config");
	labels = cfg ? cJSON_AddObjectToObject(cfg, "Labels") : NULL;
	rc = labels ? mcv_labels_add(labels, p->layout->labels, &p->entries,
				     cache_bytes)
		    : -ENOMEM;
	rootfs = cJSON_AddObjectToObject(c, "rootfs");
	if (rootfs)
		cJSON_AddStringToObject(rootfs, "type", "layers");
	ids = rootfs ? cJSON_AddArrayToObject(rootfs, "diff_ids") : NULL;
	for (size_t i = 0; ids && bc && i < p->base.nlayers; i++)
		cJSON_AddItemToArray(ids,
				     cJSON_CreateString(p->base.diff_id[i]));
	if (ids)
		cJSON_AddItemToArray(ids, cJSON_CreateString(diff_id));
	hist = cJSON_IsArray(bh) ? cJSON_Duplicate(bh, 1)
				 : cJSON_CreateArray();
	if (hist) {
		cJSON *h = cJSON_CreateObject();

		cJSON_AddStringToObject(h, "created_by", "tcfs pack");
		cJSON_AddItemToArray(hist, h);
		cJSON_AddItemToObject(c, "history", hist);
	}
	text = rc == 0 && ids && hist ? cJSON_PrintUnformatted(c) : NULL;
	cJSON_Delete(c);
	if (!text)
		return rc < 0 ? rc : -ENOMEM;
	rc = oci_out_put_buf(o, OCI_MT_CONFIG, text, strlen(text), d);
	free(text);
	return rc;
}

static int put_manifest(struct pack *p, struct oci_out *o,
			const struct oci_desc *config,
			const struct oci_desc *layer, struct oci_desc *d)
{
	cJSON *m = cJSON_CreateObject(), *layers;
	char *text;
	int rc = 0;

	if (!m)
		return -ENOMEM;
	cJSON_AddNumberToObject(m, "schemaVersion", 2);
	cJSON_AddStringToObject(m, "mediaType", OCI_MT_MANIFEST);
	cJSON_AddItemToObject(m, "config", oci_desc_json(config));
	layers = cJSON_AddArrayToObject(m, "layers");
	for (size_t i = 0; layers && p->has_base && i < p->base.nlayers; i++) {
		rc = oci_out_link_layer(o, &p->base, i);
		if (rc < 0)
			break;
		cJSON_AddItemToArray(layers, oci_desc_json(&p->base.layers[i]));
	}
	if (layers)
		cJSON_AddItemToArray(layers, oci_desc_json(layer));
	text = rc == 0 && layers ? cJSON_PrintUnformatted(m) : NULL;
	cJSON_Delete(m);
	if (!text)
		return rc < 0 ? rc : -ENOMEM;
	rc = oci_out_put_buf(o, OCI_MT_MANIFEST, text, strlen(text), d);
	free(text);
	return rc;
}

/* The manifest.json of the image: the base's kernels (a delta's image
 * holds them too) and the new layer's, each hash once. */
static int put_mcv_manifest(struct pack *p)
{
	struct mcv_entries all = { 0 };
	struct strset hashes = { NULL };
	char path[64], *text = NULL;
	size_t len = 0;
	int rc = 0;

	if (p->base_manifest &&
	    mcv_manifest_read(p->base_manifest, p->base_manifest_len,
			      &all) < 0)
		all.n = 0;	/* not MCV's: the delta's own entries only */
	for (size_t i = 0; rc == 0 && i < all.n; i++)
		rc = strset_add(&hashes, all.v[i].hash);
	for (size_t i = 0; rc >= 0 && i < p->entries.n; i++) {
		rc = strset_add(&hashes, p->entries.v[i].hash);
		if (rc == 1)
			rc = mcv_entries_add(&all, &p->entries.v[i]);
	}
	rc = rc < 0 ? rc : 0;
	strset_free(&hashes);
	free(p->entries.v);
	p->entries = all;
	if (rc == 0)
		rc = mcv_manifest_write(&all, p->layout->kind, &text, &len);
	if (rc == 0)
		rc = add_dirs(p, p->layout->manifest);
	snprintf(path, sizeof(path), "%s/manifest.json", p->layout->manifest);
	if (rc == 0)
		rc = layer_add_file(p->lw, path, 0644, text, len);
	free(text);
	return rc;
}

/* A store holding vLLM's tree (VLLM_CACHE_ROOT) ships as MCV ships one:
 * under io.vllm.cache/. */
static const struct mcv_layout *layout_of(struct tcfs_store *s)
{
	struct tcfs_node n;

	return tcfs_ns_lookup(s, TCFS_ROOT_INO, "torch_compile_cache", &n) == 0
		       ? &mcv_vllm
		       : &mcv_triton;
}

/* The summary names DEST as skopeo spells it, so that it can be pasted
 * into skopeo copy: its kind's prefix, its path and its tag. */
static int print_summary(const struct pack *p, const struct oci_ref *ref,
			 const char *tag, const struct oci_desc *m,
			 const struct oci_desc *layer, uint64_t bytes,
			 int json)
{
	char b1[16], b2[16];

	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "dest", ref->path);
		cJSON_AddStringToObject(o, "tag", tag);
		cJSON_AddStringToObject(o, "digest", m->digest);
		cJSON_AddStringToObject(o, "layer_digest", layer->digest);
		cJSON_AddNumberToObject(o, "layer_bytes", (double)layer->size);
		cJSON_AddNumberToObject(o, "kernels", (double)p->kernels);
		cJSON_AddNumberToObject(o, "files", (double)p->files);
		cJSON_AddNumberToObject(o, "links_left_out",
					(double)p->links_dropped);
		cJSON_AddNumberToObject(o, "bytes", (double)bytes);
		cJSON_AddNumberToObject(o, "manifest_entries",
					(double)p->entries.n);
		cJSON_AddNumberToObject(o, "base_layers",
					(double)(p->has_base ? p->base.nlayers
							     : 0));
		return cli_print_json(o);
	}
	printf("packed %llu %s, %llu %s, %s into %s%s:%s (layer %s)\n",
	       (unsigned long long)p->kernels, TCFS_NOUN(p->kernels, "kernel"),
	       (unsigned long long)p->files, TCFS_NOUN(p->files, "file"),
	       cli_human(bytes, b1, sizeof(b1)),
	       ref->kind == OCI_ARCHIVE ? "oci-archive:" : "oci:", ref->path,
	       tag,
	       cli_human(layer->size, b2, sizeof(b2)));
	if (p->links_dropped)
		printf("%llu %s left out (%s up or out of %s dir)\n",
		       (unsigned long long)p->links_dropped,
		       TCFS_NOUN(p->links_dropped, "symlink"),
		       tcfs_plural(p->links_dropped, "it points",
				   "they point"),
		       tcfs_plural(p->links_dropped, "its", "their"));
	if (p->has_base)
		printf("on top of %zu base layer%s\n", p->base.nlayers,
		       p->base.nlayers == 1 ? "" : "s");
	printf("digest %s\n", m->digest);
	return CLI_OK;
}

/* The cache bytes the base image's label says it holds: a delta's image
 * holds them too. */
static uint64_t base_bytes(const struct pack *p)
{
	char key[64];
	const cJSON *l;

	snprintf(key, sizeof(key), "%s/cache-size-bytes", p->layout->labels);
	l = p->has_base ? cJSON_GetObjectItemCaseSensitive(p->base.labels, key)
			: NULL;
	return cJSON_IsString(l) ? strtoull(l->valuestring, NULL, 10) : 0;
}

/* Writes the layer from the units, then the image around it. */
static int pack_image(struct pack *p, struct oci_out *o, struct oci_desc *m,
		      struct oci_desc *layer, uint64_t *bytes)
{
	struct tcfs_walk w = { p->s, p->filter, &tar_sink, p };
	char diff_id[OCI_DIGEST_LEN + 1], path[PATH_MAX];
	struct oci_desc config;
	int rc;

	rc = layer_writer_open(o->dir, &p->lw);
	if (rc < 0)
		return rc;
	rc = add_dirs(p, p->layout->cache);
	for (size_t i = 0; rc == 0 && i < p->nunits; i++) {
		const char *slash = strrchr(p->units[i].path, '/');

		if (slash) {
			char parent[PATH_MAX];

			snprintf(parent, sizeof(parent), "%s/%.*s", p->layout->cache,
				 (int)(slash - p->units[i].path),
				 p->units[i].path);
			rc = add_dirs(p, parent);
		}
		if (rc == 0)
			tcfs_walk(&w, &p->units[i].n, p->units[i].path);
	}
	progress_step(&p->prog, "writing the image");
	if (rc == 0 && p->failed)
		rc = tcfs_err_set(-EIO, "%llu %s could not be read",
				  (unsigned long long)p->failed,
				  tcfs_plural(p->failed, "entry", "entries"));
	*bytes = layer_bytes(p->lw);
	if (rc == 0)
		rc = put_mcv_manifest(p);
	if (rc < 0) {
		layer_writer_abort(p->lw);
		p->lw = NULL;
		return rc;
	}
	rc = layer_writer_close(p->lw, layer, diff_id, path);
	p->lw = NULL;
	if (rc == 0) {
		rc = oci_out_put_file(o, path, layer);
		if (rc < 0)
			unlink(path);
	}
	if (rc == 0)
		rc = put_config(p, o, diff_id, *bytes + base_bytes(p), &config);
	if (rc == 0)
		rc = put_manifest(p, o, &config, layer, m);
	if (rc == 0)
		rc = oci_out_commit(o, m);
	return rc;
}

/* Picks the units to pack: what f (when filtered) and since (when >= 0)
 * select, else the whole tree; less what base (when given) holds. */
static int select_units(struct pack *p, const struct tcfs_kernel_filter *f,
			int filtered, int64_t since, const char *base)
{
	int rc;

	/* Probes the mount holds count: --used-since reads the log. */
	cli_mount_sync(p->s, NULL);
	p->layout = layout_of(p->s);
	rc = base ? open_base(p, base, cli_tmp_dir()) : 0;
	if (rc == 0 && (filtered || since >= 0))
		rc = select_kernels(p, f, filtered, since);
	else if (rc == 0)
		rc = select_tree(p, TCFS_ROOT_INO, "", 0);
	if (rc == 0)
		rc = tidy_units(p);
	if (rc == 0 && !p->nunits && (filtered || since >= 0 || base))
		rc = tcfs_err_set(-ENOENT, "nothing to pack: %s",
				  base ? "the base holds every kernel selected"
				  : since >= 0 ? "no kernel was probed since "
						 "then"
					       : "no kernel matches");
	return rc;
}

/* Writes the image of the units picked to ref, and says so unless quiet. */
static int write_image(struct pack *p, const struct oci_ref *ref, int quiet,
		       int json)
{
	struct oci_desc m = { 0 }, layer = { 0 };
	struct oci_out o = { 0 };
	uint64_t bytes = 0;
	int rc;

	rc = oci_out_open(ref, cli_tmp_dir(), &o);
	if (rc == 0)
		rc = pack_image(p, &o, &m, &layer, &bytes);
	progress_end(&p->prog);
	if (rc == 0 && !quiet)
		rc = print_summary(p, ref, o.ref.tag, &m, &layer, bytes,
				   json) == CLI_OK ? 0 : -ENOMEM;
	oci_out_close(&o);
	return rc;
}

static void pack_free(struct pack *p)
{
	if (p->has_base)
		oci_image_close(&p->base);
	strset_free(&p->dirs);
	strset_free(&p->base_paths);
	free(p->base_manifest);
	free(p->entries.v);
	free(p->units);
	tcfs_store_close(p->s);
}

int cmd_pack(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_kernel_filter f = { 0 };
	struct pack p = { .user = -1 };
	struct oci_ref ref;
	const char *base = NULL;
	int64_t since = -1;
	int rc, quiet = 0, binary_only = 0, filtered;
	char **args;
	struct opt opts[] = {
		CLI_OPTS_FILTER(&f),
		OPT_FN(0, "used-since", "T", &since, cli_opt_time,
		       "exactly the kernels and modules probed (hit or "
		       "compiled) since T: a job's working set, from the probe "
		       "log; T as 2h, 7d, 2026-11-01, @EPOCH-SECONDS"),
		OPT_STRING(0, "base", "IMAGE", &base, "only what IMAGE lacks, as "
			   "a layer on top of IMAGE's layers (referenced, not "
			   "copied into the new layer); IMAGE as DEST, or a "
			   "docker-archive:FILE"),
		OPT_FLAG(0, "binary-only", &binary_only, "leave IR files out, "
			 "and out of the group files"),
		OPT_FN('u', "user", "USER", &p.user, cli_opt_user,
		       "on a cache many users share: that user's own kernels "
		       "too (by default only the shared ones)"),
		CLI_OPT_QUIET(&quiet),
		CLI_OPTS_COMMON(&co, "print the summary as JSON"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	if (oci_ref_parse(args[0], 1, &ref) < 0)
		return cli_usage_err("pack", "%s", tcfs_err_msg());
	if (cli_open_store("pack", &co.store, 0, 0, &p.s) != CLI_OK)
		return CLI_FAIL;
	progress_init(&p.prog, "packing", "files", quiet);
	p.filter = binary_only ? TCFS_GROUP_BINARY_ONLY : TCFS_GROUP_ALL;
	filtered = f.name || f.backend || f.arch;
	rc = select_units(&p, &f, filtered, since, base);
	if (rc == 0)
		rc = write_image(&p, &ref, quiet, co.json);
	if (rc < 0) {
		cli_lib_err("pack", rc, args[0]);
		cli_err("pack", "%s: no image written", args[0]);
	}
	pack_free(&p);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}
