/*
 * tcfs import: the command that brings existing Triton cache directories
 * into the store (the work is import.c's).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "import.h"
#include "progress.h"
#include "index/base/text.h"
#include "index/store/store.h"

static const struct opt_cmd cmd = {
	"import", "SRC...", 1, -1, "no source directory given",
	"Adds existing Triton cache directories (e.g. ~/.triton/cache, or one\n"
	"copied from another machine) to the store.  Every distinct file is\n"
	"stored once; group files are stored relative to their key dir, so the\n"
	"store serves them under any path.  Importing again changes nothing;\n"
	"the same key in two sources is one key.  Temp dirs and files of\n"
	"unfinished writes are skipped, and so are symlinks leading out of SRC.\n"
	"Each key dir lands whole or not at all.  setuid, setgid, sticky and\n"
	"world-writable bits are dropped.  The store is created, mode 0700, if\n"
	"missing.\n",
	NULL,
	"Exit status: 0 all imported (entries skipped as above are not errors),\n"
	"1 a key dir or source could not be imported (see the errors), 2 usage\n"
	"error.\n",
};

static int print_summary(const struct import *im, int nsrc, int json)
{
	const struct import_stats *s = &im->st;
	uint64_t saved = s->bytes > s->new_blob_bytes
				 ? s->bytes - s->new_blob_bytes : 0;
	char b1[16], b2[16], b3[16];

	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "store", tcfs_store_path(im->s));
		cJSON_AddNumberToObject(o, "sources", nsrc);
		cJSON_AddNumberToObject(o, "kernels", (double)s->kernels);
		cJSON_AddNumberToObject(o, "key_dirs", (double)s->keydirs);
		cJSON_AddNumberToObject(o, "files", (double)s->files);
		cJSON_AddNumberToObject(o, "new_files", (double)s->new_files);
		cJSON_AddNumberToObject(o, "bytes", (double)s->bytes);
		cJSON_AddNumberToObject(o, "new_blob_bytes",
					(double)s->new_blob_bytes);
		cJSON_AddNumberToObject(o, "dedup_saved_bytes", (double)saved);
		cJSON_AddNumberToObject(o, "skipped", (double)s->skipped);
		cJSON_AddNumberToObject(o, "conflicts", (double)s->conflicts);
		cJSON_AddNumberToObject(o, "failed_key_dirs",
					(double)s->failed_dirs);
		return cli_print_json(o);
	}
	printf("imported %llu %s in %llu %s from %d %s: %llu %s (%llu new), "
	       "%s\n",
	       (unsigned long long)s->kernels, TCFS_NOUN(s->kernels, "kernel"),
	       (unsigned long long)s->keydirs, TCFS_NOUN(s->keydirs, "key dir"),
	       nsrc, TCFS_NOUN((unsigned)nsrc, "source"),
	       (unsigned long long)s->files, TCFS_NOUN(s->files, "file"),
	       (unsigned long long)s->new_files,
	       cli_human(s->bytes, b1, sizeof(b1)));
	printf("stored %s of new blobs; dedup saved %s (%.1f%%)\n",
	       cli_human(s->new_blob_bytes, b2, sizeof(b2)),
	       cli_human(saved, b3, sizeof(b3)),
	       s->bytes ? 100.0 * (double)saved / (double)s->bytes : 0.0);
	if (s->skipped || s->conflicts || s->failed_dirs)
		printf("skipped %llu %s, %llu %s, %llu %s not imported\n",
		       (unsigned long long)s->skipped,
		       tcfs_plural(s->skipped, "entry", "entries"),
		       (unsigned long long)s->conflicts,
		       TCFS_NOUN(s->conflicts, "conflict"),
		       (unsigned long long)s->failed_dirs,
		       TCFS_NOUN(s->failed_dirs, "key dir"));
	return CLI_OK;
}

/* --commit-every N: a count of at least 1. */
static const char *batch_opt(void *value, const char *arg)
{
	uint64_t n;

	if (cli_parse_count(arg, &n) < 0 || n == 0)
		return "not a count of at least 1";
	*(uint64_t *)value = n;
	return NULL;
}

#define STR_(x) #x
#define STR(x) STR_(x)

int cmd_import(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct import_opts o = { .cmd = "import" };
	struct progress prog;
	struct tcfs_store *s;
	struct import im;
	int n, rc = CLI_OK, err = 0;
	char **args;
	struct opt opts[] = {
		OPT_FLAG(0, "binary-only", &o.binary_only, "leave IR files (.ttir "
			 ".ttgir .llir .ptx .amdgcn) out, and out of the group "
			 "files stored"),
		OPT_FLAG(0, "tree", &o.tree, "import the whole tree: caches below "
			 "SRC at any depth (Inductor's, vLLM's VLLM_CACHE_ROOT) "
			 "and the files beside them, not only its key dirs"),
		OPT_FN(0, "commit-every", "N", &o.batch_dirs, batch_opt,
		       "commit every N key dirs (default " STR(IMPORT_BATCH_DIRS)
		       "): a crash or a kill loses at most the last N, which "
		       "the same import run again adds; fewer is slower"),
		CLI_OPT_QUIET(&o.quiet),
		CLI_OPT_WAIT(&co),
		CLI_OPTS_COMMON(&co, "print the summary as JSON"),
		OPT_END(),
	};

	n = opt_parse(&cmd, opts, argc, argv, &args, &rc);
	if (n < 0)
		return rc;
	if (cli_open_store("import", &co.store, 1, 1, &s) != CLI_OK)
		return CLI_FAIL;
	progress_init(&prog, "importing", "kernels", o.quiet);
	o.progress = &prog;
	err = import_begin(&im, s, &o);
	for (int i = 0; err == 0 && i < n && !im.fatal; i++)
		if (import_source(&im, args[i]) < 0)
			rc = CLI_FAIL;
	if (im.fatal)
		cli_err("import", "stopped; the store keeps every key dir "
				  "imported before the error");
	if (import_end(&im, err) < 0)
		rc = CLI_FAIL;
	if (!o.quiet && print_summary(&im, n, co.json) != CLI_OK)
		rc = CLI_FAIL;
	tcfs_store_close(s);
	return rc;
}
