/*
 * tcfs config: the store's settings, shown and set (index/config.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "index/config.h"
#include "index/err.h"
#include "index/store.h"

static const char *const help =
	"Usage: tcfs config [OPTIONS] [KEY [VALUE]]\n"
	"\n"
	"Shows or sets the store's settings.  With no KEY, lists them all with\n"
	"their values; with KEY, prints its value; with KEY VALUE, sets it.  A\n"
	"mounted store takes a new value within seconds, no remount needed.\n"
	"\n"
	"Settings:\n"
	"  log-max-events N  probe events the log keeps (default 1000000),\n"
	"                    and counts kept per user of names never there;\n"
	"                    older ones go, and tcfs stats counts them still\n"
	"  log-max-age T     how long the log keeps an event (default 30d):\n"
	"                    90s, 30m, 12h, 7d\n"
	"\n"
	"Options:\n"
	"  -s, --store DIR   the store (default as for tcfs import)\n"
	"      --unset       put KEY back to its default\n"
	"      --json        print {KEY: {value, default, set}} (values in\n"
	"                    events or seconds)\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 success, 1 error, 2 usage error (an unknown setting, a\n"
	"bad value).\n";

static int show(struct tcfs_store *s, const struct tcfs_config_key *only,
		int json)
{
	cJSON *o = json ? cJSON_CreateObject() : NULL;

	for (const struct tcfs_config_key *k = tcfs_config_keys; k->name; k++) {
		char v[32], d[32];
		int64_t value;
		int set, rc;

		if (only && k != only)
			continue;
		rc = tcfs_config_get(s, k->name, &value, &set);
		if (rc < 0) {
			cJSON_Delete(o);
			cli_lib_err("config", rc, tcfs_store_path(s));
			return CLI_FAIL;
		}
		if (json) {
			cJSON *j = cJSON_AddObjectToObject(o, k->name);

			cJSON_AddNumberToObject(j, "value", (double)value);
			cJSON_AddNumberToObject(j, "default", (double)k->def);
			cJSON_AddBoolToObject(j, "set", set);
		} else if (only) {
			puts(tcfs_config_show(k, value, v, sizeof(v)));
		} else {
			/* "log-max-age     7d         (default 30d)" */
			printf("%-15s %-10s (default%s%s)\n", k->name,
			       tcfs_config_show(k, value, v, sizeof(v)),
			       set ? " " : "",
			       set ? tcfs_config_show(k, k->def, d, sizeof(d))
				   : "");
		}
	}
	return json ? cli_print_json(o) : CLI_OK;
}

int cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "unset", no_argument, NULL, 'U' },
		CLI_COMMON_LONGOPTS,
		{ 0 },
	};
	const struct tcfs_config_key *k = NULL;
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_store *s;
	int c, unset = 0, rc;
	int64_t value = 0;

	while ((c = getopt_long(argc, argv, "+" CLI_COMMON_SHORTOPTS, opts,
				NULL)) != -1) {
		switch (cli_common_opt("config", help, c, &co, &rc)) {
		case 1:
			continue;
		case -1:
			return rc;
		}
		if (c != 'U')
			return cli_usage_err("config", "bad option");
		unset = 1;
	}
	if (argc - optind > 2)
		return cli_usage_err("config", "unexpected argument '%s'",
				     argv[optind + 2]);
	if (optind < argc && !(k = tcfs_config_find(argv[optind])))
		return cli_usage_err("config", "'%s' is no setting",
				     argv[optind]);
	if (unset && (!k || argc - optind != 1))
		return cli_usage_err("config", "--unset takes one KEY");
	if (argc - optind == 2 &&
	    tcfs_config_parse(k, argv[optind + 1], &value) < 0) {
		rc = cli_usage_err("config", "%s", tcfs_err_msg());
		tcfs_err_clear();
		return rc;
	}
	if (cli_open_store("config", &co.store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	rc = 0;
	if (unset)
		rc = tcfs_config_unset(s, k->name);
	else if (argc - optind == 2)
		rc = tcfs_config_set(s, k->name, value);
	if (rc < 0) {
		cli_lib_err("config", rc, tcfs_store_path(s));
		tcfs_store_close(s);
		return CLI_FAIL;
	}
	rc = unset || argc - optind == 2 ? CLI_OK : show(s, k, co.json);
	tcfs_store_close(s);
	return rc;
}
