/* prune: whole kernels (or their IR) out of the store, and their blobs. */
#include "index/maint/prune.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/blob/cas.h"
#include "index/store/db.h"
#include "index/base/err.h"
#include "index/base/json.h"
#include "index/maint/gc.h"
#include "index/model/group.h"
#include "index/base/name.h"
#include "index/tree/ns.h"
#include "index/store/store.h"
#include "index/base/vec.h"

/* Every node of a tree (the dir itself included), with its blob. */
static const char sql_tree[] =
	"WITH RECURSIVE t(ino) AS (SELECT ?"
	"  UNION ALL SELECT n.ino FROM nodes n JOIN t ON n.parent = t.ino)"
	" SELECT n.ino, n.kind, n.size, n.blob FROM nodes n JOIN t"
	" ON n.ino = t.ino";
static const char sql_evicted[] =
	"INSERT OR REPLACE INTO evicted (key, name, time) VALUES (?, ?, ?)";
static const char sql_count[] =
	"INSERT INTO counters (name, value) VALUES (?, ?)"
	" ON CONFLICT (name) DO UPDATE SET value = value + excluded.value";
static const char sql_counters[] =
	"SELECT name, value FROM counters WHERE name IN"
	" ('evictions', 'evicted_bytes', 'evicted_requested')";

static int by_last_use(const void *a, const void *b)
{
	const struct tcfs_prune_victim *x = a, *y = b;

	if (x->last_used_ns != y->last_used_ns)
		return x->last_used_ns < y->last_used_ns ? -1 : 1;
	return x->dir_ino < y->dir_ino ? -1 : x->dir_ino > y->dir_ino;
}

