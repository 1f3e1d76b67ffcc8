/*
 * event: the probe log, one row per cache probe a process made through the
 * mount, hit or miss (table events), and the statistics drawn from it.
 *
 * The log is bounded: it keeps at most log-max-events events, none older
 * than log-max-age (config.h).  Past log-max-events the users with the
 * most events lose their oldest first, each down to an equal share of
 * what the others leave, so one user's flood cannot push out another's
 * history.  Meanwhile every probe is also counted per kernel and key
 * (table probe_counts), so the totals of tcfs stats and the time of each
 * kernel's last hit outlive the events.  Those counts are bounded too, as
 * anyone who can reach the mount may probe names that are never there:
 * beyond log-max-events rows per user, and four times that for all users
 * together (one person may probe through many uids), the oldest rows of
 * names that never hit and are no kernel now are folded into one row per
 * kind (key and name ""), which only the totals count.  Rows of kernels
 * that are there (hits; misses that became kernels) stay.  The mount may
 * drop events when the disk is full; it counts those.
 */
#ifndef TCFS_EVENT_H
#define TCFS_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "index/base/name.h"
#include "index/model/entry.h"

struct tcfs_store;

/* The kinds of probes, their names and the rest: entry.h. */

struct tcfs_event {
	int64_t id;		/* set by the store */
	int64_t time_ns;
	int32_t pid;
	int64_t uid;		/* the process's user; -1: unknown (older) */
	char comm[17];		/* the process's command name */
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];	/* kernel name, or module file name */
	enum tcfs_probe kind;
	int hit;
	int remote;		/* a hit the fleet tier served: fetched on the
				 * local miss, landed, then answered */
	char view[16];		/* the mount's view: "" or "binary-only" */
};

/* Appends n events, and counts them per kernel, in one transaction;
 * dropped more events were dropped since the last call (counted too). */
int tcfs_event_add(struct tcfs_store *s, const struct tcfs_event *ev,
		   size_t n, uint64_t dropped);

/* The store's counters (table counters): n of them, names[i] plus
 * delta[i], in one transaction; and one set to a value.  The mount keeps
 * the fleet tier's figures there ("remote_*"), for tcfs stats to read when
 * it is gone. */
int tcfs_counters_add(struct tcfs_store *s, const char *const *names,
		      const uint64_t *delta, size_t n);
int tcfs_counter_set(struct tcfs_store *s, const char *name, int64_t value);
/* A counter's value, 0 when it was never counted; *set (optional) whether
 * it was. */
int tcfs_counter_get(struct tcfs_store *s, const char *name, int64_t *value,
		     int *set);

/* Counts n more events as dropped, alone: a change of one row in place,
 * which fits where no new event would (the disk nearly full). */
int tcfs_event_dropped(struct tcfs_store *s, uint64_t n);

/* Deletes the events beyond the log's bounds (config.h), and folds the
 * counts of names never there beyond them; *trimmed (optional) gets how
 * many events went. */
int tcfs_event_trim(struct tcfs_store *s, uint64_t *trimmed);

/* What the log holds now. */
struct tcfs_event_log {
	uint64_t events;	/* events kept */
	int64_t oldest_ns;	/* the oldest one's time, 0 when none */
	uint64_t dropped;	/* events dropped (a full disk), ever */
};
int tcfs_event_log_info(struct tcfs_store *s, struct tcfs_event_log *out);

/* Events with id > after and time >= since_ns, oldest first, at most max
 * (0: all).  *out is owned by the caller (free()). */
int tcfs_event_list(struct tcfs_store *s, int64_t after, int64_t since_ns,
		    size_t max, struct tcfs_event **out, size_t *n);

/* The id after which the last n events with time >= since_ns lie (0
 * when there are no more than n), in *after: where tail -n starts. */
int tcfs_event_tail(struct tcfs_store *s, int64_t since_ns, uint64_t n,
		    int64_t *after);

/* How probes are grouped by tcfs_event_count. */
enum tcfs_event_by {
	TCFS_BY_KIND,		/* name: "kernel" or "module" */
	TCFS_BY_KERNEL,		/* kernel probes, by kernel name */
	TCFS_BY_PROCESS,	/* pid and comm */
	TCFS_BY_NEW,		/* kernels that missed: key and name */
};

struct tcfs_event_count {
	char key[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];
	char comm[17];
	int32_t pid;
	int64_t uid;		/* TCFS_BY_PROCESS: its user, -1 unknown */
	uint64_t hits, misses;
	int64_t first_ns;	/* the group's first event */
};

/* Every user's processes, for tcfs_event_count's uid. */
#define TCFS_EVENT_ALL_USERS ((int64_t)-1)

/* Probes since since_ns, counted by group, in order of first appearance
 * (by name for TCFS_BY_KERNEL).  With since_ns 0 all probes count, those
 * trimmed from the log too, except by process (only the log knows).  By
 * process, only the processes of user uid (TCFS_EVENT_ALL_USERS: all);
 * the other groups count every user's probes.  *out is owned by the
 * caller (free()). */
int tcfs_event_count(struct tcfs_store *s, enum tcfs_event_by by,
		     int64_t since_ns, int64_t uid,
		     struct tcfs_event_count **out, size_t *n);

/* Deletes every event and every count (tcfs stats --reset); *n
 * (optional) gets how many events. */
int tcfs_event_clear(struct tcfs_store *s, uint64_t *n);

#endif
