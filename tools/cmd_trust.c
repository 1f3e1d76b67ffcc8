/*
 * tcfs trust: on a cache shared by many users (a mount with -o
 * allow_other), make an untrusted user's own kernels shared, through the
 * mount's daemon (fs/ctl.c, fs/users.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "keyarg.h"
#include "fs/fs.h"
#include "index/base/err.h"
#include "index/base/name.h"
#include "index/store/store.h"

static const struct opt_cmd cmd = {
	"trust", "promote [KEY]", 1, 2, "say what to do: promote",
	"On a cache shared by many users (tcfs mount -o allow_other), a user\n"
	"that -o trust does not name writes kernels of their own, which no\n"
	"other user loads.  promote KEY makes that key's own kernels (of every\n"
	"user, or of --user U) shared: every user's probes hit them from then\n"
	"on.  promote --user U makes all of U's shared.  A promoted kernel's\n"
	"files become the mount owner's, so their writer can no longer change\n"
	"them.  Where a shared kernel of the key is there already, the user's\n"
	"copy goes.  KEY may be any prefix that begins one key (as git takes\n"
	"a hash), in either case.  Done by the\n"
	"mount's daemon: the store must be mounted, and only root and the\n"
	"mount's owner reach it (STORE/ctl.sock).\n",
	NULL,
	"Exit status: 0 success, 1 failure (not mounted, not shared), 2 usage\n"
	"error.\n",
};

static int promote(const struct cli_common *co, const char *key, int64_t uid)
{
	char mount[PATH_MAX], store[PATH_MAX], whole[TCFS_NAME_MAX + 1];
	struct tcfs_store *s;
	cJSON *req = cJSON_CreateObject(), *resp = NULL;
	const cJSON *e;
	int rc = -ENOMEM;

	if (cli_open_store("trust", &co->store, 0, 0, &s) != CLI_OK) {
		cJSON_Delete(req);
		return CLI_FAIL;
	}
	snprintf(store, sizeof(store), "%s", tcfs_store_path(s));
	cli_mount_sync(s, mount);
	rc = key ? keyarg("trust", s, key, NULL, whole, sizeof(whole)) : CLI_OK;
	tcfs_store_close(s);
	if (rc == CLI_OK && key && !tcfs_name_is_key(whole))
		rc = cli_usage_err("trust", "'%s' is not a Triton cache key, "
				   "nor begins one", key);
	if (rc != CLI_OK) {
		cJSON_Delete(req);
		return rc;
	}
	rc = -ENOMEM;
	if (!mount[0]) {
		cJSON_Delete(req);
		cli_err("trust", "%s: not mounted: users' own kernels are the "
			"mount's to promote", store);
		return CLI_FAIL;
	}
	if (req && cJSON_AddStringToObject(req, "op", "promote") &&
	    (!key || cJSON_AddStringToObject(req, "key", whole)) &&
	    (uid < 0 || cJSON_AddNumberToObject(req, "uid", (double)uid)))
		rc = tcfs_fs_ctl_call(store, req, &resp);
	cJSON_Delete(req);
	e = cJSON_GetObjectItemCaseSensitive(resp, "error");
	if (rc < 0 || cJSON_IsString(e)) {
		cli_err("trust", "%s: the mount's daemon: %s", store,
			rc < 0 ? tcfs_err_msg() : e->valuestring);
		cJSON_Delete(resp);
		return CLI_FAIL;
	}
	if (co->json)
		return cli_print_json(resp);
	printf("promoted %.0f key dirs\n",
	       cJSON_GetNumberValue(cJSON_GetObjectItem(resp, "promoted")));
	cJSON_Delete(resp);
	return CLI_OK;
}

int cmd_trust(int argc, char **argv)
{
	struct cli_common co = CLI_COMMON_INIT;
	int64_t uid = -1;
	char **args;
	int n, rc;
	struct opt opts[] = {
		OPT_FN('u', "user", "USER", &uid, cli_opt_user,
		       "the kernels of this user (a name or a uid)"),
		CLI_OPTS_COMMON(&co, "print {promoted}: the key dirs made "
				"shared"),
		OPT_END(),
	};

	n = opt_parse(&cmd, opts, argc, argv, &args, &rc);
	if (n < 0)
		return rc;
	if (strcmp(args[0], "promote") != 0)
		return cli_usage_err("trust", "'%s': say promote", args[0]);
	if (n == 1 && uid < 0)
		return cli_usage_err("trust", "promote: say a KEY or --user");
	return promote(&co, n == 2 ? args[1] : NULL, uid);
}
