/*
 * tcfs unpack: an OCI image's kernels added to the store: tcfs's own,
 * MCV's (io.triton.cache/ or io.vllm.cache/ in the layer), or a "compat"
 * image whose layer is a plain cache directory.
 *
 * Nothing of the image reaches the store before all of it has been read
 * and checked: every blob against its digest, every entry against the
 * rules of layer.c, into a staging directory.  Then it lands in one
 * transaction, or, while the store is mounted, through the mount as
 * Triton writes; either way a failure takes back all it added.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "import.h"
#include "index/base/text.h"
#include "index/store/config.h"
#include "index/base/err.h"
#include "index/model/group.h"
#include "index/base/io.h"
#include "index/model/kernel.h"
#include "index/base/name.h"
#include "index/store/store.h"
#include "oci/gpu.h"
#include "oci/land.h"
#include "oci/layer.h"
#include "oci/mcv.h"
#include "oci/oci.h"
#include "progress.h"

/* Unpacked bytes an image may expand to, by default: a hundred times
 * its compressed size (a cache compresses 3 to 10 times), at least 1 GiB.
 * A decompression bomb is refused when it reaches that, not when the
 * disk is full. */
#define EXPAND_RATIO 100
#define EXPAND_MIN (1ull << 30)

struct unpack {
	const char *src;	/* as given */
	struct oci_image img;
	char stage[PATH_MAX];	/* our temp dir */
	char cache[PATH_MAX];	/* the cache within it */
	char root[PATH_MAX];	/* what group files are to name: the mount
				 * point, or the staged cache */
	struct mcv_entries entries;	/* kernels found in the cache */
	uint64_t fit;		/* of those, kernels the GPUs here run */
	int binary_only;	/* group files to list no IR */
	int quiet;		/* -q: no notes (what was skipped), errors
				 * only */
	int rc;			/* the first error of a tree walk */
	struct progress prog;
	char step[64];		/* what prog counts while staging */
};

static const struct opt_cmd cmd = {
	"unpack", "SRC", 1, 1, "no image given",
	"Adds the kernels of an OCI image to the store.  SRC is an image\n"
	"layout DIR[:TAG], oci-archive:FILE[:TAG] or docker-archive:FILE\n"
	"(a bare FILE is either); pull one with skopeo first (skopeo copy\n"
	"docker://REGISTRY/NAME:TAG oci:DIR:TAG).  Images of tcfs pack and\n"
	"of Red Hat's MCV unpack, and so does a one-layer image holding a\n"
	"plain cache directory.  Every blob is checked against its digest\n"
	"and every entry before anything is added; a hostile image (paths\n"
	"leaving it, links that point up or out, whiteouts or blobs reached\n"
	"through links, group files naming other files than their key\n"
	"dir's, devices, duplicates, a corrupt stream, a decompression bomb)\n"
	"is refused and changes nothing.  The image's targets are checked\n"
	"against the GPUs here (nvidia-smi, rocminfo).  While the store is\n"
	"mounted the kernels land through the mount, in its views at once,\n"
	"never replacing what Triton's writers land meanwhile.  Each kernel\n"
	"lands whole; a failed unpack leaves the store as it was.  The store is\n"
	"created if missing.\n",
	NULL,
	"Exit status: 0 unpacked, 1 not (see the errors; the store is as it\n"
	"was), 2 usage error.\n",
};

/* How many bytes the image may unpack to. */
static uint64_t budget_of(const struct oci_image *img, int64_t max)
{
	uint64_t packed = 0;

	if (max > 0)
		return (uint64_t)max;
	for (size_t i = 0; i < img->nlayers; i++)
		packed += img->layers[i].size;
	return packed * EXPAND_RATIO > EXPAND_MIN ? packed * EXPAND_RATIO
						  : EXPAND_MIN;
}

/* The labels' targets against the GPUs here: refused when there are
 * GPUs and none of the targets is theirs (MCV's preflight). */
