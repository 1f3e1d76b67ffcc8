/*
 * tcfs stats: hits and misses of the cache, from the mount's probe log.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "cmds.h"
#include "index/event.h"
#include "index/report.h"
#include "index/store.h"
#include "index/utf8.h"

static const char *const help =
	"Usage: tcfs stats [OPTIONS]\n"
	"\n"
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
	"than root and the mount's owner sees only its own processes.\n"
	"\n"
	"Options:\n"
	"  -s, --store DIR   the store (default as for tcfs import)\n"
	"      --since T     only probes since T: 90s, 30m, 2h, 7d ago, or\n"
	"                    YYYY-MM-DD[ HH:MM[:SS]], or @EPOCH-SECONDS\n"
	"      --reset       delete the log and the counts (after printing)\n"
	"      --json        print {cache_dir, store, hits, misses, hit_rate,\n"
	"                    new_kernels_count, new_kernels: [KEY], per_kernel:\n"
	"                    {NAME: {hits, misses}}, per_process: [{pid, comm,\n"
	"                    uid, hits, misses}], modules: {hits, misses}, log:\n"
	"                    {events, oldest, max_events, max_age_seconds,\n"
	"                    dropped}}\n"
	"      --max-misses N\n"
	"                    exit 1 when more than N kernel probes missed\n"
	"                    (since T, with --since): a CI check that a warm\n"
	"                    cache stayed warm\n"
	"      --prometheus  print the counts and the store's sizes as\n"
	"                    Prometheus metrics (text exposition format, for\n"
	"                    node_exporter's textfile collector); a mount\n"
	"                    serves them live as MOUNT/.tcfs/metrics.prom\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 success, 1 error or more misses than --max-misses\n"
	"allows, 2 usage error.\n";

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_SINCE_LONGOPT,
		{ "reset", no_argument, NULL, 'R' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "max-misses", required_argument, NULL, 'M' },
		CLI_COMMON_LONGOPTS,
		{ 0 },
	};
	struct cli_common co = CLI_COMMON_INIT;
	char mount[PATH_MAX];
	struct tcfs_store *s;
	uint64_t misses = 0, max_misses = UINT64_MAX;
	int c, reset = 0, prom = 0, rc;

	while ((c = getopt_long(argc, argv, "+" CLI_COMMON_SHORTOPTS, opts,
				NULL)) != -1) {
		switch (cli_common_opt("stats", help, c, &co, &rc)) {
		case 1:
			continue;
		case -1:
			return rc;
		}
		switch (c) {
		case 'R':
			reset = 1;
			break;
		case 'P':
			prom = 1;
			break;
		case 'M':
			if (cli_parse_count(optarg, &max_misses) < 0)
				return cli_usage_err("stats", "--max-misses: "
						     "not a count: '%s'",
						     optarg);
			break;
		default:
			return cli_usage_err("stats", "bad option");
		}
	}
	if (optind != argc)
		return cli_usage_err("stats", "unexpected argument '%s'",
				     argv[optind]);
	if (cli_open_store("stats", &co.store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	cli_mount_sync(s, mount);
	if (prom)
		rc = tcfs_report_metrics(s, NULL, stdout);
	else
		/* Who can open the store (its owner, root) sees it all. */
		rc = tcfs_report_stats(s, co.since_ns, mount,
				       TCFS_EVENT_ALL_USERS, co.json, stdout,
				       &misses);
	if (rc == 0 && reset)
		rc = tcfs_event_clear(s, NULL);
	if (rc < 0)
		cli_lib_err("stats", rc, tcfs_store_path(s));
	tcfs_store_close(s);
	if (rc < 0)
		return CLI_FAIL;
	if (misses > max_misses) {
		cli_err("stats", "%llu kernel probes missed, more than "
				 "--max-misses %llu allows",
			(unsigned long long)misses,
			(unsigned long long)max_misses);
		return CLI_FAIL;
	}
	return CLI_OK;
}
