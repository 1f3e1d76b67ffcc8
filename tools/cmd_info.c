/*
 * tcfs info: what the store holds.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "cmds.h"
#include "fs/fs.h"
#include "index/model/event.h"
#include "index/model/info.h"
#include "index/store/store.h"
#include "index/base/utf8.h"

static const struct opt_cmd cmd = {
	"info", "", 0, 0, "",
	"Prints what the store holds: kernels, modules, files, the logical\n"
	"size (the files as Triton wrote them), the stored size (the blobs),\n"
	"what deduplication saved, and kernels per backend and arch.\n",
	NULL,
	"Exit status: 0 success, 1 the store could not be read, 2 usage error.\n",
};

/* What the blobs that stay take: those a mount frees within a minute
 * (pending) are as good as gone. */
static uint64_t kept(const struct tcfs_info *in, uint64_t pending)
{
	return in->stored_bytes > pending ? in->stored_bytes - pending : 0;
}

static uint64_t saved(const struct tcfs_info *in, uint64_t pending)
{
	return in->logical_bytes > kept(in, pending)
		       ? in->logical_bytes - kept(in, pending) : 0;
}

static int print_json(struct tcfs_store *s, const struct tcfs_info *in,
		      uint64_t pending)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *targets;

	cJSON_AddStringToObject(o, "store", tcfs_store_path(s));
	cJSON_AddNumberToObject(o, "kernels", (double)in->kernels);
	cJSON_AddNumberToObject(o, "modules", (double)in->modules);
	cJSON_AddNumberToObject(o, "files", (double)in->files);
	cJSON_AddNumberToObject(o, "dirs", (double)in->dirs);
	cJSON_AddNumberToObject(o, "logical_bytes", (double)in->logical_bytes);
	cJSON_AddNumberToObject(o, "stored_bytes", (double)in->stored_bytes);
	cJSON_AddNumberToObject(o, "pending_bytes", (double)pending);
	cJSON_AddNumberToObject(o, "blobs", (double)in->blobs);
	cJSON_AddNumberToObject(o, "dedup_saved_bytes", (double)saved(in, pending));
	cJSON_AddNumberToObject(o, "dedup_ratio",
				in->logical_bytes
					? (double)saved(in, pending) /
						  (double)in->logical_bytes
					: 0.0);
	targets = cJSON_AddArrayToObject(o, "targets");
	for (size_t i = 0; targets && i < in->ntargets; i++) {
		cJSON *t = cJSON_CreateObject();

		cJSON_AddStringToObject(t, "backend", in->targets[i].backend);
		cJSON_AddStringToObject(t, "arch", in->targets[i].arch);
		cJSON_AddNumberToObject(t, "kernels",
					(double)in->targets[i].kernels);
		cJSON_AddNumberToObject(t, "bytes",
					(double)in->targets[i].bytes);
		cJSON_AddItemToArray(targets, t);
	}
	return cli_print_json(o);
}

static void print_text(struct tcfs_store *s, const struct tcfs_info *in,
		       uint64_t pending)
{
	char b1[16], b2[16], b3[16];

	printf("store          %s\n", tcfs_store_path(s));
	printf("kernels        %llu\n", (unsigned long long)in->kernels);
	printf("modules        %llu\n", (unsigned long long)in->modules);
	printf("files          %llu in %llu director%s\n",
	       (unsigned long long)in->files, (unsigned long long)in->dirs,
	       in->dirs == 1 ? "y" : "ies");
	printf("logical size   %s (%llu byte%s)\n",
	       cli_human(in->logical_bytes, b1, sizeof(b1)),
	       (unsigned long long)in->logical_bytes,
	       in->logical_bytes == 1 ? "" : "s");
	printf("stored size    %s (%llu byte%s) in %llu blob%s\n",
	       cli_human(in->stored_bytes, b2, sizeof(b2)),
	       (unsigned long long)in->stored_bytes,
	       in->stored_bytes == 1 ? "" : "s",
	       (unsigned long long)in->blobs, in->blobs == 1 ? "" : "s");
	if (pending)
		printf("               %s of it no file names: the mount "
		       "frees it within a minute\n",
		       cli_human(pending, b3, sizeof(b3)));
	printf("dedup saving   %s (%.1f%%)\n",
	       cli_human(saved(in, pending), b3, sizeof(b3)),
	       in->logical_bytes ? 100.0 * (double)saved(in, pending) /
					   (double)in->logical_bytes
				 : 0.0);
	if (in->ntargets)
		printf("\n%-10s %-10s %8s %12s\n", "backend", "arch",
		       "kernels", "size");
	for (size_t i = 0; i < in->ntargets; i++) {
		char be[TCFS_UTF8_SHOW_MAX], arch[TCFS_UTF8_SHOW_MAX];

		/* Both come from the kernels' own metadata files. */
		printf("%-10s %-10s %8llu %12s\n",
		       in->targets[i].backend[0]
			       ? tcfs_utf8_printable(in->targets[i].backend, be,
						     sizeof(be))
			       : "?",
		       in->targets[i].arch[0]
			       ? tcfs_utf8_printable(in->targets[i].arch, arch,
						     sizeof(arch))
			       : "?",
		       (unsigned long long)in->targets[i].kernels,
		       cli_human(in->targets[i].bytes, b1, sizeof(b1)));
	}
}

/* The bytes the mount, when there is one, frees within a minute: what it
 * last saved once it committed what it holds. */
static int pending_of(struct tcfs_store *s, uint64_t *pending)
{
	char mount[PATH_MAX];
	int64_t v = 0;
	int rc;

	*pending = 0;
	if (cli_mount_sync(s, mount) < 0 || !mount[0])
		return 0;
	rc = tcfs_counter_get(s, TCFS_PENDING_COUNTER, &v, NULL);
	*pending = v > 0 ? (uint64_t)v : 0;
	return rc;
}

int cmd_info(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_store *s;
	struct tcfs_info in;
	uint64_t pending;
	char **args;
	int rc;
	struct opt opts[] = {
		CLI_OPTS_COMMON(&co, "print one JSON object: kernels, modules, "
				"files, dirs, logical_bytes, stored_bytes, "
				"pending_bytes (of those, what no file names, "
				"which the mount frees within a minute), blobs, "
				"dedup_saved_bytes, dedup_ratio, targets"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	if (cli_open_store("info", &co.store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	rc = pending_of(s, &pending);
	if (rc == 0)
		rc = tcfs_info_get(s, &in);
	if (rc < 0) {
		cli_lib_err("info", rc, tcfs_store_path(s));
		tcfs_store_close(s);
		return CLI_FAIL;
	}
	if (co.json)
		rc = print_json(s, &in, pending);
	else
		print_text(s, &in, pending);
	tcfs_info_free(&in);
	tcfs_store_close(s);
	return rc == CLI_OK ? CLI_OK : CLI_FAIL;
}
