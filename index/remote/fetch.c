/* fetch: a kernel or a single file from the remote, its sizes checked
 * before its bytes are asked for, and its bytes checked as cfg.trust
 * says before anyone sees them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/base/err.h"
#include "index/base/text.h"
#include "index/base/name.h"
#include "index/remote/keyfmt.h"
#include "index/remote/pack.h"
#include "index/remote/pt2.h"
#include "index/remote/remote.h"

/* Slots of a fetch: the group (or the file), its sidecar, the children. */
#define F_HEAD 0
#define F_SIDECAR 1
#define F_CHILD 2
#define F_SLOTS (F_CHILD + TCFS_WIRE_FILES_MAX)

/* What a fetch is of: it is counted as such. */
enum fetch_what {
	FETCH_FILE,
	FETCH_KERNEL,
	FETCH_ENTRY,
};

/* One fetch's state: on the heap, as its keys alone are 130 KiB. */
struct fetch {
	struct tcfs_remote *r;
	const struct tcfs_remote_cfg *cfg;
	const char *key;
	struct tcfs_sidecar sc;
	int has_sc;
	int signed_ok;
	struct tcfs_wire_names names;
	char rkey[F_SLOTS][TCFS_KEYFMT_KEY_MAX + 1];
	const char *kp[F_SLOTS];
	int64_t sizes[F_SLOTS];
	char *vals[F_SLOTS];
	size_t lens[F_SLOTS];
	uint64_t got;		/* bytes of values received */
	int64_t until_ns;	/* the probe's budget ends (monotonic) */
	enum tcfs_remote_trust trust;	/* what its sidecar must prove */
	const char *trust_option;	/* the option that said so */
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Before each further call: a fetch that took its budget (remote_budget)
 * asks no more.  Each call is also given the budget's end, which bounds
 * its every read, whatever sizes the remote claims. */
static int fetch_in_time(const struct fetch *x, const char *what)
{
	if (mono_ns() <= x->until_ns)
		return 0;
	return tcfs_err_set(-ETIMEDOUT, "remote %s: over remote_budget "
			    "(%d ms) before %s", x->rkey[F_HEAD],
			    x->cfg->budget_ms, what);
}

void tcfs_fetched_free(struct tcfs_fetched *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->f[i].bytes);
		f->f[i].bytes = NULL;
	}
	f->n = 0;
	f->bytes = 0;
}

static const char *trust_name(enum tcfs_remote_trust t)
{
	return t == TCFS_TRUST_ANY ? "any"
	       : t == TCFS_TRUST_SIGNED ? "signed" : "checked";
}

/* The Redis key of file into slot i. */
static int fetch_key(struct fetch *x, size_t i, const char *file)
{
	int rc = tcfs_remote_key(x->r, x->key, file, x->rkey[i],
				 sizeof(x->rkey[i]));

	x->kp[i] = x->rkey[i];
	if (rc)
		return tcfs_err_set(rc, "remote: %s/%s: no key of the format",
				    x->key, file);
	return 0;
}

/* The sidecar of slot F_SIDECAR (or its absence) against cfg.trust. */
static int fetch_trust(struct fetch *x, const char *name, int group)
{
	const struct tcfs_remote_cfg *cfg = x->cfg;
	const char *skey = x->rkey[F_SIDECAR];
	int rc;

	if (!x->vals[F_SIDECAR]) {
		if (x->trust == TCFS_TRUST_ANY)
			return 0;
		return tcfs_err_set(x->trust == TCFS_TRUST_SIGNED ? -EPERM
								  : -EBADMSG,
				    "remote %s: absent: refused under"
				    " %s=%s", skey, x->trust_option,
				    trust_name(x->trust));
	}
	rc = tcfs_sidecar_parse(x->vals[F_SIDECAR], x->lens[F_SIDECAR],
				x->key, name, &x->sc);
	if (!rc && x->sc.group != group)
		rc = tcfs_err_set(-EBADMSG, "the sidecar of a %s",
				  group ? "file, not a kernel"
					: "kernel, not a file");
	if (rc)
		return tcfs_err_prefix(rc, "remote %s", skey);
	x->has_sc = 1;
	/* With a key, every sidecar must carry its HMAC, whatever the
	 * trust: unsigned or wrongly signed, its writer is one who should
	 * not be (remote_trust=any still takes stock Triton's groups, which
	 * have no sidecar at all). */
	if (x->trust == TCFS_TRUST_SIGNED || cfg->hmac_len) {
		rc = tcfs_sidecar_verify(&x->sc, cfg->hmac_key, cfg->hmac_len);
		if (rc)
			return tcfs_err_prefix(rc, "remote %s", skey);
		x->signed_ok = 1;
	}
	return 0;
}

