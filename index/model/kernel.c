/* kernel: the kernels table, kept in step with the tree. */
#include "index/model/kernel.h"

#include <assert.h>
#include <ctype.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/base/err.h"
#include "index/blob/cas.h"
#include "index/store/db.h"
#include "index/base/io.h"
#include "index/tree/nsread.h"
#include "index/store/store.h"


static const char sql_forget[] =
	"DELETE FROM kernels WHERE grp_ino IN"
	" (SELECT ino FROM nodes WHERE parent = ?)";
static const char sql_upsert[] =
	"INSERT INTO kernels (grp_ino, name, meta, backend, arch,"
	" warp_size, num_warps, num_stages, num_ctas, triton_version,"
	" total_bytes, binary_bytes, ir_bytes, created, origin, shared, files)"
	" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	/* A kernel keeps where it came from while its files change. */
	" ON CONFLICT (grp_ino) DO UPDATE SET name = excluded.name,"
	" meta = excluded.meta, backend = excluded.backend,"
	" arch = excluded.arch, warp_size = excluded.warp_size,"
	" num_warps = excluded.num_warps, num_stages = excluded.num_stages,"
	" num_ctas = excluded.num_ctas,"
	" triton_version = excluded.triton_version,"
	" total_bytes = excluded.total_bytes, files = excluded.files,"
	" binary_bytes = excluded.binary_bytes, ir_bytes = excluded.ir_bytes,"
	" created = excluded.created,"
	/* Once written by someone untrusted, a kernel stays unshared until
	 * promoted (tcfs_kernel_set_shared): whoever touches it next. */
	" shared = kernels.shared AND excluded.shared";
/* A kernel's row as kernel_from_row reads it, and where it comes from. */
#define KERNEL_ROW                                                          \
	"SELECT k.grp_ino, g.parent, d.name, k.name, k.meta, k.backend,"     \
	" k.arch, k.warp_size, k.num_warps, k.num_stages, k.num_ctas,"       \
	" k.triton_version, k.total_bytes, k.binary_bytes, k.ir_bytes,"      \
	" k.created, k.origin, g.uid, d.parent, k.shared"
/* Columns of KERNEL_ROW: what a query adds comes after them. */
#define KERNEL_COLS 20
#define KERNEL_FROM                                                         \
	" FROM kernels k JOIN nodes g ON g.ino = k.grp_ino"                  \
	" JOIN nodes d ON d.ino = g.parent"

static const char sql_list[] =
	KERNEL_ROW KERNEL_FROM " ORDER BY d.name, k.name";

/* Every kernel with its use, in no order: sorting 100,000 rows as wide
 * as these took SQLite half of what tcfs list takes, and list sorts them
 * its own way anyway.  Walked one at a time, they come by key dir. */
#define USES                                                                \
	KERNEL_ROW ","                                                       \
	" k.files,"                                                          \
	" coalesce(p.hits, 0), coalesce(p.misses, 0), coalesce(p.last_hit, 0)" \
	KERNEL_FROM                                                          \
	" LEFT JOIN probe_counts p ON p.key = d.name AND p.name = k.name"    \
	" AND p.kind = 'kernel'"
static const char sql_uses[] = USES;
static const char sql_each_use[] = USES " ORDER BY d.name, k.name";

static const char sql_get[] =
	KERNEL_ROW KERNEL_FROM " WHERE k.grp_ino = ?";

static const char *const meta_names[] = { "ok", "missing", "invalid" };

static void copy_str(char *dst, size_t len, const cJSON *v)
{
	if (cJSON_IsString(v))
		snprintf(dst, len, "%s", v->valuestring);
	else if (cJSON_IsNumber(v))
		snprintf(dst, len, "%.0f", v->valuedouble);
}

static int64_t get_int(const cJSON *v)
{
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

int tcfs_kernel_parse_meta(const char *json, size_t len,
			   struct tcfs_kernel *k)
{
	cJSON *doc = cJSON_ParseWithLength(json, len);
	const cJSON *target;

	k->backend[0] = k->arch[0] = k->triton_version[0] = '\0';
	k->warp_size = k->num_warps = k->num_stages = k->num_ctas = -1;
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		k->meta = TCFS_META_INVALID;
		return -EINVAL;
	}
	k->meta = TCFS_META_OK;
	target = cJSON_GetObjectItemCaseSensitive(doc, "target");
	if (cJSON_IsObject(target)) {
		copy_str(k->backend, sizeof(k->backend),
			 cJSON_GetObjectItemCaseSensitive(target, "backend"));
		copy_str(k->arch, sizeof(k->arch),
			 cJSON_GetObjectItemCaseSensitive(target, "arch"));
		k->warp_size = get_int(
			cJSON_GetObjectItemCaseSensitive(target, "warp_size"));
	}
	/* Older and third-party files: the flat fields, where present. */
	if (!k->backend[0])
		copy_str(k->backend, sizeof(k->backend),
			 cJSON_GetObjectItemCaseSensitive(doc, "backend_name"));
	if (!k->arch[0])
		copy_str(k->arch, sizeof(k->arch),
			 cJSON_GetObjectItemCaseSensitive(doc, "arch"));
	if (k->warp_size < 0)
		k->warp_size = get_int(
			cJSON_GetObjectItemCaseSensitive(doc, "warp_size"));
	k->num_warps = get_int(cJSON_GetObjectItemCaseSensitive(doc, "num_warps"));
	k->num_stages =
		get_int(cJSON_GetObjectItemCaseSensitive(doc, "num_stages"));
	k->num_ctas = get_int(cJSON_GetObjectItemCaseSensitive(doc, "num_ctas"));
	copy_str(k->triton_version, sizeof(k->triton_version),
		 cJSON_GetObjectItemCaseSensitive(doc, "triton_version"));
	cJSON_Delete(doc);
	return 0;
}

