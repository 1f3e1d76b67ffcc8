/*
 * tcfs remote: the fleet tier by hand: status (does it answer, how much of
 * the store it holds), push (pre-warm a fleet from this store), pull
 * (pre-warm this store from the fleet), offline or mounted.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "progress.h"
#include "remote_open.h"
#include "fs/fs.h"
#include "index/base/err.h"
#include "index/base/text.h"
#include "index/model/kernel.h"
#include "index/remote/keyfmt.h"
#include "index/remote/land.h"
#include "index/remote/option.h"
#include "index/remote/publish.h"
#include "index/remote/settings.h"
#include "index/store/store.h"
#include "index/tree/ns.h"
#include "index/tree/nsread.h"

static const struct opt_cmd cmd = {
	"remote", "status|push|pull", 1, 1, "say what to do: status, push or pull",
	"The fleet tier (Redis, in Triton's own format) by hand.\n"
	"  status  whether the remote answers, how fast, and how many of the\n"
	"          store's kernels it holds\n"
	"  push    publishes the store's kernels that match the filters (those\n"
	"          there already, and those that came from the remote, are\n"
	"          skipped): pre-warms a fleet from one node\n"
	"  pull    fetches every remote kernel that matches --name and --arch\n"
	"          into the store, checked as a mount checks it: pre-warms a\n"
	"          new node.  A mounted store's daemon does it, from the\n"
	"          mount's own remote.\n"
	"The remote is the one -o names (as tcfs mount -o takes it: remote=URL,\n"
	"remote_auth_file=F, ...), else the store's (tcfs config remote URL).\n",
	NULL,
	"Exit status: 0 success, 1 failure (the remote does not answer; a\n"
	"kernel failed), 2 usage error (no remote named, a bad option).\n",
};

struct run {
	struct cli_common co;
	struct tcfs_kernel_filter f;
	const char *opts;	/* -o, joined */
	int quiet;
	struct progress prog;	/* push's or pull's */
	struct tcfs_remote_cfg cfg;
	struct tcfs_remote *r;
};

/* The remote: -o's, else the store's.  CLI_OK, or the exit status. */
static int open_remote(struct run *u, struct tcfs_store *s)
{
	return remote_open("remote", u->opts, s, &u->cfg, &u->r);
}

static int held(struct run *u, const struct tcfs_kernel *ks, size_t n,
		size_t *out)
{
	enum { BATCH = 256 };
	static char keys[BATCH][TCFS_KEYFMT_KEY_MAX];
	const char *kp[BATCH];
	int64_t sizes[BATCH];
	char grp[TCFS_NAME_MAX + 16];
	int rc = 0;

	*out = 0;
	for (size_t i = 0; rc == 0 && i < n; i += BATCH) {
		size_t m = n - i < BATCH ? n - i : BATCH;

		for (size_t j = 0; rc == 0 && j < m; j++) {
			rc = tcfs_wire_group_file(ks[i + j].name, grp,
						  sizeof(grp));
			if (rc == 0)
				rc = tcfs_remote_key(u->r, ks[i + j].key, grp,
						     keys[j], sizeof(keys[j]));
			kp[j] = keys[j];
		}
		if (rc == 0)
			rc = tcfs_remote_sizes(u->r, kp, m, sizes);
		for (size_t j = 0; rc == 0 && j < m; j++)
			*out += sizes[j] >= 0;
	}
	return rc;
}

static int status(struct run *u, struct tcfs_store *s)
{
	char url[512], info[256] = "";
	struct tcfs_kernel *ks = NULL;
	size_t n = 0, have = 0;
	int64_t ns = 0;
	int rc = tcfs_remote_ping(u->r, &ns, info, sizeof(info));
	const char *why = rc < 0 ? tcfs_err_msg() : "";
	char whybuf[512];

	snprintf(whybuf, sizeof(whybuf), "%s", why[0] ? why : strerror(-rc));
	tcfs_remote_cfg_url_of(&u->cfg, url, sizeof(url));
	if (rc == 0)
		rc = tcfs_kernel_list(s, &u->f, &ks, &n);
	if (rc == 0)
		rc = held(u, ks, n, &have);
	if (rc < 0 && !whybuf[0])
		snprintf(whybuf, sizeof(whybuf), "%s", tcfs_err_msg());
	free(ks);
	if (u->co.json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "url", url);
		cJSON_AddBoolToObject(o, "answers", rc == 0);
		cJSON_AddNumberToObject(o, "latency_ms", (double)ns / 1e6);
		cJSON_AddStringToObject(o, "server", info);
		cJSON_AddNumberToObject(o, "kernels", (double)n);
		cJSON_AddNumberToObject(o, "held", (double)have);
		if (rc < 0)
			cJSON_AddStringToObject(o, "error", whybuf);
		else
			cJSON_AddNullToObject(o, "error");
		return cli_print_json(o) == CLI_OK && rc == 0 ? CLI_OK
							      : CLI_FAIL;
	}
	printf("remote   %s\n", url);
	if (rc < 0) {
		printf("answers  no: %s\n", whybuf);
		return CLI_FAIL;
	}
	printf("answers  yes, in %.2f ms (%s)\n", (double)ns / 1e6, info);
	printf("holds    %zu of the store's %zu %s\n", have, n,
	       TCFS_NOUN(n, "kernel"));
	return CLI_OK;
}