/* Bytes of slot i against the sidecar, when there is one. */
static int fetch_check(struct fetch *x, size_t i, const char *file)
{
	int rc;

	if (!x->has_sc)
		return 0;
	rc = tcfs_sidecar_check(&x->sc, file, x->vals[i], x->lens[i]);
	if (rc)
		return tcfs_err_prefix(rc, "remote %s", x->rkey[i]);
	return 0;
}

/* The group and its sidecar, in one call, each bounded as JSON: both
 * checked, the group's children parsed into x->names. */
static int fetch_group(struct fetch *x, const char *name)
{
	char gfile[TCFS_NAME_MAX + 1], sfile[TCFS_NAME_MAX + 1];
	int rc;

	rc = tcfs_wire_group_file(name, gfile, sizeof(gfile));
	if (!rc)
		rc = tcfs_wire_sidecar_file(name, sfile, sizeof(sfile));
	if (rc)
		return tcfs_err_set(-ENAMETOOLONG, "remote: %s: kernel name"
				    " too long", name);
	rc = fetch_key(x, F_HEAD, gfile);
	if (!rc)
		rc = fetch_key(x, F_SIDECAR, sfile);
	if (!rc)
		rc = tcfs_remote_get_until(x->r, x->kp, 2, TCFS_WIRE_SIDECAR_MAX,
					   x->vals, x->lens, x->until_ns);
	if (rc)
		return rc;
	x->got += x->lens[F_HEAD] + x->lens[F_SIDECAR];
	if (!x->vals[F_HEAD])
		return tcfs_err_set(-ENOENT, "remote %s: absent",
				    x->rkey[F_HEAD]);
	rc = fetch_trust(x, name, 1);
	if (!rc)
		rc = fetch_check(x, F_HEAD, gfile);
	if (rc)
		return rc;
	rc = tcfs_wire_group_parse(x->vals[F_HEAD], x->lens[F_HEAD],
				   &x->names);
	if (rc)
		return tcfs_err_prefix(rc, "remote %s", x->rkey[F_HEAD]);
	/* Every file the sidecar lists is the group's, and only those. */
	if (x->has_sc && x->sc.n != x->names.n + 1)
		return tcfs_err_set(-EBADMSG, "remote %s: lists %zu %s,"
				    " the group %zu and itself",
				    x->rkey[F_SIDECAR], x->sc.n,
				    TCFS_NOUN(x->sc.n, "file"),
				    x->names.n + 1);
	return 0;
}

/* One child's size (known now, fetched not yet) against the bounds and
 * the sidecar; *total gains it. */