/* A key dir's kernels together, by name. */
static int by_dir_and_name(const void *a, const void *b)
{
	const struct tcfs_prune_victim *x = a, *y = b;

	if (x->dir_ino != y->dir_ino)
		return x->dir_ino < y->dir_ino ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct picking {
	const struct tcfs_prune_select *sel;
	struct tcfs_prune_victim *v;
	size_t n, cap;
};

/* Each kernel sel picks, as a victim of its own (merge_dirs makes one of
 * a key dir's). */
static int pick_one(void *ctx, const struct tcfs_kernel_use *u)
{
	struct picking *p = ctx;
	const struct tcfs_kernel *k = &u->k;
	int64_t last = tcfs_kernel_last_use(u);
	struct tcfs_prune_victim *w;

	if (p->sel->unused_since_ns >= 0 && last >= p->sel->unused_since_ns)
		return 0;
	w = tcfs_vec_push(&p->v, &p->n, &p->cap, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->dir_ino = k->dir_ino;
	/* The same sizes as the kernel's (no cut), and no printf for each
	 * of 100,000. */
	static_assert(sizeof(w->key) == sizeof(k->key) &&
			      sizeof(w->name) == sizeof(k->name) &&
			      sizeof(w->backend) == sizeof(k->backend) &&
			      sizeof(w->arch) == sizeof(k->arch),
		      "a victim holds its kernel's strings whole");
	memcpy(w->key, k->key, sizeof(w->key));
	memcpy(w->name, k->name, sizeof(w->name));
	memcpy(w->backend, k->backend, sizeof(w->backend));
	memcpy(w->arch, k->arch, sizeof(w->arch));
	w->total_bytes = k->total_bytes;
	w->ir_bytes = k->ir_bytes;
	w->last_used_ns = last;
	w->uid = k->uid;
	return 0;
}

/* A dir with two kernels is one victim: its first kernel by name, as
 * recent as the more recent of them.  v is sorted by_dir_and_name;
 * returns how many victims are left. */
static size_t merge_dirs(struct tcfs_prune_victim *v, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		struct tcfs_prune_victim *w = out ? &v[out - 1] : NULL;

		if (w && w->dir_ino == v[i].dir_ino) {
			if (v[i].last_used_ns > w->last_used_ns)
				w->last_used_ns = v[i].last_used_ns;
			continue;
		}
		if (out != i)
			v[out] = v[i];
		out++;
	}
	assert(out <= n);
	return out;
}

int tcfs_prune_pick(struct tcfs_store *s, const struct tcfs_prune_select *sel,
		    struct tcfs_prune_victim **out, size_t *n)
{
	struct picking p = { sel, NULL, 0, 0 };
	int rc = tcfs_kernel_each_use_unsorted(s, &sel->filter, pick_one, &p);

	if (rc < 0) {
		free(p.v);
		return rc;
	}
	if (p.n) {
		qsort(p.v, p.n, sizeof(*p.v), by_dir_and_name);
		p.n = merge_dirs(p.v, p.n);
		qsort(p.v, p.n, sizeof(*p.v), by_last_use);
	}
	*out = p.v;
	*n = p.n;
	return 0;
}

void tcfs_prune_done_free(struct tcfs_prune_done *done)
{
	free(done->nodes);
	free(done->blobs);
	memset(done, 0, sizeof(*done));
}

static int push(void *v, size_t *n, size_t *cap, size_t elem, const void *x)
{
	void *slot = tcfs_vec_push(v, n, cap, elem);

	if (!slot)
		return -ENOMEM;
	memcpy(slot, x, elem);
	return 0;
}

static int tree_row(void *ctx, sqlite3_stmt *st)
{
	struct tcfs_prune_done *d = ctx;
	uint64_t ino = (uint64_t)sqlite3_column_int64(st, 0);
	struct tcfs_hash h;
	int rc = push(&d->nodes, &d->nnodes, &d->ncap, sizeof(ino), &ino);

	if (rc == 0 && tcfs_db_hash(st, 3, &h) == 0) {
		d->files++;
		d->bytes += (uint64_t)sqlite3_column_int64(st, 2);
		rc = push(&d->blobs, &d->nblobs, &d->bcap, sizeof(h), &h);
	}
	return rc;
}

/* A group file rewritten without its IR children: the template rendered
 * whole and stored again through the binary-only policy (group.h). */
static int group_without_ir(struct tcfs_store *s, const struct tcfs_node *dir,
			    const struct tcfs_node *g,
			    struct tcfs_prune_done *done)
{
	struct tcfs_cas *cas = tcfs_store_cas(s);
	struct tcfs_owner own = { g->uid, g->gid };	/* as before */
	struct tcfs_content c;
	char *tmpl = NULL, *raw = NULL;
	size_t tlen = 0, rlen = 0;
	int rc;

	if (g->fmt != TCFS_FMT_GROUP)
		return tcfs_err_set(-EUCLEAN, "%s/%s: not a relocatable group "
				    "file: its IR kept", dir->name, g->name);
	rc = tcfs_group_load(cas, &g->blob, &tmpl, &tlen);
	if (rc == 0)
		rc = tcfs_group_render(tmpl, tlen, "/", dir->name,
				       TCFS_GROUP_ALL, &raw, &rlen);
	if (rc == 0)
		rc = tcfs_group_put(cas, dir->name, raw, rlen,
				    TCFS_GROUP_BINARY_ONLY, &c, NULL);
	if (rc == 0 && c.fmt != TCFS_FMT_GROUP)
		rc = -EUCLEAN;
	/* A new inode, not new bytes for the old one: the kernel may keep
	 * the old one's pages, and asks for a group file's entry anew at
	 * each probe. */
	if (rc == 0)
		rc = tcfs_ns_unlink(s, dir->ino, g->name);
	if (rc == 0)
		rc = tcfs_ns_create(s, dir->ino, g->name, g->mode, g->mtime_ns,
				    &c, &own, NULL);
	if (rc == 0)
		rc = push(&done->nodes, &done->nnodes, &done->ncap,
			  sizeof(g->ino), &g->ino);
	if (rc == 0)	/* the old template, unless another names it */
		rc = push(&done->blobs, &done->nblobs, &done->bcap,
			  sizeof(g->blob), &g->blob);
	free(tmpl);
	free(raw);
	return rc;
}

/* Drops dir's IR files, its group files first rewritten to not list them. */
static int remove_ir(struct tcfs_store *s, const struct tcfs_node *dir,
		     struct tcfs_prune_done *done)
{
	struct tcfs_node *kids = NULL;
	size_t nk = 0;
	int rc = tcfs_ns_list(s, dir->ino, 0, 0, &kids, &nk);

	for (size_t i = 0; rc == 0 && i < nk; i++)
		if (kids[i].kind == TCFS_FILE &&
		    tcfs_name_artifact(kids[i].name) == TCFS_ART_GROUP)
			rc = group_without_ir(s, dir, &kids[i], done);
	for (size_t i = 0; rc == 0 && i < nk; i++) {
		if (kids[i].kind != TCFS_FILE ||
		    tcfs_name_artifact(kids[i].name) != TCFS_ART_IR)
			continue;
		rc = push(&done->nodes, &done->nnodes, &done->ncap,
			  sizeof(kids[i].ino), &kids[i].ino);
		if (rc == 0)
			rc = push(&done->blobs, &done->nblobs, &done->bcap,
				  sizeof(kids[i].blob), &kids[i].blob);
		if (rc == 0)
			rc = tcfs_ns_unlink(s, dir->ino, kids[i].name);
		if (rc == 0) {
			done->files++;
			done->bytes += kids[i].size;
		}
	}
	free(kids);
	return rc;
}

int tcfs_prune_remove(struct tcfs_store *s, const struct tcfs_prune_victim *v,
		      enum tcfs_prune_how how, struct tcfs_prune_done *done)
{
	struct tcfs_db *db = tcfs_store_db(s);
	struct tcfs_node dir;
	int rc;

	memset(done, 0, sizeof(*done));
	rc = tcfs_store_begin(s);
	if (rc < 0)
		return rc;
	/* Chosen before this transaction: gone or replaced meanwhile, it is
	 * not the kernel that was chosen. */
	rc = tcfs_ns_get(s, v->dir_ino, &dir);
	if (rc == 0 && (dir.kind != TCFS_DIR || strcmp(dir.name, v->key) != 0 ||
			(int64_t)dir.parent <= 0))	/* <= 0: in limbo */
		rc = -ENOENT;
	done->parent = dir.parent;
	if (rc == 0 && how == TCFS_PRUNE_IR) {
		rc = remove_ir(s, &dir, done);
	} else if (rc == 0) {
		rc = tcfs_db_each(db, tree_row, done, sql_tree, "i",
				  (int64_t)dir.ino);
		if (rc == 0)
			rc = tcfs_ns_unlink_tree(s, dir.parent, dir.name);
		if (rc == 0 && how == TCFS_PRUNE_EVICT)
			rc = tcfs_db_exec(db, sql_evicted, "tti", v->key,
					  v->name, tcfs_ns_now());
	}
	rc = tcfs_store_end(s, rc < 0 ? rc : 0);
	if (rc < 0)
		tcfs_prune_done_free(done);
	return rc;
}

/* Whether blob h must stay: a row names it, or the caller holds it.
 * The one rule every free of a prune or the mount's evictor goes by. */
struct keeper {
	struct tcfs_store *s;
	const struct tcfs_prune_hooks *hooks;
};

static int referenced(void *ctx, const struct tcfs_hash *h)
{
	const struct keeper *k = ctx;

	if (k->hooks && k->hooks->held && k->hooks->held(k->hooks->ctx, h))
		return 1;
	return tcfs_gc_referenced(k->s, h);
}

int tcfs_prune_free(struct tcfs_store *s, const struct tcfs_hash *blobs,
		    size_t n, const struct tcfs_prune_hooks *hooks,
		    uint64_t *freed, size_t *kept)
{
	struct tcfs_cas *cas = tcfs_store_cas(s);
	struct keeper keep = { s, hooks };
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		uint64_t got = 0;

		rc = tcfs_cas_free(cas, &blobs[i], referenced, &keep, &got);
		*freed += got;
		k += rc == 0 && got == 0;
	}
	if (kept)
		*kept = k;
	return rc;
}