static int push(struct run *u, struct tcfs_store *s)
{
	struct tcfs_kernel *ks = NULL;
	size_t n = 0, sent = 0, skipped = 0, failed = 0;
	int rc = tcfs_kernel_list(s, &u->f, &ks, &n);

	/* Asked for by name: a read-only node's publish=off is for the
	 * mount's own publishing. */
	if (u->cfg.publish == TCFS_PUBLISH_OFF)
		u->cfg.publish = TCFS_PUBLISH_BINARY;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int one = tcfs_remote_publish_kernel(u->r, s, ks[i].dir_ino,
						     ks[i].key, ks[i].name);

		sent += one == 1;
		skipped += one == 0;
		if (one < 0) {
			failed++;
			cli_lib_err("remote", one, ks[i].key);
		}
		progress_tick(&u->prog, i + 1, n);
	}
	progress_end(&u->prog);
	free(ks);
	if (rc < 0) {
		cli_lib_err("remote", rc, tcfs_store_path(s));
		return CLI_FAIL;
	}
	if (u->co.json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "published", (double)sent);
		cJSON_AddNumberToObject(o, "skipped", (double)skipped);
		cJSON_AddNumberToObject(o, "failed", (double)failed);
		cli_print_json(o);
	} else if (!u->quiet) {
		printf("published %zu %s (%zu there already or from the "
		       "remote), %zu failed\n", sent, TCFS_NOUN(sent, "kernel"),
		       skipped, failed);
	}
	return failed ? CLI_FAIL : CLI_OK;
}

/* A remote kernel: its cache key and name. */
struct rk {
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];
};

struct found {
	struct run *u;
	struct rk *v;
	size_t n, cap;
};

/* Keys the remote holds, at most: a pull reads their names first. */
#define PULL_MAX 1000000

