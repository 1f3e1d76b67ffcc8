/*
 * oci: image layouts, oci-archive and docker-archive on disk (oci.h).
 */
#include <archive.h>
#include <archive_entry.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/base/io.h"
#include "oci.h"
#include "untar.h"

/* A path made of a layout's dir (below PATH_MAX) and a name in it. */
#define OCI_PATH (2 * PATH_MAX + 16)

/* Manifests, configs and index.json are a few KiB; anything this big is
 * not one. */
#define OCI_JSON_MAX (4u << 20)
/* Entries of an oci-archive or docker-archive: a few per layer. */
#define OCI_ARCHIVE_ENTRIES_MAX 100000

/* ---- references ---- */

/* Splits a trailing ":TAG" off path when what follows the colon could be
 * a tag (no '/'), as skopeo does. */
static int split_tag(const char *s, struct oci_ref *r)
{
	const char *colon = strrchr(s, ':');

	if (colon && !strchr(colon, '/') && colon[1]) {
		if ((size_t)(colon - s) >= sizeof(r->path) ||
		    strlen(colon + 1) >= sizeof(r->tag))
			return -ENAMETOOLONG;
		memcpy(r->path, s, (size_t)(colon - s));
		r->path[colon - s] = '\0';
		snprintf(r->tag, sizeof(r->tag), "%s", colon + 1);
	} else if (strlen(s) < sizeof(r->path)) {
		snprintf(r->path, sizeof(r->path), "%s", s);
		r->tag[0] = '\0';
	} else {
		return -ENAMETOOLONG;
	}
	return r->path[0] ? 0 : -EINVAL;
}

/* A registry's reference (docker://...) refused, with the skopeo copy
 * that does what was asked: pull it first to read, or push after
 * writing; either way through an image of ours on disk. */
static int refuse_registry(const char *arg, int write)
{
	if (write)
		return tcfs_err_set(-EINVAL, "%s: a registry, which tcfs does "
				    "not write; pack to oci:DIR:TAG (or "
				    "oci-archive:FILE:TAG), then push it with "
				    "skopeo copy oci:DIR:TAG %s", arg, arg);
	return tcfs_err_set(-EINVAL, "%s: a registry; copy the image with "
			    "skopeo first (skopeo copy %s oci:DIR:TAG), then "
			    "give oci:DIR:TAG", arg, arg);
}

int oci_ref_parse(const char *arg, int write, struct oci_ref *r)
{
	static const struct {
		const char *prefix;
		enum oci_kind kind;
	} kinds[] = {
		{ "oci:", OCI_LAYOUT },
		{ "oci-archive:", OCI_ARCHIVE },
		{ "docker-archive:", DOCKER_ARCHIVE },
	};
	const char *rest = arg;
	int rc;

	memset(r, 0, sizeof(*r));
	r->kind = OCI_LAYOUT;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].prefix);

		if (strncmp(arg, kinds[i].prefix, n) == 0) {
			r->kind = kinds[i].kind;
			rest = arg + n;
		}
	}
	if (rest == arg && strchr(arg, ':') && strstr(arg, "://"))
		return refuse_registry(arg, write);
	rc = split_tag(rest, r);
	if (rc < 0)
		return tcfs_err_set(-EINVAL, "%s: not an image reference",
				    arg);
	return 0;
}

/* ---- digests ---- */

struct oci_sha256 {
	EVP_MD_CTX *ctx;
};

static void hex_digest(const unsigned char *md, char *digest)
{
	static const char hex[] = "0123456789abcdef";

	memcpy(digest, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		digest[7 + 2 * i] = hex[md[i] >> 4];
		digest[8 + 2 * i] = hex[md[i] & 15];
	}
	digest[OCI_DIGEST_LEN] = '\0';
}

struct oci_sha256 *oci_sha256_new(void)
{
	struct oci_sha256 *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || !EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(h->ctx);
		free(h);
		return NULL;
	}
	return h;
}

void oci_sha256_add(struct oci_sha256 *h, const void *buf, size_t len)
{
	EVP_DigestUpdate(h->ctx, buf, len);
}

void oci_sha256_done(struct oci_sha256 *h, char *digest)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_DigestFinal_ex(h->ctx, md, &n);
	assert(n == 32);
	hex_digest(md, digest);
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

void oci_sha256_buf(const void *buf, size_t len, char *digest)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_Digest(buf, len, md, &n, EVP_sha256(), NULL);
	hex_digest(md, digest);
}

/* SHA-256 of fd's bytes from its start (shown names it in messages), or
 * with decompress of the bytes libarchive's filters (gzip, zstd, ...)
 * make of them: -EFBIG past max of them, so that no file, however it
 * grows, is read for longer than its descriptor allows.  fd is left at
 * its start again. */