/* NAME.json blobs parsed by someone else (tcfs_kernel_meta_known): an
 * import refreshed each key dir's kernels by reading its NAME.json blob
 * again, 8% of the import thread's time. */
#define META_KNOWN 4

struct meta_known {
	struct tcfs_hash blob;
	int set;
	enum tcfs_meta meta;
	char backend[32], arch[32], triton_version[32];
	int64_t warp_size, num_warps, num_stages, num_ctas;
};

_Static_assert(sizeof(((struct meta_known *)0)->backend) ==
			       sizeof(((struct tcfs_kernel *)0)->backend) &&
		       sizeof(((struct meta_known *)0)->arch) ==
			       sizeof(((struct tcfs_kernel *)0)->arch) &&
		       sizeof(((struct meta_known *)0)->triton_version) ==
			       sizeof(((struct tcfs_kernel *)0)->triton_version),
	       "meta_known copies tcfs_kernel's fields whole");

static _Thread_local struct meta_known known[META_KNOWN];
static _Thread_local unsigned known_next;

void tcfs_kernel_meta_known(const struct tcfs_hash *h,
			    const struct tcfs_kernel *k)
{
	struct meta_known *m = &known[known_next++ % META_KNOWN];

	*m = (struct meta_known){
		.blob = *h,
		.set = 1,
		.meta = k->meta,
		.warp_size = k->warp_size,
		.num_warps = k->num_warps,
		.num_stages = k->num_stages,
		.num_ctas = k->num_ctas,
	};
	memcpy(m->backend, k->backend, sizeof(m->backend));
	memcpy(m->arch, k->arch, sizeof(m->arch));
	memcpy(m->triton_version, k->triton_version,
	       sizeof(m->triton_version));
}

/* Fills k's metadata from what was told of blob h: 1, else 0. */
static int meta_from_known(const struct tcfs_hash *h, struct tcfs_kernel *k)
{
	for (size_t i = 0; i < META_KNOWN; i++) {
		const struct meta_known *m = &known[i];

		if (!m->set || !tcfs_hash_equal(&m->blob, h))
			continue;
		k->meta = m->meta;
		k->warp_size = m->warp_size;
		k->num_warps = m->num_warps;
		k->num_stages = m->num_stages;
		k->num_ctas = m->num_ctas;
		memcpy(k->backend, m->backend, sizeof(k->backend));
		memcpy(k->arch, m->arch, sizeof(k->arch));
		memcpy(k->triton_version, m->triton_version,
		       sizeof(k->triton_version));
		return 1;
	}
	return 0;
}

/* Reads NAME.json's blob and parses it into k. */
static int load_meta(struct tcfs_store *s, const struct tcfs_node *meta,
		     struct tcfs_kernel *k)
{
	char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	if (meta_from_known(&meta->blob, k))
		return 0;
	fd = tcfs_cas_open_blob(tcfs_store_cas(s), &meta->blob);
	if (fd < 0)
		return fd;
	rc = tcfs_io_read_small(fd, TCFS_KERNEL_META_MAX, &buf, &len);
	close(fd);
	if (rc == 0 || rc == -EFBIG)
		tcfs_kernel_parse_meta(rc == 0 ? buf : "", rc == 0 ? len : 0,
				       k);
	free(buf);
	return rc == -EFBIG ? 0 : rc;
}

/* Whether a kernel of the key dir dir, whose entries are sib, is shared:
 * every entry's writer trusted (store.h), and the dir no user's own
 * (fs/users.c puts an untrusted user's key dirs there). */
static int written_shared(struct tcfs_store *s, const struct tcfs_node *dir,
			  const struct tcfs_node *sib, size_t nsib)
{
	struct tcfs_node up;

	/* The root is no user's dir: no read of its row, which changes with
	 * every key dir made at the top. */
	if (dir->parent != TCFS_ROOT_INO &&
	    tcfs_ns_get(s, dir->parent, &up) == 0 &&
	    tcfs_name_private(up.name, NULL))
		return 0;
	if (!tcfs_store_trusts(s, dir->uid, dir->gid))
		return 0;
	for (size_t i = 0; i < nsib; i++)
		if (!tcfs_store_trusts(s, sib[i].uid, sib[i].gid))
			return 0;
	return 1;
}

