/* fxwhy: an FX graph's entry against the nearest graph cached before it
 * missed. */
#include "index/model/fxwhy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/blob/cas.h"
#include "index/model/entry.h"
#include "index/model/fxgraph.h"
#include "index/store/db.h"
#include "index/tree/nsread.h"
#include "index/store/store.h"

/* One entry file of a graph, wherever a cache root holds FX graphs. */
struct entry {
	char graph[TCFS_NAME_MAX + 1];
	char dir[TCFS_NAME_MAX + 1];
	char name[TCFS_NAME_MAX + 1];
	uint64_t ino;
	int64_t mtime_ns;
};

/* Every entry file three levels below a dir of FX graphs, oldest first.
 * No index serves a name alone: one pass over the nodes, for a command a
 * person runs now and then. */
static const char sql_entries[] =
	"SELECT g.name, x.name, e.name, coalesce(e.inode, e.ino), e.mtime"
	"  FROM nodes f JOIN nodes x ON x.parent = f.ino"
	"  JOIN nodes g ON g.parent = x.ino JOIN nodes e ON e.parent = g.ino"
	" WHERE f.name = ? AND f.kind = 'd' AND x.kind = 'd'"
	"   AND g.kind = 'd' AND e.kind IN ('f', 'h')"
	" ORDER BY e.mtime, e.ino";

static const char sql_first_miss[] =
	"SELECT min(first) FROM probe_counts"
	" WHERE name = ? AND kind = ? AND misses > 0";

static void copy_col(sqlite3_stmt *st, int col, char *out)
{
	size_t n = 0;
	const char *t = tcfs_db_text(st, col, &n);

	n = n > TCFS_NAME_MAX ? TCFS_NAME_MAX : n;
	memcpy(out, t ? t : "", t ? n : 0);
	out[t ? n : 0] = '\0';
}

static int fill_entry(void *ctx, void *elem, sqlite3_stmt *st)
{
	struct entry *e = elem;

	(void)ctx;
	copy_col(st, 0, e->graph);
	copy_col(st, 1, e->dir);
	copy_col(st, 2, e->name);
	e->ino = (uint64_t)sqlite3_column_int64(st, 3);
	e->mtime_ns = sqlite3_column_int64(st, 4);
	return 0;
}

/* The graph's first miss in the log's counts; *set 0 when none. */
static int first_miss(struct tcfs_store *s, const char *graph, int64_t *t,
		      int *set)
{
	struct tcfs_db *db = tcfs_store_db(s);
	sqlite3_stmt *st;
	int rc;

	*set = 0;
	tcfs_db_lock(db);
	rc = tcfs_db_row(db, &st, sql_first_miss, "tt", graph,
			 tcfs_probe_name(tcfs_entry_fx_kind()));
	if (rc == 1) {
		*set = sqlite3_column_type(st, 0) != SQLITE_NULL;
		*t = sqlite3_column_int64(st, 0);
		tcfs_db_reset(st);
	}
	tcfs_db_unlock(db);
	return rc < 0 ? rc : 0;
}

/* The debug lines of an entry; *buf (owned: free()) holds the bytes they
 * point into.  -EFBIG over TCFS_FXGRAPH_MAX, -EINVAL not a pickle. */
static int read_details(struct tcfs_store *s, const struct entry *e,
			char **buf, struct tcfs_fx_details *d)
{
	struct tcfs_node n;
	size_t len = 0;
	int rc;

	*buf = NULL;
	memset(d, 0, sizeof(*d));
	rc = tcfs_ns_get(s, e->ino, &n);
	if (rc == 0 && n.kind != TCFS_FILE)
		rc = -ENOENT;
	if (rc == 0 && n.size > TCFS_FXGRAPH_MAX)
		rc = -EFBIG;
	if (rc == 0)
		rc = tcfs_cas_read_checked(tcfs_store_cas(s), &n.blob,
					   TCFS_FXGRAPH_MAX, buf, &len);
	if (rc == 0)
		rc = tcfs_fx_details(*buf, len, d);
	if (rc < 0) {
		free(*buf);
		*buf = NULL;
	}
	return rc;
}

/* The nearest of the other graphs' entries cached before out->since_ns,
 * by their inputs against mine; out->differences against it. */
