/* keyarg: a key typed short, made whole. */
#include "keyarg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "index/base/err.h"
#include "index/model/kernel.h"

int keyarg(const char *cmd, struct tcfs_store *s, const char *key,
	   const char *fx_dir, char *out, size_t len)
{
	int rc = tcfs_kernel_resolve(s, key, fx_dir, out, len);

	if (rc == -ENOENT && strlen(key) < len) {
		snprintf(out, len, "%s", key);
		return CLI_OK;
	}
	if (rc == -ENOENT) {
		cli_err(cmd, "%.64s...: no kernel with this key in %s", key,
			tcfs_store_path(s));
		return CLI_FAIL;
	}
	if (rc < 0)
		cli_lib_err(cmd, rc, key);
	return rc == -ENOTUNIQ ? CLI_USAGE : rc < 0 ? CLI_FAIL : CLI_OK;
}
