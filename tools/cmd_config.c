/*
 * tcfs config: the store's settings, shown and set (index/store/config.h).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "index/store/config.h"
#include "index/base/err.h"
#include "index/store/store.h"
#include "index/base/utf8.h"

static void settings(FILE *f);

static const struct opt_cmd cmd = {
	"config", "[KEY [VALUE]]", 0, 2, "",
	"Shows or sets the store's settings.  With no KEY, lists them all with\n"
	"their values; with KEY, prints its value; with KEY VALUE, sets it.  A\n"
	"mounted store takes a new value within seconds, no remount needed.\n",
	settings,
	"Exit status: 0 success, 1 error (no store: tcfs mount or tcfs import\n"
	"creates one), 2 usage error (an unknown setting, a bad value).\n",
};

/* The settings, from the table that defines them (config.h). */
static void settings(FILE *f)
{
	static const char *const unit[] = {
		[TCFS_CONFIG_COUNT] = "N",
		[TCFS_CONFIG_SECONDS] = "T",
		[TCFS_CONFIG_BYTES] = "SIZE",
		[TCFS_CONFIG_TEXT] = "TEXT",
	};

	fputs("\nSettings:\n", f);
	for (const struct tcfs_config_key *k = tcfs_config_keys; k->name; k++) {
		char help[512], d[32];
		int len = fprintf(f, "  %s %s", k->name, unit[k->unit]);

		if (k->unit == TCFS_CONFIG_TEXT)
			snprintf(help, sizeof(help), "%s", k->help);
		else
			snprintf(help, sizeof(help), "%s (default %s)", k->help,
				 tcfs_config_show(k, k->def, d, sizeof(d)));
		if (len + 2 > 24) {
			fputc('\n', f);
			len = 0;
		}
		fprintf(f, "%*s", 24 - len, "");
		opt_wrap(f, help, 24, 24);
	}
}

/* A text setting (the remote's), shown as the others. */
/* Room for every key of tcfs_config_keys (asserted as rows are added). */
#define TCFS_CONFIG_KEYS_MAX 32

/* The table's rows, each column as wide as its widest cell. */
struct table {
	char name[TCFS_CONFIG_KEYS_MAX][32];
	char value[TCFS_CONFIG_KEYS_MAX][4096];
	char def[TCFS_CONFIG_KEYS_MAX][64];
	size_t n;
};

static void table_add(struct table *t, const char *name, const char *value,
		      const char *def)
{
	assert(t->n < TCFS_CONFIG_KEYS_MAX);
	snprintf(t->name[t->n], sizeof(t->name[0]), "%s", name);
	tcfs_utf8_printable(value, t->value[t->n], sizeof(t->value[0]));
	snprintf(t->def[t->n], sizeof(t->def[0]), "%s", def);
	t->n++;
}

/* "log-max-age     7d         (default 30d)" */
static void table_print(const struct table *t)
{
	int wn = 0, wv = 10;

	for (size_t i = 0; i < t->n; i++) {
		int n = (int)strlen(t->name[i]);
		int v = (int)tcfs_utf8_width(t->value[i]);

		wn = n > wn ? n : wn;
		wv = v > wv ? v : wv;
	}
	for (size_t i = 0; i < t->n; i++) {
		int pad = wv - (int)tcfs_utf8_width(t->value[i]);

		printf("%-*s  %s%*s (default%s%s)\n", wn, t->name[i],
		       t->value[i], pad, "", t->def[i][0] ? " " : "",
		       t->def[i]);
	}
}

static int show_text(struct tcfs_store *s, const struct tcfs_config_key *k,
		     int only, cJSON *o, struct table *t)
{
	char v[4096];
	int set, rc = tcfs_config_get_text(s, k->name, v, sizeof(v), &set);

	if (rc < 0)
		return rc;
	if (o) {
		cJSON *j = cJSON_AddObjectToObject(o, k->name);

		cJSON_AddStringToObject(j, "value", v);
		cJSON_AddStringToObject(j, "default", "");
		cJSON_AddBoolToObject(j, "set", set);
	} else if (only) {
		puts(v);
	} else {
		table_add(t, k->name, set ? v : "-", set ? "none" : "");
	}
	return 0;
}