static int find_nearest(struct tcfs_store *s, struct tcfs_fxwhy *out,
			const struct entry *v, size_t n,
			const struct tcfs_fx_details *mine)
{
	struct tcfs_fx_details best = { 0 }, d;
	char *best_buf = NULL, *buf;
	size_t best_d = SIZE_MAX;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t dist;

		if (strcmp(v[i].graph, out->graph) == 0 ||
		    v[i].mtime_ns >= out->since_ns)
			continue;
		rc = read_details(s, &v[i], &buf, &d);
		if (rc == 0 && d.n) {
			out->compared++;
			dist = tcfs_fx_distance(&d, mine);
			if (dist < best_d) {
				best_d = dist;
				snprintf(out->nearest, sizeof(out->nearest),
					 "%s", v[i].graph);
				tcfs_fx_details_free(&best);
				free(best_buf);
				best = d;
				best_buf = buf;
				continue;
			}
		}
		tcfs_fx_details_free(&d);
		free(buf);
		rc = rc == -ENOMEM ? rc : 0;	/* an unreadable one: not near */
	}
	if (rc == 0 && best_d != SIZE_MAX)
		rc = tcfs_fx_diff(&best, mine, &out->differences);
	tcfs_fx_details_free(&best);
	free(best_buf);
	return rc;
}

/* Its own entry's inputs (the oldest entry, e), then the nearest. */
static int compare_own(struct tcfs_store *s, struct tcfs_fxwhy *out,
		       const struct entry *e, const struct entry *v, size_t n)
{
	struct tcfs_fx_details mine;
	char *buf;
	int rc;

	snprintf(out->dir, sizeof(out->dir), "%s", e->dir);
	snprintf(out->entry, sizeof(out->entry), "%s", e->name);
	rc = read_details(s, e, &buf, &mine);
	if (rc == -ENOMEM)
		return rc;
	out->details = rc == -EFBIG	? TCFS_FXWHY_TOO_BIG
		       : rc < 0		? TCFS_FXWHY_UNREADABLE
		       : mine.n == 0	? TCFS_FXWHY_NO_LINES
					: TCFS_FXWHY_OK;
	out->inputs = rc == 0 ? mine.n : 0;
	rc = 0;
	if (out->details == TCFS_FXWHY_OK)
		rc = find_nearest(s, out, v, n, &mine);
	tcfs_fx_details_free(&mine);
	free(buf);
	return rc;
}

int tcfs_fxwhy(struct tcfs_store *s, const char *graph, struct tcfs_fxwhy *out)
{
	struct entry *v = NULL;
	const struct entry *own = NULL;
	size_t n = 0;
	int missed = 0, rc;
	int64_t miss_ns = 0;

	memset(out, 0, sizeof(*out));
	if (strlen(graph) > TCFS_NAME_MAX)
		return -ENOENT;
	snprintf(out->graph, sizeof(out->graph), "%s", graph);
	rc = tcfs_db_collect(tcfs_store_db(s), sizeof(*v), fill_entry, NULL,
			     &v, &n, sql_entries, "t",
			     tcfs_entry_fx_dir());
	if (rc == 0)
		rc = first_miss(s, graph, &miss_ns, &missed);
	for (size_t i = 0; rc == 0 && i < n && !own; i++)
		if (strcmp(v[i].graph, graph) == 0)
			own = &v[i];
	if (rc == 0 && !own && !missed)
		rc = -ENOENT;
	if (rc == 0) {
		out->since_ns = own ? own->mtime_ns : miss_ns;
		if (missed && miss_ns < out->since_ns)
			out->since_ns = miss_ns;
		out->details = TCFS_FXWHY_NO_ENTRY;
		if (own)
			rc = compare_own(s, out, own, v, n);
	}
	free(v);
	if (rc < 0)
		tcfs_fxwhy_free(out);
	return rc;
}

int tcfs_fxwhy_own(struct tcfs_store *s, const char *graph, char **buf,
		   struct tcfs_fx_details *d)
{
	struct entry *v = NULL;
	size_t n = 0, i = 0;
	int rc;

	*buf = NULL;
	memset(d, 0, sizeof(*d));
	if (strlen(graph) > TCFS_NAME_MAX)
		return -ENOENT;
	rc = tcfs_db_collect(tcfs_store_db(s), sizeof(*v), fill_entry, NULL,
			     &v, &n, sql_entries, "t", tcfs_entry_fx_dir());
	while (rc == 0 && i < n && strcmp(v[i].graph, graph) != 0)
		i++;
	if (rc == 0)
		rc = i < n ? read_details(s, &v[i], buf, d) : -ENOENT;
	free(v);
	return rc;
}

void tcfs_fxwhy_free(struct tcfs_fxwhy *w)
{
	cJSON_Delete(w->differences);
	w->differences = NULL;
}

const char *tcfs_fxwhy_details_name(enum tcfs_fxwhy_details d)
{
	static const char *const names[] = {
		[TCFS_FXWHY_OK] = "ok",
		[TCFS_FXWHY_NO_ENTRY] = "no entry",
		[TCFS_FXWHY_NO_LINES] = "no inputs recorded",
		[TCFS_FXWHY_TOO_BIG] = "too big",
		[TCFS_FXWHY_UNREADABLE] = "unreadable",
	};

	return (size_t)d < sizeof(names) / sizeof(*names) ? names[d] : "?";
}
