/* publish: the store's kernels and modules, to the fleet tier. */
#include "index/remote/publish.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"
#include "index/base/name.h"
#include "index/model/fxgraph.h"
#include "index/model/group.h"
#include "index/model/kernel.h"
#include "index/store/store.h"
#include "index/remote/keyfmt.h"
#include "index/remote/pack.h"
#include "index/remote/pt2.h"
#include "index/tree/nsread.h"

/* What one publish sends: the files' bytes (owned), their Redis keys. */
struct batch {
	size_t n;
	char *bytes[TCFS_WIRE_FILES_MAX + 2];
	size_t len[TCFS_WIRE_FILES_MAX + 2];
	char rkey[TCFS_WIRE_FILES_MAX + 2][TCFS_KEYFMT_KEY_MAX];
	struct tcfs_sidecar sc;
};

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->bytes[i]);
	b->n = 0;
}

/* Appends bytes (taken over) as file name of key. */
static int batch_add(struct tcfs_remote *r, struct batch *b, const char *key,
		     const char *name, char *bytes, size_t len)
{
	int rc;

	assert(b->n < TCFS_WIRE_FILES_MAX + 2);
	b->bytes[b->n] = bytes;
	b->len[b->n] = len;
	rc = tcfs_remote_key(r, key, name, b->rkey[b->n], sizeof(b->rkey[0]));
	b->n++;
	return rc;
}

/* The bytes of file name in dir, checked against its blob's name. */
static int read_file(struct tcfs_store *s, uint64_t dir, const char *name,
		     uint64_t max, char **bytes, size_t *len)
{
	struct tcfs_node n;
	int rc = tcfs_ns_lookup(s, dir, name, &n);

	if (rc == 0 && (n.kind != TCFS_FILE || n.fmt != TCFS_FMT_RAW))
		rc = -ENOENT;	/* only plain files go out as they are */
	if (rc == 0)
		rc = tcfs_cas_read_checked(tcfs_store_cas(s), &n.blob,
					   (size_t)max, bytes, len);
	return rc;
}

/* Whether the remote has key's sidecar for name already. */
static int published(struct tcfs_remote *r, const char *key,
		     const char *name)
{
	char file[TCFS_NAME_MAX + 16], rkey[TCFS_KEYFMT_KEY_MAX];
	const char *keys[1] = { rkey };
	int64_t size = -1;
	int rc = tcfs_wire_sidecar_file(name, file, sizeof(file));

	if (rc == 0)
		rc = tcfs_remote_key(r, key, file, rkey, sizeof(rkey));
	if (rc == 0)
		rc = tcfs_remote_sizes(r, keys, 1, &size);
	return rc < 0 ? rc : size >= 0;
}

/* Sends b (the children, their sidecar entries added) and then, in one
 * MULTI/EXEC, the sidecar and grp (grplen bytes, taken over; NULL for a
 * single file), so that the group is never seen without its sidecar. */
static int send(struct tcfs_remote *r, struct batch *b, const char *key,
		const char *name, char *grp, size_t grplen)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	struct tcfs_remote_kv kv[TCFS_WIRE_FILES_MAX + 2];
	char file[TCFS_NAME_MAX + 16], *sc = NULL;
	size_t sclen = 0;
	int rc = 0;

	if (grp) {
		rc = tcfs_wire_group_file(name, file, sizeof(file));
		if (rc == 0)
			rc = tcfs_sidecar_add(&b->sc, file, grp, grplen);
	}
	if (rc == 0)
		rc = tcfs_sidecar_render(&b->sc, cfg->hmac_key, cfg->hmac_len,
					 &sc, &sclen);
	if (rc == 0)
		rc = tcfs_wire_sidecar_file(name, file, sizeof(file));
	if (rc == 0)
		rc = batch_add(r, b, key, file, sc, sclen);
	else
		free(sc);
	if (rc == 0 && grp) {
		tcfs_wire_group_file(name, file, sizeof(file));
		rc = batch_add(r, b, key, file, grp, grplen);
		grp = NULL;
	}
	free(grp);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < b->n; i++)
		kv[i] = (struct tcfs_remote_kv){ b->rkey[i], b->bytes[i],
						 b->len[i] };
	rc = tcfs_remote_put(r, kv, b->n, grplen ? 2 : 1);
	if (rc == 0)
		atomic_fetch_add(&tcfs_remote_stats(r)->published, 1);
	return rc < 0 ? rc : 1;
}