/* One key the scan found: a group file's, of a kernel the name matches. */
static int found_one(void *ctx, const char *rkey)
{
	struct found *fd = ctx;
	char key[TCFS_NAME_MAX + 1], file[TCFS_NAME_MAX + 1];
	struct rk *v;

	if (!tcfs_keyfmt_parse(fd->u->cfg.key_format, rkey, key, sizeof(key),
			       file, sizeof(file)))
		return 0;
	if (fd->n == fd->cap) {
		v = realloc(fd->v, (fd->cap ? fd->cap * 2 : 256) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		fd->v = v;
		fd->cap = fd->cap ? fd->cap * 2 : 256;
	}
	v = &fd->v[fd->n];
	if (!tcfs_name_group_kernel(file, v->name, sizeof(v->name)) ||
	    (fd->u->f.name && fnmatch(fd->u->f.name, v->name, 0) != 0))
		return 0;
	snprintf(v->key, sizeof(v->key), "%s", key);
	fd->n++;
	return 0;
}

/* Whether remote kernel k is for --arch (its NAME.json says), as its
 * fetch will check it. */
static int arch_ok(struct run *u, const struct rk *k)
{
	char meta[TCFS_NAME_MAX + 8], rkey[TCFS_KEYFMT_KEY_MAX];
	const char *kp[1] = { rkey };
	struct tcfs_kernel kk;
	char *val = NULL;
	size_t len = 0;
	int ok;

	if (!u->f.arch && !u->f.backend)
		return 1;
	snprintf(meta, sizeof(meta), "%s.json", k->name);
	if (tcfs_remote_key(u->r, k->key, meta, rkey, sizeof(rkey)) < 0 ||
	    tcfs_remote_get(u->r, kp, 1, TCFS_KERNEL_META_MAX, &val, &len) < 0 ||
	    !val)
		return 0;
	memset(&kk, 0, sizeof(kk));
	ok = tcfs_kernel_parse_meta(val, len, &kk) == 0;
	/* Named by its group file, as the store names it. */
	snprintf(kk.name, sizeof(kk.name), "%s", k->name);
	ok = ok && tcfs_kernel_match(&kk, &u->f);
	free(val);
	return ok;
}

/* Pull's tally: landed, here already, gone meanwhile, failed. */
struct tally {
	size_t landed, here, missing, failed;
};

/* One kernel into the store, offline: its key dir at the top. */
static int pull_here(struct run *u, struct tcfs_store *s, const struct rk *k)
{
	char grp[TCFS_NAME_MAX + 16];
	struct tcfs_fetched got = { 0 };
	struct tcfs_node dir, n;
	int rc = tcfs_ns_lookup(s, TCFS_ROOT_INO, k->key, &dir);

	if (rc == -ENOENT)
		rc = tcfs_ns_mkdir(s, TCFS_ROOT_INO, k->key, 0755,
				   tcfs_ns_now(), NULL, &dir);
	if (rc < 0)
		return rc;
	snprintf(grp, sizeof(grp), "__grp__%s.json", k->name);
	if (tcfs_ns_lookup(s, dir.ino, grp, &n) == 0)
		return 0;
	rc = tcfs_remote_fetch_kernel(u->r, k->key, k->name, &got);
	if (rc == 0)
		rc = tcfs_remote_land(s, dir.ino, &got, NULL, NULL);
	tcfs_fetched_free(&got);
	return rc < 0 ? rc : 1;
}

static void count(struct tally *t, int rc, const struct rk *k)
{
	if (rc == 1)
		t->landed++;
	else if (rc == 0)
		t->here++;
	else if (rc == -ENOENT)
		t->missing++;
	else {
		t->failed++;
		cli_lib_err("remote", rc, k->key);
	}
}

/* Through the mount's daemon (fs/ctl.c), 16 at a time. */
static int pull_mounted(struct run *u, const char *store,
			const struct rk *v, size_t n, struct tally *t)
{
	for (size_t i = 0; i < n; i += 16) {
		cJSON *req = cJSON_CreateObject(), *items, *resp = NULL;
		const cJSON *e;
		int rc = -ENOMEM;

		cJSON_AddStringToObject(req, "op", "remote-fetch");
		items = cJSON_AddArrayToObject(req, "items");
		for (size_t j = i; items && j < n && j < i + 16; j++) {
			cJSON *it = cJSON_CreateObject();

			cJSON_AddStringToObject(it, "key", v[j].key);
			cJSON_AddStringToObject(it, "name", v[j].name);
			cJSON_AddItemToArray(items, it);
		}
		if (items)
			rc = tcfs_fs_ctl_call(store, req, &resp);
		cJSON_Delete(req);
		e = cJSON_GetObjectItemCaseSensitive(resp, "error");
		if (rc < 0 || cJSON_IsString(e)) {
			cli_err("remote", "%s: the mount's daemon: %s", store,
				rc < 0 ? tcfs_err_msg() : e->valuestring);
			cJSON_Delete(resp);
			return CLI_FAIL;
		}
		cJSON_ArrayForEach(e, cJSON_GetObjectItem(resp, "errors"))
			cli_err("remote", "%s", e->valuestring);
		t->landed += (size_t)cJSON_GetNumberValue(
			cJSON_GetObjectItem(resp, "landed"));
		t->here += (size_t)cJSON_GetNumberValue(
			cJSON_GetObjectItem(resp, "here"));
		t->missing += (size_t)cJSON_GetNumberValue(
			cJSON_GetObjectItem(resp, "missing"));
		t->failed += (size_t)cJSON_GetNumberValue(
			cJSON_GetObjectItem(resp, "failed"));
		cJSON_Delete(resp);
		progress_tick(&u->prog, i + 16 < n ? i + 16 : n, n);
	}
	return CLI_OK;
}

static int pull_report(struct run *u, const struct tally *t)
{
	if (u->co.json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "landed", (double)t->landed);
		cJSON_AddNumberToObject(o, "here", (double)t->here);
		cJSON_AddNumberToObject(o, "missing", (double)t->missing);
		cJSON_AddNumberToObject(o, "failed", (double)t->failed);
		cli_print_json(o);
	} else if (!u->quiet) {
		printf("pulled %zu %s (%zu here already, %zu gone from the "
		       "remote or refused), %zu failed\n", t->landed,
		       TCFS_NOUN(t->landed, "kernel"), t->here, t->missing,
		       t->failed);
	}
	return t->failed ? CLI_FAIL : CLI_OK;
}

