/* event: the probe log, its bounds, and the counts drawn from it. */
#include "index/model/event.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/base/err.h"
#include "index/store/config.h"
#include "index/store/db.h"
#include "index/tree/ns.h"
#include "index/store/store.h"

static const char sql_insert[] =
	"INSERT INTO events"
	" (time, pid, comm, key, name, kind, hit, view, uid, remote)"
	" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
static const char sql_count[] =
	"INSERT INTO probe_counts"
	" (key, name, kind, hits, misses, first, last, last_hit, uid)"
	" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
	" ON CONFLICT (key, name, kind) DO UPDATE SET"
	" hits = hits + excluded.hits, misses = misses + excluded.misses,"
	" last = max(last, excluded.last),"
	" last_hit = max(last_hit, excluded.last_hit)";
static const char sql_dropped[] =
	"INSERT INTO counters (name, value) VALUES ('events_dropped', ?)"
	" ON CONFLICT (name) DO UPDATE SET value = value + excluded.value";
static const char sql_counter_add[] =
	"INSERT INTO counters (name, value) VALUES (?, ?)"
	" ON CONFLICT (name) DO UPDATE SET value = value + excluded.value";
static const char sql_counter_set[] =
	"INSERT INTO counters (name, value) VALUES (?, ?)"
	" ON CONFLICT (name) DO UPDATE SET value = excluded.value";
static const char sql_counter_get[] =
	"SELECT value FROM counters WHERE name = ?";
static const char sql_trim_count[] =
	"DELETE FROM events WHERE id <= (SELECT max(id) FROM events) - ?";
/* count(*) alone counts the index's cells, not its rows; min and max
 * read the two ends of events_uid: one user's log is trimmed by id. */
static const char sql_users_span[] =
	"SELECT count(*), (SELECT min(uid) FROM events),"
	" (SELECT max(uid) FROM events) FROM events";
static const char sql_user_counts[] =
	"SELECT uid, count(*) FROM events GROUP BY uid";
/* A user's events but the newest ?2 (?2 > 0). */
static const char sql_trim_user[] =
	"DELETE FROM events WHERE uid = ?1 AND id <"
	" (SELECT id FROM events WHERE uid = ?1 ORDER BY id DESC"
	"  LIMIT 1 OFFSET ?2 - 1)";
static const char sql_trim_user_all[] = "DELETE FROM events WHERE uid = ?";
static const char sql_trim_age[] = "DELETE FROM events WHERE time < ?";

/* A kernel probe's kernel is in the cache now: a miss followed by the
 * kernel landing makes a new kernel, a miss alone does not.  Its key dir
 * may be in any cache root (only key dirs have kernel rows). */
#define LANDED(t)                                                         \
	"EXISTS (SELECT 1 FROM kernels k JOIN nodes g ON g.ino = k.grp_ino" \
	" JOIN nodes d ON d.ino = g.parent WHERE k.name = " t ".name"       \
	" AND d.name = " t ".key)"

/* The counts of names never there (never hit, and no kernel now; a
 * module's only count is the totals'), newest first (r) within each
 * partition: each user's (PER_USER), or all of them (ALL_USERS), as one
 * person may probe through many uids (subuids).  The order is total, so
 * both statements of a fold pick the same rows. */
#define PER_USER "PARTITION BY uid"
#define ALL_USERS ""
#define ABSENT(part)                                                      \
	"SELECT key, name, kind, misses, first, last, row_number() OVER"     \
	" (" part " ORDER BY last DESC, key, name, kind) AS r"               \
	" FROM probe_counts p WHERE hits = 0 AND key <> ''"                  \
	" AND (kind = 'module' OR NOT " LANDED("p") ")"
/* Those beyond the bound, into the row of their kind... */
#define FOLD_ADD(part)                                                    \
	"INSERT INTO probe_counts"                                           \
	" (key, name, kind, hits, misses, first, last, last_hit, uid)"       \
	" SELECT '', '', kind, 0, sum(misses), min(first), max(last), 0, -1" \
	" FROM (" ABSENT(part) ") WHERE r > ? GROUP BY kind"                 \
	" ON CONFLICT (key, name, kind) DO UPDATE SET"                       \
	" misses = misses + excluded.misses,"                                \
	" first = min(first, excluded.first), last = max(last, excluded.last)"