/* The children a kernel's group file in dir names, as cfg says to publish
 * them: 0, or -ENOENT when it is no group file here. */
static int children(struct tcfs_store *s, uint64_t dir, const char *grp,
		    enum tcfs_remote_publish how, struct tcfs_wire_names *out)
{
	struct tcfs_node n;
	char *bytes = NULL;
	size_t len = 0, k = 0;
	int rc = tcfs_ns_lookup(s, dir, grp, &n);

	if (rc == 0 && n.kind != TCFS_FILE)
		rc = -ENOENT;
	if (rc == 0)
		rc = n.fmt == TCFS_FMT_GROUP
			     ? tcfs_group_load(tcfs_store_cas(s), &n.blob,
					       &bytes, &len)
			     : tcfs_cas_read_checked(tcfs_store_cas(s), &n.blob,
						     TCFS_WIRE_JSON_MAX, &bytes,
						     &len);
	if (rc == 0)
		rc = tcfs_wire_group_parse(bytes, len, out);
	free(bytes);
	for (size_t i = 0; rc == 0 && i < out->n; i++) {
		if (how == TCFS_PUBLISH_BINARY &&
		    tcfs_name_artifact(out->name[i]) == TCFS_ART_IR)
			continue;
		if (k != i)
			memcpy(out->name[k], out->name[i], sizeof(out->name[k]));
		k++;
	}
	if (rc == 0)
		out->n = k;
	return rc;
}

/* 0 when a kernel is to be published: publishing on, shared (its
 * writers trusted: kernel.h), not from the remote, not there yet. */
static int wanted(struct tcfs_remote *r, struct tcfs_store *s, uint64_t dir,
		  const char *key, const char *name, const char *grp)
{
	struct tcfs_kernel k;
	struct tcfs_node n;
	int rc;

	if (tcfs_remote_cfg_of(r)->publish == TCFS_PUBLISH_OFF)
		return 1;
	if (grp) {
		rc = tcfs_ns_lookup(s, dir, grp, &n);
		if (rc < 0)
			return rc == -ENOENT ? 1 : rc;
		rc = tcfs_kernel_get(s, n.ino, &k);
		if (rc < 0)
			return rc == -ENOENT ? 1 : rc;
		if (!k.shared || strcmp(k.origin, TCFS_ORIGIN_REMOTE) == 0)
			return 1;
	}
	return published(r, key, name);
}

int tcfs_remote_publish_kernel(struct tcfs_remote *r, struct tcfs_store *s,
			       uint64_t dir, const char *key,
			       const char *name)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	char grp[TCFS_NAME_MAX + 16], *gbytes = NULL, *bytes;
	struct tcfs_wire_names names;
	struct batch b = { 0 };
	size_t glen = 0, len;
	int rc = tcfs_wire_group_file(name, grp, sizeof(grp));

	if (rc == 0)
		rc = wanted(r, s, dir, key, name, grp);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	rc = children(s, dir, grp, cfg->publish, &names);
	snprintf(b.sc.key, sizeof(b.sc.key), "%s", key);
	snprintf(b.sc.name, sizeof(b.sc.name), "%s", name);
	b.sc.group = 1;
	for (size_t i = 0; rc == 0 && i < names.n; i++) {
		rc = read_file(s, dir, names.name[i], cfg->file_max, &bytes,
			       &len);
		if (rc == 0)
			rc = tcfs_sidecar_add(&b.sc, names.name[i], bytes, len);
		if (rc == 0)
			rc = batch_add(r, &b, key, names.name[i], bytes, len);
		else if (rc != -ENOENT)
			free(bytes);
	}
	if (rc == 0)
		rc = tcfs_wire_group_render(&names, &gbytes, &glen);
	if (rc == 0)
		rc = send(r, &b, key, name, gbytes, glen);
	batch_free(&b);
	if (rc == -ENOENT)
		return 0;	/* not whole here: never published in part */
	return rc < 0 ? tcfs_err_prefix(rc, "publishing %s/%s", key, name)
		      : rc;
}

