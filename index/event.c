#include "event.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "db.h"
#include "store.h"
#include "vec.h"

static const char sql_insert[] =
	"INSERT INTO events (time, pid, comm, key, name, kind, hit)"
	" VALUES (?, ?, ?, ?, ?, ?, ?)";
static const char sql_list[] =
	"SELECT id, time, pid, comm, key, name, kind, hit FROM events"
	" WHERE id > ? AND time >= ? ORDER BY id LIMIT ?";
static const char sql_clear[] = "DELETE FROM events";

static const char *kind_name(enum tcfs_probe k)
{
	return k == TCFS_PROBE_MODULE ? "module" : "kernel";
}

int tcfs_event_add(struct tcfs_store *s, const struct tcfs_event *ev,
		   size_t n)
{
	struct tcfs_db *db = tcfs_store_db(s);
	int rc = tcfs_db_begin(db);

	for (size_t i = 0; rc >= 0 && i < n; i++)
		rc = tcfs_db_exec(db, sql_insert, "idttttd", ev[i].time_ns,
				  ev[i].pid, ev[i].comm, ev[i].key, ev[i].name,
				  kind_name(ev[i].kind), ev[i].hit);
	return tcfs_db_end(db, rc < 0 ? rc : 0);
}

struct event_list {
	struct tcfs_event *v;
	size_t n, cap;
};

static int add_event(void *ctx, sqlite3_stmt *st)
{
	struct event_list *l = ctx;
	struct tcfs_event *e = tcfs_vec_push(&l->v, &l->n, &l->cap, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->id = sqlite3_column_int64(st, 0);
	e->time_ns = sqlite3_column_int64(st, 1);
	e->pid = sqlite3_column_int(st, 2);
	snprintf(e->comm, sizeof(e->comm), "%s", tcfs_db_text(st, 3, NULL));
	snprintf(e->key, sizeof(e->key), "%s", tcfs_db_text(st, 4, NULL));
	snprintf(e->name, sizeof(e->name), "%s", tcfs_db_text(st, 5, NULL));
	e->kind = *tcfs_db_text(st, 6, NULL) == 'm' ? TCFS_PROBE_MODULE
						     : TCFS_PROBE_KERNEL;
	e->hit = sqlite3_column_int(st, 7);
	return 0;
}

int tcfs_event_list(struct tcfs_store *s, int64_t after, int64_t since_ns,
		    size_t max, struct tcfs_event **out, size_t *n)
{
	struct event_list l = { 0 };
	int rc;

	rc = tcfs_db_each(tcfs_store_db(s), add_event, &l, sql_list, "iii",
			  after, since_ns, max ? (int64_t)max : (int64_t)-1);
	if (rc < 0) {
		free(l.v);
		return rc;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

static const char *const sql_count[] = {
	[TCFS_BY_KIND] =
		"SELECT '', kind, '', 0, sum(hit), sum(1 - hit), min(time)"
		" FROM events WHERE time >= ? GROUP BY kind ORDER BY kind DESC",
	[TCFS_BY_KERNEL] =
		"SELECT '', name, '', 0, sum(hit), sum(1 - hit), min(time)"
		" FROM events WHERE time >= ? AND kind = 'kernel'"
		" GROUP BY name ORDER BY name",
	[TCFS_BY_PROCESS] =
		"SELECT '', '', comm, pid, sum(hit), sum(1 - hit), min(time)"
		" FROM events WHERE time >= ? GROUP BY pid, comm"
		" ORDER BY min(id)",
	[TCFS_BY_NEW] =
		"SELECT key, name, '', 0, 0, count(*), min(time)"
		" FROM events WHERE time >= ? AND kind = 'kernel' AND hit = 0"
		" GROUP BY key, name ORDER BY min(id)",
};

struct count_list {
	struct tcfs_event_count *v;
	size_t n, cap;
};

static int add_count(void *ctx, sqlite3_stmt *st)
{
	struct count_list *l = ctx;
	struct tcfs_event_count *c =
		tcfs_vec_push(&l->v, &l->n, &l->cap, sizeof(*c));

	if (!c)
		return -ENOMEM;
	snprintf(c->key, sizeof(c->key), "%s", tcfs_db_text(st, 0, NULL));
	snprintf(c->name, sizeof(c->name), "%s", tcfs_db_text(st, 1, NULL));
	snprintf(c->comm, sizeof(c->comm), "%s", tcfs_db_text(st, 2, NULL));
	c->pid = sqlite3_column_int(st, 3);
	c->hits = (uint64_t)sqlite3_column_int64(st, 4);
	c->misses = (uint64_t)sqlite3_column_int64(st, 5);
	c->first_ns = sqlite3_column_int64(st, 6);
	return 0;
}

int tcfs_event_count(struct tcfs_store *s, enum tcfs_event_by by,
		     int64_t since_ns, struct tcfs_event_count **out,
		     size_t *n)
{
	struct count_list l = { 0 };
	int rc;

	rc = tcfs_db_each(tcfs_store_db(s), add_count, &l, sql_count[by], "i",
			  since_ns);
	if (rc < 0) {
		free(l.v);
		return rc;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

int tcfs_event_clear(struct tcfs_store *s, uint64_t *n)
{
	int rc = tcfs_db_exec(tcfs_store_db(s), sql_clear, "");

	if (rc >= 0 && n)
		*n = (uint64_t)rc;
	return rc < 0 ? rc : 0;
}
