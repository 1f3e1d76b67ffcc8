/* remote_open: the remote a command names. */
#include "remote_open.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "index/base/err.h"
#include "index/remote/option.h"
#include "index/remote/remote.h"
#include "index/remote/settings.h"
#include "index/store/store.h"

const char *remote_open_join(void *value, const char *arg)
{
	const char **o = value;
	char *j;

	if (*o == NULL) {
		*o = arg;
		return NULL;
	}
	if (asprintf(&j, "%s,%s", *o, arg) < 0)
		return "out of memory";
	*o = j;		/* lives until the command exits */
	return NULL;
}

int remote_open(const char *cmd, const char *opts, struct tcfs_store *s,
		struct tcfs_remote_cfg *cfg, struct tcfs_remote **r)
{
	char *rest = NULL;
	int named = 0, rc;

	rc = tcfs_remote_cfg_opts(cfg, opts, &named, &rest);
	if (rc == 0 && rest[0])
		rc = tcfs_err_set(-EINVAL, "-o %s: not a remote option", rest);
	free(rest);
	if (rc < 0)
		return cli_usage_err(cmd, "%s", tcfs_err_msg());
	if (!named && tcfs_remote_cfg_from_store(s, cfg, &named) < 0) {
		cli_lib_err(cmd, -EINVAL, tcfs_store_path(s));
		return CLI_FAIL;
	}
	if (!named)
		return cli_usage_err(cmd, "no remote: give -o remote=URL, "
				     "or set one with tcfs config remote URL");
	rc = tcfs_remote_open(cfg, r);
	if (rc < 0) {
		cli_lib_err(cmd, rc, "the remote");
		return CLI_FAIL;
	}
	return CLI_OK;
}
