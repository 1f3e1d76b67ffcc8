/* config: the store's settings, their defaults, ranges and spelling. */
#include "index/store/config.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/addr.h"
#include "index/store/db.h"
#include "index/base/err.h"
#include "index/remote/option.h"
#include "index/store/store.h"

static const char sql_get[] = "SELECT value FROM config WHERE key = ?";
static const char sql_set[] =
	"INSERT OR REPLACE INTO config (key, value) VALUES (?, ?)";
static const char sql_unset[] = "DELETE FROM config WHERE key = ?";

#define DAY 86400

const struct tcfs_config_key tcfs_config_keys[] = {
	{ TCFS_CONFIG_LOG_MAX_EVENTS, TCFS_CONFIG_COUNT, 1000000, 1,
	  INT64_C(1) << 40,
	  "probe events the log keeps, and counts per user of names never "
	  "there; older ones go (tcfs stats keeps counting them)" },
	{ TCFS_CONFIG_LOG_MAX_AGE, TCFS_CONFIG_SECONDS, 30 * DAY, 1,
	  100 * 365 * (int64_t)DAY,
	  "how long the log keeps a probe event" },
	{ TCFS_CONFIG_MAX_SIZE, TCFS_CONFIG_BYTES, 0, 0, INT64_C(1) << 60,
	  "stored bytes past which the mount evicts the least recently hit "
	  "kernels (0: no limit)" },
	{ TCFS_CONFIG_USER_MAX_SIZE, TCFS_CONFIG_BYTES, 0, 0, INT64_C(1) << 60,
	  "bytes of the kernels one user wrote past which the mount evicts "
	  "that user's least recently hit first, and refuses that user's "
	  "writes (EDQUOT) while all are in use (0: no share; root and the "
	  "mount's owner have none)" },
	{ TCFS_CONFIG_METRICS, TCFS_CONFIG_TEXT, 0, 0, 0,
	  "[ADDR:]PORT where the mount serves GET /metrics over HTTP for "
	  "Prometheus (ADDR 127.0.0.1 unless given; -o metrics= overrides "
	  "it)" },
	{ TCFS_CONFIG_REMOTE, TCFS_CONFIG_TEXT, 0, 0, 0,
	  "the fleet tier a mount asks on a local miss and publishes to, "
	  "redis://[USER@]HOST[:PORT][/DB] (-o remote= overrides it)" },
	{ "remote-auth-file", TCFS_CONFIG_TEXT, 0, 0, 0,
	  "a file (mode 0600) holding the remote's password" },
	{ "remote-key-file", TCFS_CONFIG_TEXT, 0, 0, 0,
	  "a file (mode 0600) holding the key that signs what is published "
	  "and checks what is fetched" },
	{ "remote-publish", TCFS_CONFIG_TEXT, 0, 0, 0,
	  "what is published: binary (no IR; the default), all, off" },
	{ "remote-trust", TCFS_CONFIG_TEXT, 0, 0, 0,
	  "what is accepted: checked (a sidecar; the default), signed, any" },
	{ "remote-modules", TCFS_CONFIG_TEXT, 0, 0, 0,
	  "on: launcher modules (.so) are fetched too (off by default: code "
	  "every node loads)" },
	{ "remote-inductor", TCFS_CONFIG_TEXT, 0, 0, 0,
	  "Inductor's and vLLM's entries through the remote: off (the "
	  "default), signed (only HMAC-signed ones), any (as PyTorch's own)" },
	{ "remote-key-format", TCFS_CONFIG_TEXT, 0, 0, 0,
	  "Redis key names, as TRITON_REDIS_KEY_FORMAT (default "
	  "triton:{key}:{filename})" },
	{ "remote-ttl", TCFS_CONFIG_TEXT, 0, 0, 0,
	  "seconds what is published lives in Redis (none by default)" },
	{ NULL, 0, 0, 0, 0, NULL },
};

const struct tcfs_config_key *tcfs_config_find(const char *name)
{
	for (const struct tcfs_config_key *k = tcfs_config_keys; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

static const struct tcfs_config_key *known(const char *name)
{
	const struct tcfs_config_key *k = tcfs_config_find(name);

	if (!k)
		tcfs_err_set(-EINVAL, "%s: no such setting", name);
	return k;
}

int tcfs_config_get(struct tcfs_store *s, const char *name, int64_t *value,
		    int *set)
{
	const struct tcfs_config_key *k = known(name);
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	if (!k)
		return -EINVAL;
	assert(k->unit != TCFS_CONFIG_TEXT);
	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_get, "t", name);
	*value = k->def;
	if (rc == 1) {
		int64_t v = sqlite3_column_int64(st, 0);

		tcfs_db_reset(st);
		/* A value out of range (a hand-edited index) is not used. */
		if (v >= k->min && v <= k->max)
			*value = v;
	}
	tcfs_db_unlock(db);
	if (set)
		*set = rc == 1;
	return rc < 0 ? rc : 0;
}

int tcfs_config_set(struct tcfs_store *s, const char *name, int64_t value)
{
	const struct tcfs_config_key *k = known(name);
	char lo[32], hi[32];
	int rc;

	if (!k)
		return -EINVAL;
	assert(k->unit != TCFS_CONFIG_TEXT);
	if (value < k->min || value > k->max)
		return tcfs_err_set(-ERANGE, "%s: must be from %s to %s", name,
				    tcfs_config_show(k, k->min, lo, sizeof(lo)),
				    tcfs_config_show(k, k->max, hi, sizeof(hi)));
	rc = tcfs_db_exec(tcfs_store_db(s), sql_set, "ti", name, value);
	return rc < 0 ? rc : 0;
}

/* A remote setting checked as the mount would take it. */
static int check_text(const char *name, const char *text)
{
	struct tcfs_remote_cfg c;
	int rc;

	/* The mount reads them from anywhere: a relative path would not do. */
	if (strstr(name, "-file") && text[0] != '/')
		return tcfs_err_set(-EINVAL, "%s: %s: give an absolute path",
				    name, text);
	tcfs_remote_cfg_init(&c);
	rc = tcfs_remote_cfg_setting(&c, name, text);
	explicit_bzero(&c, sizeof(c));
	return rc < 0 ? tcfs_err_prefix(-EINVAL, "%s", name) : 0;
}

int tcfs_config_get_text(struct tcfs_store *s, const char *name, char *buf,
			 size_t len, int *set)
{
	const struct tcfs_config_key *k = known(name);
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	if (!k || k->unit != TCFS_CONFIG_TEXT)
		return k ? tcfs_err_set(-EINVAL, "%s: not text", name)
			 : -EINVAL;
	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_get, "t", name);
	buf[0] = '\0';
	if (rc == 1) {
		snprintf(buf, len, "%s", tcfs_db_text(st, 0, NULL));
		tcfs_db_reset(st);
	}
	tcfs_db_unlock(db);
	if (set)
		*set = rc == 1;
	return rc < 0 ? rc : 0;
}