static int fetch_bound(struct fetch *x, size_t i, const char *file,
		       uint64_t *total)
{
	const struct tcfs_sidecar_file *sf;
	uint64_t size = (uint64_t)x->sizes[i];

	if (x->sizes[i] < 0)
		return tcfs_err_set(-ENOENT, "remote %s: absent", x->rkey[i]);
	if (size > x->cfg->file_max)
		return tcfs_err_set(-EFBIG, "remote %s: %llu bytes, over"
				    " remote_file_max", x->rkey[i],
				    (unsigned long long)size);
	*total += size;
	if (*total > x->cfg->kernel_max)
		return tcfs_err_set(-EFBIG, "remote %s: the kernel over"
				    " remote_kernel_max", x->rkey[F_HEAD]);
	if (!x->has_sc)
		return 0;
	sf = tcfs_sidecar_find(&x->sc, file);
	if (!sf)
		return tcfs_err_set(-EBADMSG, "remote %s: not in the sidecar",
				    x->rkey[i]);
	if (sf->size != size)
		return tcfs_err_set(-EBADMSG, "remote %s: %llu bytes, the"
				    " sidecar says %llu", x->rkey[i],
				    (unsigned long long)size,
				    (unsigned long long)sf->size);
	return 0;
}

/* The children's sizes, then (all present and within bounds) their
 * bytes in one call, each checked. */
static int fetch_children(struct fetch *x)
{
	size_t n = x->names.n;
	uint64_t total = x->lens[F_HEAD], max = 0;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++)
		rc = fetch_key(x, F_CHILD + i, x->names.name[i]);
	if (!rc && n)
		rc = fetch_in_time(x, "the children's sizes");
	if (!rc && n)
		rc = tcfs_remote_sizes_until(x->r, x->kp + F_CHILD, n,
					     x->sizes + F_CHILD, x->until_ns);
	for (size_t i = 0; i < n && !rc; i++) {
		rc = fetch_bound(x, F_CHILD + i, x->names.name[i], &total);
		if (!rc && (uint64_t)x->sizes[F_CHILD + i] > max)
			max = (uint64_t)x->sizes[F_CHILD + i];
	}
	/* At most the largest size just read: a value that grew since is
	 * -EFBIG, not a surprise. */
	if (!rc && n)
		rc = fetch_in_time(x, "the children");
	if (!rc && n)
		rc = tcfs_remote_get_until(x->r, x->kp + F_CHILD, n, max,
					   x->vals + F_CHILD, x->lens + F_CHILD,
					   x->until_ns);
	for (size_t i = 0; i < n && !rc; i++) {
		size_t s = F_CHILD + i;

		x->got += x->lens[s];
		if (!x->vals[s])
			rc = tcfs_err_set(-ENOENT, "remote %s: gone while"
					  " fetched", x->rkey[s]);
		else
			rc = fetch_check(x, s, x->names.name[i]);
	}
	return rc;
}

/* Counts a fetch's result (the calls counted their own errors). */
static int fetch_count(struct tcfs_remote *r, int rc, enum fetch_what what)
{
	struct tcfs_remote_stats *st = tcfs_remote_stats(r);

	if (!rc)
		atomic_fetch_add(what == FETCH_KERNEL ? &st->kernel_hits
				 : what == FETCH_FILE ? &st->module_hits
						      : &st->entry_hits,
				 1);
	else if (rc == -ENOENT)
		atomic_fetch_add(&st->misses, 1);
	else if (rc == -EBADMSG || rc == -EPERM || rc == -EFBIG)
		atomic_fetch_add(&st->refused, 1);
	return rc;
}

/* Moves slots [from, from + n) into out, named by names. */
static void fetch_hand(struct fetch *x, size_t from, size_t n,
		       const char (*names)[TCFS_NAME_MAX + 1],
		       struct tcfs_fetched *out)
{
	for (size_t i = 0; i < n; i++) {
		struct tcfs_fetched_file *f = &out->f[i];

		snprintf(f->name, sizeof(f->name), "%s", names[i]);
		f->bytes = x->vals[from + i];
		f->len = x->lens[from + i];
		x->vals[from + i] = NULL;
		out->bytes += f->len;
	}
	out->n = n;
	out->sidecar = x->has_sc;
	out->signed_ok = x->signed_ok;
}