int tcfs_remote_publish_file(struct tcfs_remote *r, struct tcfs_store *s,
			     uint64_t dir, const char *key, const char *file)
{
	struct batch b = { 0 };
	char *bytes = NULL;
	size_t len = 0;
	int rc = wanted(r, s, dir, key, file, NULL);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	snprintf(b.sc.key, sizeof(b.sc.key), "%s", key);
	snprintf(b.sc.name, sizeof(b.sc.name), "%s", file);
	rc = read_file(s, dir, file, tcfs_remote_cfg_of(r)->file_max, &bytes,
		       &len);
	if (rc == 0)
		rc = tcfs_sidecar_add(&b.sc, file, bytes, len);
	if (rc == 0)
		rc = batch_add(r, &b, key, file, bytes, len);
	else
		free(bytes);
	if (rc == 0)
		rc = send(r, &b, key, file, NULL, 0);
	batch_free(&b);
	if (rc == -ENOENT)
		return 0;
	return rc < 0 ? tcfs_err_prefix(rc, "publishing %s/%s", key, file)
		      : rc;
}

/* A new sidecar of the one file name (bytes) of key, into *out (owned by
 * the caller: free()). */
static int sidecar_of(const char *key, const char *name, const char *bytes,
		      size_t len, struct tcfs_sidecar **out)
{
	struct tcfs_sidecar *sc = calloc(1, sizeof(*sc));
	int rc;

	if (!sc)
		return -ENOMEM;
	snprintf(sc->key, sizeof(sc->key), "%s", key);
	snprintf(sc->name, sizeof(sc->name), "%s", name);
	rc = tcfs_sidecar_add(sc, name, bytes, len);
	if (rc < 0) {
		free(sc);
		return rc;
	}
	*out = sc;
	return 0;
}

/* Whether the remote's sidecar at skey lists, for sc's key and name, the
 * one file sc lists, with its size and SHA-256: published already. */
static int sidecar_there(struct tcfs_remote *r, const char *skey,
			 const struct tcfs_sidecar *sc)
{
	const char *keys[1] = { skey };
	struct tcfs_sidecar *there;
	char *val = NULL;
	size_t len = 0;
	int rc = tcfs_remote_get(r, keys, 1, TCFS_WIRE_SIDECAR_MAX, &val,
				 &len);

	if (rc < 0 || !val)
		return rc == -EFBIG ? 0 : rc;
	there = calloc(1, sizeof(*there));
	rc = there ? 0 : -ENOMEM;
	if (rc == 0 &&
	    tcfs_sidecar_parse(val, len, sc->key, sc->name, there) == 0)
		rc = there->n == 1 && there->f[0].size == sc->f[0].size &&
		     memcmp(there->f[0].sha256, sc->f[0].sha256, 32) == 0;
	tcfs_err_clear();
	if (there)
		tcfs_sidecar_release(there);
	free(there);
	free(val);
	return rc;
}

/* The entry's debug lines' names and hashes into sc, so that `tcfs why
 * --remote` compares graphs by their sidecars alone.  A nicety: an entry
 * without lines, or any error, leaves sc without inputs. */
static void entry_inputs(struct tcfs_sidecar *sc, const char *bytes,
			 size_t len)
{
	struct tcfs_fx_details d = { 0 };
	int rc = tcfs_fx_details(bytes, len, &d);

	for (size_t i = 0; rc == 0 && i < d.n; i++)
		rc = tcfs_sidecar_input_add(sc, d.v[i].name, d.v[i].name_len,
					    d.v[i].hash, d.v[i].hash_len);
	if (rc < 0)
		tcfs_sidecar_release(sc);
	tcfs_fx_details_free(&d);
	tcfs_err_clear();
}

