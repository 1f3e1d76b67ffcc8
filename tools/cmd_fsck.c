/*
 * tcfs fsck: verify the store, optionally repair what is safe to repair.
 */
#include <stdio.h>

#include "cli.h"
#include "cmds.h"
#include "index/base/text.h"
#include "index/maint/fsck.h"
#include "index/store/store.h"
#include "index/base/utf8.h"
#include "progress.h"

static const struct opt_cmd cmd = {
	"fsck", "", 0, 0, "",
	"Checks the store: SQLite's integrity check of index.db, every blob's\n"
	"bytes against its XXH3-128 name, every file's blob being present,\n"
	"blobs being read-only, and every kernel of a key dir being indexed (a\n"
	"put cut off in its temp dir is no kernel yet).  Each problem is one\n"
	"line naming the damaged file.\n"
	"\n"
	"--repair fixes what is safe: damaged blobs move to STORE/quarantine/\n"
	"(nothing is deleted), files whose blob is damaged or missing are\n"
	"removed with their kernel's group file so Triton recompiles that\n"
	"kernel, blobs are made read-only again, kernels are re-indexed.  A\n"
	"damaged index.db is reported, never rewritten: keep a copy and try\n"
	"'sqlite3 index.db .recover'.\n",
	NULL,
	"Exit status: 0 no damage, 1 damage found (even if repaired: run fsck\n"
	"again to confirm) or the check could not run, 2 usage error.\n",
};

static const char *const problem_names[] = {
	[TCFS_FSCK_INDEX] = "index",
	[TCFS_FSCK_DAMAGED] = "damaged",
	[TCFS_FSCK_MISSING] = "missing",
	[TCFS_FSCK_WRITABLE] = "writable",
	[TCFS_FSCK_STRAY] = "stray",
	[TCFS_FSCK_KERNEL] = "unindexed",
};

struct fsck_out {
	cJSON *reports;		/* --json: collected; else printed */
	int quiet;		/* -q: no summary */
};

static void on_problem(void *ctx, const struct tcfs_fsck_report *r)
{
	struct fsck_out *o = ctx;
	cJSON *j;

	if (!o->reports) {
		char path[4 * 4096], detail[1024];

		progress_clear_line();
		printf("%s: %s: %s\n", problem_names[r->what],
		       tcfs_utf8_printable(r->path, path, sizeof(path)),
		       tcfs_utf8_printable(r->detail, detail, sizeof(detail)));
		return;
	}
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "problem", problem_names[r->what]);
	cJSON_AddStringToObject(j, "path", r->path);
	cJSON_AddStringToObject(j, "detail", r->detail);
	cJSON_AddBoolToObject(j, "repaired", r->repaired);
	cJSON_AddItemToArray(o->reports, j);
}

static int print_result(const struct tcfs_fsck_result *res,
			struct fsck_out *o)
{
	char b[16];

	if (o->reports) {
		cJSON *j = cJSON_CreateObject();

		cJSON_AddNumberToObject(j, "problems", (double)res->problems);
		cJSON_AddNumberToObject(j, "repaired", (double)res->repaired);
		cJSON_AddNumberToObject(j, "blobs", (double)res->blobs);
		cJSON_AddNumberToObject(j, "files", (double)res->files);
		cJSON_AddNumberToObject(j, "orphans", (double)res->orphans);
		cJSON_AddNumberToObject(j, "orphan_bytes",
					(double)res->orphan_bytes);
		cJSON_AddItemToObject(j, "reports", o->reports);
		o->reports = NULL;
		return cli_print_json(j);
	}
	if (o->quiet)
		return CLI_OK;
	printf("checked %llu %s and %llu %s: %llu %s, %llu repaired\n",
	       (unsigned long long)res->blobs, TCFS_NOUN(res->blobs, "blob"),
	       (unsigned long long)res->files, TCFS_NOUN(res->files, "file"),
	       (unsigned long long)res->problems,
	       TCFS_NOUN(res->problems, "problem"),
	       (unsigned long long)res->repaired);
	if (res->orphans)
		printf("%llu unreferenced %s (%s): tcfs gc removes %s\n",
		       (unsigned long long)res->orphans,
		       TCFS_NOUN(res->orphans, "blob"),
		       cli_human(res->orphan_bytes, b, sizeof(b)),
		       tcfs_plural(res->orphans, "it", "them"));
	return CLI_OK;
}

int cmd_fsck(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_fsck_result res;
	struct fsck_out out = { NULL, 0 };
	struct tcfs_progress lib;
	struct progress prog;
	struct tcfs_store *s;
	int repair = 0, rc;
	char **args;
	struct opt opts[] = {
		OPT_FLAG('r', "repair", &repair, "repair (takes the store's "
			 "writer lock)"),
		OPT_FLAG('q', "quiet", &out.quiet, "print only the problems "
			 "found: no progress, no summary"),
		CLI_OPT_WAIT(&co),
		CLI_OPTS_COMMON(&co, "print {problems, repaired, blobs, files, "
				"orphans, orphan_bytes, reports: [{problem, path, "
				"detail, repaired}]}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	if (cli_open_store("fsck", &co.store, 0, repair, &s) != CLI_OK)
		return CLI_FAIL;
	if (co.json)
		out.reports = cJSON_CreateArray();
	progress_init(&prog, "checking", "", out.quiet);
	lib = progress_lib(&prog);
	rc = tcfs_fsck_run(s, repair, on_problem, &out, &lib, &res);
	progress_end(&prog);
	if (rc < 0) {
		cli_lib_err("fsck", rc, tcfs_store_path(s));
		cJSON_Delete(out.reports);
		tcfs_store_close(s);
		return CLI_FAIL;
	}
	rc = print_result(&res, &out);
	tcfs_store_close(s);
	return rc != CLI_OK || res.problems ? CLI_FAIL : CLI_OK;
}