static int sha256_fd(int fd, const char *shown, int decompress, uint64_t max,
		     char *digest, uint64_t *size)
{
	struct oci_sha256 *h = oci_sha256_new();
	struct archive *a = NULL;
	struct archive_entry *e;
	char buf[1 << 16];
	uint64_t total = 0;
	int rc = 0;
	ssize_t n;

	if (!h)
		return -ENOMEM;
	if (lseek(fd, 0, SEEK_SET) < 0)
		rc = tcfs_err_errno(-errno, "%s", shown);
	if (rc == 0 && decompress) {
		a = archive_read_new();
		if (!a || archive_read_support_filter_all(a) != ARCHIVE_OK ||
		    archive_read_support_format_raw(a) != ARCHIVE_OK ||
		    archive_read_open_fd(a, fd, sizeof(buf)) != ARCHIVE_OK ||
		    archive_read_next_header(a, &e) != ARCHIVE_OK)
			rc = tcfs_err_set(-EBADMSG, "%s: %s", shown,
					  a ? archive_error_string(a)
					    : "out of memory");
	}
	while (rc == 0) {
		n = a ? archive_read_data(a, buf, sizeof(buf))
		      : read(fd, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0 && !a && errno == EINTR)
			continue;
		if (n < 0) {
			rc = a ? tcfs_err_set(-EBADMSG, "%s: %s", shown,
					      archive_error_string(a))
			       : tcfs_err_errno(-errno, "%s", shown);
			break;
		}
		total += (uint64_t)n;
		if (total > max) {
			rc = tcfs_err_set(-EFBIG, "%s: over %llu bytes, more "
					  "than the image says it holds",
					  shown, (unsigned long long)max);
			break;
		}
		oci_sha256_add(h, buf, (size_t)n);
	}
	if (a)
		archive_read_free(a);
	if (lseek(fd, 0, SEEK_SET) < 0 && rc == 0)
		rc = tcfs_err_errno(-errno, "%s", shown);
	oci_sha256_done(h, digest);
	if (size)
		*size = total;
	return rc;
}

/* "sha256:" and 64 lowercase hex digits: the only digests read, as
 * they name files. */
static int digest_ok(const char *d)
{
	if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != OCI_DIGEST_LEN)
		return 0;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

/* ---- small files ---- */

/* Opens rel, a regular file below dirfd, never leaving dirfd's tree;
 * with no_links never through a symlink: an image layout has none, and
 * a hostile one would point one at /dev/zero or a host file.  (docker
 * save links the layers it shares, so a docker-archive may follow links
 * that stay inside.)  shown names it in messages. */
static int open_in(int dirfd, int no_links, const char *rel, const char *shown)
{
	struct stat st;
	/* O_NONBLOCK: a fifo planted there would block the open itself,
	 * before its type is checked. */
	int fd = tcfs_io_open_beneath(dirfd, rel,
				      O_RDONLY | O_NOCTTY | O_NONBLOCK,
				      no_links);

	if (fd == -ELOOP || fd == -EXDEV)
		return tcfs_err_set(-EPERM, "%s: a symlink%s; refused", shown,
				    no_links ? "" : " leading out of the "
						    "archive");
	if (fd < 0)
		return tcfs_err_errno(fd, "%s", shown);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return tcfs_err_set(-EPERM, "%s: not a regular file; refused",
				    shown);
	}
	return fd;
}

/* A JSON file rel below dirfd (opened as open_in does), at most
 * OCI_JSON_MAX bytes; its bytes must hash to want (a digest, and as many
 * bytes as want_size) unless want is NULL.  Read once: what is checked
 * is what is parsed. */
static int read_json(int dirfd, int no_links, const char *rel,
		     const char *path, const char *want, uint64_t want_size,
		     cJSON **out)
{
	int fd = open_in(dirfd, no_links, rel, path);
	char *buf = NULL, got[OCI_DIGEST_LEN + 1];
	size_t len = 0;
	int rc;

	*out = NULL;
	if (fd < 0)
		return fd;
	rc = tcfs_io_read_small(fd, OCI_JSON_MAX, &buf, &len);
	close(fd);
	if (rc == -EFBIG)
		rc = tcfs_err_set(-EFBIG, "%s: over %u bytes; not an image's",
				  path, OCI_JSON_MAX);
	else if (rc < 0)
		rc = tcfs_err_errno(rc, "%s", path);
	if (rc == 0 && want) {
		oci_sha256_buf(buf, len, got);
		if (strcmp(got, want) != 0 || len != want_size)
			rc = tcfs_err_set(-EBADMSG, "%s: its bytes do not "
					  "match its digest (%s, %llu bytes)",
					  path, want,
					  (unsigned long long)want_size);
	}
	if (rc == 0 && !(*out = cJSON_ParseWithLength(buf, len)))
		rc = tcfs_err_set(-EBADMSG, "%s: not JSON", path);
	free(buf);
	return rc;
}

/* The part of path (img->dir/REL) below the image's dir. */
static const char *rel_of(const struct oci_image *img, const char *path)
{
	size_t n = strlen(img->dir);

	assert(strncmp(path, img->dir, n) == 0 && path[n] == '/');
	return path + n + 1;
}

/* A JSON file of the image at path, below img->dir. */
static int read_json_file(const struct oci_image *img, const char *path,
			  cJSON **out)
{
	return read_json(img->dirfd, !img->docker, rel_of(img, path), path,
			 NULL, 0, out);
}