/* The remote kernels to pull: named so, and (when asked) for the arch. */
static int pull_list(struct run *u, struct found *fd)
{
	char pattern[TCFS_KEYFMT_KEY_MAX];
	size_t k = 0;
	int rc = tcfs_keyfmt_pattern(u->cfg.key_format, "__grp__*.json",
				     pattern, sizeof(pattern));

	fd->u = u;
	if (rc == 0)
		rc = tcfs_remote_scan(u->r, pattern, PULL_MAX, found_one, fd);
	for (size_t i = 0; rc >= 0 && i < fd->n; i++)
		if (arch_ok(u, &fd->v[i]))
			fd->v[k++] = fd->v[i];
	fd->n = k;
	if (rc < 0)
		cli_lib_err("remote", rc, "the remote");
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

/* Pulls into the store that s is (a reader, closed here): through the
 * daemon when mounted, else as its writer. */
static int pull(struct run *u, struct tcfs_store *s)
{
	char store[PATH_MAX], point[PATH_MAX];
	struct cli_store_opts so = u->co.store;
	struct found fd = { 0 };
	struct tally t = { 0 };
	int rc = pull_list(u, &fd), mounted;

	snprintf(store, sizeof(store), "%s", tcfs_store_path(s));
	mounted = cli_find_mount(store, NULL, store, point) == 0;
	tcfs_store_close(s);
	so.dir = store;
	if (rc == CLI_OK && mounted)
		rc = pull_mounted(u, store, fd.v, fd.n, &t);
	else if (rc == CLI_OK &&
		 (rc = cli_open_store("remote", &so, 0, 1, &s)) == CLI_OK) {
		for (size_t i = 0; i < fd.n; i++) {
			count(&t, pull_here(u, s, &fd.v[i]), &fd.v[i]);
			progress_tick(&u->prog, i + 1, fd.n);
		}
		if (tcfs_store_sync(s) < 0) {
			cli_lib_err("remote", -EIO, store);
			rc = CLI_FAIL;
		}
		tcfs_store_close(s);
	}
	progress_end(&u->prog);
	free(fd.v);
	return rc == CLI_OK ? pull_report(u, &t) : rc;
}

int cmd_remote(int argc, char **argv)
{
	static const char *const subs[] = { "status", "push", "pull" };
	struct run u = { .co = CLI_COMMON_INIT };
	struct tcfs_store *s = NULL;
	char **args;
	size_t which = 0;
	int rc;
	struct opt opts[] = {
		OPT_FN('o', NULL, "OPTIONS", &u.opts, remote_open_join,
		       "the remote, as tcfs mount -o takes it: remote=URL, "
		       "remote_auth_file=F, remote_trust=..., ..."),
		CLI_OPTS_FILTER(&u.f),
		CLI_OPT_QUIET(&u.quiet),
		CLI_OPTS_COMMON(&u.co, "status: {url, answers, latency_ms, "
				"server, kernels, held, error}; push: "
				"{published, skipped, failed}; pull: {landed, "
				"here, missing, failed}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	while (which < 3 && strcmp(args[0], subs[which]) != 0)
		which++;
	if (which == 3)
		return cli_usage_err("remote", "'%s': say status, push or pull",
				     args[0]);
	progress_init(&u.prog, which == 1 ? "pushing" : "pulling", "kernels",
		      u.quiet);
	/* pull may make the store; it becomes its writer later. */
	if (cli_open_store("remote", &u.co.store, which == 2, 0, &s) != CLI_OK)
		return CLI_FAIL;
	rc = open_remote(&u, s);
	if (rc == CLI_OK && which == 2)
		rc = pull(&u, s);	/* closes s */
	else {
		if (rc == CLI_OK)
			rc = which == 0 ? status(&u, s) : push(&u, s);
		tcfs_store_close(s);
	}
	tcfs_remote_close(u.r);
	explicit_bzero(&u.cfg, sizeof(u.cfg));
	return rc;
}