/* ...and gone. */
#define FOLD_DEL(part)                                                    \
	"DELETE FROM probe_counts WHERE (key, name, kind) IN"                \
	" (SELECT key, name, kind FROM (" ABSENT(part) ") WHERE r > ?)"
static const char *const sql_fold[2][2] = {
	{ FOLD_ADD(PER_USER), FOLD_DEL(PER_USER) },
	{ FOLD_ADD(ALL_USERS), FOLD_DEL(ALL_USERS) },
};
/* All users together keep this many times one user's bound. */
#define FOLD_ALL_USERS 4
/* Rows there are: no fold (two scans of them) is needed below the bound. */
static const char sql_rows[] = "SELECT count(*) FROM probe_counts";
static const char sql_log_info[] =
	"SELECT count(*), coalesce(min(time), 0),"
	" (SELECT coalesce(sum(value), 0) FROM counters"
	"  WHERE name = 'events_dropped') FROM events";
static const char sql_list[] =
	"SELECT id, time, pid, comm, key, name, kind, hit, view, uid, remote"
	" FROM events"
	" WHERE id > ? AND time >= ? ORDER BY id LIMIT ?";
/* The (n+1)th newest: the events after it are the last n. */
static const char sql_tail[] =
	"SELECT id FROM events WHERE time >= ? ORDER BY id DESC"
	" LIMIT 1 OFFSET ?";
static const char sql_clear[] = "DELETE FROM events";
static const char sql_clear_counts[] = "DELETE FROM probe_counts";
static const char sql_clear_dropped[] =
	"DELETE FROM counters WHERE name = 'events_dropped'";

static const char *kind_name(enum tcfs_probe k)
{
	return tcfs_probe_name(k);
}

static int add_one(struct tcfs_db *db, const struct tcfs_event *e)
{
	int rc;

	/* The table checks no kind (schema v16): a kind is a row of
	 * entry.h, and nothing else goes in. */
	assert(e->kind >= 1 && e->kind <= TCFS_PROBE_KINDS);
	if (e->kind < 1 || e->kind > TCFS_PROBE_KINDS)
		return tcfs_err_set(-EINVAL, "a probe of no known kind (%d)",
				    (int)e->kind);
	rc = tcfs_db_exec(db, sql_insert, "idttttdtid", e->time_ns,
			      e->pid, e->comm, e->key, e->name,
			      kind_name(e->kind), e->hit, e->view, e->uid,
			      e->remote);

	if (rc >= 0)
		rc = tcfs_db_exec(db, sql_count, "tttddiiii", e->key, e->name,
				  kind_name(e->kind), e->hit, !e->hit,
				  e->time_ns, e->time_ns,
				  e->hit ? e->time_ns : (int64_t)0, e->uid);
	return rc;
}

int tcfs_event_add(struct tcfs_store *s, const struct tcfs_event *ev,
		   size_t n, uint64_t dropped)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc = tcfs_db_begin(db);

	for (size_t i = 0; rc >= 0 && i < n; i++)
		rc = add_one(db, &ev[i]);
	if (rc >= 0 && dropped)
		rc = tcfs_db_exec(db, sql_dropped, "i", (int64_t)dropped);
	return tcfs_db_end(db, rc < 0 ? rc : 0);
}

int tcfs_event_dropped(struct tcfs_store *s, uint64_t n)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_dropped, "i", (int64_t)n);

	return rc < 0 ? rc : 0;
}

/* Folds what is past the bounds: each user's, then all users'.  Only when
 * there are more rows than one user may keep, else none can be past: the
 * folds scan every row, inside the transaction that lookups wait for.
 * Called in a transaction (tcfs_db_begin): the lock is held. */
