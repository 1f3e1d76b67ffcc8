/*
 * tcfs prune: take whole kernels (or only their IR) out of the store,
 * offline or through the mount's daemon (fs/ctl.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "fs/fs.h"
#include "index/base/err.h"
#include "index/base/json.h"
#include "index/maint/prune.h"
#include "index/store/store.h"
#include "index/base/utf8.h"
#include "progress.h"

static const struct opt_cmd cmd = {
	"prune", "", 0, 0, "",
	"Removes the kernels that match every filter given: each with its\n"
	"whole key dir, in one transaction, so Triton finds it whole or not\n"
	"at all (a miss: it compiles it again).  Blobs no file names any more\n"
	"are freed.  With --ir only the kernels' IR files go, and their group\n"
	"files are rewritten to list only what is left: they stay loadable\n"
	"(TRITON_STORE_BINARY_ONLY's layout).  Works offline and while the\n"
	"store is mounted: the mount's daemon does it, and what it removes is\n"
	"gone from the mount at once (a process holding a file open keeps\n"
	"its bytes).  At least one of the filters or --ir is required.\n",
	NULL,
	"Exit status: 0 success, 1 failure, 2 usage error.\n",
};

/* Counts the kernels tcfs_prune_run has done with. */
struct ticks {
	struct progress *prog;
	uint64_t done, total;
};

static void tick(void *ctx)
{
	struct ticks *t = ctx;

	progress_tick(t->prog, ++t->done, t->total);
}

/* The report, offline: what the daemon answers when mounted. */
static cJSON *run_here(struct tcfs_store *s,
		       const struct tcfs_prune_select *sel,
		       enum tcfs_prune_how how, int dry, struct progress *prog)
{
	struct tcfs_prune_victim *v = NULL;
	struct tcfs_prune_report r = { 0 };
	struct ticks t = { prog, 0, 0 };
	struct tcfs_prune_hooks hooks = { .release = tick, .ctx = &t };
	cJSON *out = NULL;
	size_t n = 0;
	int rc;

	progress_step(prog, "choosing the kernels");
	rc = tcfs_prune_pick(s, sel, &v, &n);
	prog->unit = "kernels";
	t.total = n;
	if (rc == 0)
		rc = tcfs_prune_run(s, v, n, how, dry, &hooks, &r);
	progress_end(prog);
	if (rc == 0 && !dry)
		rc = tcfs_store_sync(s);
	if (rc == 0)
		out = tcfs_prune_report_json(&r, how, dry);
	if (rc < 0)
		cli_lib_err("prune", rc, tcfs_store_path(s));
	else if (!out)
		cli_err("prune", "out of memory");
	tcfs_prune_report_free(&r);
	free(v);
	return out;
}

static cJSON *run_mounted(const char *store,
			  const struct tcfs_prune_select *sel,
			  enum tcfs_prune_how how, struct progress *prog)
{
	cJSON *req = cJSON_CreateObject(), *resp = NULL;
	const cJSON *err;
	int rc = -ENOMEM;

	if (req && cJSON_AddStringToObject(req, "op", "prune") &&
	    (!sel->filter.name ||
	     cJSON_AddStringToObject(req, "name", sel->filter.name)) &&
	    (!sel->filter.backend ||
	     cJSON_AddStringToObject(req, "backend", sel->filter.backend)) &&
	    (!sel->filter.arch ||
	     cJSON_AddStringToObject(req, "arch", sel->filter.arch)) &&
	    (sel->unused_since_ns < 0 ||
	     cJSON_AddNumberToObject(req, "unused_since",
				     (double)sel->unused_since_ns)) &&
	    cJSON_AddBoolToObject(req, "ir", how == TCFS_PRUNE_IR)) {
		/* One request: the daemon says nothing until it is done. */
		progress_step(prog, "waiting for the mount's daemon");
		rc = tcfs_fs_ctl_call(store, req, &resp);
		progress_end(prog);
	}
	cJSON_Delete(req);
	if (rc < 0) {
		cli_lib_err("prune", rc, store);
		return NULL;
	}
	err = cJSON_GetObjectItemCaseSensitive(resp, "error");
	if (cJSON_IsString(err)) {
		cli_err("prune", "%s: the mount's daemon: %s", store,
			err->valuestring);
		cJSON_Delete(resp);
		return NULL;
	}
	return resp;
}

static double num(const cJSON *o, const char *name)
{
	return tcfs_json_number(cJSON_GetObjectItemCaseSensitive(o, name));
}

static const char *str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* What is not freed yet, and why: blobs put in the last minute are
 * kept a minute (for puts in flight: cas.h), the others while the
 * kernel or a process holds a file that names them. */
static void print_pending(const cJSON *r)
{
	uint64_t fresh = (uint64_t)num(r, "pending_new_bytes");
	uint64_t held = (uint64_t)num(r, "pending_bytes") - fresh;
	char b[16];

	if (fresh)
		printf(" (%s more within a minute: blobs written in the last "
		       "minute are kept that long, for writes in flight)",
		       cli_human(fresh, b, sizeof(b)));
	if (held)
		printf(" (%s more once no process uses them)",
		       cli_human(held, b, sizeof(b)));
}

/* The widest of the kernels' NAME fields, as printed, and of the
 * column's head. */
static int name_width(const cJSON *ks)
{
	const cJSON *k;
	size_t w = strlen("NAME");

	cJSON_ArrayForEach(k, ks) {
		char name[1024];
		size_t l = tcfs_utf8_width(tcfs_utf8_printable(
			str(k, "name"), name, sizeof(name)));

		w = l > w ? l : w;
	}
	return (int)w;
}