static int check_targets(const struct unpack *u, const struct mcv_targets *g)
{
	struct mcv_targets t = { 0 };
	char have[256];
	int rc = mcv_labels_targets(u->img.labels, &t), fits = 0;

	for (size_t i = 0; i < t.n; i++)
		for (size_t j = 0; j < g->n; j++)
			fits |= mcv_target_fits(&t.v[i], &g->v[j]);
	free(t.v);
	if (rc < 0 || !t.n || !g->n || fits)
		return rc;
	gpu_describe(g, have, sizeof(have));
	return tcfs_err_set(-ENOEXEC, "%s: no kernel of the image is for the "
			    "GPUs here (%s); --no-gpu-check unpacks anyway",
			    u->src, have);
}

/* Layer i checked and extracted from one descriptor, so that what is
 * extracted is what was checked. */
static int stage_layer(struct unpack *u, size_t i, const char *where,
		       uint64_t *budget)
{
	int fd = oci_image_open_layer(&u->img, i), rc;

	if (fd < 0)
		return tcfs_err_prefix(fd, "%s", u->src);
	rc = oci_image_check_layer(&u->img, i, fd, *budget);
	if (rc < 0)
		rc = tcfs_err_prefix(rc, "%s", u->src);
	if (rc == 0)
		rc = layer_extract(fd, where, u->stage, i > 0, budget,
				   &u->prog);
	close(fd);
	return rc;
}

/* Each layer, checked, into the staging dir. */
static int stage_layers(struct unpack *u, int64_t max)
{
	uint64_t budget = budget_of(&u->img, max);
	int rc = 0;

	if (!u->img.nlayers)
		return tcfs_err_set(-EBADMSG, "%s: an image with no layers",
				    u->src);
	for (size_t i = 0; rc == 0 && i < u->img.nlayers; i++) {
		char where[PATH_MAX + 96];

		snprintf(where, sizeof(where), "%s: layer %zu (%s)", u->src,
			 i + 1, u->img.layers[i].digest[0]
					? u->img.layers[i].digest
					: u->img.layer_path[i]);
		snprintf(u->step, sizeof(u->step), "entries of layer %zu/%zu",
			 i + 1, u->img.nlayers);
		progress_step(&u->prog, u->step);
		rc = stage_layer(u, i, where, &budget);
	}
	return rc;
}

static int is_dir(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Where the cache is in the staged layers: MCV's dirs, else (a compat
 * image) the layer root, less MCV's manifest dirs. */
static int find_cache(struct unpack *u, char *manifest, size_t len)
{
	static const struct mcv_layout *const layouts[] = {
		&mcv_triton, &mcv_vllm,
	};

	for (size_t i = 0; i < 2; i++) {
		if (cli_path_join(u->cache, sizeof(u->cache), u->stage,
				  layouts[i]->cache) < 0)
			return -ENAMETOOLONG;
		snprintf(manifest, len, "%s/%s/manifest.json", u->stage,
			 layouts[i]->manifest);
		if (is_dir(u->cache))
			return 0;
	}
	snprintf(u->cache, sizeof(u->cache), "%s", u->stage);
	for (size_t i = 0; i < 2; i++) {
		char path[PATH_MAX];

		if (cli_path_join(path, sizeof(path), u->stage,
				  layouts[i]->manifest) < 0)
			return -ENAMETOOLONG;
		if (access(path, F_OK) == 0)
			return cli_path_join(manifest, len, path,
					     "manifest.json");
	}
	manifest[0] = '\0';
	return 0;
}

