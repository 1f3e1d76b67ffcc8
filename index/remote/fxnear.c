/* fxnear: a local FX graph against the fleet's, by their sidecars. */
#include "index/remote/fxnear.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"
#include "index/model/entry.h"
#include "index/model/fxgraph.h"
#include "index/remote/config.h"
#include "index/remote/pt2.h"
#include "index/remote/remote.h"
#include "index/remote/wire.h"

/* The sidecar keys found, and how their FKEY sits in them. */
struct keys {
	char **v;
	size_t n;
	const char *self;
	char head[96], tail[96];
};

/* A name and hash, sorted by name for the merge of two sides. */
struct in {
	const char *name, *hash, *value;
	size_t name_len, hash_len, value_len;
};

static int cmp_in(const void *a, const void *b)
{
	const struct in *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* FKEY of a sidecar key: what lies between head and tail. */
static int key_graph(const struct keys *k, const char *rkey, char *graph)
{
	size_t hl = strlen(k->head), tl = strlen(k->tail), n = strlen(rkey);

	if (n <= hl + tl || n - hl - tl > TCFS_NAME_MAX ||
	    strncmp(rkey, k->head, hl) != 0 ||
	    strcmp(rkey + n - tl, k->tail) != 0)
		return -EINVAL;
	memcpy(graph, rkey + hl, n - hl - tl);
	graph[n - hl - tl] = '\0';
	return 0;
}

static int found(void *ctx, const char *rkey)
{
	struct keys *k = ctx;
	char graph[TCFS_NAME_MAX + 1];
	char **v;

	if (key_graph(k, rkey, graph) < 0 || strcmp(graph, k->self) == 0)
		return 0;
	v = realloc(k->v, (k->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	k->v = v;
	if (!(v[k->n] = strdup(rkey)))
		return -ENOMEM;
	k->n++;
	return 0;
}

static void keys_free(struct keys *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i]);
	free(k->v);
}

/* Every other FX graph's sidecar key, at most TCFS_FXNEAR_SCAN_MAX. */
static int scan(struct tcfs_remote *r, struct keys *k)
{
	const char *id = tcfs_probe_kind(tcfs_entry_fx_kind())->remote_id;
	char pat[sizeof(k->head)], *star;
	int rc = tcfs_pt2_sidecar_key(id, "*", pat, sizeof(pat));

	if (rc < 0)
		return rc;
	star = strchr(pat, '*');
	assert(star && strlen(star + 1) < sizeof(k->tail));
	snprintf(k->tail, sizeof(k->tail), "%s", star + 1);
	*star = '\0';
	snprintf(k->head, sizeof(k->head), "%s", pat);
	*star = '*';
	return tcfs_remote_scan(r, pat, TCFS_FXNEAR_SCAN_MAX, found, k);
}

/* mine's lines, sorted by name, into *out (owned: free()). */
static int sorted_mine(const struct tcfs_fx_details *d, struct in **out)
{
	struct in *v = calloc(d->n ? d->n : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		v[i] = (struct in){ d->v[i].name, d->v[i].hash, d->v[i].value,
				    d->v[i].name_len, d->v[i].hash_len,
				    d->v[i].value_len };
	qsort(v, d->n, sizeof(*v), cmp_in);
	*out = v;
	return 0;
}

/* A sidecar's inputs, sorted by name, into *out (owned: free()). */
static int sorted_theirs(const struct tcfs_sidecar_inputs *s, struct in **out)
{
	struct in *v = calloc(s->n, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		v[i] = (struct in){ s->v[i].name, s->v[i].hash, NULL,
				    strlen(s->v[i].name),
				    strlen(s->v[i].hash), 0 };
	qsort(v, s->n, sizeof(*v), cmp_in);
	*out = v;
	return 0;
}

static int same_hash(const struct in *a, const struct in *b)
{
	return a->hash_len == b->hash_len &&
	       memcmp(a->hash, b->hash, a->hash_len) == 0;
}

/* Names whose hash differs, or that one side only has: one merge. */
static size_t distance(const struct in *a, size_t na, const struct in *b,
		       size_t nb)
{
	size_t i = 0, j = 0, d = 0;

	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : cmp_in(&a[i], &b[j]);

		if (c == 0)
			d += !same_hash(&a[i++], &b[j++]);
		else if (c < 0)
			d++, i++;
		else
			d++, j++;
	}
	return d;
}

/* Keeps graph among the nearest (sorted, ties to the first found);
 * 1 when it is now the nearest of all. */
static int keep(struct tcfs_fxnear *out, const char *graph, size_t differ)
{
	size_t at = out->n;

	while (at > 0 && out->near[at - 1].differ > differ)
		at--;
	if (at == TCFS_FXNEAR_SHOW)
		return 0;
	if (out->n < TCFS_FXNEAR_SHOW)
		out->n++;
	memmove(&out->near[at + 1], &out->near[at],
		(out->n - 1 - at) * sizeof(out->near[0]));
	snprintf(out->near[at].graph, sizeof(out->near[at].graph), "%s",
		 graph);
	out->near[at].differ = differ;
	return at == 0;
}

/* The state of one comparison: mine sorted, the nearest's inputs. */
struct cmp {
	struct tcfs_remote *r;
	struct in *mine;
	size_t nmine;
	struct tcfs_sidecar best;	/* its inputs only */
	int need_sig;
};

/* One sidecar value of graph (NULL: gone since the scan). */
static int one(struct cmp *c, struct tcfs_fxnear *out, const char *graph,
	       const char *val, size_t len)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(c->r);
	struct tcfs_sidecar *sc;
	struct in *theirs = NULL;
	int rc;

	if (!val)
		return 0;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	rc = tcfs_sidecar_parse(val, len, graph, NULL, sc);
	if (rc == 0 && c->need_sig)
		rc = tcfs_sidecar_verify(sc, cfg->hmac_key, cfg->hmac_len);
	if (rc == -ENOMEM)
		goto out;
	if (rc < 0) {
		out->refused++;
		rc = 0;
		goto out;
	}
	if (!sc->inputs) {
		out->no_inputs++;
		goto out;
	}
	rc = sorted_theirs(sc->inputs, &theirs);
	if (rc < 0)
		goto out;
	out->compared++;
	if (keep(out, graph,
		 distance(c->mine, c->nmine, theirs, sc->inputs->n))) {
		tcfs_sidecar_release(&c->best);
		c->best.inputs = sc->inputs;
		sc->inputs = NULL;
	}
out:
	tcfs_err_clear();
	free(theirs);
	tcfs_sidecar_release(sc);
	free(sc);
	return rc;
}

/* keys[0..n) fetched in one round trip; a value over the bound fails the
 * whole, so then they are asked one by one and that one refused. */
static int batch(struct cmp *c, struct tcfs_fxnear *out, const struct keys *k,
		 size_t from, size_t n)
{
	char *vals[TCFS_FXNEAR_BATCH] = { 0 }, graph[TCFS_NAME_MAX + 1];
	size_t lens[TCFS_FXNEAR_BATCH] = { 0 };
	int rc;

	assert(n <= TCFS_FXNEAR_BATCH);
	rc = tcfs_remote_get(c->r, (const char *const *)&k->v[from], n,
			     TCFS_WIRE_SIDECAR_MAX, vals, lens);
	if (rc == -EFBIG && n > 1) {
		tcfs_err_clear();
		for (size_t i = 0; i < n && rc != -ENOMEM; i++)
			rc = batch(c, out, k, from + i, 1);
		return rc == -ENOMEM ? rc : 0;
	}
	if (rc == -EFBIG) {
		tcfs_err_clear();
		out->refused++;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && key_graph(k, k->v[from + i], graph) == 0)
			rc = one(c, out, graph, vals[i], lens[i]);
		free(vals[i]);
	}
	return rc;
}

