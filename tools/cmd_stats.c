/*
 * tcfs stats: hits and misses of the cache, from the mount's probe log.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "cmds.h"
#include "index/config.h"
#include "index/event.h"
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
	"them as dropped.\n"
	"\n"
	"Options:\n"
	"  -s, --store DIR   the store (default as for tcfs import)\n"
	"      --since T     only probes since T: 90s, 30m, 2h, 7d ago, or\n"
	"                    YYYY-MM-DD[ HH:MM[:SS]], or @EPOCH-SECONDS\n"
	"      --reset       delete the log and the counts (after printing)\n"
	"      --json        print {cache_dir, store, hits, misses, hit_rate,\n"
	"                    new_kernels_count, new_kernels: [KEY], per_kernel:\n"
	"                    {NAME: {hits, misses}}, per_process: [{pid, comm,\n"
	"                    hits, misses}], modules: {hits, misses}, log:\n"
	"                    {events, oldest, max_events, max_age_seconds,\n"
	"                    dropped}}\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 success, 1 error, 2 usage error.\n";

struct stats {
	struct tcfs_event_count *kind, *kernel, *proc, *fresh;
	size_t nkind, nkernel, nproc, nfresh;
	uint64_t hits, misses;		/* kernel probes */
	uint64_t mod_hits, mod_misses;	/* module probes */
	struct tcfs_event_log log;
	int64_t max_events, max_age;	/* the log's bounds (config.h) */
	char mount[PATH_MAX];		/* "" when not mounted */
};

static int load(struct tcfs_store *s, int64_t since, struct stats *st)
{
	char store[PATH_MAX];
	int rc;

	rc = tcfs_event_count(s, TCFS_BY_KIND, since, &st->kind, &st->nkind);
	if (rc == 0)
		rc = tcfs_event_count(s, TCFS_BY_KERNEL, since, &st->kernel,
				      &st->nkernel);
	if (rc == 0)
		rc = tcfs_event_count(s, TCFS_BY_PROCESS, since, &st->proc,
				      &st->nproc);
	if (rc == 0)
		rc = tcfs_event_count(s, TCFS_BY_NEW, since, &st->fresh,
				      &st->nfresh);
	if (rc == 0)
		rc = tcfs_event_log_info(s, &st->log);
	if (rc == 0)
		rc = tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_EVENTS,
				     &st->max_events, NULL);
	if (rc == 0)
		rc = tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_AGE, &st->max_age,
				     NULL);
	for (size_t i = 0; rc == 0 && i < st->nkind; i++) {
		int module = st->kind[i].name[0] == 'm';

		*(module ? &st->mod_hits : &st->hits) += st->kind[i].hits;
		*(module ? &st->mod_misses : &st->misses) += st->kind[i].misses;
	}
	if (cli_find_mount(tcfs_store_path(s), NULL, store, st->mount) < 0)
		st->mount[0] = '\0';
	return rc;
}

static double rate(uint64_t hits, uint64_t misses)
{
	return hits + misses ? (double)hits / (double)(hits + misses) : 0.0;
}

static cJSON *hit_miss(uint64_t hits, uint64_t misses)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "hits", (double)hits);
	cJSON_AddNumberToObject(o, "misses", (double)misses);
	return o;
}

static int print_json(struct tcfs_store *s, const struct stats *st)
{
	cJSON *o = cJSON_CreateObject(), *a, *k;

	cJSON_AddStringToObject(o, "cache_dir", st->mount);
	cJSON_AddStringToObject(o, "store", tcfs_store_path(s));
	cJSON_AddNumberToObject(o, "hits", (double)st->hits);
	cJSON_AddNumberToObject(o, "misses", (double)st->misses);
	cJSON_AddNumberToObject(o, "hit_rate", rate(st->hits, st->misses));
	cJSON_AddNumberToObject(o, "new_kernels_count", (double)st->nfresh);
	a = cJSON_AddArrayToObject(o, "new_kernels");
	for (size_t i = 0; a && i < st->nfresh; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(st->fresh[i].key));
	k = cJSON_AddObjectToObject(o, "per_kernel");
	for (size_t i = 0; k && i < st->nkernel; i++)
		cJSON_AddItemToObject(k, st->kernel[i].name,
				      hit_miss(st->kernel[i].hits,
					       st->kernel[i].misses));
	a = cJSON_AddArrayToObject(o, "per_process");
	for (size_t i = 0; a && i < st->nproc; i++) {
		cJSON *p = hit_miss(st->proc[i].hits, st->proc[i].misses);

		cJSON_AddNumberToObject(p, "pid", st->proc[i].pid);
		cJSON_AddStringToObject(p, "comm", st->proc[i].comm);
		cJSON_AddItemToArray(a, p);
	}
	cJSON_AddItemToObject(o, "modules", hit_miss(st->mod_hits,
						     st->mod_misses));
	k = cJSON_AddObjectToObject(o, "log");
	cJSON_AddNumberToObject(k, "events", (double)st->log.events);
	cJSON_AddNumberToObject(k, "oldest", (double)st->log.oldest_ns / 1e9);
	cJSON_AddNumberToObject(k, "max_events", (double)st->max_events);
	cJSON_AddNumberToObject(k, "max_age_seconds", (double)st->max_age);
	cJSON_AddNumberToObject(k, "dropped", (double)st->log.dropped);
	return cli_print_json(o);
}

