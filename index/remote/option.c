/* option: the remote's settings, from -o items and config keys. */
#include "index/remote/option.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"

int tcfs_remote_cfg_setting(struct tcfs_remote_cfg *c, const char *setting,
			    const char *value)
{
	char opt[64];

	if (strcmp(setting, "remote") == 0)
		return tcfs_remote_cfg_url(c, value);
	if (strncmp(setting, "remote-", 7) != 0 ||
	    snprintf(opt, sizeof(opt), "%s", setting + 7) >= (int)sizeof(opt))
		return -ENOENT;
	for (char *p = opt; *p; p++)
		*p = *p == '-' ? '_' : *p;
	return tcfs_remote_cfg_set(c, opt, value);
}

/* Whether the -o item s (len bytes) is the remote's: remote=URL or
 * remote_NAME=VALUE, applied to cfg.  1 when it is and applied, 0 when
 * it is not the remote's, -EINVAL (with a message) when it is but wrong. */
static int remote_opt(const char *s, size_t len, struct tcfs_remote_cfg *cfg)
{
	char item[1024], *eq;
	int rc;

	if (len < 7 || strncmp(s, "remote", 6) != 0 ||
	    (s[6] != '=' && s[6] != '_'))
		return 0;
	if (len >= sizeof(item))
		return tcfs_err_set(-EINVAL, "-o %.40s...: too long", s);
	memcpy(item, s, len);
	item[len] = '\0';
	eq = strchr(item, '=');
	if (!eq)
		return tcfs_err_set(-EINVAL, "-o %s: needs a value", item);
	*eq = '\0';
	if (s[6] == '=')
		return tcfs_remote_cfg_url(cfg, eq + 1) < 0 ? -EINVAL : 1;
	rc = tcfs_remote_cfg_set(cfg, item + 7, eq + 1);
	if (rc == -ENOENT)
		return tcfs_err_set(-EINVAL, "-o %s: no such option", item);
	return rc < 0 ? tcfs_err_prefix(rc, "-o %s", item) : 1;
}

int tcfs_remote_cfg_opts(struct tcfs_remote_cfg *cfg, const char *opts,
			 int *named, char **rest)
{
	size_t n = opts ? strlen(opts) : 0, used = 0;
	const char *s = opts, *end;
	int rc = 0, url = 0;

	*rest = calloc(1, n + 1);
	if (!*rest)
		return -ENOMEM;
	tcfs_remote_cfg_init(cfg);
	*named = 0;
	/* Items are split at commas as libfuse splits them: "\," is one. */
	for (; rc >= 0 && s && *s; s = *end ? end + 1 : end) {
		for (end = s; *end && *end != ','; end++)
			if (*end == '\\' && end[1])
				end++;
		rc = remote_opt(s, (size_t)(end - s), cfg);
		*named |= rc == 1;
		url |= rc == 1 && s[6] == '=';
		if (rc == 0) {
			used += (size_t)snprintf(*rest + used, n + 1 - used,
						 "%s%.*s", used ? "," : "",
						 (int)(end - s), s);
		}
	}
	if (rc >= 0 && *named && !url)
		rc = tcfs_err_set(-EINVAL, "-o remote_*: without -o remote=URL");
	if (rc >= 0 && *named)
		rc = tcfs_remote_cfg_check(cfg);
	return rc < 0 ? rc : 0;
}

int tcfs_remote_opt_doc(size_t i, char *name, size_t len, const char **arg,
			const char **help)
{
	const struct tcfs_remote_optdoc *d;

	if (i == 0) {
		snprintf(name, len, "remote");
		*arg = "URL";
		*help = "the fleet tier, redis://[USER@]HOST[:PORT][/DB]: "
			"asked on a probe's local miss, and sent what is "
			"compiled here (the remote_* items need it)";
		return 0;
	}
	d = tcfs_remote_cfg_doc(i - 1);
	if (!d)
		return -ENOENT;
	snprintf(name, len, "remote_%s", d->name);
	*arg = d->arg;
	*help = d->help;
	return 0;
}