static int refresh_one(struct tcfs_store *s, const struct tcfs_node *grp,
		       const struct tcfs_node *sib, size_t nsib, int shared)
{
	char metaname[TCFS_NAME_MAX + 8];
	struct tcfs_kernel k = { 0 };
	int64_t files = 0;
	const struct tcfs_node *meta = NULL;
	int rc;

	tcfs_name_group_kernel(grp->name, k.name, sizeof(k.name));
	snprintf(metaname, sizeof(metaname), "%s.json", k.name);
	for (size_t i = 0; i < nsib; i++) {
		if (sib[i].kind != TCFS_FILE)
			continue;
		files++;
		k.total_bytes += sib[i].size;
		switch (tcfs_name_artifact(sib[i].name)) {
		case TCFS_ART_BINARY:
			k.binary_bytes += sib[i].size;
			break;
		case TCFS_ART_IR:
			k.ir_bytes += sib[i].size;
			break;
		default:
			break;
		}
		if (strcmp(sib[i].name, metaname) == 0)
			meta = &sib[i];
	}
	tcfs_kernel_parse_meta("", 0, &k);
	k.meta = TCFS_META_MISSING;
	if (meta) {
		rc = load_meta(s, meta, &k);
		if (rc < 0)
			return rc;
	}
	rc = tcfs_db_exec(tcfs_store_db(s), sql_upsert, "ittttnnnntiiiitii",
			  (int64_t)grp->ino, k.name, meta_names[k.meta],
			  k.backend[0] ? k.backend : NULL,
			  k.arch[0] ? k.arch : NULL, k.warp_size, k.num_warps,
			  k.num_stages, k.num_ctas,
			  k.triton_version[0] ? k.triton_version : NULL,
			  (int64_t)k.total_bytes, (int64_t)k.binary_bytes,
			  (int64_t)k.ir_bytes, grp->mtime_ns,
			  tcfs_store_origin(s), (int64_t)shared, files);
	return rc < 0 ? rc : 0;
}

static int fill_ino(void *ctx, void *elem, sqlite3_stmt *st)
{
	(void)ctx;
	*(uint64_t *)elem = (uint64_t)sqlite3_column_int64(st, 0);
	return 0;
}

/*
 * The one rule for key dirs.  A dir is one when its name is a Triton key
 * and its parent is a cache root: the mount root, or any dir not named
 * like a key.  So a cache at any depth counts (Inductor's triton/DEVICE/,
 * vLLM's rank_I_J/triton_cache/), and nothing else does: temp dirs,
 * Inductor's FX graph and AOT entries (lowercase base32) and vLLM's
 * artifacts are never named like a Triton key.  The parent's name is
 * checked because Triton keeps key dirs flat: a key-named dir inside one
 * is some writer's subdir, not a kernel.  Its name, not its own rule: the
 * probe path pays one node lookup, never a walk up the tree.
 */
int tcfs_kernel_key_dir_at(struct tcfs_store *s, uint64_t parent,
			   const char *name, int *yes)
{
	struct tcfs_node p;
	int rc;

	*yes = 0;
	if (!tcfs_name_is_key(name))
		return 0;
	if (parent == TCFS_ROOT_INO) {
		*yes = 1;
		return 0;
	}
	rc = tcfs_ns_get(s, parent, &p);
	if (rc == 0)
		*yes = p.kind == TCFS_DIR && !tcfs_name_is_key(p.name);
	return rc;
}

int tcfs_kernel_is_key_dir(struct tcfs_store *s, uint64_t dir, int *yes)
{
	struct tcfs_node d;
	int rc = tcfs_ns_get(s, dir, &d);

	*yes = 0;
	if (rc < 0 || d.kind != TCFS_DIR)
		return rc;
	return tcfs_kernel_key_dir_at(s, d.parent, d.name, yes);
}

int tcfs_kernel_root(struct tcfs_store *s, uint64_t dir, char *buf,
		     size_t len)
{
	struct tcfs_node d;
	int rc = tcfs_ns_get(s, dir, &d);

	return rc < 0 ? rc : tcfs_kernel_root_at(s, d.parent, buf, len);
}

int tcfs_kernel_root_at(struct tcfs_store *s, uint64_t root, char *buf,
			size_t len)
{
	assert(len > 0);
	buf[0] = '\0';
	return root == TCFS_ROOT_INO ? 0 : tcfs_ns_path(s, root, buf, len);
}

/* A group file's row: a file named as GLOB '__grp__*.json' says. */
static int is_group_row(const struct tcfs_node *n)
{
	static const char pre[] = "__grp__", suf[] = ".json";
	size_t len = strlen(n->name);

	return n->kind == TCFS_FILE && len >= sizeof(pre) - 1 + sizeof(suf) - 1 &&
	       strncmp(n->name, pre, sizeof(pre) - 1) == 0 &&
	       strcmp(n->name + len - (sizeof(suf) - 1), suf) == 0;
}