/* sc rendered; with its inputs when they fit, else without: a sidecar
 * that no reader would take is worse than one that cannot explain. */
static int entry_sidecar(struct tcfs_sidecar *sc,
			 const struct tcfs_remote_cfg *cfg, char **side,
			 size_t *slen)
{
	int rc = tcfs_sidecar_render(sc, cfg->hmac_key, cfg->hmac_len, side,
				     slen);

	if (rc == -E2BIG && sc->inputs) {
		tcfs_err_clear();
		tcfs_sidecar_release(sc);
		rc = tcfs_sidecar_render(sc, cfg->hmac_key, cfg->hmac_len,
					 side, slen);
	}
	return rc;
}

int tcfs_remote_publish_entry(struct tcfs_remote *r, struct tcfs_store *s,
			      uint64_t dir, const char *cache_id,
			      const char *key, const char *name)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	char rkey[TCFS_KEYFMT_KEY_MAX], skey[TCFS_KEYFMT_KEY_MAX];
	char hashed[TCFS_PT2_NAME_LEN + 1], *bytes = NULL, *val = NULL;
	char *side = NULL;
	struct tcfs_remote_kv kv[2];
	struct tcfs_sidecar *sc = NULL;
	size_t len = 0, vlen = 0, slen = 0;
	int rc;

	if (cfg->publish == TCFS_PUBLISH_OFF ||
	    cfg->inductor == TCFS_INDUCTOR_OFF)
		return 0;
	rc = tcfs_pt2_key(cache_id, key, rkey, sizeof(rkey));
	if (rc == 0)
		rc = tcfs_pt2_sidecar_key(cache_id, key, skey, sizeof(skey));
	if (rc == 0)
		rc = read_file(s, dir, name, cfg->file_max, &bytes, &len);
	/* PyTorch names an entry by its bytes, and so does every reader of
	 * the value: any other file in a key dir is not an entry. */
	if (rc == 0) {
		tcfs_pt2_entry_name(bytes, len, hashed);
		if (strcmp(hashed, name) != 0)
			rc = -ENOENT;
	}
	if (rc == 0)
		rc = sidecar_of(key, name, bytes, len, &sc);
	if (rc == 0)
		rc = sidecar_there(r, skey, sc);
	if (rc == 0) {
		entry_inputs(sc, bytes, len);
		rc = entry_sidecar(sc, cfg, &side, &slen);
	}
	if (rc == 0)
		rc = tcfs_pt2_value_render(bytes, len, 0, &val, &vlen);
	/* Both in one MULTI/EXEC: a reader never sees the value of one
	 * variant with the sidecar of another. */
	kv[0] = (struct tcfs_remote_kv){ rkey, val, vlen };
	kv[1] = (struct tcfs_remote_kv){ skey, side, slen };
	if (rc == 0)
		rc = tcfs_remote_put(r, kv, 2, 2);
	if (rc == 0)
		atomic_fetch_add(&tcfs_remote_stats(r)->published, 1);
	if (sc)
		tcfs_sidecar_release(sc);
	free(sc);
	free(side);
	free(val);
	free(bytes);
	if (rc == -ENOENT || rc == 1)
		return 0;
	return rc < 0 ? tcfs_err_prefix(rc, "publishing %s/%s", key, name)
		      : 1;
}

/* What a pack is made of: its files' paths and bytes (owned). */
struct tree {
	struct tcfs_pack_file *f;
	size_t n, cap;
	uint64_t bytes;
};

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free((char *)t->f[i].path);
		free((char *)t->f[i].bytes);
	}
	free(t->f);
}

/* Adds the file path of bytes (taken over) to t. */
static int tree_add(struct tree *t, const char *path, char *bytes,
		    size_t len)
{
	char *p = strdup(path);

	if (p && t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		void *f = realloc(t->f, cap * sizeof(*t->f));

		if (f) {
			t->f = f;
			t->cap = cap;
		}
	}
	if (!p || t->n == t->cap) {
		free(p);
		free(bytes);
		return -ENOMEM;
	}
	t->f[t->n++] = (struct tcfs_pack_file){ p, bytes, len };
	t->bytes += len;
	return 0;
}

