/*
 * tcfs why: why a kernel missed, from its metadata against its nearest
 * cached sibling's (index/model/why.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "cmds.h"
#include "index/store/store.h"
#include "index/base/utf8.h"
#include "index/model/why.h"

static const struct opt_cmd cmd = {
	"why", "KEY", 1, 1, "give one KEY",
	"Why the kernel at KEY was compiled when others of its name were\n"
	"cached: compares its metadata (NAME.json) with every cached kernel of\n"
	"the same name and target, picks the nearest (the fewest differing\n"
	"top-level fields) and shows the fields that differ, but \"hash\".\n"
	"None differing means the source, the signature or Triton itself\n"
	"changed, which the metadata does not record.  A kernel whose\n"
	"NAME.json is missing or not JSON has no nearest.\n",
	NULL,
	"Exit status: 0 success, 1 no kernel at KEY or the store could not be\n"
	"read, 2 usage error.\n",
};

static void print_text(const struct tcfs_why *w)
{
	char a[TCFS_UTF8_SHOW_MAX], b[TCFS_UTF8_SHOW_MAX], t[80];

	/* The metadata's own strings: bytes from the cache, made printable
	 * like every name tcfs shows. */
	snprintf(t, sizeof(t), "%s-%s", w->k.backend, w->k.arch);
	printf("kernel   %s\n", tcfs_utf8_printable(w->k.name, a, sizeof(a)));
	printf("key      %s\n", tcfs_utf8_printable(w->k.key, a, sizeof(a)));
	printf("target   %s\n", tcfs_utf8_printable(t, a, sizeof(a)));
	if (w->k.meta != TCFS_META_OK) {
		printf("nearest  none: its metadata (%s.json) is %s\n",
		       tcfs_utf8_printable(w->k.name, a, sizeof(a)),
		       w->k.meta == TCFS_META_MISSING ? "missing" : "not JSON");
		return;
	}
	if (!w->nearest[0]) {
		printf("nearest  none: no other kernel of this name and "
		       "target is cached\n");
		return;
	}
	printf("nearest  %s\n", tcfs_utf8_printable(w->nearest, a, sizeof(a)));
	if (!w->differences->child) {
		printf("the metadata is the same: the source, the signature or "
		       "Triton itself changed\n");
		return;
	}
	printf("differs in\n");
	for (const cJSON *f = w->differences->child; f; f = f->next) {
		char *was = cJSON_PrintUnformatted(cJSON_GetArrayItem(f, 0));
		char *now = cJSON_PrintUnformatted(cJSON_GetArrayItem(f, 1));

		printf("  %-20s ", tcfs_utf8_printable(f->string, a, sizeof(a)));
		printf("%s -> %s\n",
		       tcfs_utf8_printable(was ? was : "?", a, sizeof(a)),
		       tcfs_utf8_printable(now ? now : "?", b, sizeof(b)));
		free(was);
		free(now);
	}
}

static int print_json(const struct tcfs_why *w)
{
	cJSON *o = cJSON_CreateObject();
	char t[80];

	snprintf(t, sizeof(t), "%s-%s", w->k.backend, w->k.arch);
	cJSON_AddStringToObject(o, "key", w->k.key);
	cJSON_AddStringToObject(o, "name", w->k.name);
	cJSON_AddStringToObject(o, "target", t);
	if (w->nearest[0])
		cJSON_AddStringToObject(o, "nearest", w->nearest);
	else
		cJSON_AddNullToObject(o, "nearest");
	cJSON_AddItemToObject(o, "differences",
			      cJSON_Duplicate(w->differences, 1));
	return cli_print_json(o);
}

int cmd_why(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	struct tcfs_store *s;
	struct tcfs_why w;
	char **args;
	int rc;
	struct opt opts[] = {
		CLI_OPTS_COMMON(&co, "print {key, name, target, nearest: KEY or "
				"null, differences: {FIELD: [nearest's value, "
				"this kernel's value]}}"),
		OPT_END(),
	};

	if (opt_parse(&cmd, opts, argc, argv, &args, &rc) < 0)
		return rc;
	if (cli_open_store("why", &co.store, 0, 0, &s) != CLI_OK)
		return CLI_FAIL;
	rc = tcfs_why(s, args[0], &w);
	if (rc == -ENOENT) {
		cli_err("why", "%s: no kernel with this key in %s", args[0],
			tcfs_store_path(s));
	} else if (rc < 0) {
		cli_lib_err("why", rc, args[0]);
	} else {
		if (co.json)
			rc = print_json(&w) == CLI_OK ? 0 : -1;
		else
			print_text(&w);
		tcfs_why_free(&w);
	}
	tcfs_store_close(s);
	return rc < 0 ? CLI_FAIL : CLI_OK;
}