/* Writes bytes to dir/name atomically (a temp file renamed). */
static int write_file_at(const char *dir, const char *name, const void *buf,
			 size_t len)
{
	char path[OCI_PATH], tmp[OCI_PATH];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", dir, name,
		 (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0644);
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s", tmp);
	rc = tcfs_io_write_all(fd, buf, len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		return tcfs_err_errno(rc, "%s", path);
	}
	return 0;
}

void oci_rm_tree(const char *path)
{
	if (path && path[0])
		tcfs_io_rm_tree_at(AT_FDCWD, path);
}

/* ---- archives holding a layout (oci-archive) or docker save ---- */

/* Whether a symlink at path (relative, canonical) to target stays in
 * the tree it is in by its text: a relative target, never more ".." than
 * the dirs above the link.  (Through other links it may still lead out:
 * files of the tree are opened with open_in, which never leaves it.) */
static int oci_link_stays(const char *path, const char *target)
{
	int depth = 0;

	if (!target[0] || target[0] == '/')
		return 0;
	for (const char *p = path; (p = strchr(p, '/')) != NULL; p++)
		depth++;
	for (const char *c = target; *c;) {
		const char *end = strchrnul(c, '/');
		size_t n = (size_t)(end - c);

		if (n == 2 && c[0] == '.' && c[1] == '.')
			depth--;
		else if (n && !(n == 1 && c[0] == '.'))
			depth++;
		if (depth < 0)
			return 0;
		c = *end ? end + 1 : end;
	}
	return 1;
}


/* A name in an outer archive: relative, no "..", no empty component,
 * at most UNTAR_DEPTH_MAX of them; "./" prefixes dropped.  NULL when
 * unsafe. */
static const char *safe_name(const char *name)
{
	int depth = 0;

	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (!name[0] || name[0] == '/')
		return NULL;
	for (const char *p = name; *p;) {
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);

		if ((n == 2 && !memcmp(p, "..", 2)) || n > 255 ||
		    (n == 0 && *end) || ++depth > UNTAR_DEPTH_MAX)
			return NULL;
		p = *end ? end + 1 : end;
	}
	return name;
}

struct flat {
	const char *file;
	size_t count;
};

/* An entry of an image archive: a file, a dir, or a link that stays in
 * it, under a safe name, owned by us and private. */
static int vet_flat(void *ctx, struct archive_entry *e)
{
	struct flat *f = ctx;
	const char *name = safe_name(archive_entry_pathname(e));
	const char *target = archive_entry_symlink(e);
	mode_t type = archive_entry_filetype(e);

	if (!name)
		return tcfs_err_set(-EPERM, "%s: entry '%s' leaves the "
				    "archive", f->file,
				    archive_entry_pathname(e));
	if (type == AE_IFLNK && !oci_link_stays(name, target ? target : ""))
		return tcfs_err_set(-EPERM, "%s: symlink '%s' leads out of the "
				    "archive", f->file, name);
	if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
		return tcfs_err_set(-EPERM, "%s: entry '%s' is not a file, "
				    "directory or link", f->file, name);
	if (archive_entry_hardlink(e))
		return tcfs_err_set(-EPERM, "%s: entry '%s' is a hard link",
				    f->file, name);
	if (++f->count > OCI_ARCHIVE_ENTRIES_MAX)
		return tcfs_err_set(-EFBIG, "%s: over %u entries", f->file,
				    OCI_ARCHIVE_ENTRIES_MAX);
	archive_entry_set_pathname(e, name);
	if (type != AE_IFLNK)
		archive_entry_set_perm(e, type == AE_IFDIR ? 0700 : 0600);
	archive_entry_set_uid(e, getuid());
	archive_entry_set_gid(e, getgid());
	return 0;
}

/* Extracts an image archive into dir (made by us, empty). */
static int untar_flat(const char *file, const char *dir, uint64_t max)
{
	struct flat f = { file, 0 };
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct untar u = { fd, file, dir, &max, 0, vet_flat, &f };
	int rc;

	if (fd < 0)
		return tcfs_err_errno(-errno, "%s", file);
	rc = untar_run(&u);
	close(fd);
	return rc;
}

/* ---- reading an image ---- */

static const char *jstr(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A descriptor from JSON; -EBADMSG with a message naming where. */
static int desc_from(const cJSON *j, const char *where, struct oci_desc *d)
{
	const char *mt = jstr(j, "mediaType"), *dg = jstr(j, "digest");
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(j, "size");

	if (!dg || !cJSON_IsNumber(size) || size->valuedouble < 0)
		return tcfs_err_set(-EBADMSG, "%s: a descriptor without "
				    "digest or size", where);
	if (!digest_ok(dg))
		return tcfs_err_set(-EBADMSG, "%s: digest '%s' is not "
				    "sha256:HEX", where, dg);
	snprintf(d->media_type, sizeof(d->media_type), "%s", mt ? mt : "");
	snprintf(d->digest, sizeof(d->digest), "%s", dg);
	d->size = (uint64_t)size->valuedouble;
	return 0;
}

/* dir/blobs/sha256/HEX; a path too long to hold is left empty, which no
 * open finds. */
static void blob_path(const char *dir, const char *digest, char *path,
		      size_t len)
{
	if ((size_t)snprintf(path, len, "%s/blobs/sha256/%s", dir,
			     digest + 7) >= len)
		path[0] = '\0';
}

/* Reads a JSON blob of the layout, checked against d. */
static int read_json_blob(const struct oci_image *img,
			  const struct oci_desc *d, cJSON **out)
{
	char path[OCI_PATH];

	*out = NULL;
	blob_path(img->dir, d->digest, path, sizeof(path));
	if (d->size > OCI_JSON_MAX)
		return tcfs_err_set(-EFBIG, "%s: over %u bytes; not an "
				    "image's", path, OCI_JSON_MAX);
	if (!path[0])
		return tcfs_err_set(-ENAMETOOLONG, "%s: path too long",
				    img->dir);
	return read_json(img->dirfd, 1, rel_of(img, path), path, d->digest,
			 d->size, out);
}

/* The manifest tag names in index, for a message. */
static void list_tags(const cJSON *mans, char *buf, size_t len)
{
	const cJSON *m;

	buf[0] = '\0';
	cJSON_ArrayForEach(m, mans) {
		const char *t = jstr(cJSON_GetObjectItemCaseSensitive(
					     m, "annotations"),
				     OCI_REF_NAME);
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
			 t ? t : "(untagged)");
	}
}

