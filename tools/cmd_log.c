/*
 * tcfs log: the probe log, one event per line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"
#include "cmds.h"
#include "index/model/event.h"
#include "index/base/json.h"
#include "index/store/store.h"
#include "index/base/utf8.h"

static const struct opt_cmd cmd = {
	"log", "", 0, 0, "",
	"Prints the mount's probe log, oldest first, one event per line:\n"
	"time, pid, command, hit or miss, kind (kernel or module), KEY/NAME.\n"
	"With -F it prints the last 10 events, then each new one as it is\n"
	"logged, as tail -F does (-n N for the last N instead).\n",
	NULL,
	"Exit status: 0 success, 1 error, 2 usage error.\n",
};

static void print_event(const struct tcfs_event *e, int json)
{
	char when[32], comm[TCFS_UTF8_SHOW_MAX], key[TCFS_UTF8_SHOW_MAX],
		name[TCFS_UTF8_SHOW_MAX];

	if (json) {
		cJSON *o = cJSON_CreateObject();
		char *s;

		cJSON_AddNumberToObject(o, "id", (double)e->id);
		cJSON_AddNumberToObject(o, "time", (double)e->time_ns / 1e9);
		cJSON_AddNumberToObject(o, "pid", e->pid);
		cJSON_AddStringToObject(o, "comm", e->comm);
		if (e->uid >= 0)
			cJSON_AddNumberToObject(o, "uid", (double)e->uid);
		else
			cJSON_AddNullToObject(o, "uid");
		cJSON_AddBoolToObject(o, "hit", e->hit);
		cJSON_AddBoolToObject(o, "remote", e->remote);
		cJSON_AddStringToObject(o, "kind", tcfs_probe_name(e->kind));
		cJSON_AddStringToObject(o, "key", e->key);
		cJSON_AddStringToObject(o, "name", e->name);
		cJSON_AddStringToObject(o, "view", e->view);
		s = tcfs_json_sanitize(o) == 0 ? cJSON_PrintUnformatted(o)
					       : NULL;
		if (s)
			puts(s);
		free(s);
		cJSON_Delete(o);
		return;
	}
	printf("%s.%03d %7d %-16s %-4s %-6s %s/%s%s%s%s\n",
	       cli_time(e->time_ns, when, sizeof(when)),
	       (int)(e->time_ns / 1000000 % 1000), e->pid,
	       tcfs_utf8_printable(e->comm, comm, sizeof(comm)),
	       e->hit ? "hit" : "miss",
	       tcfs_probe_name(e->kind),
	       tcfs_utf8_printable(e->key, key, sizeof(key)),
	       tcfs_utf8_printable(e->name, name, sizeof(name)),
	       e->view[0] ? "  via " : "", e->view,
	       e->remote ? "  (from the remote)" : "");
}

int cmd_log(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct timespec nap = { 0, 250 * 1000000L };
	struct tcfs_store *s;
	int64_t last = 0;
	/* As tail: -F alone shows the last 10, a plain log the whole. */
	uint64_t lines = UINT64_MAX;
	int follow = 0, rc;
	char **args;
	struct opt opts[] = {
		CLI_OPT_SINCE(&co, "only events since T (as for tcfs stats)"),
		OPT_FLAG('F', "follow", &follow, "keep printing new events as "
			 "they are logged, after the last 10 (or -n N)"),
		OPT_FN('n', "lines", "N", &lines, cli_opt_count, "only the last N "
		       "events (0: none, with -F only new ones)"),
		CLI_OPTS_COMMON(&co, "one JSON object per line: {id, time, pid, "
				"comm, uid, hit, remote (a hit the fleet tier served), "
				"kind, "
				"key, name, view (\"\", or \"binary-only\" for a "
				"probe through that view)}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	if (cli_open_store("log", &co.store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	cli_mount_sync(s, NULL);
	if (lines == UINT64_MAX && follow)
		lines = 10;
	rc = lines == UINT64_MAX ? 0 : tcfs_event_tail(s, co.since_ns, lines,
						       &last);
	while (rc >= 0) {
		struct tcfs_event *ev;
		size_t n;

		rc = tcfs_event_list(s, last, co.since_ns, 10000, &ev, &n);
		if (rc < 0)
			break;
		for (size_t i = 0; i < n; i++)
			print_event(&ev[i], co.json);
		if (n)
			last = ev[n - 1].id;
		free(ev);
		fflush(stdout);
		if (n == 0 && follow)
			nanosleep(&nap, NULL);
		if (n == 0 && !follow)
			break;
	}
	if (rc < 0)
		cli_lib_err("log", rc, tcfs_store_path(s));
	tcfs_store_close(s);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}