void tcfs_prune_report_free(struct tcfs_prune_report *r)
{
	free(r->taken);
	free(r->pending);
	memset(r, 0, sizeof(*r));
}

/* A blob not freed: waiting for the kernel to forget the removed nodes
 * that name it, or just put (cas.h), it goes to r->pending; named by
 * the tree, or gone, it is no business of ours. */
static int keep_pending(struct tcfs_store *s, const struct tcfs_hash *h,
			struct tcfs_prune_report *r)
{
	uint64_t size = 0;
	int rc;

	if (tcfs_cas_stat(tcfs_store_cas(s), h, &size) < 0 || size == 0)
		return 0;
	rc = tcfs_gc_live(s, h);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	r->pending_bytes += size;
	if (tcfs_cas_fresh(tcfs_store_cas(s), h))
		r->fresh_bytes += size;
	return push(&r->pending, &r->npending, &r->pcap, sizeof(*h), h);
}

/* Frees what d's removal left unnamed; the rest waits in r->pending.
 * Only once the removal is committed: a deferred commit (the mount,
 * db.h) that a kill -9 loses would bring back rows naming freed blobs. */
static int free_done(struct tcfs_store *s, const struct tcfs_prune_done *d,
		     const struct tcfs_prune_hooks *hooks,
		     struct tcfs_prune_report *r)
{
	struct tcfs_cas *cas = tcfs_store_cas(s);
	struct keeper keep = { s, hooks };
	int rc = tcfs_store_sync(s);

	for (size_t i = 0; rc == 0 && i < d->nblobs; i++) {
		uint64_t got = 0;

		rc = tcfs_cas_free(cas, &d->blobs[i], referenced, &keep, &got);
		r->freed_bytes += got;
		if (rc == 0 && got == 0)
			rc = keep_pending(s, &d->blobs[i], r);
	}
	return rc;
}

int tcfs_prune_run(struct tcfs_store *s,
		   const struct tcfs_prune_victim *victims, size_t n,
		   enum tcfs_prune_how how, int dry_run,
		   const struct tcfs_prune_hooks *hooks,
		   struct tcfs_prune_report *r)
{
	int rc = 0;

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct tcfs_prune_victim *v = &victims[i];
		struct tcfs_prune_done d;
		int want;

