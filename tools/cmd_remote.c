/*
 * tcfs remote: the fleet tier by hand: status (does it answer, how much of
 * the store it holds), push (pre-warm a fleet from this store), pull
 * (pre-warm this store from the fleet), offline or mounted.
 */
#include <errno.h>
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
#include "index/remote/survey.h"
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
	"remote_auth_file=F, ...), else, while the store is mounted, the\n"
	"mount's own (its -o remote, or the store's when it was mounted):\n"
	"status and pull then ask the mount's daemon; else the store's (tcfs\n"
	"config remote URL).\n",
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
	struct tcfs_remote *r;	/* NULL while the mount's daemon is asked */
	char point[PATH_MAX];	/* the mount to ask: mounted, no -o; or "" */
};

/* The remote: -o's, else the store's.  CLI_OK, or the exit status. */
static int open_remote(struct run *u, struct tcfs_store *s)
{
	return remote_open("remote", u->opts, s, &u->cfg, &u->r);
}

/* Asks the mount's daemon op (remote-status or remote-list) with the
 * filters: *resp its answer, or NULL when the mount has no remote.
 * CLI_OK, or CLI_FAIL after saying why. */
static int ask_mount(struct run *u, const char *store, const char *op,
		     cJSON **resp)
{
	cJSON *req = cJSON_CreateObject();
	const cJSON *e;
	int rc = -ENOMEM;

	*resp = NULL;
	if (req && cJSON_AddStringToObject(req, "op", op) &&
	    (!u->f.name || cJSON_AddStringToObject(req, "name", u->f.name)) &&
	    (!u->f.backend ||
	     cJSON_AddStringToObject(req, "backend", u->f.backend)) &&
	    (!u->f.arch || cJSON_AddStringToObject(req, "arch", u->f.arch)))
		rc = tcfs_fs_ctl_call(store, req, resp);
	cJSON_Delete(req);
	e = cJSON_GetObjectItemCaseSensitive(*resp, "error");
	if (rc < 0 || cJSON_IsString(e)) {
		cli_err("remote", "%s: the mount's daemon: %s", store,
			rc < 0 ? tcfs_err_msg() : e->valuestring);
		cJSON_Delete(*resp);
		*resp = NULL;
		return CLI_FAIL;
	}
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(*resp, "url"))) {
		cJSON_Delete(*resp);
		*resp = NULL;
	}
	return CLI_OK;
}

/* The remote a command opens itself, when not open yet. */
static int own_remote(struct run *u, struct tcfs_store *s)
{
	return u->r ? CLI_OK : open_remote(u, s);
}

static double fig(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

static const char *text(const cJSON *o, const char *name)
{
	const char *v = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(o, name));

	return v ? v : "";
}

/* The status: of the mount's own remote when the mount is asked (and has
 * one), else of the one -o or the store names. */
static int status(struct run *u, struct tcfs_store *s)
{
	cJSON *o = NULL;
	size_t n;
	int rc = CLI_OK;

	if (u->point[0])
		rc = ask_mount(u, tcfs_store_path(s), "remote-status", &o);
	if (rc == CLI_OK && !o && (rc = own_remote(u, s)) == CLI_OK &&
	    tcfs_remote_survey_status(u->r, s, &u->f, &o) < 0) {
		cli_err("remote", "out of memory");
		rc = CLI_FAIL;
	}
	if (rc != CLI_OK)
		return rc;
	rc = cJSON_IsTrue(cJSON_GetObjectItem(o, "answers")) ? CLI_OK
							     : CLI_FAIL;
	if (u->co.json)
		return cli_print_json(o) == CLI_OK ? rc : CLI_FAIL;
	printf("remote   %s", text(o, "url"));
	if (!u->r)
		printf(" (the mount's, at %s)", u->point);
	printf("\n");
	if (rc == CLI_OK) {
		n = (size_t)fig(o, "kernels");
		printf("answers  yes, in %.2f ms (%s)\n", fig(o, "latency_ms"),
		       text(o, "server"));
		printf("holds    %zu of the store's %zu %s\n",
		       (size_t)fig(o, "held"), n, TCFS_NOUN(n, "kernel"));
	} else {
		printf("answers  no: %s\n", text(o, "error"));
	}
	cJSON_Delete(o);
	return rc;
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

/* Pull's tally: landed, here already, gone meanwhile, failed. */
struct tally {
	size_t landed, here, missing, failed;
};

/* One kernel into the store, offline: its key dir at the top. */
static int pull_here(struct run *u, struct tcfs_store *s,
		     const struct tcfs_remote_kernel *k)
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

static void count(struct tally *t, int rc,
		  const struct tcfs_remote_kernel *k)
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
			const struct tcfs_remote_kernel *v, size_t n,
			struct tally *t)
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