/* MCV's manifest.json, when the image has one, must be what it says. */
static int check_manifest(const struct unpack *u, const char *path)
{
	struct mcv_entries v = { 0 };
	char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	if (!path[0] || access(path, F_OK) < 0)
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s: %s", u->src,
				      path + strlen(u->stage) + 1);
	rc = tcfs_io_read_small(fd, 64u << 20, &buf, &len);
	close(fd);
	if (rc == 0)
		rc = mcv_manifest_read(buf, len, &v);
	free(buf);
	free(v.v);
	if (rc < 0)
		return tcfs_err_set(-EBADMSG, "%s: %s is not MCV's manifest "
				    "(JSON of kernel entries)", u->src,
				    path + strlen(u->stage) + 1);
	return 0;
}

/* A staged group file (its bytes buf) made to name its children in the
 * destination, or refused. */
static int fix_group(struct unpack *u, const char *path,
		     const struct FTW *ftw, const char *buf, size_t len)
{
	const char *shown = path + strlen(u->stage) + 1;
	char *tmpl = NULL, *out = NULL, key[PATH_MAX], why[256];
	size_t tlen = 0, olen = 0;
	int fd, rc;

	/* key: the key dir's path below the cache; its last part the key. */
	snprintf(key, sizeof(key), "%.*s",
		 (int)(ftw->base - (int)strlen(u->cache) - 2),
		 path + strlen(u->cache) + 1);
	rc = tcfs_group_template_of(buf, len, strrchr(key, '/')
						      ? strrchr(key, '/') + 1
						      : key,
				    &tmpl, &tlen, why, sizeof(why));
	if (rc == 0)
		rc = tcfs_err_set(-EPERM, "%s: %s: %s; refused", u->src, shown,
				  why);
	if (rc == 1)
		rc = tcfs_group_render(tmpl, tlen, u->root, key,
				       u->binary_only ? TCFS_GROUP_BINARY_ONLY
						      : TCFS_GROUP_ALL,
				       &out, &olen);
	if (rc == 0) {
		fd = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? -errno : tcfs_io_write_all(fd, out, olen);
		if (fd >= 0)
			close(fd);
		if (rc < 0)
			rc = tcfs_err_errno(rc, "%s", path);
	}
	free(out);
	free(tmpl);
	return rc;
}

/* One staged file: a group file gets child paths into its destination
 * (MCV writes them relative), a kernel's metadata is counted.  A group
 * file naming anything but files of its own key dir is refused, as is
 * one that is a symlink (which the import would follow) or one outside
 * any key dir. */
static struct unpack *walking;

static int fix_file(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	struct unpack *u = walking;
	const char *name = path + ftw->base;
	const char *shown = path + strlen(u->stage) + 1;
	enum tcfs_artifact art;
	char *buf = NULL;
	size_t len = 0;
	int fd, rc = 0;

	if (flag != FTW_F && flag != FTW_SL)
		return 0;
	art = tcfs_name_artifact(name);
	if (art != TCFS_ART_GROUP && art != TCFS_ART_META)
		return 0;
	if (ftw->base <= (int)strlen(u->cache) + 1) {
		/* At the cache's root: no kernel's; Triton reads none there. */
		if (art == TCFS_ART_GROUP)
			u->rc = u->rc ? u->rc
				      : tcfs_err_set(-EPERM, "%s: %s: a group "
						     "file outside any key dir; "
						     "refused", u->src, shown);
		return 0;
	}
	if (art == TCFS_ART_GROUP &&
	    (!S_ISREG(st->st_mode) || (uint64_t)st->st_size > TCFS_GROUP_MAX))
		rc = tcfs_err_set(-EPERM, "%s: %s: a group file that is %s; "
				  "refused", u->src, shown,
				  S_ISREG(st->st_mode) ? "over 16 MiB"
						       : "a symlink");
	if (rc == 0 && !S_ISREG(st->st_mode))
		return 0;
	fd = rc ? -1 : open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (rc == 0 && (fd < 0 ||
			tcfs_io_read_small(fd, TCFS_GROUP_MAX, &buf, &len) < 0))
		rc = tcfs_err_errno(fd < 0 ? -errno : -EIO, "%s: %s", u->src,
				    shown);
	if (fd >= 0)
		close(fd);
	if (rc == 0 && art == TCFS_ART_META) {
		struct mcv_entry e;

		if (mcv_entry_of_meta(buf, len, &e))
			rc = mcv_entries_add(&u->entries, &e);
	} else if (rc == 0) {
		rc = fix_group(u, path, ftw, buf, len);
	}
	free(buf);
	u->rc = u->rc ? u->rc : rc;
	return 0;
}