/* The differences against the nearest: mine's order, then theirs only. */
static int diff_one(cJSON *a, const struct in *name, const struct in *mine,
		    const struct in *theirs)
{
	char nm[TCFS_WIRE_INPUT_NAME_MAX + 1], v[TCFS_FXGRAPH_TEXT_MAX + 4];
	char h[TCFS_WIRE_INPUT_HASH_MAX + 1];
	cJSON *o = cJSON_CreateObject();
	size_t vl;

	if (!o || !cJSON_AddItemToArray(a, o))
		return cJSON_Delete(o), -ENOMEM;
	snprintf(nm, sizeof(nm), "%.*s", (int)name->name_len, name->name);
	cJSON_AddStringToObject(o, "input", nm);
	if (mine) {
		vl = mine->value_len;
		snprintf(v, sizeof(v), "%.*s%s",
			 (int)(vl > TCFS_FXGRAPH_TEXT_MAX ? TCFS_FXGRAPH_TEXT_MAX
							  : vl),
			 mine->value, vl > TCFS_FXGRAPH_TEXT_MAX ? "..." : "");
		cJSON_AddStringToObject(o, "local", v);
	} else {
		cJSON_AddNullToObject(o, "local");
	}
	if (theirs) {
		snprintf(h, sizeof(h), "%s", theirs->hash);
		cJSON_AddStringToObject(o, "remote", h);
	} else {
		cJSON_AddNullToObject(o, "remote");
	}
	return 0;
}