int tcfs_config_set_text(struct tcfs_store *s, const char *name,
			 const char *text)
{
	const struct tcfs_config_key *k = known(name);
	int rc;

	if (!k || k->unit != TCFS_CONFIG_TEXT)
		return k ? tcfs_err_set(-EINVAL, "%s: not text", name)
			 : -EINVAL;
	if (strcmp(name, TCFS_CONFIG_METRICS) == 0) {
		struct tcfs_addr a;

		rc = tcfs_addr_parse(text, &a);
		rc = rc < 0 ? tcfs_err_prefix(rc, "%s", name) : 0;
	} else {
		rc = check_text(name, text);
	}
	if (rc == 0)
		rc = tcfs_db_exec(tcfs_store_db(s), sql_set, "tt", name, text);
	return rc < 0 ? rc : 0;
}

int tcfs_config_unset(struct tcfs_store *s, const char *name)
{
	int rc;

	if (!known(name))
		return -EINVAL;
	rc = tcfs_db_exec(tcfs_store_db(s), sql_unset, "t", name);
	return rc < 0 ? rc : 0;
}

struct unit {
	char unit;
	int64_t mult;
};

static const struct unit seconds[] = {
	{ 'd', DAY }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 }, { 0, 0 },
};
static const struct unit bytes[] = {
	{ 'T', INT64_C(1) << 40 }, { 'G', 1 << 30 }, { 'M', 1 << 20 },
	{ 'K', 1 << 10 }, { 0, 0 },
};

static const struct unit *units_of(const struct tcfs_config_key *k)
{
	return k->unit == TCFS_CONFIG_SECONDS ? seconds
	       : k->unit == TCFS_CONFIG_BYTES ? bytes
					      : NULL;
}

/* The multiplier a suffix names ("G", and for sizes "GB", "GiB" too),
 * or 0. */
static int64_t suffix(const struct tcfs_config_key *k, const char *end)
{
	const struct unit *u = units_of(k);

	for (; u && u->unit; u++) {
		if (end[0] != u->unit && end[0] != (u->unit | 0x20))
			continue;
		if (!end[1] || (k->unit == TCFS_CONFIG_BYTES &&
				(strcmp(end + 1, "B") == 0 ||
				 strcmp(end + 1, "iB") == 0)))
			return u->mult;
	}
	return 0;
}

int tcfs_config_parse(const struct tcfs_config_key *k, const char *text,
		      int64_t *out)
{
	static const char *const what[] = {
		[TCFS_CONFIG_COUNT] = "a number",
		[TCFS_CONFIG_SECONDS] = "a duration (90s, 30m, 12h, 7d)",
		[TCFS_CONFIG_BYTES] = "a size (512M, 20G, 1T)",
	};
	char lo[32], hi[32], *end;
	int64_t mult = 1;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (end != text && *end) {
		mult = suffix(k, end);
		if (mult)
			end += strlen(end);
	}
	if (errno || end == text || *end || !mult ||
	    (text[0] < '0' || text[0] > '9'))
		return tcfs_err_set(-EINVAL, "%s: '%s' is not %s", k->name,
				    text, what[k->unit]);
	if (v > k->max / mult || v * mult < k->min)
		return tcfs_err_set(-ERANGE, "%s: must be from %s to %s",
				    k->name,
				    tcfs_config_show(k, k->min, lo, sizeof(lo)),
				    tcfs_config_show(k, k->max, hi, sizeof(hi)));
	*out = v * mult;
	return 0;
}

const char *tcfs_config_show(const struct tcfs_config_key *k, int64_t v,
			     char *buf, size_t len)
{
	for (const struct unit *u = units_of(k); u && u->unit && v; u++)
		if (v % u->mult == 0) {
			snprintf(buf, len, "%" PRId64 "%c", v / u->mult,
				 u->unit);
			return buf;
		}
	snprintf(buf, len, "%" PRId64, v);
	return buf;
}
