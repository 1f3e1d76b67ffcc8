/* config: settings with defaults, ranges, and their spelling. */
#include <errno.h>

#include "index/store/config.h"
#include "index/base/err.h"
#include "index/maint/recover.h"
#include "index/store/store.h"
#include "tap.h"

static void parses(const char *key, const char *text, int want_rc,
		   int64_t want)
{
	const struct tcfs_config_key *k = tcfs_config_find(key);
	int64_t v = -1;
	int rc = tcfs_config_parse(k, text, &v);

	tap_ok(rc == want_rc && (rc < 0 || v == want), "%s '%s': %s", key,
	       text, rc < 0 ? tcfs_err_msg() : "read");
}

int main(void)
{
	char *tmp = tap_tmpdir(), buf[32];
	struct tcfs_store_opts o = { .dir = tmp, .create = 1, .writer = 1,
				     .recover = tcfs_recover };
	const struct tcfs_config_key *age;
	struct tcfs_store *s;
	int64_t v;
	int set;

	parses(TCFS_CONFIG_LOG_MAX_EVENTS, "5000", 0, 5000);
	parses(TCFS_CONFIG_LOG_MAX_EVENTS, "0", -ERANGE, 0);
	parses(TCFS_CONFIG_LOG_MAX_EVENTS, "-3", -EINVAL, 0);
	parses(TCFS_CONFIG_LOG_MAX_EVENTS, "5k", -EINVAL, 0);
	parses(TCFS_CONFIG_LOG_MAX_EVENTS, "99999999999999999999", -EINVAL, 0);
	parses(TCFS_CONFIG_LOG_MAX_AGE, "7d", 0, 7 * 86400);
	parses(TCFS_CONFIG_LOG_MAX_AGE, "12h", 0, 12 * 3600);
	parses(TCFS_CONFIG_LOG_MAX_AGE, "90", 0, 90);
	parses(TCFS_CONFIG_LOG_MAX_AGE, "1w", -EINVAL, 0);
	parses(TCFS_CONFIG_LOG_MAX_AGE, "99999999999d", -ERANGE, 0);
	parses(TCFS_CONFIG_MAX_SIZE, "20G", 0, INT64_C(20) << 30);
	parses(TCFS_CONFIG_MAX_SIZE, "512m", 0, INT64_C(512) << 20);
	parses(TCFS_CONFIG_MAX_SIZE, "1TiB", 0, INT64_C(1) << 40);
	parses(TCFS_CONFIG_MAX_SIZE, "3GB", 0, INT64_C(3) << 30);
	parses(TCFS_CONFIG_MAX_SIZE, "4096", 0, 4096);
	parses(TCFS_CONFIG_MAX_SIZE, "0", 0, 0);
	parses(TCFS_CONFIG_MAX_SIZE, "20X", -EINVAL, 0);
	parses(TCFS_CONFIG_MAX_SIZE, "20Gx", -EINVAL, 0);
	parses(TCFS_CONFIG_MAX_SIZE, "9999999T", -ERANGE, 0);
	parses(TCFS_CONFIG_LOG_MAX_AGE, "7dB", -EINVAL, 0);
	tap_ok(strcmp(tcfs_config_show(tcfs_config_find(TCFS_CONFIG_MAX_SIZE),
				       INT64_C(20) << 30, buf, sizeof(buf)),
		      "20G") == 0, "a size shows in its largest unit");
	age = tcfs_config_find(TCFS_CONFIG_LOG_MAX_AGE);
	tap_ok(strcmp(tcfs_config_show(age, 30 * 86400, buf, sizeof(buf)),
		      "30d") == 0, "a duration shows in its largest unit");
	tap_ok(strcmp(tcfs_config_show(age, 90, buf, sizeof(buf)), "90s") == 0,
	       "or in seconds");
	tap_ok(tcfs_config_find("no-such") == NULL, "an unknown name is none");

	if (tcfs_store_open(&o, &s) < 0) {
		printf("Bail out! cannot open a store\n");
		return 1;
	}
	tap_eq(tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_EVENTS, &v, &set), 0,
	       "get an unset setting");
	tap_ok(v == 1000000 && !set, "its default, not set");
	tap_eq(tcfs_config_set(s, TCFS_CONFIG_LOG_MAX_EVENTS, 42), 0, "set it");
	tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_EVENTS, &v, &set);
	tap_ok(v == 42 && set, "it reads back, set");
	tap_eq(tcfs_config_set(s, TCFS_CONFIG_LOG_MAX_EVENTS, 0), -ERANGE,
	       "a value out of range is refused");
	tap_eq(tcfs_config_set(s, "no-such", 1), -EINVAL,
	       "so is an unknown setting");
	tap_eq(tcfs_config_unset(s, TCFS_CONFIG_LOG_MAX_EVENTS), 0, "unset it");
	tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_EVENTS, &v, &set);
	tap_ok(v == 1000000 && !set, "back to its default");
	tcfs_store_close(s);
	tap_rmtree(tmp);
	return tap_done();
}
