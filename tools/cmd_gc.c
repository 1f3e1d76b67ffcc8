/*
 * tcfs gc: delete blobs that no file references.
 */
#include <stdio.h>

#include "cli.h"
#include "cmds.h"
#include "index/base/text.h"
#include "index/maint/gc.h"
#include "index/store/store.h"
#include "progress.h"

static const struct opt_cmd cmd = {
	"gc", "", 0, 0, "",
	"Deletes the blobs that no file in the store references any more\n"
	"(left by replaced or removed files, or by an interrupted import) and\n"
	"prints what was freed.  Takes the store's writer lock, so nothing can\n"
	"start using a blob while gc decides it is unused.  A mount does the\n"
	"same by itself, in the background, for blobs over a minute old.\n",
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

	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddBoolToObject(o, "dry_run", dry);
		cJSON_AddNumberToObject(o, "removed", (double)res->removed);
		cJSON_AddNumberToObject(o, "freed_bytes",
					(double)res->freed_bytes);
		cJSON_AddNumberToObject(o, "kept", (double)res->kept);
		cJSON_AddNumberToObject(o, "kept_bytes",
					(double)res->kept_bytes);
		return cli_print_json(o);
	}
	printf("%s %llu unreferenced %s, %s %s; %llu %s (%s) in use\n",
	       dry ? "would remove" : "removed",
	       (unsigned long long)res->removed,
	       TCFS_NOUN(res->removed, "blob"), dry ? "freeing" : "freed",
	       cli_human(res->freed_bytes, b1, sizeof(b1)),
	       (unsigned long long)res->kept, TCFS_NOUN(res->kept, "blob"),
	       cli_human(res->kept_bytes, b2, sizeof(b2)));
	return CLI_OK;
}

int cmd_gc(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_gc_result res;
	struct tcfs_progress lib;
	struct progress prog;
	struct tcfs_store *s;
	int dry = 0, verbose = 0, quiet = 0, rc;
	char **args;
	struct opt opts[] = {
		OPT_FLAG(0, "dry-run", &dry, "only say what would be deleted"),
		OPT_FLAG('v', "verbose", &verbose, "name every deleted blob"),
		CLI_OPT_QUIET(&quiet),
		CLI_OPT_WAIT(&co),
		CLI_OPTS_COMMON(&co, "print {dry_run, removed, freed_bytes, "
				"kept, kept_bytes}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	if (cli_open_store("gc", &co.store, 0, 1, &s) != CLI_OK)
		return CLI_FAIL;
	verbose = verbose && !co.json && !quiet;
	progress_init(&prog, "collecting", "blobs checked", quiet);
	lib = progress_lib(&prog);
	rc = tcfs_gc_run(s, dry, on_orphan, &verbose, &lib, &res);
	progress_end(&prog);
	if (rc < 0) {
		cli_lib_err("gc", rc, tcfs_store_path(s));
		tcfs_store_close(s);
		return CLI_FAIL;
	}
	tcfs_store_close(s);
	return quiet ? CLI_OK : print_result(&res, dry, co.json);
}