static int differences(const struct tcfs_fx_details *mine,
		       const struct in *smine, const struct tcfs_sidecar *best,
		       cJSON **out)
{
	struct in *theirs = NULL, key;
	cJSON *a = cJSON_CreateArray();
	int rc = a ? sorted_theirs(best->inputs, &theirs) : -ENOMEM;
	size_t nt = best->inputs->n, shown = 0;

	for (size_t i = 0; rc == 0 && i < mine->n; i++) {
		const struct in *t;

		key = (struct in){ .name = mine->v[i].name,
				   .name_len = mine->v[i].name_len };
		t = bsearch(&key, theirs, nt, sizeof(*theirs), cmp_in);
		key.hash = mine->v[i].hash;
		key.hash_len = mine->v[i].hash_len;
		key.value = mine->v[i].value;
		key.value_len = mine->v[i].value_len;
		if ((!t || !same_hash(t, &key)) &&
		    shown++ < TCFS_FXGRAPH_SHOW_MAX)
			rc = diff_one(a, &key, &key, t);
	}
	for (size_t j = 0; rc == 0 && j < nt; j++)
		if (!bsearch(&theirs[j], smine, mine->n, sizeof(*smine),
			     cmp_in) &&
		    shown++ < TCFS_FXGRAPH_SHOW_MAX)
			rc = diff_one(a, &theirs[j], NULL, &theirs[j]);
	free(theirs);
	if (rc < 0)
		cJSON_Delete(a);
	*out = rc < 0 ? NULL : a;
	return rc;
}

int tcfs_fxnear(struct tcfs_remote *r, const char *graph,
		const struct tcfs_fx_details *mine, struct tcfs_fxnear *out)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	struct keys k = { .self = graph };
	struct cmp c = { .r = r };
	int rc;

	memset(out, 0, sizeof(*out));
	c.need_sig = cfg->hmac_len > 0 ||
		     cfg->inductor == TCFS_INDUCTOR_SIGNED;
	rc = sorted_mine(mine, &c.mine);
	c.nmine = mine->n;
	if (rc == 0)
		rc = scan(r, &k);
	rc = rc > 0 ? 0 : rc;	/* a count, or past the bound: what came */
	out->scanned = k.n;
	for (size_t i = 0; rc == 0 && i < k.n; i += TCFS_FXNEAR_BATCH)
		rc = batch(&c, out, &k, i,
			   k.n - i < TCFS_FXNEAR_BATCH ? k.n - i
						       : TCFS_FXNEAR_BATCH);
	if (rc == 0 && out->n)
		rc = differences(mine, c.mine, &c.best, &out->differences);
	tcfs_sidecar_release(&c.best);
	free(c.mine);
	keys_free(&k);
	if (rc < 0)
		tcfs_fxnear_free(out);
	return rc;
}

void tcfs_fxnear_free(struct tcfs_fxnear *f)
{
	cJSON_Delete(f->differences);
	f->differences = NULL;
}