static int fold(struct tcfs_db *db, int64_t max_events)
{
	sqlite3_stmt *st;
	int64_t rows = 0;
	int rc = tcfs_db_row(db, &st, sql_rows, "");

	if (rc == 1) {
		rows = sqlite3_column_int64(st, 0);
		tcfs_db_reset(st);
	}
	if (rc < 0 || rows <= max_events)
		return rc < 0 ? rc : 0;
	for (int all = 0; rc >= 0 && all < 2; all++) {
		int64_t bound = max_events * (all ? FOLD_ALL_USERS : 1);

		rc = tcfs_db_exec(db, sql_fold[all][0], "i", bound);
		if (rc >= 0)
			rc = tcfs_db_exec(db, sql_fold[all][1], "i", bound);
	}
	return rc < 0 ? rc : 0;
}

/* One user's events in the log, and how many of them it keeps. */
struct user_count {
	int64_t uid;
	int64_t n, keep;
};

static int fill_user(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct user_count *u = elem;

	(void)ctx;
	u->uid = sqlite3_column_int64(st, 0);
	u->n = sqlite3_column_int64(st, 1);
	u->keep = u->n;
	return 0;
}

/* Fewest first; ties by uid, so a trim is the same whatever the order
 * the rows came in. */
static int by_count(const void *a, const void *b)
{
	const struct user_count *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/* How many of its events each user of u[] (fewest first) keeps: all of
 * them while each user left could keep as many, then the rest share what
 * is left equally (the first few one more).  So the largest users lose
 * their oldest events first, a quiet user keeps its own, and exactly
 * max_events stay. */
static void share_out(struct user_count *u, size_t n, int64_t max_events)
{
	int64_t left = max_events;

	for (size_t i = 0; i < n; i++) {
		int64_t rest = (int64_t)(n - i), share = left / rest;

		if (u[i].n <= share) {
			left -= u[i].n;
			continue;
		}
		for (size_t j = i; j < n; j++)
			u[j].keep = share + ((int64_t)(j - i) < left % rest);
		return;
	}
}

/* Trims the log of several users to max_events: one scan of events_uid
 * for the counts, then one range of it per user over its share.  Returns
 * how many events went. */
static int trim_users(struct tcfs_db *db, int64_t max_events)
{
	struct user_count *u = NULL;
	size_t n = 0;
	int rc = tcfs_db_collect(db, sizeof(*u), fill_user, NULL, &u, &n,
				 sql_user_counts, "");
	int gone = 0;

	if (rc >= 0 && n) {
		qsort(u, n, sizeof(*u), by_count);
		share_out(u, n, max_events);
	}
	for (size_t i = 0; rc >= 0 && i < n; i++) {
		if (u[i].keep >= u[i].n)
			continue;
		if (u[i].keep > 0)
			rc = tcfs_db_exec(db, sql_trim_user, "ii", u[i].uid,
					  u[i].keep);
		else
			rc = tcfs_db_exec(db, sql_trim_user_all, "i",
					  u[i].uid);
		if (rc >= 0)
			gone += rc;
	}
	free(u);
	return rc < 0 ? rc : gone;
}

/* Keeps at most max_events events, each user's newest (event.h): a
 * user's flood pushes out its own history first.  While one user fills
 * the log, its oldest ids go, as cheap as ever.  Returns how many went.
 * Called in a transaction. */
static int trim_count(struct tcfs_db *db, int64_t max_events)
{
	sqlite3_stmt *st;
	int64_t total = 0, lo = 0, hi = 0;
	int rc = tcfs_db_row(db, &st, sql_users_span, "");

	if (rc == 1) {
		total = sqlite3_column_int64(st, 0);
		lo = sqlite3_column_int64(st, 1);
		hi = sqlite3_column_int64(st, 2);
		tcfs_db_reset(st);
	}
	if (rc < 0 || total <= max_events)
		return rc < 0 ? rc : 0;
	if (lo == hi)
		return tcfs_db_exec(db, sql_trim_count, "i", max_events);
	return trim_users(db, max_events);
}

int tcfs_event_trim(struct tcfs_store *s, uint64_t *trimmed)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int64_t max_events, max_age;
	int rc, n = 0;

	rc = tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_EVENTS, &max_events, NULL);
	if (rc == 0)
		rc = tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_AGE, &max_age, NULL);
	if (rc == 0)
		rc = tcfs_db_begin(db);
	if (rc < 0)
		return rc;
	rc = trim_count(db, max_events);
	if (rc >= 0) {
		n = rc;
		rc = tcfs_db_exec(db, sql_trim_age, "i",
				  tcfs_ns_now() - max_age * 1000000000);
	}
	if (rc >= 0) {
		n += rc;
		rc = fold(db, max_events);
	}
	rc = tcfs_db_end(db, rc < 0 ? rc : 0);
	if (rc == 0 && trimmed)
		*trimmed = (uint64_t)n;
	return rc;
}