/* One row per kernel, each key whole, as tcfs list shows it. */
static void print_table(const cJSON *r, enum tcfs_prune_how how, int dry)
{
	const cJSON *k, *ks = cJSON_GetObjectItemCaseSensitive(r, "kernels");
	char b1[16], b2[16], t[32];
	int n = cJSON_GetArraySize(ks), nw = name_width(ks);

	if (n)
		printf("%-*s %-52s %-12s %10s  %s\n", nw, "NAME", "KEY",
		       "TARGET", how == TCFS_PRUNE_IR ? "IR" : "SIZE",
		       "LAST USED");
	cJSON_ArrayForEach(k, ks) {
		char name[1024], key[1024], target[256];

		cli_pad(tcfs_utf8_printable(str(k, "name"), name, sizeof(name)),
			nw);
		printf(" %-52s %-12s %10s  %s\n",
		       tcfs_utf8_printable(str(k, "key"), key, sizeof(key)),
		       tcfs_utf8_printable(str(k, "target"), target,
					   sizeof(target)),
		       cli_human((uint64_t)num(k, "bytes"), b1, sizeof(b1)),
		       cli_time((int64_t)num(k, "last_used") * 1000000000,
				t, sizeof(t)));
	}
	printf("%s %d kernel%s%s (%s)", dry ? "would prune" : "pruned", n,
	       n == 1 ? "" : "s", how == TCFS_PRUNE_IR ? "' IR" : "",
	       cli_human((uint64_t)num(r, "bytes"), b1, sizeof(b1)));
	if (!dry)
		printf(", %.0f files; freed %s", num(r, "files"),
		       cli_human((uint64_t)num(r, "freed_bytes"), b2,
				 sizeof(b2)));
	print_pending(r);
	if (num(r, "skipped") > 0)
		printf("; %.0f skipped (changed meanwhile, or a group file "
		       "that is not Triton's)", num(r, "skipped"));
	printf("\n");
}

/* Prunes what sel selects: here (offline, or a dry run, which sees what
 * the mount committed) or through the mount.  The report, or NULL. */
static cJSON *run(const struct cli_common *co,
		  const struct tcfs_prune_select *sel, enum tcfs_prune_how how,
		  int dry, struct progress *prog)
{
	char mount[PATH_MAX], store[PATH_MAX];
	struct cli_store_opts so = co->store;
	struct tcfs_store *s;
	cJSON *report;
	int rc;

	if (cli_open_store("prune", &co->store, 0, 0, &s) != CLI_OK)
		return NULL;
	/* Mounted, the daemon commits what it holds first: a dry run sees
	 * what a real one would. */
	if ((rc = cli_mount_sync(s, mount)) < 0) {
		cli_lib_err("prune", rc, tcfs_store_path(s));
		tcfs_store_close(s);
		return NULL;
	}
	snprintf(store, sizeof(store), "%s", tcfs_store_path(s));
	if (dry) {
		report = run_here(s, sel, how, 1, prog);
		tcfs_store_close(s);
		return report;
	}
	tcfs_store_close(s);
	if (mount[0])
		return run_mounted(store, sel, how, prog);
	so.dir = store;	/* the store found (and said) at the first open */
	if (cli_open_store("prune", &so, 0, 1, &s) != CLI_OK)
		return NULL;
	report = run_here(s, sel, how, 0, prog);
	tcfs_store_close(s);
	return report;
}

int cmd_prune(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_prune_select sel = { { NULL, NULL, NULL }, -1 };
	int rc, dry = 0, ir = 0, quiet = 0;
	struct progress prog;
	cJSON *report;
	char **args;
	struct opt opts[] = {
		CLI_OPTS_FILTER(&sel.filter),
		OPT_FN(0, "unused-since", "T", &sel.unused_since_ns, cli_opt_time,
		       "kernels not hit since T (one never hit: not since it "
		       "was created); T as for tcfs stats --since: 7d, "
		       "2026-11-01, @EPOCH-SECONDS"),
		OPT_FLAG(0, "ir", &ir, "drop only the IR files (.ttir .ttgir "
			 ".llir .ptx .amdgcn) of the kernels chosen"),
		OPT_FLAG(0, "dry-run", &dry, "only say what would go"),
		CLI_OPT_QUIET(&quiet),
		CLI_OPT_WAIT(&co),
		CLI_OPTS_COMMON(&co, "print {dry_run, ir, kernels: [{key, name, "
				"target, bytes, last_used}], files, bytes, "
				"freed_bytes, pending_bytes, skipped}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	if (!ir && sel.unused_since_ns < 0 && !sel.filter.name &&
	    !sel.filter.backend && !sel.filter.arch)
		return cli_usage_err("prune", "say which kernels: --name, "
				     "--backend, --arch, --unused-since or --ir");
	progress_init(&prog, "pruning", "kernels", quiet);
	report = run(&co, &sel, ir ? TCFS_PRUNE_IR : TCFS_PRUNE_WHOLE, dry,
		     &prog);
	if (!report)
		return CLI_FAIL;
	if (quiet) {
		cJSON_Delete(report);
		return CLI_OK;
	}
	if (co.json)
		return cli_print_json(report);
	print_table(report, ir ? TCFS_PRUNE_IR : TCFS_PRUNE_WHOLE, dry);
	cJSON_Delete(report);
	return CLI_OK;
}
