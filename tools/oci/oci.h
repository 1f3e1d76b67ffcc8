/*
 * oci: OCI images on disk: image layouts (a directory), oci-archive (a
 * layout in a tar) and docker-archive (docker save), read and written.
 * Pushing and pulling stay with skopeo; this is what it copies from and to.
 *
 * Every blob read is checked against its digest before anything in it is
 * used, and every name in an archive before anything is written.
 */
#ifndef TCFS_TOOLS_OCI_H
#define TCFS_TOOLS_OCI_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_CONFIG "application/vnd.oci.image.config.v1+json"
#define OCI_MT_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define DOCKER_MT_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define OCI_REF_NAME "org.opencontainers.image.ref.name"

/* "sha256:" and 64 hex digits. */
#define OCI_DIGEST_LEN 71

enum oci_kind {
	OCI_LAYOUT,		/* DIR[:TAG] or oci:DIR[:TAG] */
	OCI_ARCHIVE,		/* oci-archive:FILE[:TAG] */
	DOCKER_ARCHIVE,		/* docker-archive:FILE (read only) */
};

struct oci_ref {
	enum oci_kind kind;
	char path[PATH_MAX];
	char tag[128];		/* "" : the only image there (read), or
				 * "latest" (write) */
};

/* Parses an image reference as skopeo spells them, a bare DIR[:TAG]
 * being a layout, for an image to write (write) or to read.  -EINVAL
 * (with a message) when it is none: a registry's says which skopeo copy
 * to run, in the direction that write says. */
int oci_ref_parse(const char *arg, int write, struct oci_ref *r);

struct oci_desc {
	char media_type[128];
	char digest[OCI_DIGEST_LEN + 1];
	uint64_t size;
};

/* SHA-256 of a buffer as "sha256:HEX" (OCI_DIGEST_LEN + 1 bytes). */
void oci_sha256_buf(const void *buf, size_t len, char *digest);

/* Incremental SHA-256 for a stream being written. */
struct oci_sha256;
struct oci_sha256 *oci_sha256_new(void);
void oci_sha256_add(struct oci_sha256 *h, const void *buf, size_t len);
/* Writes the digest and frees h. */
void oci_sha256_done(struct oci_sha256 *h, char *digest);

/* An image opened for reading. */
struct oci_image {
	char dir[PATH_MAX];	/* the layout (or the archive extracted) */
	int dirfd;		/* dir's; every file is opened beneath it */
	char tmp[PATH_MAX];	/* a temp dir of ours to remove, or "" */
	int docker;		/* a docker-archive: layers are files */
	char digest[OCI_DIGEST_LEN + 1];	/* the manifest's */
	cJSON *config;		/* the image config */
	const cJSON *labels;	/* its config.Labels, or NULL */
	size_t nlayers;
	struct oci_desc *layers;
	char (*layer_path)[PATH_MAX];	/* each layer's file */
	char (*diff_id)[OCI_DIGEST_LEN + 1];	/* "" where unknown */
};

/* Opens the image r names; archives are extracted below tmpdir first
 * (at most max bytes).  The manifest and config are read and checked
 * against their digests here; layers by oci_image_check_layer.  max 0:
 * an archive may expand to 100 times its size, 1 GiB at least.  On error
 * a message names the file and the cause.  oci_image_close always. */
int oci_image_open(const struct oci_ref *r, const char *tmpdir, uint64_t max,
		   struct oci_image *img);
void oci_image_close(struct oci_image *img);
/* Opens layer i's file (layer_path[i]) beneath the image's dir: never
 * through a symlink in a layout, only through links that stay inside in
 * a docker-archive, and only a regular file.  The descriptor (the
 * caller's to close), or -errno with a message. */
int oci_image_open_layer(const struct oci_image *img, size_t i);
/* Checks fd, layer i's file open, against its digest and size, reading
 * no more than the size its descriptor gives (and, for a docker-archive,
 * its uncompressed bytes against the config's diff_id, at most max of
 * them).  fd is left at its start, so what is then read of it is what
 * was checked.  0, or -errno with a message. */
int oci_image_check_layer(const struct oci_image *img, size_t i, int fd,
			  uint64_t max);

/* An image layout being written. */
struct oci_out {
	struct oci_ref ref;
	char dir[PATH_MAX];	/* the layout: ref.path, or a temp dir for
				 * an oci-archive */
};

/* Opens (creating if need be) the layout to write r to. */
int oci_out_open(const struct oci_ref *r, const char *tmpdir,
		 struct oci_out *o);
/* Stores bytes as a blob; fills d (media type mt). */
int oci_out_put_buf(struct oci_out *o, const char *mt, const void *buf,
		    size_t len, struct oci_desc *d);
/* Moves a finished file in as blob d->digest (a rename: same fs). */
int oci_out_put_file(struct oci_out *o, const char *path,
		     const struct oci_desc *d);
/* Makes layer i of img a blob here, unless it is there already: a copy
 * made from one descriptor and checked against the layer's digest as it
 * is copied, never a link or a second open by path, which another user
 * who can write img's dir could have swapped after the layer's check.
 * 0, or -errno with a message. */
int oci_out_link_layer(struct oci_out *o, const struct oci_image *img,
		       size_t i);
/* Tags manifest m in index.json (replacing that tag), then, for an
 * oci-archive, writes the archive.  Frees nothing; oci_out_close does. */
int oci_out_commit(struct oci_out *o, const struct oci_desc *m);
/* Removes the temp layout of an oci-archive. */
void oci_out_close(struct oci_out *o);

/* A descriptor as JSON: {"mediaType", "digest", "size"}. */
cJSON *oci_desc_json(const struct oci_desc *d);

/* Removes a tree we made (a temp dir); errors are ignored. */
void oci_rm_tree(const char *path);

#endif
