/* event: the probe log's bound holds per user, the largest losing first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "index/base/err.h"
#include "index/maint/recover.h"
#include "index/model/event.h"
#include "index/store/config.h"
#include "index/store/store.h"
#include "index/tree/nsread.h"
#include "tap.h"

/* n probes of uid, their names "uUID-I", in one batch. */
static int probe(struct tcfs_store *s, int64_t uid, int n)
{
	struct tcfs_event *ev = calloc((size_t)n, sizeof(*ev));
	int rc;

	if (!ev)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		ev[i].time_ns = tcfs_ns_now();
		ev[i].pid = 1;
		ev[i].uid = uid;
		snprintf(ev[i].comm, sizeof(ev[i].comm), "python3");
		snprintf(ev[i].key, sizeof(ev[i].key), "K");
		snprintf(ev[i].name, sizeof(ev[i].name), "u%lld-%d",
			 (long long)uid, i);
		ev[i].kind = TCFS_PROBE_KERNEL;
	}
	rc = tcfs_event_add(s, ev, (size_t)n, 0);
	free(ev);
	return rc;
}

/* How many events of uid the log holds, and whether the newest of them
 * is named last. */
static int held(struct tcfs_store *s, int64_t uid, const char *last)
{
	struct tcfs_event *ev = NULL;
	size_t n = 0;
	int count = 0, newest_ok = 0;

	if (tcfs_event_list(s, 0, 0, 0, &ev, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (ev[i].uid == uid) {
			count++;
			newest_ok = !last || !strcmp(ev[i].name, last);
		}
	free(ev);
	if (count == 0)
		return 0;
	return newest_ok ? count : -1;
}

int main(void)
{
	char *tmp = tap_tmpdir(), dir[512];
	struct tcfs_store_opts o = { dir, 1, 1, 0, .recover = tcfs_recover };
	struct tcfs_store *s;
	struct tcfs_event_log log;
	uint64_t trimmed = 0;

	snprintf(dir, sizeof(dir), "%s/store", tmp);
	tap_eq(tcfs_store_open(&o, &s), 0, "create a store");
	tcfs_config_set(s, TCFS_CONFIG_LOG_MAX_EVENTS, 100);

	/* B probes first, so its events are the oldest of the log. */
	tap_eq(probe(s, 2000, 5), 0, "uid 2000 probes 5 times");
	tap_eq(probe(s, 1000, 1000), 0, "uid 1000 probes 1000 times");
	tap_eq(tcfs_event_trim(s, &trimmed), 0, "trim the log to 100");
	tap_eq(trimmed, 905, "905 events went");
	tap_eq(held(s, 2000, "u2000-4"), 5, "the quiet user keeps all 5");
	tap_eq(held(s, 1000, "u1000-999"), 95,
	       "the flooder keeps its newest 95");

	/* Three users over: the two largest share what the third leaves. */
	tap_eq(probe(s, 3000, 200), 0, "uid 3000 probes 200 times");
	tap_eq(tcfs_event_trim(s, NULL), 0, "trim again");
	tap_eq(held(s, 2000, NULL), 5, "the quiet user still keeps 5");
	tap_eq(held(s, 1000, "u1000-999") + held(s, 3000, "u3000-199"), 95,
	       "the others keep 95 together");
	tap_ok(held(s, 1000, NULL) == 48 && held(s, 3000, NULL) == 47,
	       "48 and 47: an equal share, the odd one to the fewer");
	tap_eq(tcfs_event_log_info(s, &log), 0, "log info");
	tap_eq(log.events, 100, "the log holds its bound exactly");

	/* One user alone: its oldest ids go, as before. */
	tap_eq(tcfs_event_clear(s, NULL), 0, "clear the log");
	tap_eq(probe(s, 1000, 150), 0, "uid 1000 alone probes 150 times");
	tap_eq(tcfs_event_trim(s, &trimmed), 0, "trim");
	tap_ok(trimmed == 50 && held(s, 1000, "u1000-149") == 100,
	       "it keeps its newest 100");

	/* A bound below the number of users: the largest go to nothing. */
	tcfs_config_set(s, TCFS_CONFIG_LOG_MAX_EVENTS, 1);
	tap_eq(probe(s, 2000, 3), 0, "uid 2000 probes 3 times");
	tap_eq(tcfs_event_trim(s, NULL), 0, "trim to 1");
	tap_ok(held(s, 2000, "u2000-2") + held(s, 1000, NULL) == 1,
	       "one event stays: the smaller user's newest");

	tcfs_store_close(s);
	return tap_done();
}