/* Picks the manifest of an index: the one tagged tag, or without a tag
 * the only one, the one for linux/amd64 of a multi-platform index, or
 * the one tagged latest. */
static int pick(const cJSON *index, const char *where, const char *tag,
		struct oci_desc *d)
{
	const cJSON *mans = cJSON_GetObjectItemCaseSensitive(index, "manifests");
	const cJSON *m, *found = NULL;
	char tags[512];
	int n = cJSON_GetArraySize(mans);

	if (!cJSON_IsArray(mans) || n == 0)
		return tcfs_err_set(-EBADMSG, "%s: no manifests", where);
	cJSON_ArrayForEach(m, mans) {
		const char *t = jstr(cJSON_GetObjectItemCaseSensitive(
					     m, "annotations"),
				     OCI_REF_NAME);
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "platform");
		const char *os = jstr(p, "os"), *arch = jstr(p, "architecture");

		if (tag[0] && t && strcmp(t, tag) == 0)
			found = m;
		if (!tag[0] && !found && os && arch &&
		    !strcmp(os, "linux") && !strcmp(arch, "amd64"))
			found = m;
		if (!tag[0] && !found && t && !strcmp(t, "latest"))
			found = m;
	}
	if (!found && !tag[0] && n == 1)
		found = mans->child;
	if (!found) {
		list_tags(mans, tags, sizeof(tags));
		if (tag[0])
			return tcfs_err_set(-ENOENT, "%s: no image tagged "
					    "'%s' (there: %s)", where, tag,
					    tags);
		return tcfs_err_set(-ENOENT, "%s: %d images; name one with "
				    ":TAG (there: %s)", where, n, tags);
	}
	return desc_from(found, where, d);
}

static int alloc_layers(struct oci_image *img, size_t n)
{
	img->nlayers = n;
	img->layers = calloc(n ? n : 1, sizeof(*img->layers));
	img->layer_path = calloc(n ? n : 1, sizeof(*img->layer_path));
	img->diff_id = calloc(n ? n : 1, sizeof(*img->diff_id));
	return img->layers && img->layer_path && img->diff_id ? 0 : -ENOMEM;
}

/* The config's rootfs.diff_ids, where they are sha256 digests. */
static void take_diff_ids(struct oci_image *img)
{
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(img->config, "rootfs"),
		"diff_ids");
	size_t i = 0;
	const cJSON *id;

	cJSON_ArrayForEach(id, ids) {
		if (i < img->nlayers && cJSON_IsString(id) &&
		    digest_ok(id->valuestring))
			snprintf(img->diff_id[i], sizeof(img->diff_id[i]), "%s",
				 id->valuestring);
		i++;
	}
	img->labels = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(img->config, "config"),
		"Labels");
	if (!cJSON_IsObject(img->labels))
		img->labels = NULL;
}

static int open_layout(struct oci_image *img, const char *tag)
{
	char path[OCI_PATH];
	cJSON *index = NULL, *man = NULL;
	struct oci_desc d;
	const cJSON *layers, *l;
	int rc, depth = 0;

	snprintf(path, sizeof(path), "%s/index.json", img->dir);
	rc = read_json_file(img, path, &index);
	if (rc == 0)
		rc = pick(index, path, tag, &d);
	/* An index may name an index (a multi-platform image). */
	while (rc == 0 && (!strcmp(d.media_type, OCI_MT_INDEX) ||
			   !strcmp(d.media_type, DOCKER_MT_LIST))) {
		cJSON_Delete(index);
		index = NULL;
		if (++depth > 4)
			return tcfs_err_set(-ELOOP, "%s: indexes nested too "
					    "deep", img->dir);
		rc = read_json_blob(img, &d, &index);
		if (rc == 0)
			rc = pick(index, d.digest, "", &d);
	}
	cJSON_Delete(index);
	if (rc == 0)
		rc = read_json_blob(img, &d, &man);
	if (rc < 0)
		goto out;
	snprintf(img->digest, sizeof(img->digest), "%s", d.digest);
	blob_path(img->dir, d.digest, path, sizeof(path));
	layers = cJSON_GetObjectItemCaseSensitive(man, "layers");
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(man, "config")) ||
	    !cJSON_IsArray(layers)) {
		rc = tcfs_err_set(-EBADMSG, "%s: not an image manifest (no "
				  "config or layers)", path);
		goto out;
	}
	rc = desc_from(cJSON_GetObjectItemCaseSensitive(man, "config"), path,
		       &d);
	if (rc == 0)
		rc = read_json_blob(img, &d, &img->config);
	if (rc == 0 && !cJSON_IsObject(img->config))
		rc = tcfs_err_set(-EBADMSG, "%s: the config is not a JSON "
				  "object", d.digest);
	if (rc == 0)
		rc = alloc_layers(img, (size_t)cJSON_GetArraySize(layers));
	if (rc < 0)
		goto out;
	size_t i = 0;
	cJSON_ArrayForEach(l, layers) {
		rc = desc_from(l, path, &img->layers[i]);
		if (rc < 0)
			goto out;
		blob_path(img->dir, img->layers[i].digest, img->layer_path[i],
			  sizeof(img->layer_path[i]));
		i++;
	}
	take_diff_ids(img);