static struct fetch *fetch_new(struct tcfs_remote *r, const char *key,
			       const char *name, enum fetch_what what,
			       struct tcfs_fetched *out)
{
	struct fetch *x = calloc(1, sizeof(*x));

	memset(out, 0, sizeof(*out));
	snprintf(out->key, sizeof(out->key), "%s", key);
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->group = what == FETCH_KERNEL;
	if (!x)
		return NULL;
	x->r = r;
	x->cfg = tcfs_remote_cfg_of(r);
	x->key = key;
	x->until_ns = mono_ns() + (int64_t)x->cfg->budget_ms * 1000000;
	x->trust = x->cfg->trust;
	x->trust_option = "remote_trust";
	return x;
}

static int fetch_end(struct fetch *x, int rc, enum fetch_what what,
		     struct tcfs_fetched *out)
{
	struct tcfs_remote *r = x->r;

	atomic_fetch_add(&tcfs_remote_stats(r)->bytes_fetched, x->got);
	for (size_t i = 0; i < F_SLOTS; i++)
		free(x->vals[i]);
	tcfs_sidecar_release(&x->sc);
	free(x);
	if (rc)
		tcfs_fetched_free(out);
	return fetch_count(r, rc, what);
}

int tcfs_remote_fetch_kernel(struct tcfs_remote *r, const char *key,
			     const char *name, struct tcfs_fetched *out)
{
	struct fetch *x = fetch_new(r, key, name, FETCH_KERNEL, out);
	int rc;

	if (!x)
		return -ENOMEM;
	rc = tcfs_name_check(name);
	if (rc)
		rc = tcfs_err_set(rc, "remote: %s: not a kernel name", name);
	if (!rc)
		rc = fetch_group(x, name);
	if (!rc)
		rc = fetch_children(x);
	if (!rc)
		fetch_hand(x, F_CHILD, x->names.n,
			   (const char (*)[TCFS_NAME_MAX + 1])x->names.name,
			   out);
	return fetch_end(x, rc, FETCH_KERNEL, out);
}

/* A single file's size (at most max) and its sidecar's, against the
 * bounds. */
static int fetch_file_sizes(struct fetch *x, uint64_t max)
{
	int rc = tcfs_remote_sizes_until(x->r, x->kp, 2, x->sizes,
					 x->until_ns);

	if (rc)
		return rc;
	if (x->sizes[F_HEAD] < 0)
		return tcfs_err_set(-ENOENT, "remote %s: absent",
				    x->rkey[F_HEAD]);
	if ((uint64_t)x->sizes[F_HEAD] > max)
		return tcfs_err_set(-EFBIG, "remote %s: %lld bytes, over"
				    " remote_file_max", x->rkey[F_HEAD],
				    (long long)x->sizes[F_HEAD]);
	if (x->sizes[F_SIDECAR] > (int64_t)TCFS_WIRE_SIDECAR_MAX)
		return tcfs_err_set(-EFBIG, "remote %s: %lld bytes, over %u",
				    x->rkey[F_SIDECAR],
				    (long long)x->sizes[F_SIDECAR],
				    TCFS_WIRE_SIDECAR_MAX);
	return 0;
}

/* A value (at most max bytes) and its sidecar, whose keys are in place:
 * sizes, then both in one call. */
static int fetch_pair(struct fetch *x, uint64_t max)
{
	int rc = fetch_file_sizes(x, max);

	if (rc)
		return rc;
	max = (uint64_t)x->sizes[F_HEAD];
	if (x->sizes[F_SIDECAR] > x->sizes[F_HEAD])
		max = (uint64_t)x->sizes[F_SIDECAR];
	rc = tcfs_remote_get_until(x->r, x->kp, 2, max, x->vals, x->lens,
				   x->until_ns);
	if (rc)
		return rc;
	x->got += x->lens[F_HEAD] + x->lens[F_SIDECAR];
	if (!x->vals[F_HEAD])
		return tcfs_err_set(-ENOENT, "remote %s: gone while fetched",
				    x->rkey[F_HEAD]);
	return 0;
}

