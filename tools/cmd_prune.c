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

/* What a prune did, or would do: the report of a run here, or the
 * daemon's answer when it ran in the mount.  Owned by the outcome:
 * outcome_free. */
struct outcome {
	struct tcfs_prune_victim *v;	/* what r.taken points into */
	struct tcfs_prune_report r;
	cJSON *daemon;			/* or the daemon's report */
};

static void outcome_free(struct outcome *o)
{
	tcfs_prune_report_free(&o->r);
	free(o->v);
	cJSON_Delete(o->daemon);
	memset(o, 0, sizeof(*o));
}

/* Offline, or a dry run: the run here, its report kept as it is (its
 * JSON is built only for --json: 100,000 kernels' of it took a third of
 * a dry run's time). */
static int run_here(struct tcfs_store *s, const struct tcfs_prune_select *sel,
		    enum tcfs_prune_how how, int dry, struct progress *prog,
		    struct outcome *o)
{
	struct ticks t = { prog, 0, 0 };
	struct tcfs_prune_hooks hooks = { .release = tick, .ctx = &t };
	size_t n = 0;
	int rc;

	progress_step(prog, "choosing the kernels");
	rc = tcfs_prune_pick(s, sel, &o->v, &n);
	prog->unit = "kernels";
	t.total = n;
	if (rc == 0)
		rc = tcfs_prune_run(s, o->v, n, how, dry, &hooks, &o->r);
	progress_end(prog);
	if (rc == 0 && !dry)
		rc = tcfs_store_sync(s);
	if (rc < 0)
		cli_lib_err("prune", rc, tcfs_store_path(s));
	return rc;
}

static int run_mounted(const char *store, const struct tcfs_prune_select *sel,
		       enum tcfs_prune_how how, struct progress *prog,
		       struct outcome *o)
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
		return rc;
	}
	err = cJSON_GetObjectItemCaseSensitive(resp, "error");
	if (cJSON_IsString(err)) {
		cli_err("prune", "%s: the mount's daemon: %s", store,
			err->valuestring);
		cJSON_Delete(resp);
		return -EIO;
	}
	o->daemon = resp;
	return 0;
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

/* One kernel of the table, from either kind of outcome. */
struct shown {
	const char *key, *name, *target;
	uint64_t bytes;
	int64_t last_used;	/* seconds */
};

/* Calls fn with each kernel o took, in order. */
static void each_shown(const struct outcome *o, enum tcfs_prune_how how,
		       void (*fn)(void *ctx, const struct shown *k), void *ctx)
{
	const cJSON *k;

	for (size_t i = 0; !o->daemon && i < o->r.ntaken; i++) {
		const struct tcfs_prune_victim *v = o->r.taken[i];
		char target[80];
		struct shown sh = {
			v->key, v->name,
			tcfs_prune_target(v, target, sizeof(target)),
			how == TCFS_PRUNE_IR ? v->ir_bytes : v->total_bytes,
			v->last_used_ns / 1000000000,
		};

		fn(ctx, &sh);
	}
	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(o->daemon,
							       "kernels")) {
		struct shown sh = {
			str(k, "key"), str(k, "name"), str(k, "target"),
			(uint64_t)num(k, "bytes"), (int64_t)num(k, "last_used"),
		};

		fn(ctx, &sh);
	}
}

/* The run's totals, from either kind of outcome. */
struct totals {
	uint64_t kernels, files, bytes, freed, pending, fresh, skipped;
};

static void count_shown(void *ctx, const struct shown *k)
{
	(void)k;
	((struct totals *)ctx)->kernels++;
}

static struct totals totals_of(const struct outcome *o,
			       enum tcfs_prune_how how)
{
	const cJSON *d = o->daemon;
	struct totals t = { 0 };

	each_shown(o, how, count_shown, &t);
	if (!d) {
		t.files = o->r.files;
		t.bytes = o->r.bytes;
		t.freed = o->r.freed_bytes;
		t.pending = o->r.pending_bytes;
		t.fresh = o->r.fresh_bytes;
		t.skipped = o->r.skipped;
		return t;
	}
	t.files = (uint64_t)num(d, "files");
	t.bytes = (uint64_t)num(d, "bytes");
	t.freed = (uint64_t)num(d, "freed_bytes");
	t.pending = (uint64_t)num(d, "pending_bytes");
	t.fresh = (uint64_t)num(d, "pending_new_bytes");
	t.skipped = (uint64_t)num(d, "skipped");
	return t;
}

/* What is not freed yet, and why: blobs put in the last minute are
 * kept a minute (for puts in flight: cas.h), the others while the
 * kernel or a process holds a file that names them. */
static void print_pending(const struct totals *t)
{
	uint64_t held = t->pending - t->fresh;
	char b[16];

	if (t->fresh)
		printf(" (%s more within a minute: blobs written in the last "
		       "minute are kept that long, for writes in flight)",
		       cli_human(t->fresh, b, sizeof(b)));
	if (held)
		printf(" (%s more once no process uses them)",
		       cli_human(held, b, sizeof(b)));
}