/* Recomputes the rows of the group files in d, a key dir: its entries
 * read once, the group files among them found here. */
static int refresh_key_dir(struct tcfs_store *s, const struct tcfs_node *d)
{
	struct tcfs_node *sib = NULL;
	size_t nsib = 0;
	int rc = tcfs_ns_list(s, d->ino, 0, 0, &sib, &nsib), shared = -1;

	for (size_t i = 0; rc == 0 && i < nsib; i++) {
		if (!is_group_row(&sib[i]))
			continue;
		if (shared < 0)
			shared = written_shared(s, d, sib, nsib);
		rc = refresh_one(s, &sib[i], sib, nsib, shared);
	}
	free(sib);
	return rc;
}

/* The dir d's key dir rows: recomputed, or, with forget, dropped when d
 * is no key dir. */
static int refresh_node(struct tcfs_store *s, const struct tcfs_node *d,
			int forget)
{
	int rc = 0, key = 0;

	if (d->kind == TCFS_DIR)
		rc = tcfs_kernel_key_dir_at(s, d->parent, d->name, &key);
	if (rc < 0)
		return rc;
	if (key)
		return refresh_key_dir(s, d);
	if (!forget)
		return 0;
	rc = tcfs_db_exec(tcfs_store_db(s), sql_forget, "i", (int64_t)d->ino);
	return rc < 0 ? rc : 0;
}

int tcfs_kernel_refresh_dir(struct tcfs_store *s, uint64_t dir)
{
	struct tcfs_node d;
	int rc = tcfs_ns_get(s, dir, &d);

	return rc < 0 ? rc : refresh_node(s, &d, 1);
}

int tcfs_kernel_files_changed(struct tcfs_store *s, uint64_t dir)
{
	struct tcfs_node d;
	int rc = tcfs_ns_get(s, dir, &d);

	return rc < 0 ? rc : refresh_node(s, &d, 0);
}

int tcfs_kernel_dir_files_changed(struct tcfs_store *s,
				  const struct tcfs_node *dir)
{
	return refresh_node(s, dir, 0);
}

static const char sql_unshared[] =
	"SELECT grp_ino FROM kernels WHERE NOT shared AND grp_ino IN"
	" (SELECT ino FROM nodes WHERE parent = ?) LIMIT 1";
static const char sql_set_shared[] =
	"UPDATE kernels SET shared = 1 WHERE grp_ino IN"
	" (SELECT ino FROM nodes WHERE parent = ?)";

int tcfs_kernel_dir_shared(struct tcfs_store *s, uint64_t dir, int *yes)
{
	uint64_t *one = NULL;
	size_t n = 0;
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(*one), fill_ino,
				 NULL, &one, &n, sql_unshared, "i",
				 (int64_t)dir);

	free(one);
	*yes = rc == 0 && n == 0;
	return rc < 0 ? rc : 0;
}

int tcfs_kernel_set_shared(struct tcfs_store *s, uint64_t dir)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_set_shared, "i",
			      (int64_t)dir);

	return rc < 0 ? rc : 0;
}

/* "sm_90" and "sm90" name the same CUDA arch as "90". */
static const char *arch_core(const char *a)
{
	if (strncmp(a, "sm_", 3) == 0)
		return a + 3;
	if (strncmp(a, "sm", 2) == 0 && a[2] >= '0' && a[2] <= '9')
		return a + 2;
	return a;
}

int tcfs_kernel_same_arch(const char *a, const char *b)
{
	return strcmp(arch_core(a), arch_core(b)) == 0;
}

/* The filter's arch: an arch ("90", "sm_90", "gfx942"), or a target as
 * list prints it, BACKEND-ARCH ("cuda-90"). */
static int arch_matches(const char *want, const struct tcfs_kernel *k)
{
	size_t b = strlen(k->backend);

	if (tcfs_kernel_same_arch(want, k->arch))
		return 1;
	return b && strncmp(want, k->backend, b) == 0 && want[b] == '-' &&
	       tcfs_kernel_same_arch(want + b + 1, k->arch);
}

int tcfs_kernel_match(const struct tcfs_kernel *k,
		      const struct tcfs_kernel_filter *f)
{
	if (!f)
		return 1;
	if (f->name && fnmatch(f->name, k->name, 0) != 0)
		return 0;
	if (f->backend && strcmp(f->backend, k->backend) != 0)
		return 0;
	if (f->arch && !arch_matches(f->arch, k))
		return 0;
	return 1;
}

/* Column col as a string into dst (len bytes, cut as snprintf would):
 * snprintf's own parse of "%s" was a tenth of reading 100,000 rows. */