/* The file and its sidecar: sizes, then both in one call, checked. */
static int fetch_one(struct fetch *x, const char *file)
{
	char sfile[TCFS_NAME_MAX + 1];
	int rc;

	if (tcfs_wire_sidecar_file(file, sfile, sizeof(sfile)))
		return tcfs_err_set(-ENAMETOOLONG, "remote: %s: name too long",
				    file);
	rc = fetch_key(x, F_HEAD, file);
	if (!rc)
		rc = fetch_key(x, F_SIDECAR, sfile);
	if (!rc)
		rc = fetch_pair(x, x->cfg->file_max);
	if (!rc)
		rc = fetch_trust(x, file, 0);
	if (!rc && x->has_sc && x->sc.n != 1)
		rc = tcfs_err_set(-EBADMSG, "remote %s: lists %zu files, not"
				  " 1", x->rkey[F_SIDECAR], x->sc.n);
	if (!rc)
		rc = fetch_check(x, F_HEAD, file);
	return rc;
}

int tcfs_remote_fetch_file(struct tcfs_remote *r, const char *key,
			   const char *file, struct tcfs_fetched *out)
{
	struct fetch *x;
	char name[1][TCFS_NAME_MAX + 1];
	int rc;

	/* A module is code every node dlopens: only when asked for (not
	 * counted: nothing was asked). */
	if (tcfs_name_artifact(file) == TCFS_ART_MODULE &&
	    !tcfs_remote_cfg_of(r)->modules) {
		memset(out, 0, sizeof(*out));
		return tcfs_err_set(-EPERM, "remote: %s/%s: a module, and"
				    " remote_modules is off", key, file);
	}
	x = fetch_new(r, key, file, FETCH_FILE, out);
	if (!x)
		return -ENOMEM;
	rc = tcfs_name_check(file);
	if (rc)
		rc = tcfs_err_set(rc, "remote: %s: not a file name", file);
	if (!rc)
		rc = fetch_one(x, file);
	if (!rc) {
		snprintf(name[0], sizeof(name[0]), "%s", file);
		fetch_hand(x, F_HEAD, 1, (const char (*)[TCFS_NAME_MAX + 1])name,
			   out);
	}
	return fetch_end(x, rc, FETCH_FILE, out);
}

/* The entry in slot F_HEAD's value, decoded in its place and named as
 * PyTorch names it, then checked against the sidecar as x->trust says:
 * before the caller, or anyone, sees a byte of it. */
static int fetch_entry_check(struct fetch *x, char name[TCFS_NAME_MAX + 1])
{
	char *entry = NULL;
	size_t len = 0;
	int rc;

	rc = tcfs_pt2_value_parse(x->vals[F_HEAD], x->lens[F_HEAD],
				  x->cfg->file_max, &entry, &len);
	if (rc)
		return tcfs_err_prefix(rc, "remote %s", x->rkey[F_HEAD]);
	free(x->vals[F_HEAD]);
	x->vals[F_HEAD] = entry;
	x->lens[F_HEAD] = len;
	tcfs_pt2_entry_name(entry, len, name);
	rc = fetch_trust(x, name, 0);
	if (!rc && x->has_sc && x->sc.n != 1)
		rc = tcfs_err_set(-EBADMSG, "remote %s: lists %zu files, not"
				  " 1", x->rkey[F_SIDECAR], x->sc.n);
	return rc ? rc : fetch_check(x, F_HEAD, name);
}

/* A fetch of an entry (a pickle, code once read: only when
 * remote_inductor says so), its sidecar checked as that option says. */