static int show(struct tcfs_store *s, const struct tcfs_config_key *only,
		int json)
{
	cJSON *o = json ? cJSON_CreateObject() : NULL;
	struct table *t = calloc(1, sizeof(*t));

	for (const struct tcfs_config_key *k = tcfs_config_keys; k->name; k++) {
		char v[32], d[32];
		int64_t value = 0;
		int set = 0, rc;

		if (only && k != only)
			continue;
		if (k->unit == TCFS_CONFIG_TEXT)
			rc = show_text(s, k, only != NULL, o, t);
		else
			rc = tcfs_config_get(s, k->name, &value, &set);
		if (rc < 0 || !t) {
			rc = rc < 0 ? rc : -ENOMEM;
			cJSON_Delete(o);
			free(t);
			cli_lib_err("config", rc, tcfs_store_path(s));
			return CLI_FAIL;
		}
		if (k->unit == TCFS_CONFIG_TEXT)
			continue;
		if (json) {
			cJSON *j = cJSON_AddObjectToObject(o, k->name);

			cJSON_AddNumberToObject(j, "value", (double)value);
			cJSON_AddNumberToObject(j, "default", (double)k->def);
			cJSON_AddBoolToObject(j, "set", set);
		} else if (only) {
			puts(tcfs_config_show(k, value, v, sizeof(v)));
		} else {
			table_add(t, k->name,
				  tcfs_config_show(k, value, v, sizeof(v)),
				  set ? tcfs_config_show(k, k->def, d, sizeof(d))
				      : "");
		}
	}
	if (!json && !only)
		table_print(t);
	free(t);
	return json ? cli_print_json(o) : CLI_OK;
}

/* Sets (or with unset, unsets) k; with neither, shows k, or every
 * setting when k is NULL. */
static int run(const struct cli_common *co, const struct tcfs_config_key *k,
	       int unset, const char *value_arg, int64_t value)
{
	struct tcfs_store *s;
	int rc = 0;

	if (cli_open_store("config", &co->store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	if (unset)
		rc = tcfs_config_unset(s, k->name);
	else if (value_arg && k->unit == TCFS_CONFIG_TEXT)
		rc = tcfs_config_set_text(s, k->name, value_arg);
	else if (value_arg)
		rc = tcfs_config_set(s, k->name, value);
	if (rc < 0)
		cli_lib_err("config", rc, tcfs_store_path(s));
	/* A value refused (a bad URL, out of range) is a usage error. */
	if (value_arg && (rc == -EINVAL || rc == -ERANGE))
		rc = CLI_USAGE;
	else if (rc >= 0)
		rc = unset || value_arg ? CLI_OK : show(s, k, co->json);
	tcfs_store_close(s);
	return rc < 0 ? CLI_FAIL : rc;
}

int cmd_config(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	const struct tcfs_config_key *k = NULL;
	int unset = 0, n, rc;
	int64_t value = 0;
	char **args;
	struct opt opts[] = {
		OPT_FLAG(0, "unset", &unset, "put KEY back to its default"),
		CLI_OPTS_COMMON(&co, "print {KEY: {value, default, set}} (values "
				"in events, seconds or bytes; the remote's as "
				"text)"),
		OPT_END(),
	};

	n = opt_parse(&cmd, opts, argc, argv, &args, &rc);
	if (n < 0)
		return rc;
	if (n > 0 && !(k = tcfs_config_find(args[0])))
		return cli_usage_err("config", "'%s' is no setting", args[0]);
	if (unset && n != 1)
		return cli_usage_err("config", "--unset takes one KEY");
	if (n == 2 && k->unit != TCFS_CONFIG_TEXT &&
	    tcfs_config_parse(k, args[1], &value) < 0) {
		rc = cli_usage_err("config", "%s", tcfs_err_msg());
		tcfs_err_clear();
		return rc;
	}
	return run(&co, k, unset, n == 2 ? args[1] : NULL, value);
}