static void copy_text(sqlite3_stmt *st, int col, char *dst, size_t len)
{
	const char *s = tcfs_db_text(st, col, NULL);
	size_t n = strnlen(s, len - 1);

	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* A walk of kernel rows: the filter, and the roots it has met.  A
 * root's name says whose own dir it is (fs/users.c); a subquery for it
 * in each row was 12% of a prune of 100,000 kernels, and they share a
 * few roots. */
#define ROOT_SLOTS 16
struct rows {
	struct tcfs_db *db;
	const struct tcfs_kernel_filter *f;	/* NULL: every kernel */
	struct {
		uint64_t ino;	/* 0: none yet */
		int64_t own_uid;
	} root[ROOT_SLOTS];
};

static const char sql_root_name[] = "SELECT name FROM nodes WHERE ino = ?";

static int root_name_row(void *ctx, sqlite3_stmt *st)
{
	uint32_t own;

	if (tcfs_name_private(tcfs_db_text(st, 0, NULL), &own))
		*(int64_t *)ctx = own;
	return 0;
}

/* The user whose own dir root is, or -1. */
static int root_owner(struct rows *r, uint64_t root, int64_t *own_uid)
{
	int64_t own = -1;
	int rc;

	assert(root != 0);
	if (r->root[root % ROOT_SLOTS].ino == root) {
		*own_uid = r->root[root % ROOT_SLOTS].own_uid;
		return 0;
	}
	rc = tcfs_db_each(r->db, root_name_row, &own, sql_root_name, "i",
			  (int64_t)root);
	if (rc < 0)
		return rc;
	r->root[root % ROOT_SLOTS].ino = root;
	r->root[root % ROOT_SLOTS].own_uid = own;
	*own_uid = own;
	return 0;
}

/* 0, or negative: the root's name could not be read. */
static int kernel_from_row(struct rows *r, sqlite3_stmt *st,
			   struct tcfs_kernel *k)
{
	const char *meta = tcfs_db_text(st, 4, NULL);

	memset(k, 0, sizeof(*k));
	k->grp_ino = (uint64_t)sqlite3_column_int64(st, 0);
	k->dir_ino = (uint64_t)sqlite3_column_int64(st, 1);
	copy_text(st, 2, k->key, sizeof(k->key));
	copy_text(st, 3, k->name, sizeof(k->name));
	k->meta = strcmp(meta, "ok") == 0	   ? TCFS_META_OK
		  : strcmp(meta, "missing") == 0 ? TCFS_META_MISSING
						 : TCFS_META_INVALID;
	copy_text(st, 5, k->backend, sizeof(k->backend));
	copy_text(st, 6, k->arch, sizeof(k->arch));
	k->warp_size = sqlite3_column_type(st, 7) == SQLITE_NULL
			       ? -1 : sqlite3_column_int64(st, 7);
	k->num_warps = sqlite3_column_type(st, 8) == SQLITE_NULL
			       ? -1 : sqlite3_column_int64(st, 8);
	k->num_stages = sqlite3_column_type(st, 9) == SQLITE_NULL
				? -1 : sqlite3_column_int64(st, 9);
	k->num_ctas = sqlite3_column_type(st, 10) == SQLITE_NULL
			      ? -1 : sqlite3_column_int64(st, 10);
	copy_text(st, 11, k->triton_version, sizeof(k->triton_version));
	k->total_bytes = (uint64_t)sqlite3_column_int64(st, 12);
	k->binary_bytes = (uint64_t)sqlite3_column_int64(st, 13);
	k->ir_bytes = (uint64_t)sqlite3_column_int64(st, 14);
	k->created_ns = sqlite3_column_int64(st, 15);
	copy_text(st, KERNEL_COLS - 4, k->origin, sizeof(k->origin));
	k->uid = sqlite3_column_int64(st, KERNEL_COLS - 3);
	k->root_ino = (uint64_t)sqlite3_column_int64(st, KERNEL_COLS - 2);
	k->shared = sqlite3_column_int(st, KERNEL_COLS - 1) != 0;
	/* A user's own kernel is in that user's own dir (fs/users.c). */
	return root_owner(r, k->root_ino, &k->own_uid);
}

/* ctx: the walk; a kernel its filter does not match is skipped. */
static int fill_kernel(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct rows *r = ctx;
	int rc = kernel_from_row(r, st, elem);

	return rc < 0 ? rc : !tcfs_kernel_match(elem, r->f);
}

int tcfs_kernel_list(struct tcfs_store *s, const struct tcfs_kernel_filter *f,
		     struct tcfs_kernel **out, size_t *n)
{
	struct rows r = { .db = tcfs_store_db(s), .f = f };
	int rc = tcfs_db_collect(r.db, sizeof(**out), fill_kernel, &r, out, n,
				 sql_list, "");

	return rc < 0 ? rc : 0;
}

int tcfs_kernel_get(struct tcfs_store *s, uint64_t grp_ino,
		    struct tcfs_kernel *k)
{
	struct rows r = { .db = tcfs_store_db(s) };
	struct tcfs_kernel *one = NULL;
	size_t n = 0;
	int rc = tcfs_db_collect(r.db, sizeof(*one), fill_kernel, &r, &one, &n,
				 sql_get, "i", (int64_t)grp_ino);

	if (rc == 0 && n == 0)
		rc = -ENOENT;
	if (rc == 0)
		*k = one[0];
	free(one);
	return rc < 0 ? rc : 0;
}

static int fill_use(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_kernel_use *u = elem;
	struct rows *r = ctx;
	int rc = kernel_from_row(r, st, &u->k);

	if (rc < 0)
		return rc;
	u->files = (uint64_t)sqlite3_column_int64(st, KERNEL_COLS);
	u->hits = (uint64_t)sqlite3_column_int64(st, KERNEL_COLS + 1);
	u->misses = (uint64_t)sqlite3_column_int64(st, KERNEL_COLS + 2);
	u->last_hit_ns = sqlite3_column_int64(st, KERNEL_COLS + 3);
	return !tcfs_kernel_match(&u->k, r->f);
}

int tcfs_kernel_uses(struct tcfs_store *s, const struct tcfs_kernel_filter *f,
		     struct tcfs_kernel_use **out, size_t *n)
{
	struct rows r = { .db = tcfs_store_db(s), .f = f };
	int rc = tcfs_db_collect(r.db, sizeof(**out), fill_use, &r, out, n,
				 sql_uses, "");

	return rc < 0 ? rc : 0;
}

struct each_use {
	struct rows rows;
	int (*cb)(void *ctx, const struct tcfs_kernel_use *u);
	void *ctx;
};

static int each_use_row(void *ctx, sqlite3_stmt *st)
{
	struct each_use *e = ctx;
	struct tcfs_kernel_use u;
	int rc;

	memset(&u, 0, sizeof(u));
	rc = fill_use(&e->rows, &u, st);
	return rc == 0 ? e->cb(e->ctx, &u) : rc < 0 ? rc : 0;
}

static int each_use(struct tcfs_store *s, const char *sql,
		    const struct tcfs_kernel_filter *f,
		    int (*cb)(void *ctx, const struct tcfs_kernel_use *u),
		    void *ctx)
{
	struct each_use e = { { .db = tcfs_store_db(s), .f = f }, cb, ctx };
	int rc = tcfs_db_each(e.rows.db, each_use_row, &e, sql, "");

	return rc < 0 ? rc : 0;
}

int tcfs_kernel_each_use(struct tcfs_store *s,
			 const struct tcfs_kernel_filter *f,
			 int (*cb)(void *ctx, const struct tcfs_kernel_use *u),
			 void *ctx)
{
	return each_use(s, sql_each_use, f, cb, ctx);
}

int tcfs_kernel_each_use_unsorted(
	struct tcfs_store *s, const struct tcfs_kernel_filter *f,
	int (*cb)(void *ctx, const struct tcfs_kernel_use *u), void *ctx)
{
	return each_use(s, sql_uses, f, cb, ctx);
}

/* Each writer's kernels: one scan of kernels, one node lookup each. */
static const char sql_users[] =
	"SELECT g.uid, sum(k.total_bytes), count(*) FROM kernels k"
	" JOIN nodes g ON g.ino = k.grp_ino GROUP BY g.uid ORDER BY g.uid";

static int fill_user(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_kernel_user *u = elem;

	(void)ctx;
	u->uid = sqlite3_column_int64(st, 0);
	u->bytes = (uint64_t)sqlite3_column_int64(st, 1);
	u->kernels = (uint64_t)sqlite3_column_int64(st, 2);
	return 0;
}

int tcfs_kernel_users(struct tcfs_store *s, struct tcfs_kernel_user **out,
		      size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_user,
				 NULL, out, n, sql_users, "");

	return rc < 0 ? rc : 0;
}

