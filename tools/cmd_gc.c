/*
 * tcfs gc: delete blobs that no file references.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "cmds.h"
#include "index/gc.h"
#include "index/store.h"

static const char *const help =
	"Usage: tcfs gc [OPTIONS]\n"
	"\n"
	"Deletes the blobs that no file in the store references any more\n"
	"(left by replaced or removed files, or by an interrupted import) and\n"
	"prints what was freed.  Takes the store's writer lock, so nothing can\n"
	"start using a blob while gc decides it is unused.  A mount does the\n"
	"same by itself, in the background, for blobs over a minute old.\n"
	"\n"
	"Options:\n"
	"  -s, --store DIR   the store (default as for tcfs import)\n"
	"  -n, --dry-run     only say what would be deleted\n"
	"  -v, --verbose     name every deleted blob\n"
	"  -w, --wait SECS   wait this long for another writer (default 10)\n"
	"      --json        print {removed, freed_bytes, kept, kept_bytes}\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 success, 1 failure, 2 usage error.\n";

static void on_orphan(void *ctx, const char *relpath, uint64_t size)
{
	char b[16];

	if (*(int *)ctx)
		printf("orphan objects/%s (%s)\n", relpath,
		       cli_human(size, b, sizeof(b)));
}

int cmd_gc(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		CLI_COMMON_LONGOPTS,
		{ 0 },
	};
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_gc_result res;
	struct tcfs_store *s;
	int c, dry = 0, verbose = 0, rc;
	char b1[16], b2[16];

	while ((c = getopt_long(argc, argv, "+" CLI_COMMON_SHORTOPTS "nv",
				opts, NULL)) != -1) {
		switch (cli_common_opt("gc", help, c, &co, &rc)) {
		case 1:
			continue;
		case -1:
			return rc;
		}
		switch (c) {
		case 'n':
			dry = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			return cli_usage_err("gc", "bad option");
		}
	}
	if (optind != argc)
		return cli_usage_err("gc", "unexpected argument '%s'",
				     argv[optind]);
	if (cli_open_store("gc", &co.store, 0, 1, &s) != CLI_OK)
		return CLI_FAIL;
	verbose = verbose && !co.json;
	rc = tcfs_gc_run(s, dry, on_orphan, &verbose, &res);
	if (rc < 0) {
		cli_lib_err("gc", rc, tcfs_store_path(s));
		tcfs_store_close(s);
		return CLI_FAIL;
	}
	tcfs_store_close(s);
	if (co.json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddBoolToObject(o, "dry_run", dry);
		cJSON_AddNumberToObject(o, "removed", (double)res.removed);
		cJSON_AddNumberToObject(o, "freed_bytes",
					(double)res.freed_bytes);
		cJSON_AddNumberToObject(o, "kept", (double)res.kept);
		cJSON_AddNumberToObject(o, "kept_bytes", (double)res.kept_bytes);
		return cli_print_json(o);
	}
	printf("%s %llu unreferenced blobs, %s %s; %llu blobs (%s) in use\n",
	       dry ? "would remove" : "removed",
	       (unsigned long long)res.removed,
	       dry ? "freeing" : "freed",
	       cli_human(res.freed_bytes, b1, sizeof(b1)),
	       (unsigned long long)res.kept,
	       cli_human(res.kept_bytes, b2, sizeof(b2)));
	return CLI_OK;
}