static struct fetch *entry_fetch(struct tcfs_remote *r, const char *key,
				 const char *name, struct tcfs_fetched *out,
				 int *rc)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	struct fetch *x;

	if (cfg->inductor == TCFS_INDUCTOR_OFF) {
		memset(out, 0, sizeof(*out));
		*rc = tcfs_err_set(-EPERM, "remote: %s: an entry, and"
				   " remote_inductor is off", key);
		return NULL;
	}
	x = fetch_new(r, key, name, FETCH_ENTRY, out);
	*rc = x ? 0 : -ENOMEM;
	if (x) {
		x->trust = cfg->inductor == TCFS_INDUCTOR_ANY
				   ? TCFS_TRUST_ANY
				   : TCFS_TRUST_SIGNED;
		x->trust_option = "remote_inductor";
	}
	return x;
}

int tcfs_remote_fetch_entry(struct tcfs_remote *r, const char *cache_id,
			    const char *key, struct tcfs_fetched *out)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	char name[1][TCFS_NAME_MAX + 1];
	int rc;
	struct fetch *x = entry_fetch(r, key, "", out, &rc);

	if (!x)
		return rc;
	rc = tcfs_pt2_key(cache_id, key, x->rkey[F_HEAD],
			  sizeof(x->rkey[F_HEAD]));
	if (!rc)
		rc = tcfs_pt2_sidecar_key(cache_id, key, x->rkey[F_SIDECAR],
					  sizeof(x->rkey[F_SIDECAR]));
	if (rc)
		rc = tcfs_err_set(-EINVAL, "remote: %s: not an entry's key",
				  key);
	x->kp[F_HEAD] = x->rkey[F_HEAD];
	x->kp[F_SIDECAR] = x->rkey[F_SIDECAR];
	if (!rc)
		rc = fetch_pair(x, tcfs_pt2_value_max(cfg->file_max));
	if (!rc)
		rc = fetch_entry_check(x, name[0]);
	if (!rc) {
		snprintf(out->name, sizeof(out->name), "%s", name[0]);
		fetch_hand(x, F_HEAD, 1, (const char (*)[TCFS_NAME_MAX + 1])name,
			   out);
	}
	return fetch_end(x, rc, FETCH_ENTRY, out);
}

int tcfs_remote_fetch_pack(struct tcfs_remote *r, const char *prefix,
			   const char *key, const char *name,
			   struct tcfs_fetched *out)
{
	const struct tcfs_remote_cfg *cfg = tcfs_remote_cfg_of(r);
	char names[1][TCFS_NAME_MAX + 1];
	int rc;
	struct fetch *x = entry_fetch(r, key, name, out, &rc);

	if (!x)
		return rc;
	rc = tcfs_pack_key(prefix, key, name, x->rkey[F_HEAD],
			   sizeof(x->rkey[F_HEAD]));
	if (!rc)
		rc = tcfs_pack_sidecar_key(prefix, key, name,
					   x->rkey[F_SIDECAR],
					   sizeof(x->rkey[F_SIDECAR]));
	if (rc)
		rc = tcfs_err_set(-EINVAL, "remote: %s/%s: not a pack's key",
				  key, name);
	x->kp[F_HEAD] = x->rkey[F_HEAD];
	x->kp[F_SIDECAR] = x->rkey[F_SIDECAR];
	/* A whole dir: bounded as a kernel is. */
	if (!rc)
		rc = fetch_pair(x, cfg->kernel_max);
	if (!rc)
		rc = fetch_trust(x, name, 0);
	if (!rc && x->has_sc && x->sc.n != 1)
		rc = tcfs_err_set(-EBADMSG, "remote %s: lists %zu files, not"
				  " 1", x->rkey[F_SIDECAR], x->sc.n);
	if (!rc)
		rc = fetch_check(x, F_HEAD, name);
	if (!rc) {
		snprintf(names[0], sizeof(names[0]), "%s", name);
		fetch_hand(x, F_HEAD, 1,
			   (const char (*)[TCFS_NAME_MAX + 1])names, out);
	}
	return fetch_end(x, rc, FETCH_ENTRY, out);
}