/* Each owner's files that no kernel holds: outside every key dir with a
 * group file, out of limbo.  One scan of nodes (+parent: not through
 * nodes_parent, which would fetch every row by its ino as well), and of
 * kernels once: 0.2 s of CPU for 700,000 nodes. */
static const char sql_users_loose[] =
	"SELECT uid, sum(size), count(*) FROM nodes"
	" WHERE kind = 'f' AND +parent > 0 AND parent NOT IN"
	" (SELECT g.parent FROM kernels k JOIN nodes g ON g.ino = k.grp_ino)"
	" GROUP BY uid ORDER BY uid";

int tcfs_kernel_users_loose(struct tcfs_store *s,
			    struct tcfs_kernel_user **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_user,
				 NULL, out, n, sql_users_loose, "");

	return rc < 0 ? rc : 0;
}

int64_t tcfs_kernel_last_use(const struct tcfs_kernel_use *u)
{
	return u->last_hit_ns ? u->last_hit_ns : u->k.created_ns;
}

size_t tcfs_kernel_unused_since(struct tcfs_kernel_use *u, size_t n,
				int64_t t_ns)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		if (tcfs_kernel_last_use(&u[i]) < t_ns)
			u[kept++] = u[i];
	return kept;
}

/* Browsing queries, each served by an index (schema v4: kernels_name,
 * kernels_target). */
static const char sql_names[] =
	"SELECT DISTINCT name FROM kernels WHERE shared"
	" ORDER BY name LIMIT ? OFFSET ?";