/* The widest of the kernels' NAME fields, as printed, and of the
 * column's head. */
static void widen(void *ctx, const struct shown *k)
{
	char name[1024];
	size_t l = tcfs_utf8_width(tcfs_utf8_printable(k->name, name,
						       sizeof(name)));
	int *w = ctx;

	*w = (int)l > *w ? (int)l : *w;
}

static void print_row(void *ctx, const struct shown *k)
{
	char name[1024], key[1024], target[256], b[16], t[32];

	cli_pad(tcfs_utf8_printable(k->name, name, sizeof(name)), *(int *)ctx);
	printf(" %-52s %-12s %10s  %s\n",
	       tcfs_utf8_printable(k->key, key, sizeof(key)),
	       tcfs_utf8_printable(k->target, target, sizeof(target)),
	       cli_human(k->bytes, b, sizeof(b)),
	       cli_time(k->last_used * 1000000000, t, sizeof(t)));
}

/* One row per kernel, each key whole, as tcfs list shows it. */
static void print_table(const struct outcome *o, enum tcfs_prune_how how,
			int dry)
{
	struct totals t = totals_of(o, how);
	int nw = (int)strlen("NAME");
	char b1[16], b2[16];

	each_shown(o, how, widen, &nw);
	if (t.kernels)
		printf("%-*s %-52s %-12s %10s  %s\n", nw, "NAME", "KEY",
		       "TARGET", how == TCFS_PRUNE_IR ? "IR" : "SIZE",
		       "LAST USED");
	each_shown(o, how, print_row, &nw);
	printf("%s %llu kernel%s%s (%s)", dry ? "would prune" : "pruned",
	       (unsigned long long)t.kernels, t.kernels == 1 ? "" : "s",
	       how == TCFS_PRUNE_IR ? "' IR" : "",
	       cli_human(t.bytes, b1, sizeof(b1)));
	if (!dry)
		printf(", %llu files; freed %s", (unsigned long long)t.files,
		       cli_human(t.freed, b2, sizeof(b2)));
	print_pending(&t);
	if (t.skipped > 0)
		printf("; %llu skipped (changed meanwhile, or a group file "
		       "that is not Triton's)", (unsigned long long)t.skipped);
	printf("\n");
}

/* Prunes what sel selects: here (offline, or a dry run, which sees what
 * the mount committed) or through the mount.  0, or negative (said). */
static int run(const struct cli_common *co,
	       const struct tcfs_prune_select *sel, enum tcfs_prune_how how,
	       int dry, struct progress *prog, struct outcome *o)
{
	char mount[PATH_MAX], store[PATH_MAX];
	struct cli_store_opts so = co->store;
	struct tcfs_store *s;
	int rc;

	if (cli_open_store("prune", &co->store, 0, 0, &s) != CLI_OK)
		return -EIO;
	/* Mounted, the daemon commits what it holds first: a dry run sees
	 * what a real one would. */
	if ((rc = cli_mount_sync(s, mount)) < 0) {
		cli_lib_err("prune", rc, tcfs_store_path(s));
		tcfs_store_close(s);
		return rc;
	}
	snprintf(store, sizeof(store), "%s", tcfs_store_path(s));
	if (dry) {
		rc = run_here(s, sel, how, 1, prog, o);
		tcfs_store_close(s);
		return rc;
	}
	tcfs_store_close(s);
	if (mount[0])
		return run_mounted(store, sel, how, prog, o);
	so.dir = store;	/* the store found (and said) at the first open */
	if (cli_open_store("prune", &so, 0, 1, &s) != CLI_OK)
		return -EIO;
	rc = run_here(s, sel, how, 0, prog, o);
	tcfs_store_close(s);
	return rc;
}

/* --json: the daemon's report as it came, or this run's. */
static int print_json(struct outcome *o, enum tcfs_prune_how how, int dry)
{
	cJSON *doc = o->daemon ? o->daemon
			       : tcfs_prune_report_json(&o->r, how, dry);

	o->daemon = NULL;	/* cli_print_json's now */
	if (!doc) {
		cli_err("prune", "out of memory");
		return CLI_FAIL;
	}
	return cli_print_json(doc);
}

int cmd_prune(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_prune_select sel = { { NULL, NULL, NULL }, -1 };
	int rc, dry = 0, ir = 0, quiet = 0;
	enum tcfs_prune_how how;
	struct outcome o = { 0 };
	struct progress prog;
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
	how = ir ? TCFS_PRUNE_IR : TCFS_PRUNE_WHOLE;
	progress_init(&prog, "pruning", "kernels", quiet);
	if (run(&co, &sel, how, dry, &prog, &o) < 0) {
		outcome_free(&o);
		return CLI_FAIL;
	}
	rc = CLI_OK;
	if (co.json && !quiet)
		rc = print_json(&o, how, dry);
	else if (!quiet)
		print_table(&o, how, dry);
	outcome_free(&o);
	return rc;
}