int tcfs_event_log_info(struct tcfs_store *s, struct tcfs_event_log *out)
{
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_log_info, "");
	if (rc == 1) {
		out->events = (uint64_t)sqlite3_column_int64(st, 0);
		out->oldest_ns = sqlite3_column_int64(st, 1);
		out->dropped = (uint64_t)sqlite3_column_int64(st, 2);
		tcfs_db_reset(st);
		rc = 0;
	}
	tcfs_db_unlock(db);
	return rc;
}

int tcfs_event_tail(struct tcfs_store *s, int64_t since_ns, uint64_t n,
		    int64_t *after)
{
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	*after = 0;
	if (n > INT64_MAX)
		return 0;
	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_tail, "ii", since_ns, (int64_t)n);
	if (rc == 1) {
		*after = sqlite3_column_int64(st, 0);
		tcfs_db_reset(st);
	}
	tcfs_db_unlock(db);
	return rc < 0 ? rc : 0;
}

static int fill_event(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_event *e = elem;

	(void)ctx;
	e->id = sqlite3_column_int64(st, 0);
	e->time_ns = sqlite3_column_int64(st, 1);
	e->pid = sqlite3_column_int(st, 2);
	e->uid = sqlite3_column_int64(st, 9);
	snprintf(e->comm, sizeof(e->comm), "%s", tcfs_db_text(st, 3, NULL));
	snprintf(e->key, sizeof(e->key), "%s", tcfs_db_text(st, 4, NULL));
	snprintf(e->name, sizeof(e->name), "%s", tcfs_db_text(st, 5, NULL));
	e->kind = tcfs_probe_of(tcfs_db_text(st, 6, NULL));
	e->hit = sqlite3_column_int(st, 7);
	e->remote = sqlite3_column_int(st, 10);
	snprintf(e->view, sizeof(e->view), "%s", tcfs_db_text(st, 8, NULL));
	return 0;
}

int tcfs_event_list(struct tcfs_store *s, int64_t after, int64_t since_ns,
		    size_t max, struct tcfs_event **out, size_t *n)
{
	int rc = tcfs_db_collect(tcfs_store_db(s), sizeof(**out), fill_event,
				 NULL, out, n, sql_list, "iii", after,
				 since_ns, max ? (int64_t)max : (int64_t)-1);

	return rc < 0 ? rc : 0;
}

/* Every probe ever, from the counts (tcfs_event_count with since 0). */
static const char *const sql_count_all[] = {
	[TCFS_BY_KIND] =
		"SELECT '', kind, '', 0, sum(hits), sum(misses), min(first)"
		" FROM probe_counts GROUP BY kind ORDER BY kind DESC",
	[TCFS_BY_KERNEL] =
		"SELECT '', name, '', 0, sum(hits), sum(misses), min(first)"
		" FROM probe_counts WHERE kind = 'kernel' AND key <> ''"
		" GROUP BY name ORDER BY name",
	[TCFS_BY_NEW] =
		"SELECT key, name, '', 0, 0, misses, first"
		" FROM probe_counts p WHERE kind = 'kernel' AND misses > 0"
		" AND " LANDED("p")
		" ORDER BY first, key",
};