static int fix_tree(struct unpack *u)
{
	walking = u;
	if (nftw(u->cache, fix_file, 16, FTW_PHYS) < 0 && !u->rc)
		u->rc = tcfs_err_errno(-errno, "%s", u->cache);
	walking = NULL;
	return u->rc;
}

/* Kernels of the cache whose target a GPU here runs. */
static void count_fit(struct unpack *u, const struct mcv_targets *g)
{
	for (size_t i = 0; i < u->entries.n; i++) {
		const struct mcv_entry *e = &u->entries.v[i];
		struct mcv_target k = { .warp_size = e->warp_size };

		snprintf(k.backend, sizeof(k.backend), "%s", e->backend);
		snprintf(k.arch, sizeof(k.arch), "%s", e->arch);
		for (size_t j = 0; j < g->n; j++)
			if (mcv_target_fits(&k, &g->v[j])) {
				u->fit++;
				break;
			}
	}
}

/* The store's directory as commands find it, absolute when it exists. */
static int store_dir(const struct cli_store_opts *o, char *dir)
{
	char given[PATH_MAX];
	int rc = cli_store_dir(o, given);

	if (rc == 0 && !realpath(given, dir))
		snprintf(dir, PATH_MAX, "%s", given);
	return rc;
}

/* What landed (st), and how the image's targets fit the ng GPUs here
 * (gpus) unless !gpu_check. */
static int print_summary(const struct unpack *u, const char *store,
			 const char *mount, const struct land_stats *st,
			 size_t ng, const char *gpus, int gpu_check, int json)
{
	char b[16];

	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "source", u->src);
		cJSON_AddStringToObject(o, "digest", u->img.digest);
		cJSON_AddStringToObject(o, "store", store);
		cJSON_AddStringToObject(o, "mount", mount);
		cJSON_AddNumberToObject(o, "kernels", (double)st->kernels);
		cJSON_AddNumberToObject(o, "kept_kernels",
					(double)st->kept_kernels);
		cJSON_AddNumberToObject(o, "files", (double)st->files);
		cJSON_AddNumberToObject(o, "kept", (double)st->kept);
		cJSON_AddNumberToObject(o, "bytes", (double)st->bytes);
		cJSON_AddNumberToObject(o, "image_kernels",
					(double)u->entries.n);
		if (ng)
			cJSON_AddNumberToObject(o, "fit", (double)u->fit);
		else
			cJSON_AddNullToObject(o, "fit");
		cJSON_AddStringToObject(o, "gpus", gpus);
		return cli_print_json(o);
	}
	/* A repeated unpack lands nothing: "0 kernels" alone would read
	 * as an image without any. */
	if (st->kept_kernels)
		printf("unpacked %llu new %s (%llu already in the store), ",
		       (unsigned long long)st->kernels,
		       TCFS_NOUN(st->kernels, "kernel"),
		       (unsigned long long)st->kept_kernels);
	else
		printf("unpacked %llu %s, ", (unsigned long long)st->kernels,
		       TCFS_NOUN(st->kernels, "kernel"));
	printf("%llu %s, %s from %s into %s%s\n",
	       (unsigned long long)st->files, TCFS_NOUN(st->files, "file"),
	       cli_human(st->bytes, b, sizeof(b)), u->src,
	       mount[0] ? mount : store, mount[0] ? " (mounted)" : "");
	if (st->kept)
		printf("%llu %s there already and %s kept\n",
		       (unsigned long long)st->kept,
		       tcfs_plural(st->kept, "file was", "files were"),
		       tcfs_plural(st->kept, "was", "were"));
	if (ng)
		printf("%llu of the image's %zu %s the GPUs here: %s\n",
		       (unsigned long long)u->fit, u->entries.n,
		       tcfs_plural(u->entries.n, "kernel fits", "kernels fit"),
		       gpus);
	else if (gpu_check)	/* else not asked for */
		printf("no GPU found here (nvidia-smi, rocminfo): targets not "
		       "checked\n");
	return CLI_OK;
}

