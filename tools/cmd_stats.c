/*
 * tcfs stats: hits and misses of the cache, from the mount's probe log.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "cmds.h"
#include "index/base/text.h"
#include "index/model/event.h"
#include "index/model/report.h"
#include "index/store/store.h"
#include "index/base/utf8.h"

static const struct opt_cmd cmd = {
	"stats", "", 0, 0, "",
	"What the mount saw: kernel probes (KEY/__grp__NAME.json) as hits and\n"
	"misses with the hit rate, the new kernels (those that missed) with\n"
	"their keys, hits and misses per kernel name and per process, and the\n"
	"module probes (.so, .autotune.json) apart.  One probe is one lookup\n"
	"of a path by a process, however often it looks.\n"
	"\n"
	"The probe log (tcfs log) keeps the newest events only, as tcfs config\n"
	"sets (log-max-events, log-max-age); the totals count every probe\n"
	"ever, and so do the counts per kernel.  Counts per process, and\n"
	"everything with --since, come from the events the log still holds.\n"
	"While the disk is nearly full the mount logs no probes: it counts\n"
	"them as dropped.  Through the mount (MOUNT/.tcfs/stats), a user other\n"
	"than root and the mount's owner sees only its own processes.\n",
	NULL,
	"Exit status: 0 success, 1 error or more misses than --max-misses\n"
	"allows, 2 usage error.\n",
};

/* Prints the stats (or with prom, the metrics), then resets them when
 * asked; CLI_FAIL when more than max_misses kernel probes missed. */
static int run(const struct cli_common *co, int prom, int reset,
	       uint64_t max_misses)
{
	char mount[PATH_MAX];
	struct tcfs_store *s;
	uint64_t misses = 0;
	int rc;

	if (cli_open_store("stats", &co->store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	cli_mount_sync(s, mount);
	if (prom)
		rc = tcfs_report_metrics(s, NULL, stdout);
	else
		/* Who can open the store (its owner, root) sees it all. */
		rc = tcfs_report_stats(s, co->since_ns, mount,
				       TCFS_EVENT_ALL_USERS, co->json, stdout,
				       &misses);
	if (rc == 0 && reset)
		rc = tcfs_event_clear(s, NULL);
	if (rc < 0)
		cli_lib_err("stats", rc, tcfs_store_path(s));
	tcfs_store_close(s);
	if (rc < 0)
		return CLI_FAIL;
	if (misses > max_misses) {
		cli_err("stats", "%llu kernel %s missed, more than "
				 "--max-misses %llu allows",
			(unsigned long long)misses,
			TCFS_NOUN(misses, "probe"),
			(unsigned long long)max_misses);
		return CLI_FAIL;
	}
	return CLI_OK;
}

int cmd_stats(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	uint64_t max_misses = UINT64_MAX;
	int reset = 0, prom = 0, rc;
	char **args;
	struct opt opts[] = {
		CLI_OPT_SINCE(&co, "only probes since T: 90s, 30m, 2h, 7d ago, "
			      "or YYYY-MM-DD[ HH:MM[:SS]], or @EPOCH-SECONDS"),
		OPT_FLAG(0, "reset", &reset, "delete the log and the counts "
			 "(after printing)"),
		OPT_FN(0, "max-misses", "N", &max_misses, cli_opt_count,
		       "exit 1 when more than N kernel probes missed (since T, "
		       "with --since): a CI check that a warm cache stayed "
		       "warm"),
		OPT_FLAG(0, "prometheus", &prom, "print the counts and the "
			 "store's sizes as Prometheus metrics (text exposition "
			 "format, for node_exporter's textfile collector); a "
			 "mount serves them live as MOUNT/.tcfs/metrics.prom"),
		CLI_OPTS_COMMON(&co, "print {cache_dir, store, hits, misses, "
				"hit_rate, new_kernels_count, new_kernels: [KEY], "
				"per_kernel: {NAME: {hits, misses}}, per_process: "
				"[{pid, comm, uid, hits, misses}], modules: {hits, "
				"misses}, log: {events, oldest, max_events, "
				"max_age_seconds, dropped}, eviction: {max_size, "
				"evictions, evicted_bytes, evicted_requested, "
				"limit_too_small, user_max_size}, users: [{uid, "
				"bytes, kernels}]}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	return run(&co, prom, reset, max_misses);
}