static void print_text(struct tcfs_store *s, const struct stats *st)
{
	char a[TCFS_UTF8_SHOW_MAX], b[TCFS_UTF8_SHOW_MAX];

	printf("cache directory  %s\n", st->mount[0] ? st->mount
						     : "(not mounted)");
	printf("store            %s\n", tcfs_store_path(s));
	printf("kernel probes    %llu hits, %llu misses, hit rate %.1f%%\n",
	       (unsigned long long)st->hits, (unsigned long long)st->misses,
	       100 * rate(st->hits, st->misses));
	printf("module probes    %llu hits, %llu misses\n",
	       (unsigned long long)st->mod_hits,
	       (unsigned long long)st->mod_misses);
	printf("probe log        %llu events", (unsigned long long)st->log.events);
	if (st->log.events)
		printf(" since %s", cli_time(st->log.oldest_ns, a, sizeof(a)));
	printf(" (keeps %lld, for %s)\n", (long long)st->max_events,
	       tcfs_config_show(tcfs_config_find(TCFS_CONFIG_LOG_MAX_AGE),
				st->max_age, b, sizeof(b)));
	if (st->log.dropped)
		printf("                 %llu probes dropped while the disk "
		       "was nearly full (not in these counts)\n",
		       (unsigned long long)st->log.dropped);
	printf("new kernels      %zu\n", st->nfresh);
	for (size_t i = 0; i < st->nfresh; i++)
		printf("  - %s  %s\n",
		       tcfs_utf8_printable(st->fresh[i].key, a, sizeof(a)),
		       tcfs_utf8_printable(st->fresh[i].name, b, sizeof(b)));
	if (st->nkernel)
		printf("\nper kernel\n");
	for (size_t i = 0; i < st->nkernel; i++)
		printf("  %s: %llu hits, %llu misses\n",
		       tcfs_utf8_printable(st->kernel[i].name, a, sizeof(a)),
		       (unsigned long long)st->kernel[i].hits,
		       (unsigned long long)st->kernel[i].misses);
	if (st->nproc)
		printf("\nper process\n");
	for (size_t i = 0; i < st->nproc; i++)
		printf("  %d %s: %llu hits, %llu misses\n", st->proc[i].pid,
		       tcfs_utf8_printable(st->proc[i].comm, a, sizeof(a)),
		       (unsigned long long)st->proc[i].hits,
		       (unsigned long long)st->proc[i].misses);
}

static void stats_free(struct stats *st)
{
	free(st->kind);
	free(st->kernel);
	free(st->proc);
	free(st->fresh);
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_SINCE_LONGOPT,
		{ "reset", no_argument, NULL, 'R' },
		CLI_COMMON_LONGOPTS,
		{ 0 },
	};
	struct cli_common co = CLI_COMMON_INIT;
	struct stats st = { 0 };
	struct tcfs_store *s;
	int c, reset = 0, rc;

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
		default:
			return cli_usage_err("stats", "bad option");
		}
	}
	if (optind != argc)
		return cli_usage_err("stats", "unexpected argument '%s'",
				     argv[optind]);
	if (cli_open_store("stats", &co.store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	rc = load(s, co.since_ns, &st);
	if (rc == 0) {
		if (co.json)
			rc = print_json(s, &st) == CLI_OK ? 0 : -1;
		else
			print_text(s, &st);
	}
	if (rc == 0 && reset)
		rc = tcfs_event_clear(s, NULL);
	if (rc < 0)
		cli_lib_err("stats", rc, tcfs_store_path(s));
	stats_free(&st);
	tcfs_store_close(s);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}