/* Lands the staged cache: through the mount, or into the store as one
 * transaction. */
static int land(struct unpack *u, struct cli_common *co, const char *mount,
		struct land_stats *st)
{
	/* Not quiet unless told: a file the import skips (a link leading
	 * out) is said. */
	struct import_opts o = { .cmd = "unpack", .quiet = u->quiet,
				 .progress = &u->prog, .tree = 1, .atomic = 1,
				 .binary_only = u->binary_only };
	struct tcfs_store *s;
	struct import im;
	int rc;

	if (mount[0]) {
		rc = land_tree(u->cache, mount, u->binary_only, st, &u->prog);
		progress_end(&u->prog);
		return rc;
	}
	if (cli_open_store("unpack", &co->store, 1, 1, &s) != CLI_OK)
		return -EIO;
	rc = import_begin(&im, s, &o);
	if (rc == 0)
		rc = import_source(&im, u->cache);
	rc = import_end(&im, rc);
	st->kernels = im.st.new_kernels;
	st->kept_kernels = im.st.kept_kernels;
	st->files = im.st.new_files;
	st->kept = im.st.files - im.st.new_files + im.st.conflicts;
	st->bytes = im.st.new_bytes;	/* as land_tree counts them */
	tcfs_store_close(s);
	if (rc < 0 && !tcfs_err_msg()[0])
		rc = tcfs_err_set(rc, "%s: not unpacked; the store is as it "
				  "was", u->src);
	return rc;
}

/* --max-size SIZE: a size above 0 into an int64_t. */
static const char *max_size_opt(void *value, const char *arg)
{
	static const struct tcfs_config_key size_key = {
		"max-size", TCFS_CONFIG_BYTES, 0, 1, INT64_MAX, "",
	};
	int64_t *max = value;

	if (tcfs_config_parse(&size_key, arg, max) < 0 || *max <= 0) {
		tcfs_err_clear();
		return "not a size";
	}
	return NULL;
}

/* The GPUs here, in words. */
#define GPUS_LEN 256

/* Where the kernels go: the store (into store) and its mount, if any
 * (into mount, else ""); the GPUs here (g, and gpus in words); a new
 * stage dir (u->stage, "" when none was made). */
static int setup(struct unpack *u, const struct cli_store_opts *so,
		 char *store, char *mount, struct mcv_targets *g, char *gpus)
{
	char mstore[PATH_MAX];
	int rc;

	tcfs_err_clear();
	rc = store_dir(so, store);
	if (rc == 0 && cli_find_mount(store, NULL, mstore, mount) < 0)
		mount[0] = '\0';
	if (rc == 0)
		rc = gpu_detect(g);
	gpu_describe(g, gpus, GPUS_LEN);
	snprintf(u->stage, sizeof(u->stage), "%s/tcfs-unpack.XXXXXX",
		 cli_tmp_dir());
	if (rc == 0 && !mkdtemp(u->stage)) {
		rc = tcfs_err_errno(-errno, "%s", u->stage);
		u->stage[0] = '\0';
	}
	return rc;
}

/* Opens the image, checks it (against the GPUs g unless !gpu_check) and
 * stages its cache, ready to land at mount (when mounted) or the store. */