/* The probes the log holds since a time. */
static const char *const sql_count_since[] = {
	[TCFS_BY_KIND] =
		"SELECT '', kind, '', 0, sum(hit), sum(1 - hit), min(time)"
		" FROM events WHERE time >= ? GROUP BY kind ORDER BY kind DESC",
	[TCFS_BY_KERNEL] =
		"SELECT '', name, '', 0, sum(hit), sum(1 - hit), min(time)"
		" FROM events WHERE time >= ? AND kind = 'kernel'"
		" GROUP BY name ORDER BY name",
	/* Triton's probes: Inductor's have their kinds' own lines. */
	[TCFS_BY_PROCESS] =
		"SELECT '', '', comm, pid, sum(hit), sum(1 - hit), min(time),"
		" uid FROM events WHERE time >= ? AND (? < 0 OR uid = ?)"
		" AND kind IN ('kernel', 'module')"
		" GROUP BY pid, comm, uid ORDER BY min(id)",
	[TCFS_BY_NEW] =
		"SELECT key, name, '', 0, 0, count(*), min(time)"
		" FROM events p WHERE time >= ? AND kind = 'kernel' AND hit = 0"
		" AND " LANDED("p")
		" GROUP BY key, name ORDER BY min(id)",
};

static int fill_count(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct tcfs_event_count *c = elem;

	(void)ctx;
	snprintf(c->key, sizeof(c->key), "%s", tcfs_db_text(st, 0, NULL));
	snprintf(c->name, sizeof(c->name), "%s", tcfs_db_text(st, 1, NULL));
	snprintf(c->comm, sizeof(c->comm), "%s", tcfs_db_text(st, 2, NULL));
	c->pid = sqlite3_column_int(st, 3);
	c->hits = (uint64_t)sqlite3_column_int64(st, 4);
	c->misses = (uint64_t)sqlite3_column_int64(st, 5);
	c->first_ns = sqlite3_column_int64(st, 6);
	c->uid = sqlite3_column_count(st) > 7 ? sqlite3_column_int64(st, 7)
					      : -1;
	return 0;
}

int tcfs_event_count(struct tcfs_store *s, enum tcfs_event_by by,
		     int64_t since_ns, int64_t uid,
		     struct tcfs_event_count **out, size_t *n)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc;

	if (by == TCFS_BY_PROCESS)
		rc = tcfs_db_collect(db, sizeof(**out), fill_count, NULL, out,
				     n, sql_count_since[by], "iii", since_ns,
				     uid, uid);
	else if (since_ns == 0)
		rc = tcfs_db_collect(db, sizeof(**out), fill_count, NULL, out,
				     n, sql_count_all[by], "");
	else
		rc = tcfs_db_collect(db, sizeof(**out), fill_count, NULL, out,
				     n, sql_count_since[by], "i", since_ns);
	return rc < 0 ? rc : 0;
}

int tcfs_event_clear(struct tcfs_store *s, uint64_t *n)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc = tcfs_db_begin(db), events = 0;

	if (rc < 0)
		return rc;
	rc = tcfs_db_exec(db, sql_clear, "");
	if (rc >= 0) {
		events = rc;
		rc = tcfs_db_exec(db, sql_clear_counts, "");
	}
	if (rc >= 0)
		rc = tcfs_db_exec(db, sql_clear_dropped, "");
	rc = tcfs_db_end(db, rc < 0 ? rc : 0);
	if (rc == 0 && n)
		*n = (uint64_t)events;
	return rc;
}

int tcfs_counters_add(struct tcfs_store *s, const char *const *names,
		      const uint64_t *delta, size_t n)
{
	int rc = tcfs_store_begin(s);

	for (size_t i = 0; rc >= 0 && i < n; i++)
		if (delta[i])
			rc = tcfs_db_exec(tcfs_store_db(s), sql_counter_add,
					  "ti", names[i], (int64_t)delta[i]);
	return tcfs_store_end(s, rc < 0 ? rc : 0);
}

int tcfs_counter_set(struct tcfs_store *s, const char *name, int64_t value)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_counter_set, "ti", name,
			      value);

	return rc < 0 ? rc : 0;
}

int tcfs_counter_get(struct tcfs_store *s, const char *name, int64_t *value,
		     int *set)
{
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_counter_get, "t", name);
	*value = 0;
	if (rc == 1) {
		*value = sqlite3_column_int64(st, 0);
		tcfs_db_reset(st);
	}
	tcfs_db_unlock(db);
	if (set)
		*set = rc == 1;
	return rc < 0 ? rc : 0;
}