		if (how == TCFS_PRUNE_IR && v->ir_bytes == 0)
			continue;	/* nothing to drop */
		want = hooks && hooks->want ? hooks->want(hooks->ctx, v) : 1;
		if (want < 0)
			break;
		if (want == 0) {
			r->skipped++;
			continue;
		}
		if (dry_run) {
			if (hooks && hooks->release)
				hooks->release(hooks->ctx);
			r->bytes += how == TCFS_PRUNE_IR ? v->ir_bytes
							 : v->total_bytes;
			rc = push(&r->taken, &r->ntaken, &r->cap, sizeof(v), &v);
			continue;
		}
		rc = tcfs_prune_remove(s, v, how, &d);
		if (hooks && hooks->release)
			hooks->release(hooks->ctx);
		if (rc == -ENOENT || rc == -EUCLEAN) {
			r->skipped++;
			rc = 0;
			continue;
		}
		if (rc < 0)
			break;
		if (hooks && hooks->removed)
			hooks->removed(hooks->ctx, v, &d);
		r->files += d.files;
		r->bytes += d.bytes;
		rc = push(&r->taken, &r->ntaken, &r->cap, sizeof(v), &v);
		if (rc == 0)
			rc = free_done(s, &d, hooks, r);
		tcfs_prune_done_free(&d);
	}
	return rc;
}

const char *tcfs_prune_target(const struct tcfs_prune_victim *v, char *buf,
			      size_t len)
{
	snprintf(buf, len, "%s%s%s", v->backend,
		 v->backend[0] && v->arch[0] ? "-" : "", v->arch);
	return buf;
}

cJSON *tcfs_prune_report_json(const struct tcfs_prune_report *r,
			      enum tcfs_prune_how how, int dry_run)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "kernels");
	int ok = o && a;

	for (size_t i = 0; ok && i < r->ntaken; i++) {
		const struct tcfs_prune_victim *v = r->taken[i];
		cJSON *k = cJSON_CreateObject();
		char target[80];

		ok = k && cJSON_AddItemToArray(a, k) &&
		     cJSON_AddStringToObject(k, "key", v->key) &&
		     cJSON_AddStringToObject(k, "name", v->name) &&
		     cJSON_AddStringToObject(k, "target",
					     tcfs_prune_target(v, target,
							       sizeof(target))) &&
		     tcfs_json_add_int(k, "bytes",
				       (int64_t)(how == TCFS_PRUNE_IR
							 ? v->ir_bytes
							 : v->total_bytes)) &&
		     tcfs_json_add_int(k, "last_used",
				       v->last_used_ns / 1000000000);
	}
	ok = ok && cJSON_AddBoolToObject(o, "dry_run", dry_run) &&
	     cJSON_AddBoolToObject(o, "ir", how == TCFS_PRUNE_IR) &&
	     tcfs_json_add_int(o, "files", (int64_t)r->files) &&
	     tcfs_json_add_int(o, "bytes", (int64_t)r->bytes) &&
	     tcfs_json_add_int(o, "freed_bytes", (int64_t)r->freed_bytes) &&
	     tcfs_json_add_int(o, "pending_bytes",
			       (int64_t)r->pending_bytes) &&
	     tcfs_json_add_int(o, "pending_new_bytes",
			       (int64_t)r->fresh_bytes) &&
	     tcfs_json_add_int(o, "skipped", (int64_t)r->skipped);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int tcfs_prune_count_eviction(struct tcfs_store *s, uint64_t kernels,
			      uint64_t bytes)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc = tcfs_db_begin(db);

	if (rc == 0)
		rc = tcfs_db_exec(db, sql_count, "ti", "evictions",
				  (int64_t)kernels);
	if (rc >= 0)
		rc = tcfs_db_exec(db, sql_count, "ti", "evicted_bytes",
				  (int64_t)bytes);
	return tcfs_db_end(db, rc < 0 ? rc : 0);
}

static int counter_row(void *ctx, sqlite3_stmt *st)
{
	struct tcfs_prune_counters *c = ctx;
	const char *name = (const char *)sqlite3_column_text(st, 0);
	uint64_t v = (uint64_t)sqlite3_column_int64(st, 1);

	if (strcmp(name, "evictions") == 0)
		c->evictions = v;
	else if (strcmp(name, "evicted_bytes") == 0)
		c->evicted_bytes = v;
	else
		c->evicted_requested = v;
	return 0;
}

int tcfs_prune_counters(struct tcfs_store *s, struct tcfs_prune_counters *c)
{
	memset(c, 0, sizeof(*c));
	return tcfs_db_each(tcfs_store_db(s), counter_row, c, sql_counters,
			    "");
}
