/*
 * tcfs gc: delete blobs that no file references.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "fs/fs.h"
#include "index/base/err.h"
#include "index/base/text.h"
#include "index/maint/gc.h"
#include "index/store/store.h"
#include "progress.h"

static const struct opt_cmd cmd = {
	"gc", "", 0, 0, "",
	"Deletes the blobs that no file in the store references any more\n"
	"(left by replaced or removed files, or by an interrupted import) and\n"
	"prints what was freed.  Takes the store's writer lock, so nothing can\n"
	"start using a blob while gc decides it is unused.  While the store is\n"
	"mounted, the mount's daemon does it, at once, for the blobs written\n"
	"over a minute ago (a newer one may be waiting for the file that will\n"
	"name it); a mount also does so by itself, in the background.\n",
	NULL,
	"Exit status: 0 success, 1 failure, 2 usage error.\n",
};

static void on_orphan(void *ctx, const char *relpath, uint64_t size)
{
	char b[16];

	if (!*(int *)ctx)
		return;
	progress_clear_line();
	printf("orphan objects/%s (%s)\n", relpath,
	       cli_human(size, b, sizeof(b)));
}

static int print_result(const struct tcfs_gc_result *res, int dry, int json)
{
	char b1[16], b2[16];

	if (json)
		return cli_print_json(tcfs_gc_result_json(res, dry));
	printf("%s %llu unreferenced %s, %s %s; %llu %s (%s) in use",
	       dry ? "would remove" : "removed",
	       (unsigned long long)res->removed,
	       TCFS_NOUN(res->removed, "blob"), dry ? "freeing" : "freed",
	       cli_human(res->freed_bytes, b1, sizeof(b1)),
	       (unsigned long long)res->kept, TCFS_NOUN(res->kept, "blob"),
	       cli_human(res->kept_bytes, b2, sizeof(b2)));
	if (res->recent)
		printf("; %llu unreferenced (%s) kept, written less than a "
		       "minute ago: the mount keeps those for the files that "
		       "will name them", (unsigned long long)res->recent,
		       cli_human(res->recent_bytes, b1, sizeof(b1)));
	printf("\n");
	return CLI_OK;
}

/* Offline: as the store's writer. */
static int run_here(const struct cli_common *co, int dry, int *verbose,
		    struct progress *prog, struct tcfs_gc_result *res)
{
	struct tcfs_progress lib = progress_lib(prog);
	struct tcfs_store *s;
	int rc;

	if (cli_open_store("gc", &co->store, 0, 1, &s) != CLI_OK)
		return CLI_FAIL;
	rc = tcfs_gc_run(s, dry, on_orphan, verbose, &lib, res);
	progress_end(prog);
	if (rc < 0)
		cli_lib_err("gc", rc, tcfs_store_path(s));
	tcfs_store_close(s);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

static uint64_t num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble
						       : 0;
}

/* The mount's answer into res, its orphans named when verbose. */
static void take_answer(const cJSON *resp, int verbose,
			struct tcfs_gc_result *res)
{
	const cJSON *o;

	res->removed = num(resp, "removed");
	res->freed_bytes = num(resp, "freed_bytes");
	res->kept = num(resp, "kept");
	res->kept_bytes = num(resp, "kept_bytes");
	res->recent = num(resp, "recent");
	res->recent_bytes = num(resp, "recent_bytes");
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(resp,
							       "orphans")) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "path");

		if (cJSON_IsString(p))
			on_orphan(&verbose, p->valuestring, num(o, "bytes"));
	}
	if (verbose && num(resp, "unnamed"))
		printf("(%llu more orphans, not named)\n",
		       (unsigned long long)num(resp, "unnamed"));
}

/* Mounted: the mount's daemon, which holds the writer lock, does it. */
static int run_mounted(const char *store, int dry, int verbose,
		       struct progress *prog, struct tcfs_gc_result *res)
{
	cJSON *req = cJSON_CreateObject(), *resp = NULL;
	const cJSON *err;
	int rc = -ENOMEM;

	if (req && cJSON_AddStringToObject(req, "op", "gc") &&
	    cJSON_AddBoolToObject(req, "dry_run", dry) &&
	    cJSON_AddBoolToObject(req, "verbose", verbose)) {
		/* One request: the daemon says nothing until it is done. */
		progress_step(prog, "waiting for the mount's daemon");
		rc = tcfs_fs_ctl_call(store, req, &resp);
		progress_end(prog);
	}
	cJSON_Delete(req);
	err = cJSON_GetObjectItemCaseSensitive(resp, "error");
	if (rc < 0 || cJSON_IsString(err)) {
		cli_err("gc", "%s: the mount's daemon: %s", store,
			rc < 0 ? tcfs_err_msg() : err->valuestring);
		cJSON_Delete(resp);
		return CLI_FAIL;
	}
	take_answer(resp, verbose, res);
	cJSON_Delete(resp);
	return CLI_OK;
}

/* Through the mount when the store is mounted, else here. */
static int run(const struct cli_common *co, int dry, int *verbose,
	       struct progress *prog, struct tcfs_gc_result *res)
{
	char mount[PATH_MAX], store[PATH_MAX];
	struct tcfs_store *s;
	int rc;

	if (cli_open_store("gc", &co->store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	rc = cli_mount_sync(s, mount);
	snprintf(store, sizeof(store), "%s", tcfs_store_path(s));
	tcfs_store_close(s);
	if (rc < 0) {
		cli_lib_err("gc", rc, store);
		return CLI_FAIL;
	}
	if (mount[0])
		return run_mounted(store, dry, *verbose, prog, res);
	return run_here(co, dry, verbose, prog, res);
}

int cmd_gc(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_gc_result res;
	struct progress prog;
	int dry = 0, verbose = 0, quiet = 0, rc;
	char **args;
	struct opt opts[] = {
		OPT_FLAG(0, "dry-run", &dry, "only say what would be deleted"),
		OPT_FLAG('v', "verbose", &verbose, "name every deleted blob"),
		CLI_OPT_QUIET(&quiet),
		CLI_OPT_WAIT(&co),
		CLI_OPTS_COMMON(&co, "print {dry_run, removed, freed_bytes, "
				"kept, kept_bytes, recent, recent_bytes}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	verbose = verbose && !co.json && !quiet;
	progress_init(&prog, "collecting", "blobs checked", quiet);
	memset(&res, 0, sizeof(res));
	if (run(&co, dry, &verbose, &prog, &res) != CLI_OK)
		return CLI_FAIL;
	return quiet ? CLI_OK : print_result(&res, dry, co.json);
}