static const char sql_names_of[] =
	"SELECT DISTINCT name FROM kernels WHERE backend = ? AND arch = ?"
	" AND shared ORDER BY name LIMIT ? OFFSET ?";
static const char sql_targets[] =
	"SELECT DISTINCT backend, arch FROM kernels"
	" WHERE backend IS NOT NULL AND arch IS NOT NULL AND shared"
	" ORDER BY backend, arch LIMIT ? OFFSET ?";
/* The key dirs of kernels named ?5 (of target ?6, ?7), each with its rank
 * among the dirs of its key by inode (tcfs_kernel_at's entry); with a key
 * ?1, only its ?2-th dir. */
#define KEYS_WHERE(cond)                                                    \
	"SELECT ino, key, nth FROM (SELECT d.ino AS ino, d.name AS key,"     \
	" row_number() OVER (PARTITION BY d.name ORDER BY d.ino) AS nth"     \
	" FROM kernels k JOIN nodes g ON g.ino = k.grp_ino"                  \
	" JOIN nodes d ON d.ino = g.parent WHERE " cond " GROUP BY d.ino)"   \
	" WHERE ?1 IS NULL OR (key = ?1 AND nth = ?2)"                       \
	" ORDER BY key, nth LIMIT ?3 OFFSET ?4"
/* Users' own kernels (fs/users.c) are no one else's to browse. */
#define KEYS_SHARED " AND k.shared"
static const char sql_keys[] = KEYS_WHERE("k.name = ?5" KEYS_SHARED);
static const char sql_keys_of[] = KEYS_WHERE(
	"k.name = ?5 AND k.backend = ?6 AND k.arch = ?7" KEYS_SHARED);

/* SQLite's LIMIT is signed: "no limit" is its largest value. */
static int64_t page(size_t limit)
{
	return limit > (size_t)INT64_MAX ? INT64_MAX : (int64_t)limit;
}

static int fill_name(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_kernel_name *k = elem;

	(void)ctx;
	snprintf(k->s, sizeof(k->s), "%s", tcfs_db_text(st, 0, NULL));
	return 0;
}

int tcfs_kernel_names(struct tcfs_store *s, const char *backend,
		      const char *arch, uint64_t offset, size_t limit,
		      struct tcfs_kernel_name **out, size_t *n)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc;

	if (backend)
		rc = tcfs_db_collect(db, sizeof(**out), fill_name, NULL, out, n,
				     sql_names_of, "ttii", backend, arch,
				     page(limit), (int64_t)offset);
	else
		rc = tcfs_db_collect(db, sizeof(**out), fill_name, NULL, out, n,
				     sql_names, "ii", page(limit),
				     (int64_t)offset);
	return rc < 0 ? rc : 0;
}

static int fill_target(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_kernel_target *t = elem;

	(void)ctx;
	snprintf(t->backend, sizeof(t->backend), "%s",
		 tcfs_db_text(st, 0, NULL));
	snprintf(t->arch, sizeof(t->arch), "%s", tcfs_db_text(st, 1, NULL));
	return 0;
}

int tcfs_kernel_targets(struct tcfs_store *s, uint64_t offset, size_t limit,
			struct tcfs_kernel_target **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_target,
				 NULL, out, n, sql_targets, "ii", page(limit),
				 (int64_t)offset);

	return rc < 0 ? rc : 0;
}

static int fill_at(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_kernel_at *a = elem;
	int64_t nth = sqlite3_column_int64(st, 2);

	(void)ctx;
	a->dir_ino = (uint64_t)sqlite3_column_int64(st, 0);
	snprintf(a->key, sizeof(a->key), "%s", tcfs_db_text(st, 1, NULL));
	if (nth > 1)
		snprintf(a->entry, sizeof(a->entry), "%s@%lld", a->key,
			 (long long)nth);
	else
		snprintf(a->entry, sizeof(a->entry), "%s", a->key);
	return 0;
}

/* "KEY" into KEY and 1, "KEY@N" into KEY and N (N >= 2, no leading
 * zeros: each dir has one entry name); -ENOENT for any other name. */
static int parse_entry(const char *entry, char *key, size_t len,
		       int64_t *nth)
{
	const char *at = strrchr(entry, '@');
	char *end;
	long long v;

	if (!at) {
		*nth = 1;
		return snprintf(key, len, "%s", entry) < (int)len ? 0 : -ENOENT;
	}
	if (at[1] < '1' || at[1] > '9' || (size_t)(at - entry) >= len)
		return -ENOENT;
	errno = 0;
	v = strtoll(at + 1, &end, 10);
	if (*end || errno || v < 2)
		return -ENOENT;
	memcpy(key, entry, (size_t)(at - entry));
	key[at - entry] = '\0';
	*nth = v;
	return 0;
}