out:
	cJSON_Delete(man);
	return rc;
}

/* A file named in docker save's manifest.json: inside the archive. */
static int docker_path(const struct oci_image *img, const char *name,
		       char *path)
{
	const char *safe = name ? safe_name(name) : NULL;

	if (!safe)
		return tcfs_err_set(-EBADMSG, "%s/manifest.json: names '%s', "
				    "outside the archive", img->dir,
				    name ? name : "");
	if ((size_t)snprintf(path, PATH_MAX, "%s/%s", img->dir, safe) >=
	    PATH_MAX)
		return tcfs_err_set(-ENAMETOOLONG, "%s/%s: path too long",
				    img->dir, safe);
	return 0;
}

static int open_docker(struct oci_image *img, const char *tag)
{
	char path[OCI_PATH];
	cJSON *man = NULL;
	const cJSON *m, *found = NULL, *layers, *l;
	int rc, n;

	snprintf(path, sizeof(path), "%s/manifest.json", img->dir);
	rc = read_json_file(img, path, &man);
	n = cJSON_GetArraySize(man);
	if (rc == 0 && (!cJSON_IsArray(man) || n == 0))
		rc = tcfs_err_set(-EBADMSG, "%s: not docker save's manifest",
				  path);
	if (rc < 0)
		goto out;
	cJSON_ArrayForEach(m, man) {
		const cJSON *t, *tags = cJSON_GetObjectItemCaseSensitive(
					  m, "RepoTags");

		cJSON_ArrayForEach(t, tags) {
			const char *c = cJSON_IsString(t) ? strrchr(
						t->valuestring, ':') : NULL;

			if (tag[0] && c && !strcmp(c + 1, tag))
				found = m;
		}
	}
	if (!found && !tag[0] && n == 1)
		found = man->child;
	if (!found) {
		rc = tcfs_err_set(-ENOENT, "%s: no image %s%s", path,
				  tag[0] ? "tagged " : "; name one with :TAG",
				  tag);
		goto out;
	}
	img->docker = 1;
	rc = docker_path(img, jstr(found, "Config"), path);
	if (rc == 0)
		rc = read_json_file(img, path, &img->config);
	if (rc == 0 && !cJSON_IsObject(img->config))
		rc = tcfs_err_set(-EBADMSG, "%s: not an image config", path);
	layers = cJSON_GetObjectItemCaseSensitive(found, "Layers");
	if (rc == 0)
		rc = alloc_layers(img, (size_t)cJSON_GetArraySize(layers));
	if (rc < 0)
		goto out;
	take_diff_ids(img);
	size_t i = 0;
	cJSON_ArrayForEach(l, layers) {
		rc = docker_path(img, cJSON_IsString(l) ? l->valuestring : NULL,
				 img->layer_path[i]);
		if (rc < 0)
			goto out;
		snprintf(img->layers[i].media_type,
			 sizeof(img->layers[i].media_type),
			 "application/vnd.docker.image.rootfs.diff.tar");
		if (!img->diff_id[i][0]) {
			rc = tcfs_err_set(-EBADMSG, "%s: layer %zu has no "
					  "diff_id in the config", img->dir,
					  i + 1);
			goto out;
		}
		i++;
	}
out:
	cJSON_Delete(man);
	return rc;
}