/* The files below dir (at path, "" at the top), depth levels down at
 * most, into t: each written by a trusted user (else -EPERM: the dir is
 * not to leave the node), within cfg's bounds. */
static int tree_walk(struct tcfs_remote *r, struct tcfs_store *s,
		     uint64_t dir, const char *path, int depth, struct tree *t)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	struct tcfs_node *kids = NULL;
	char sub[TCFS_NAME_MAX + 1];
	size_t n = 0;
	int rc = tcfs_ns_list(s, dir, 0, 0, &kids, &n);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct tcfs_node *k = &kids[i];
		char *bytes = NULL;
		size_t len = 0;

		if (snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "/" : "",
			     k->name) >= (int)sizeof(sub) ||
		    tcfs_pack_path_check(sub))
			continue;	/* temps, users' own dirs: not its */
		if (!tcfs_store_trusts(s, k->uid, k->gid))
			rc = -EPERM;
		else if (k->kind == TCFS_DIR && depth > 1)
			rc = tree_walk(r, s, k->ino, sub, depth - 1, t);
		else if (k->kind != TCFS_FILE)
			continue;
		else if (t->n == TCFS_PACK_FILES_MAX)
			rc = -E2BIG;
		else
			rc = read_file(s, dir, k->name, cfg->file_max, &bytes,
				       &len);
		if (rc || k->kind != TCFS_FILE)
			continue;
		rc = tree_add(t, sub, bytes, len);
		if (rc == 0 && t->bytes > cfg->kernel_max)
			rc = -EFBIG;
	}
	free(kids);
	return rc;
}

int tcfs_remote_publish_pack(struct tcfs_remote *r, struct tcfs_store *s,
			     uint64_t dir, const char *prefix, const char *key,
			     const char *name)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	char rkey[TCFS_KEYFMT_KEY_MAX], skey[TCFS_KEYFMT_KEY_MAX];
	struct tcfs_sidecar *sc = NULL;
	struct tcfs_remote_kv kv[2];
	struct tree t = { 0 };
	char *pack = NULL, *side = NULL;
	size_t plen = 0, slen = 0;
	int rc;

	if (cfg->publish == TCFS_PUBLISH_OFF ||
	    cfg->inductor == TCFS_INDUCTOR_OFF)
		return 0;
	rc = tcfs_pack_key(prefix, key, name, rkey, sizeof(rkey));
	if (rc == 0)
		rc = tcfs_pack_sidecar_key(prefix, key, name, skey,
					   sizeof(skey));
	if (rc == 0)
		rc = tree_walk(r, s, dir, "", TCFS_PACK_DEPTH, &t);
	if (rc == 0 && t.n == 0)
		rc = -ENOENT;
	if (rc == 0)
		rc = tcfs_pack_render(t.f, t.n, &pack, &plen);
	if (rc == 0)
		rc = sidecar_of(key, name, pack, plen, &sc);
	if (rc == 0)
		rc = sidecar_there(r, skey, sc);
	if (rc == 0)
		rc = tcfs_sidecar_render(sc, cfg->hmac_key, cfg->hmac_len,
					 &side, &slen);
	kv[0] = (struct tcfs_remote_kv){ rkey, pack, plen };
	kv[1] = (struct tcfs_remote_kv){ skey, side, slen };
	if (rc == 0)
		rc = tcfs_remote_put(r, kv, 2, 2);
	if (rc == 0)
		atomic_fetch_add(&tcfs_remote_stats(r)->published, 1);
	tree_free(&t);
	free(sc);
	free(side);
	free(pack);
	/* Absent, not every writer trusted, or there already: nothing. */
	if (rc == -ENOENT || rc == -EPERM || rc == 1)
		return 0;
	return rc < 0 ? tcfs_err_prefix(rc, "publishing %s/%s", key, name)
		      : 1;
}
