/* settings: the store's remote settings, as a remote configuration. */
#include "index/remote/settings.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "index/base/err.h"
#include "index/remote/option.h"
#include "index/store/config.h"

int tcfs_remote_cfg_from_store(struct tcfs_store *s, struct tcfs_remote_cfg *c,
			       int *named)
{
	const size_t plen = strlen(TCFS_CONFIG_REMOTE_PREFIX);
	char text[4096];
	int rc = 0, set;

	tcfs_remote_cfg_init(c);
	*named = 0;
	for (const struct tcfs_config_key *k = tcfs_config_keys;
	     rc == 0 && k->name; k++) {
		int url = strcmp(k->name, TCFS_CONFIG_REMOTE) == 0;

		if (!url && strncmp(k->name, TCFS_CONFIG_REMOTE_PREFIX, plen))
			continue;
		rc = tcfs_config_get_text(s, k->name, text, sizeof(text), &set);
		if (rc < 0 || !set)
			continue;
		*named |= url;
		rc = tcfs_remote_cfg_setting(c, k->name, text);
	}
	explicit_bzero(text, sizeof(text));
	if (rc == 0 && *named)
		rc = tcfs_remote_cfg_check(c);
	return rc < 0 ? tcfs_err_prefix(rc, "the store's remote settings")
		      : 0;
}