/* Every file of the image is opened beneath this descriptor. */
static int open_dir(struct oci_image *img)
{
	img->dirfd = open(img->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return img->dirfd < 0 ? tcfs_err_errno(-errno, "%s", img->dir) : 0;
}

int oci_image_open(const struct oci_ref *r, const char *tmpdir, uint64_t max,
		   struct oci_image *img)
{
	struct stat st;
	char probe[OCI_PATH];
	int rc;

	memset(img, 0, sizeof(*img));
	img->dirfd = -1;
	if (stat(r->path, &st) < 0)
		return tcfs_err_errno(-errno, "%s", r->path);
	if (S_ISDIR(st.st_mode)) {
		if (r->kind != OCI_LAYOUT)
			return tcfs_err_set(-EISDIR, "%s: a directory; an "
					    "image layout is DIR[:TAG]",
					    r->path);
		if (!realpath(r->path, img->dir))
			return tcfs_err_errno(-errno, "%s", r->path);
		rc = open_dir(img);
		if (rc < 0)
			return rc;
		snprintf(probe, sizeof(probe), "%s/oci-layout", img->dir);
		if (access(probe, F_OK) < 0)
			return tcfs_err_set(-ENOENT, "%s: not an OCI image "
					    "layout (no oci-layout file)",
					    r->path);
		return open_layout(img, r->tag);
	}
	/* A file: an archive, whichever kind it turns out to hold, which
	 * may be compressed: it may not expand past a hundred times its
	 * size (1 GiB at least) unless told. */
	if (!max)
		max = (uint64_t)st.st_size * 100 > (1ull << 30)
			      ? (uint64_t)st.st_size * 100
			      : 1ull << 30;
	snprintf(img->tmp, sizeof(img->tmp), "%s/tcfs-image.XXXXXX", tmpdir);
	if (!mkdtemp(img->tmp)) {
		rc = tcfs_err_errno(-errno, "%s", img->tmp);
		img->tmp[0] = '\0';
		return rc;
	}
	snprintf(img->dir, sizeof(img->dir), "%s", img->tmp);
	rc = untar_flat(r->path, img->dir, max);
	if (rc == 0)
		rc = open_dir(img);
	if (rc < 0)
		return rc;
	snprintf(probe, sizeof(probe), "%s/oci-layout", img->dir);
	if (r->kind != DOCKER_ARCHIVE && access(probe, F_OK) == 0)
		return open_layout(img, r->tag);
	snprintf(probe, sizeof(probe), "%s/manifest.json", img->dir);
	if (access(probe, F_OK) == 0)
		return open_docker(img, r->tag);
	return tcfs_err_set(-EBADMSG, "%s: neither an oci-archive nor a "
			    "docker-archive (no oci-layout, no manifest.json)",
			    r->path);
}

void oci_image_close(struct oci_image *img)
{
	cJSON_Delete(img->config);
	free(img->layers);
	free(img->layer_path);
	free(img->diff_id);
	if (img->dir[0] && img->dirfd >= 0)
		close(img->dirfd);
	oci_rm_tree(img->tmp);
	memset(img, 0, sizeof(*img));
	img->dirfd = -1;
}

int oci_image_open_layer(const struct oci_image *img, size_t i)
{
	assert(i < img->nlayers);
	if (!img->layer_path[i][0])	/* blob_path found it too long */
		return tcfs_err_set(-ENAMETOOLONG, "%s: layer %zu: path too "
				    "long", img->dir, i + 1);
	return open_in(img->dirfd, !img->docker,
		       rel_of(img, img->layer_path[i]), img->layer_path[i]);
}

int oci_image_check_layer(const struct oci_image *img, size_t i, int fd,
			  uint64_t max)
{
	const char *path = img->layer_path[i];
	char got[OCI_DIGEST_LEN + 1];
	uint64_t size = 0;
	int rc;

	assert(i < img->nlayers);
	if (img->docker) {
		rc = sha256_fd(fd, path, 1, max, got, &size);
		if (rc == 0 && strcmp(got, img->diff_id[i]) != 0)
			rc = tcfs_err_set(-EBADMSG, "%s: its bytes do not "
					  "match the config's diff_id %s",
					  path, img->diff_id[i]);
		return rc;
	}
	rc = sha256_fd(fd, path, 0, img->layers[i].size, got, &size);
	if (rc == 0 && (strcmp(got, img->layers[i].digest) != 0 ||
			size != img->layers[i].size))
		rc = tcfs_err_set(-EBADMSG, "%s: its bytes do not match its "
				  "digest (%s, %llu bytes)", path,
				  img->layers[i].digest,
				  (unsigned long long)img->layers[i].size);
	return rc;
}

/* ---- writing a layout ---- */

cJSON *oci_desc_json(const struct oci_desc *d)
{
	cJSON *j = cJSON_CreateObject();

	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "mediaType", d->media_type);
	cJSON_AddStringToObject(j, "digest", d->digest);
	cJSON_AddNumberToObject(j, "size", (double)d->size);
	return j;
}

int oci_out_open(const struct oci_ref *r, const char *tmpdir,
		 struct oci_out *o)
{
	static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
	char path[OCI_PATH];
	struct stat st;
	int rc = 0;