int tcfs_kernel_keys(struct tcfs_store *s, const char *name,
		     const char *backend, const char *arch, const char *entry,
		     uint64_t offset, size_t limit, struct tcfs_kernel_at **out,
		     size_t *n)
{
	struct tcfs_db *db = tcfs_store_db(s);
	char key[TCFS_NAME_MAX + 1];
	int64_t nth = 0;
	int rc;

	if (entry && parse_entry(entry, key, sizeof(key), &nth) < 0) {
		*out = NULL;
		*n = 0;
		return 0;
	}
	if (backend)
		rc = tcfs_db_collect(db, sizeof(**out), fill_at, NULL, out, n,
				     sql_keys_of, "tiiittt", entry ? key : NULL,
				     nth, page(limit), (int64_t)offset, name,
				     backend, arch);
	else
		rc = tcfs_db_collect(db, sizeof(**out), fill_at, NULL, out, n,
				     sql_keys, "tiiit", entry ? key : NULL, nth,
				     page(limit), (int64_t)offset, name);
	return rc < 0 ? rc : 0;
}

/* The key dirs (of kernels, or with ?3 FX graphs below a dir so named)
 * whose name is in [?1, ?2): a range of nodes_dirs. */
static const char sql_prefix[] =
	"SELECT d.name FROM nodes d"
	" WHERE d.kind = 'd' AND d.name >= ?1 AND d.name < ?2"
	"   AND (EXISTS (SELECT 1 FROM nodes g JOIN kernels k"
	"                ON k.grp_ino = g.ino WHERE g.parent = d.ino)"
	"        OR EXISTS (SELECT 1 FROM nodes x JOIN nodes f"
	"                   ON f.ino = x.parent"
	"                   WHERE x.ino = d.parent AND f.name = ?3))"
	" GROUP BY d.name ORDER BY d.name LIMIT ?4";

struct candidate {
	char key[TCFS_NAME_MAX + 1];
};

static int fill_candidate(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct candidate *c = elem;

	(void)ctx;
	snprintf(c->key, sizeof(c->key), "%s", tcfs_db_text(st, 0, NULL));
	return 0;
}

/* The first keys that begin with prefix, one more than an error names:
 * *v owned by the caller (free()). */
static int candidates(struct tcfs_store *s, const char *prefix,
		      const char *fx_dir, struct candidate **v, size_t *n)
{
	char hi[TCFS_NAME_MAX + 1];
	size_t k = strlen(prefix);

	*v = NULL;
	*n = 0;
	if (k == 0 || k > TCFS_NAME_MAX)
		return 0;
	memcpy(hi, prefix, k + 1);
	/* The least name past every one that begins with prefix. */
	while (k > 0 && (unsigned char)hi[k - 1] == 0xff)
		hi[--k] = '\0';
	if (k == 0)
		return 0;
	hi[k - 1] = (char)((unsigned char)hi[k - 1] + 1);
	return tcfs_db_collect(tcfs_store_db(s), sizeof(**v), fill_candidate,
			       NULL, v, n, sql_prefix, "ttti", prefix, hi,
			       fx_dir, (int64_t)TCFS_KERNEL_CANDIDATES + 1);
}

/* The error for a prefix that begins several keys, naming them. */
static int ambiguous(const char *key, const struct candidate *v, size_t n)
{
	char list[TCFS_KERNEL_CANDIDATES * (TCFS_NAME_MAX + 2) + 16];
	size_t at = 0;

	list[0] = '\0';
	for (size_t i = 0; i < n && i < TCFS_KERNEL_CANDIDATES; i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
				       i ? ", " : "", v[i].key);
	return tcfs_err_set(-ENOTUNIQ, "%s: ambiguous, it begins several keys: %s%s", key,
			    list, n > TCFS_KERNEL_CANDIDATES ? ", ..." : "");
}

/* key with its ASCII letters in upper (up) or lower case, into out. */
static void recase(const char *key, int up, char *out, size_t len)
{
	size_t i;

	for (i = 0; key[i] && i + 1 < len; i++)
		out[i] = (char)(up ? toupper((unsigned char)key[i])
				   : tolower((unsigned char)key[i]));
	out[i] = '\0';
}

int tcfs_kernel_resolve(struct tcfs_store *s, const char *key,
			const char *fx_dir, char *out, size_t len)
{
	char up[TCFS_NAME_MAX + 1], low[TCFS_NAME_MAX + 1];
	const char *tries[] = { key, up, low };
	int rc = -ENOENT;

	recase(key, 1, up, sizeof(up));
	recase(key, 0, low, sizeof(low));
	for (size_t t = 0; rc == -ENOENT && t < 3; t++) {
		struct candidate *v = NULL;
		size_t n = 0;

		if (t && strcmp(tries[t], key) == 0)
			continue;	/* the same case: asked already */
		rc = candidates(s, tries[t], fx_dir, &v, &n);
		if (rc == 0 && n == 0)
			rc = -ENOENT;
		/* The key itself sorts first of those it begins. */
		else if (rc == 0 && n > 1 && strcmp(v[0].key, tries[t]) != 0)
			rc = ambiguous(key, v, n);
		else if (rc == 0 && snprintf(out, len, "%s", v[0].key) >= (int)len)
			rc = -ENAMETOOLONG;
		free(v);
	}
	return rc;
}