/* The mount's answer to remote-list into *v and *n; -1 for none. */
static int take_items(const cJSON *resp, struct tcfs_remote_kernel **v,
		      size_t *n)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(resp, "items");
	const cJSON *it;
	int m = cJSON_GetArraySize(items);

	*n = 0;
	*v = calloc(m > 0 ? (size_t)m : 1, sizeof(**v));
	if (!*v)
		return -ENOMEM;
	cJSON_ArrayForEach(it, items) {
		const char *key = text(it, "key"), *name = text(it, "name");

		if (strlen(key) > TCFS_NAME_MAX || strlen(name) > TCFS_NAME_MAX)
			continue;
		snprintf((*v)[*n].key, sizeof((*v)[*n].key), "%s", key);
		snprintf((*v)[*n].name, sizeof((*v)[*n].name), "%s", name);
		(*n)++;
	}
	return 0;
}

/* The remote kernels to pull: named so, and (when asked) for the arch and
 * backend: of the mount's own remote when the mount is asked and has one,
 * else of the one -o or the store names.  CLI_OK, or the exit status. */
static int pull_list(struct run *u, struct tcfs_store *s,
		     struct tcfs_remote_kernel **v, size_t *n)
{
	cJSON *resp = NULL;
	int rc = CLI_OK;

	*v = NULL;
	*n = 0;
	if (u->point[0])
		rc = ask_mount(u, tcfs_store_path(s), "remote-list", &resp);
	if (rc == CLI_OK && resp && take_items(resp, v, n) < 0)
		rc = CLI_FAIL;
	cJSON_Delete(resp);
	if (rc != CLI_OK || resp)
		return rc;
	rc = own_remote(u, s);
	if (rc == CLI_OK && (rc = tcfs_remote_survey_list(u->r, &u->f, v,
							 n)) < 0) {
		cli_lib_err("remote", rc, "the remote");
		rc = CLI_FAIL;
	}
	return rc;
}

/* Pulls into the store that s is (a reader, closed here): through the
 * daemon when mounted, else as its writer. */
static int pull(struct run *u, struct tcfs_store *s)
{
	char store[PATH_MAX], point[PATH_MAX];
	struct cli_store_opts so = u->co.store;
	struct tcfs_remote_kernel *v = NULL;
	struct tally t = { 0 };
	size_t n = 0;
	int rc = pull_list(u, s, &v, &n), mounted;

	snprintf(store, sizeof(store), "%s", tcfs_store_path(s));
	mounted = cli_find_mount(store, NULL, store, point) == 0;
	/* Listed by a mount that has gone meanwhile: fetched here. */
	if (rc == CLI_OK && !mounted)
		rc = own_remote(u, s);
	tcfs_store_close(s);
	so.dir = store;
	if (rc == CLI_OK && mounted)
		rc = pull_mounted(u, store, v, n, &t);
	else if (rc == CLI_OK &&
		 (rc = cli_open_store("remote", &so, 0, 1, &s)) == CLI_OK) {
		for (size_t i = 0; i < n; i++) {
			count(&t, pull_here(u, s, &v[i]), &v[i]);
			progress_tick(&u->prog, i + 1, n);
		}
		if (tcfs_store_sync(s) < 0) {
			cli_lib_err("remote", -EIO, store);
			rc = CLI_FAIL;
		}
		tcfs_store_close(s);
	}
	progress_end(&u->prog);
	free(v);
	return rc == CLI_OK ? pull_report(u, &t) : rc;
}

int cmd_remote(int argc, char **argv)
{
	static const char *const subs[] = { "status", "push", "pull" };
	struct run u = { .co = CLI_COMMON_INIT };
	struct tcfs_store *s = NULL;
	char **args, store[PATH_MAX];
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
	/* Mounted, status and pull are the mount's, of its own remote,
	 * unless -o names another. */
	if (which == 1 || u.opts ||
	    cli_find_mount(tcfs_store_path(s), NULL, store, u.point) < 0)
		u.point[0] = '\0';
	rc = which == 1 ? open_remote(&u, s) : CLI_OK;
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