static int stage_image(struct unpack *u, const struct oci_ref *ref,
		       const struct mcv_targets *g, const char *gpus,
		       const char *mount, int64_t max, int gpu_check)
{
	char manifest[PATH_MAX];
	int rc;

	progress_step(&u->prog, "reading the image");
	rc = oci_image_open(ref, cli_tmp_dir(), max > 0 ? (uint64_t)max : 0,
			    &u->img);
	if (rc == 0 && gpu_check)
		rc = check_targets(u, g);
	if (rc == 0)
		rc = stage_layers(u, max);
	if (rc == 0)
		rc = find_cache(u, manifest, sizeof(manifest));
	if (rc == 0)
		rc = check_manifest(u, manifest);
	if (rc < 0)
		return rc;
	/* MCV's manifest stays out of the cache (a compat image has none
	 * at its root). */
	if (!strcmp(u->cache, u->stage) && manifest[0]) {
		*strrchr(manifest, '/') = '\0';
		oci_rm_tree(manifest);
	}
	snprintf(u->root, sizeof(u->root), "%s", mount[0] ? mount : u->cache);
	rc = fix_tree(u);
	if (rc == 0)
		count_fit(u, g);
	if (rc == 0 && gpu_check && g->n && u->entries.n && !u->fit)
		rc = tcfs_err_set(-ENOEXEC, "%s: none of its %zu kernels is "
				  "for the GPUs here (%s); --no-gpu-check "
				  "unpacks anyway", u->src, u->entries.n, gpus);
	return rc;
}

/* Lands the staged kernels and says what landed (unless quiet). */
static int finish(struct unpack *u, struct cli_common *co, const char *store,
		  const char *mount, const struct mcv_targets *g,
		  const char *gpus, int gpu_check)
{
	struct land_stats st = { 0 };
	int rc = land(u, co, mount, &st);

	if (rc == 0 && !u->quiet)
		print_summary(u, store, mount, &st, g->n, gpus, gpu_check,
			      co->json);
	return rc;
}

int cmd_unpack(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct unpack u = { 0 };
	struct mcv_targets g = { 0 };
	struct oci_ref ref;
	char store[PATH_MAX], mount[PATH_MAX] = "", gpus[GPUS_LEN] = "";
	int64_t max = 0;
	int rc, no_gpu_check = 0;
	char **args;
	struct opt opts[] = {
		OPT_FLAG(0, "no-gpu-check", &no_gpu_check, "unpack even when no "
			 "kernel fits the GPUs"),
		OPT_FN(0, "max-size", "SIZE", &max, max_size_opt, "refuse an "
		       "image that unpacks to more than SIZE (512M, 20G; "
		       "default 100 times its compressed size, at least 1G)"),
		OPT_FLAG(0, "binary-only", &u.binary_only, "leave IR files out, "
			 "and out of group files"),
		CLI_OPT_QUIET(&u.quiet),
		CLI_OPT_WAIT(&co),
		CLI_OPTS_COMMON(&co, "print the summary as JSON"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	u.src = args[0];
	progress_init(&u.prog, "unpacking", "", u.quiet);
	if (oci_ref_parse(u.src, 0, &ref) < 0)
		return cli_usage_err("unpack", "%s", tcfs_err_msg());
	rc = setup(&u, &co.store, store, mount, &g, gpus);
	co.store.dir = store;	/* found once, and said once */
	if (rc == 0)
		rc = stage_image(&u, &ref, &g, gpus, mount, max, !no_gpu_check);
	if (rc == 0)
		rc = finish(&u, &co, store, mount, &g, gpus, !no_gpu_check);
	progress_end(&u.prog);
	if (rc < 0) {
		cli_lib_err("unpack", rc, u.src);
		cli_err("unpack", "%s: nothing unpacked; the store is as it "
			"was", u.src);
	}
	oci_image_close(&u.img);
	oci_rm_tree(u.stage);
	free(u.entries.v);
	free(g.v);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}