	memset(o, 0, sizeof(*o));
	o->ref = *r;
	if (!o->ref.tag[0])
		snprintf(o->ref.tag, sizeof(o->ref.tag), "latest");
	if (r->kind == DOCKER_ARCHIVE)
		return tcfs_err_set(-ENOTSUP, "%s: tcfs writes OCI images; "
				    "skopeo copy makes a docker-archive of "
				    "one", r->path);
	if (r->kind == OCI_ARCHIVE) {
		snprintf(o->dir, sizeof(o->dir), "%s/tcfs-pack.XXXXXX", tmpdir);
		if (!mkdtemp(o->dir)) {
			rc = tcfs_err_errno(-errno, "%s", o->dir);
			o->dir[0] = '\0';
			return rc;
		}
	} else {
		snprintf(o->dir, sizeof(o->dir), "%s", r->path);
		if (mkdir(o->dir, 0755) < 0 && errno != EEXIST)
			return tcfs_err_errno(-errno, "%s", o->dir);
		if (lstat(o->dir, &st) < 0 || !S_ISDIR(st.st_mode))
			return tcfs_err_set(-ENOTDIR, "%s: not a directory",
					    o->dir);
	}
	snprintf(path, sizeof(path), "%s/oci-layout", o->dir);
	if (access(path, F_OK) < 0)
		rc = write_file_at(o->dir, "oci-layout", layout,
				   sizeof(layout) - 1);
	snprintf(path, sizeof(path), "%s/blobs", o->dir);
	if (rc == 0 && mkdir(path, 0755) < 0 && errno != EEXIST)
		rc = tcfs_err_errno(-errno, "%s", path);
	snprintf(path, sizeof(path), "%s/blobs/sha256", o->dir);
	if (rc == 0 && mkdir(path, 0755) < 0 && errno != EEXIST)
		rc = tcfs_err_errno(-errno, "%s", path);
	return rc;
}

int oci_out_put_buf(struct oci_out *o, const char *mt, const void *buf,
		    size_t len, struct oci_desc *d)
{
	char dir[OCI_PATH];

	snprintf(d->media_type, sizeof(d->media_type), "%s", mt);
	oci_sha256_buf(buf, len, d->digest);
	d->size = len;
	snprintf(dir, sizeof(dir), "%s/blobs/sha256", o->dir);
	return write_file_at(dir, d->digest + 7, buf, len);
}

int oci_out_put_file(struct oci_out *o, const char *path,
		     const struct oci_desc *d)
{
	char to[PATH_MAX];

	blob_path(o->dir, d->digest, to, sizeof(to));
	if (rename(path, to) < 0)
		return tcfs_err_errno(-errno, "%s", to);
	return 0;
}

/* Copies layer fd (at its start) to tmp, checking the bytes copied
 * against d: what goes into the new layout is what was checked. */
