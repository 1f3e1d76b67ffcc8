/*
 * config: the store's settings (table config), shown and set by tcfs
 * config.  A setting never set has its default.  The mount reads them
 * again every few seconds, so a change needs no remount.
 */
#ifndef TCFS_CONFIG_H
#define TCFS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct tcfs_store;

/* The probe events the log keeps, and for how long (event.h). */
#define TCFS_CONFIG_LOG_MAX_EVENTS "log-max-events"
#define TCFS_CONFIG_LOG_MAX_AGE "log-max-age"
/* Stored bytes past which the mount evicts kernels; 0: no limit. */
#define TCFS_CONFIG_MAX_SIZE "max-size"
/* Each user's share of it: the bytes of the kernels a user wrote past
 * which that user's are evicted first; 0: no share.  Root and the mount's
 * owner have none. */
#define TCFS_CONFIG_USER_MAX_SIZE "user-max-size"

/* Where the mount serves GET /metrics over HTTP: [ADDR:]PORT (addr.h),
 * text; -o metrics= overrides it. */
#define TCFS_CONFIG_METRICS "metrics"

/* The fleet tier (index/remote/config.h): the remote's URL and the
 * settings a mount takes from the store when -o remote names none.  Text,
 * each checked as the mount's -o remote_NAME would be. */
#define TCFS_CONFIG_REMOTE "remote"
#define TCFS_CONFIG_REMOTE_PREFIX "remote-"

enum tcfs_config_unit {
	TCFS_CONFIG_COUNT,	/* a number */
	TCFS_CONFIG_SECONDS,	/* a duration: 90s, 30m, 12h, 7d */
	TCFS_CONFIG_BYTES,	/* a size: 512M, 20G (powers of 1024) */
	TCFS_CONFIG_TEXT,	/* text (tcfs_config_get_text); def unused */
};

struct tcfs_config_key {
	const char *name;
	enum tcfs_config_unit unit;
	int64_t def, min, max;
	const char *help;	/* one line */
};

/* The known settings, NULL-terminated by name. */
extern const struct tcfs_config_key tcfs_config_keys[];

/* The setting called name, or NULL. */
const struct tcfs_config_key *tcfs_config_find(const char *name);

/* The value of a known setting (its default when unset); *set
 * (optional) says whether it was set. */
int tcfs_config_get(struct tcfs_store *s, const char *name, int64_t *value,
		    int *set);

/* Sets a known setting; -ERANGE (with a message) outside its range. */
int tcfs_config_set(struct tcfs_store *s, const char *name, int64_t value);

/* A text setting's value into buf (len bytes), "" when unset; and set,
 * checked first (-EINVAL with a message when the remote would refuse
 * it). */
int tcfs_config_get_text(struct tcfs_store *s, const char *name, char *buf,
			 size_t len, int *set);
int tcfs_config_set_text(struct tcfs_store *s, const char *name,
			 const char *text);

/* Puts a setting back to its default. */
int tcfs_config_unset(struct tcfs_store *s, const char *name);

/* Reads text as a value of k ("1000000", "30d", "20G"); -EINVAL (with a
 * message) when it is none, -ERANGE when out of range. */
int tcfs_config_parse(const struct tcfs_config_key *k, const char *text,
		      int64_t *out);

/* A value as tcfs_config_parse reads it, and people do ("30d"). */
const char *tcfs_config_show(const struct tcfs_config_key *k, int64_t v,
			     char *buf, size_t len);

#endif