static int copy_checked(int in, const char *shown, const char *tmp,
			const struct oci_desc *d)
{
	struct oci_sha256 *h = oci_sha256_new();
	char buf[1 << 16], got[OCI_DIGEST_LEN + 1];
	uint64_t total = 0;
	int out, rc = 0;
	ssize_t n;

	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (!h || out < 0) {
		rc = h ? tcfs_err_errno(-errno, "%s", tmp) : -ENOMEM;
		if (out >= 0)
			close(out);
		if (h)
			oci_sha256_done(h, got);
		return rc;
	}
	while (rc == 0 && total <= d->size &&
	       (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		rc = n < 0 ? tcfs_err_errno(-errno, "%s", shown)
			   : tcfs_io_write_all(out, buf, (size_t)n);
		if (n > 0) {
			oci_sha256_add(h, buf, (size_t)n);
			total += (uint64_t)n;
		}
	}
	oci_sha256_done(h, got);
	if (close(out) < 0 && rc == 0)
		rc = tcfs_err_errno(-errno, "%s", tmp);
	if (rc == 0 && (strcmp(got, d->digest) != 0 || total != d->size))
		rc = tcfs_err_set(-EBADMSG, "%s: its bytes do not match its "
				  "digest (%s, %llu bytes)", shown, d->digest,
				  (unsigned long long)d->size);
	return rc;
}

int oci_out_link_layer(struct oci_out *o, const struct oci_image *img,
		       size_t i)
{
	const struct oci_desc *d = &img->layers[i];
	char to[OCI_PATH], tmp[OCI_PATH + 32];
	int in, rc;

	blob_path(o->dir, d->digest, to, sizeof(to));
	if (access(to, F_OK) == 0)
		return 0;
	in = oci_image_open_layer(img, i);
	if (in < 0)
		return in;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", to, (long)getpid());
	rc = copy_checked(in, img->layer_path[i], tmp, d);
	close(in);
	if (rc == 0 && rename(tmp, to) < 0)
		rc = tcfs_err_errno(-errno, "%s", to);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/* index.json with manifest m tagged o->ref.tag, other tags kept. */
static int write_index(struct oci_out *o, const struct oci_desc *m)
{
	char path[OCI_PATH];
	cJSON *index = NULL, *mans, *dj, *ann;
	char *text;
	int rc;

	snprintf(path, sizeof(path), "%s/index.json", o->dir);
	if (access(path, F_OK) == 0) {
		int dirfd = open(o->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

		rc = dirfd < 0 ? tcfs_err_errno(-errno, "%s", o->dir)
			       : read_json(dirfd, 1, "index.json", path, NULL,
					   0, &index);
		if (dirfd >= 0)
			close(dirfd);
		if (rc < 0)
			return rc;
	}
	if (!cJSON_IsObject(index)) {
		cJSON_Delete(index);
		index = cJSON_CreateObject();
		if (!index)
			return -ENOMEM;
		cJSON_AddNumberToObject(index, "schemaVersion", 2);
		cJSON_AddStringToObject(index, "mediaType", OCI_MT_INDEX);
	}
	mans = cJSON_GetObjectItemCaseSensitive(index, "manifests");
	if (!cJSON_IsArray(mans)) {
		cJSON_DeleteItemFromObjectCaseSensitive(index, "manifests");
		mans = cJSON_AddArrayToObject(index, "manifests");
	}
	for (int i = cJSON_GetArraySize(mans) - 1; i >= 0; i--) {
		const char *t = jstr(cJSON_GetObjectItemCaseSensitive(
					     cJSON_GetArrayItem(mans, i),
					     "annotations"),
				     OCI_REF_NAME);

		if (t && !strcmp(t, o->ref.tag))
			cJSON_DeleteItemFromArray(mans, i);
	}
	dj = oci_desc_json(m);
	ann = dj ? cJSON_AddObjectToObject(dj, "annotations") : NULL;
	if (ann)
		cJSON_AddStringToObject(ann, OCI_REF_NAME, o->ref.tag);
	if (dj)
		cJSON_AddItemToArray(mans, dj);
	text = cJSON_PrintUnformatted(index);
	cJSON_Delete(index);
	if (!text || !ann)
		return -ENOMEM;
	rc = write_file_at(o->dir, "index.json", text, strlen(text));
	free(text);
	return rc;
}

/* Adds dir's files below name to the archive, sorted, with fixed times
 * and owners: the same layout gives the same bytes. */
static int tar_add_tree(struct archive *a, const char *base, const char *rel)
{
	char path[OCI_PATH + PATH_MAX], **names = NULL;
	size_t n = 0;
	int fd, rc;

	snprintf(path, sizeof(path), "%s%s%s", base, rel[0] ? "/" : "", rel);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tcfs_err_errno(-errno, "%s", path);
	rc = tcfs_io_list_names(fd, NULL, &names, &n);
	close(fd);
	if (rc < 0)
		return tcfs_err_errno(rc, "%s", path);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char sub[PATH_MAX], full[OCI_PATH];
		struct archive_entry *e;
		struct stat st;

		if (names[i][0] == '.')
			continue;	/* our temp files */
		e = archive_entry_new();
		if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel,
				     rel[0] ? "/" : "",
				     names[i]) >= sizeof(sub)) {
			rc = tcfs_err_set(-ENAMETOOLONG, "%s/%s: too long",
					  rel, names[i]);
			break;
		}
		snprintf(full, sizeof(full), "%s/%s", base, sub);
		if (!e || lstat(full, &st) < 0) {
			rc = e ? tcfs_err_errno(-errno, "%s", full) : -ENOMEM;
			archive_entry_free(e);
			break;
		}
		archive_entry_set_pathname(e, sub);
		archive_entry_set_filetype(e, S_ISDIR(st.st_mode) ? AE_IFDIR
								  : AE_IFREG);
		archive_entry_set_perm(e, S_ISDIR(st.st_mode) ? 0755 : 0644);
		archive_entry_set_size(e, S_ISDIR(st.st_mode) ? 0 : st.st_size);
		archive_entry_set_mtime(e, 0, 0);
		if (archive_write_header(a, e) != ARCHIVE_OK)
			rc = tcfs_err_set(-EIO, "%s", archive_error_string(a));
		archive_entry_free(e);
		if (rc == 0 && S_ISDIR(st.st_mode)) {
			rc = tar_add_tree(a, base, sub);
		} else if (rc == 0) {
			char buf[1 << 16];
			int in = open(full, O_RDONLY | O_CLOEXEC);
			ssize_t got = 0;

			if (in < 0)
				rc = tcfs_err_errno(-errno, "%s", full);
			while (rc == 0 && (got = read(in, buf, sizeof(buf))) > 0)
				if (archive_write_data(a, buf, (size_t)got) !=
				    got)
					rc = tcfs_err_set(
						-EIO, "%s",
						archive_error_string(a));
			if (rc == 0 && got < 0)
				rc = tcfs_err_errno(-errno, "%s", full);
			if (in >= 0)
				close(in);
		}
	}
	tcfs_io_names_free(names, n);
	return rc;
}

/* The layout as an oci-archive at path, written under a temp name. */
static int write_archive(const struct oci_out *o, const char *path)
{
	char tmp[OCI_PATH];
	struct archive *a = archive_write_new();
	int rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (!a)
		return -ENOMEM;
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_filename(a, tmp) != ARCHIVE_OK)
		rc = tcfs_err_set(-EIO, "%s: %s", tmp, archive_error_string(a));
	if (rc == 0)
		rc = tar_add_tree(a, o->dir, "");
	if (archive_write_close(a) != ARCHIVE_OK && rc == 0)
		rc = tcfs_err_set(-EIO, "%s: %s", tmp, archive_error_string(a));
	archive_write_free(a);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = tcfs_err_errno(-errno, "%s", path);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int oci_out_commit(struct oci_out *o, const struct oci_desc *m)
{
	int rc = write_index(o, m);

	if (rc == 0 && o->ref.kind == OCI_ARCHIVE)
		rc = write_archive(o, o->ref.path);
	return rc;
}

void oci_out_close(struct oci_out *o)
{
	if (o->ref.kind == OCI_ARCHIVE)
		oci_rm_tree(o->dir);
}
