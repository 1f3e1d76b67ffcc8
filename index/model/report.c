/* report: what tcfs stats says, as text, JSON or Prometheus metrics. */
#include "index/model/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/blob/cas.h"
#include "index/store/config.h"
#include "index/model/event.h"
#include "index/model/info.h"
#include "index/model/kernel.h"
#include "index/maint/prune.h"
#include "index/base/json.h"
#include "index/base/text.h"
#include "index/store/store.h"
#include "index/base/utf8.h"
#include "index/model/why.h"
#include "index/remote/remote.h"

/* The local minute last shown by this thread: a table of 100,000 rows
 * spent a tenth of its time in localtime_r and strftime, and rows of one
 * minute share all but the seconds.  Time zones change their offset at
 * a minute's start, and a leap second (23:59:60) ends one, so within
 * [start, start + 60) the seconds are t - start. */
static _Thread_local struct {
	time_t start;
	size_t len;		/* of text, up to the seconds; 0: none */
	char text[64];
} minute;

const char *tcfs_report_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t n;

	if (minute.len && t >= minute.start && t - minute.start < 60 &&
	    len > minute.len + 2) {
		int sec = (int)(t - minute.start);

		memcpy(buf, minute.text, minute.len);
		buf[minute.len] = (char)('0' + sec / 10);
		buf[minute.len + 1] = (char)('0' + sec % 10);
		buf[minute.len + 2] = '\0';
		return buf;
	}
	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%F %T", &tm)) {
		snprintf(buf, len, "?");
		return buf;
	}
	n = strlen(buf);
	minute.len = 0;
	if (tm.tm_sec < 60 && n > 2 && n < sizeof(minute.text)) {
		memcpy(minute.text, buf, n - 2);
		minute.len = n - 2;
		minute.start = t - tm.tm_sec;
	}
	return buf;
}

const char *tcfs_report_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB",
					     "PiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* The fleet tier's figures: counter remote_NAME, JSON remote.NAME,
 * metric tcfs_remote_NAME_total. */
static const char *const remote_help[] = {
	"Kernels the fleet tier served on a local miss.",
	"Modules and autotune results the fleet tier served on a local miss.",
	"Local misses the fleet tier did not have either (or not whole).",
	"Calls to the fleet tier that failed (timeouts, refusals, garbage).",
	"Fetched entries refused by a check (size, SHA-256, HMAC, names).",
	"Bytes fetched from the fleet tier.",
	"Kernels and modules published to the fleet tier.",
	"Publishes dropped: the queue was full, or the remote not asked "
	"(breaker open, or every connection busy).",
	"Local misses the remote was not asked about: breaker open, or "
	"every connection busy.",
	"Times the circuit breaker opened.",
	"Inductor's and vLLM's entries the fleet tier served on a local miss.",
};
_Static_assert(sizeof(remote_help) / sizeof(remote_help[0]) ==
		       TCFS_REMOTE_FIGS, "one help line per figure");
#define REMOTE_FIGS TCFS_REMOTE_FIGS
/* A figure's name in JSON and metrics: its counter's, less "remote_". */
#define FIG_NAME(i) (tcfs_remote_fig_names[i] + strlen("remote_"))
static const char *const breakers[] = { "closed", "open", "half-open" };

struct stats {
	struct tcfs_event_count *kind, *kernel, *proc, *fresh;
	size_t nkind, nkernel, nproc, nfresh;
	uint64_t hits, misses;		/* kernel probes */
	uint64_t mod_hits, mod_misses;	/* module probes */
	/* Every kind's, by enum tcfs_probe (Inductor's above Triton's). */
	uint64_t khits[TCFS_PROBE_KINDS + 1], kmisses[TCFS_PROBE_KINDS + 1];
	struct tcfs_event_log log;
	int64_t max_events, max_age;	/* the log's bounds (config.h) */
	int64_t max_size;		/* config max-size, 0: none */
	int64_t user_max_size;		/* config user-max-size, 0: none */
	struct tcfs_kernel_user *user;	/* each writer's kernels, only
					 * uid's own unless all users */
	size_t nuser;
	struct tcfs_prune_counters ev;	/* evictions (prune.h) */
	const char *mount;		/* "" when not mounted */
	/* The fleet tier's figures, as the mount last saved them (counters
	 * remote_*, fs/remote.c); remote 0 when no mount ever had one. */
	int remote;
	int64_t rfig[REMOTE_FIGS];
	int64_t breaker;		/* enum tcfs_breaker */
	/* The remote's hits per kind (tcfs_remote_kind_fig); kfig 0 for a
	 * kind with no such counter. */
	int64_t khits_remote[TCFS_PROBE_KINDS + 1];
	int kfig[TCFS_PROBE_KINDS + 1];
};

static int load_remote(struct tcfs_store *s, struct stats *st)
{
	int rc = tcfs_counter_get(s, "remote_breaker", &st->breaker,
				  &st->remote);

	if (st->breaker < 0 || st->breaker > 2)
		st->breaker = 0;
	for (size_t i = 0; rc == 0 && i < REMOTE_FIGS; i++)
		rc = tcfs_counter_get(s, tcfs_remote_fig_names[i], &st->rfig[i],
				      NULL);
	for (int k = 1; rc == 0 && k <= TCFS_PROBE_KINDS; k++) {
		char name[64];

		tcfs_remote_kind_fig(k, name, sizeof(name));
		st->kfig[k] = name[0] != '\0';
		if (st->kfig[k])
			rc = tcfs_counter_get(s, name, &st->khits_remote[k],
					      NULL);
	}
	return rc;
}

/* Each writer's kernels; a user who is not root or the mount's owner sees
 * only their own, as with processes. */
static int load_users(struct tcfs_store *s, int64_t uid, struct stats *st)
{
	size_t kept = 0;
	int rc = tcfs_kernel_users(s, &st->user, &st->nuser);

	if (rc < 0 || uid == TCFS_EVENT_ALL_USERS)
		return rc;
	for (size_t i = 0; i < st->nuser; i++)
		if (st->user[i].uid == uid)
			st->user[kept++] = st->user[i];
	st->nuser = kept;
	return 0;
}

/* The counts since since; processes only uid's (event.h). */
static int load(struct tcfs_store *s, int64_t since, int64_t uid,
		struct stats *st)
{
	const int64_t all = TCFS_EVENT_ALL_USERS;
	int rc;

	rc = tcfs_event_count(s, TCFS_BY_KIND, since, all, &st->kind,
			      &st->nkind);
	if (rc == 0)
		rc = tcfs_event_count(s, TCFS_BY_KERNEL, since, all,
				      &st->kernel, &st->nkernel);
	if (rc == 0)
		rc = tcfs_event_count(s, TCFS_BY_PROCESS, since, uid,
				      &st->proc, &st->nproc);
	if (rc == 0)
		rc = tcfs_event_count(s, TCFS_BY_NEW, since, all, &st->fresh,
				      &st->nfresh);
	if (rc == 0)
		rc = tcfs_event_log_info(s, &st->log);
	if (rc == 0)
		rc = tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_EVENTS,
				     &st->max_events, NULL);
	if (rc == 0)
		rc = tcfs_config_get(s, TCFS_CONFIG_LOG_MAX_AGE, &st->max_age,
				     NULL);
	if (rc == 0)
		rc = tcfs_config_get(s, TCFS_CONFIG_MAX_SIZE, &st->max_size,
				     NULL);
	if (rc == 0)
		rc = tcfs_config_get(s, TCFS_CONFIG_USER_MAX_SIZE,
				     &st->user_max_size, NULL);
	if (rc == 0)
		rc = load_users(s, uid, st);
	if (rc == 0)
		rc = tcfs_prune_counters(s, &st->ev);
	if (rc == 0)
		rc = load_remote(s, st);
	for (size_t i = 0; rc == 0 && i < st->nkind; i++) {
		/* 0: a kind a later tcfs logged, counted nowhere here. */
		enum tcfs_probe k = tcfs_probe_of(st->kind[i].name);

		st->khits[k] += st->kind[i].hits;
		st->kmisses[k] += st->kind[i].misses;
	}
	st->hits = st->khits[TCFS_PROBE_KERNEL];
	st->misses = st->kmisses[TCFS_PROBE_KERNEL];
	st->mod_hits = st->khits[TCFS_PROBE_MODULE];
	st->mod_misses = st->kmisses[TCFS_PROBE_MODULE];
	return rc;
}

static double rate(uint64_t hits, uint64_t misses)
{
	return hits + misses ? (double)hits / (double)(hits + misses) : 0.0;
}

static cJSON *hit_miss(uint64_t hits, uint64_t misses)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "hits", (double)hits);
	cJSON_AddNumberToObject(o, "misses", (double)misses);
	return o;
}

/* One change of a why's source_differences (why.h): an argument by its
 * name (or #index), a constant as FROM -> TO. */
static void source_change(const cJSON *c, int argument, FILE *out)
{
	const cJSON *nm = cJSON_GetObjectItem(c, "name");
	const cJSON *ix = cJSON_GetObjectItem(c, "index");
	const char *from = cJSON_GetStringValue(cJSON_GetObjectItem(c, "from"));
	const char *to = cJSON_GetStringValue(cJSON_GetObjectItem(c, "to"));
	char a[TCFS_UTF8_SHOW_MAX];

	if (argument && cJSON_IsString(nm))
		fputs(tcfs_utf8_printable(nm->valuestring, a, sizeof(a)), out);
	else if (argument)
		fprintf(out, "#%d", cJSON_IsNumber(ix) ? ix->valueint : -1);
	else
		fprintf(out, "%s -> ", from ? tcfs_utf8_printable(from, a,
								  sizeof(a))
					    : "(none)");
	if (!argument)
		fputs(to ? tcfs_utf8_printable(to, a, sizeof(a)) : "(none)",
		      out);
}

/* The changes of one kind, the first four, after sep. */
static void source_changes(const cJSON *all, const char *sep, FILE *out)
{
	int n = 0, argument = strcmp(all->string, "arguments") == 0;

	for (const cJSON *c = all->child; c; c = c->next, n++) {
		fputs(n ? ", " : sep, out);
		if (n == 4) {
			fprintf(out, "%d more", cJSON_GetArraySize(all) - n);
			break;
		}
		source_change(c, argument, out);
	}
}

/* What the two kernels' TTIR said, after what their metadata did. */
static void source_line(const struct tcfs_why *w, FILE *out)
{
	const cJSON *d = w->source_differences;
	const cJSON *args = cJSON_GetObjectItem(d, "arguments");
	const cJSON *consts = cJSON_GetObjectItem(d, "constants");

	if (w->source != TCFS_WHY_SOURCE_DIFFERS || !args || !consts)
		return;
	if (!args->child && !consts->child)
		fputs("; source: its body", out);
	source_changes(args, "; source: ", out);
	source_changes(consts, args->child ? "; " : "; source: ", out);
}

/* The rest of a new kernel's line: what sets it apart (why.h). */
static void why_line(struct tcfs_store *s, const char *key, FILE *out)
{
	struct tcfs_why w;
	const char *sep = "";
	char f[TCFS_UTF8_SHOW_MAX];

	if (tcfs_why(s, key, &w) < 0) {
		fputc('\n', out);
		return;
	}
	if (w.k.meta != TCFS_META_OK)
		fprintf(out, "  (its metadata is missing or not JSON)");
	else if (!w.nearest[0])
		fprintf(out, "  (the first of its name and target)");
	else if (w.differences->child)
		fprintf(out, "  differs from %s in ", w.nearest);
	else if (w.source == TCFS_WHY_SOURCE_SAME)
		fprintf(out, "  same metadata and source as %s: Triton, its "
			     "options or the environment changed", w.nearest);
	else if (w.source == TCFS_WHY_SOURCE_DIFFERS)
		fprintf(out, "  same metadata as %s", w.nearest);
	else
		fprintf(out, "  same metadata as %s: the source, the signature "
			     "or Triton changed", w.nearest);
	for (const cJSON *d = w.differences->child; w.nearest[0] && d;
	     d = d->next, sep = ", ")
		fprintf(out, "%s%s", sep,
			tcfs_utf8_printable(d->string, f, sizeof(f)));
	if (w.nearest[0])
		source_line(&w, out);
	fputc('\n', out);
	tcfs_why_free(&w);
}

/* {KEY: {nearest, differences, source, source_differences}} for the new
 * kernels (why.h). */
static cJSON *why_json(struct tcfs_store *s, const struct stats *st)
{
	cJSON *o = cJSON_CreateObject();

	for (size_t i = 0; o && i < st->nfresh; i++) {
		struct tcfs_why w;
		cJSON *one;

		if (tcfs_why(s, st->fresh[i].key, &w) < 0)
			continue;
		one = cJSON_AddObjectToObject(o, st->fresh[i].key);
		if (one && w.nearest[0])
			cJSON_AddStringToObject(one, "nearest", w.nearest);
		else if (one)
			cJSON_AddNullToObject(one, "nearest");
		if (one)
			cJSON_AddItemToObject(one, "differences",
					      cJSON_Duplicate(w.differences, 1));
		if (one && tcfs_why_source_name(w.source))
			cJSON_AddStringToObject(one, "source",
						tcfs_why_source_name(w.source));
		else if (one)
			cJSON_AddNullToObject(one, "source");
		if (one && w.source_differences)
			cJSON_AddItemToObject(one, "source_differences",
					      cJSON_Duplicate(w.source_differences, 1));
		else if (one)
			cJSON_AddNullToObject(one, "source_differences");
		tcfs_why_free(&w);
	}
	return o;
}

/* The limit costs compiles: at least 1 miss in 10 was of a kernel it
 * had evicted. */
static int too_small(const struct stats *st)
{
	return st->ev.evicted_requested > 0 &&
	       st->ev.evicted_requested * 10 >= st->misses;
}

static void print_eviction(const struct stats *st, FILE *out)
{
	char a[32], b[32];

	if (!st->max_size && !st->ev.evictions)
		return;
	fprintf(out, "size limit       %s", st->max_size
		? tcfs_config_show(tcfs_config_find(TCFS_CONFIG_MAX_SIZE),
				   st->max_size, a, sizeof(a))
		: "none in the store (-o max_size is the mount's own)");
	fprintf(out, "; %llu %s evicted (%s freed), %llu %s of evicted "
		"kernels\n",
		(unsigned long long)st->ev.evictions,
		TCFS_NOUN(st->ev.evictions, "kernel"),
		tcfs_report_bytes(st->ev.evicted_bytes, b, sizeof(b)),
		(unsigned long long)st->ev.evicted_requested,
		tcfs_plural(st->ev.evicted_requested, "miss was",
			    "misses were"));
	if (too_small(st))
		fprintf(out, "                 the limit is too small: %.0f%% of "
			"misses recompiled kernels it had evicted; raise it "
			"(tcfs config max-size)\n",
			100.0 * (double)st->ev.evicted_requested /
				(double)st->misses);
}

static void print_remote(const struct stats *st, FILE *out)
{
	const int64_t *v = st->rfig;
	char b[32];

	if (!st->remote)
		return;
	fprintf(out, "remote           %lld kernel %s, %lld module %s, "
		"%lld entry %s, "
		"%lld %s (%s fetched); %lld %s, %lld refused, %lld "
		"%s not asked (breaker open, or every connection busy); "
		"breaker %s (opened %lld %s)\n",
		(long long)v[0], TCFS_NOUN((unsigned long long)v[0], "hit"),
		(long long)v[1], TCFS_NOUN((unsigned long long)v[1], "hit"),
		(long long)v[10], TCFS_NOUN((unsigned long long)v[10], "hit"),
		(long long)v[2],
		tcfs_plural((unsigned long long)v[2], "miss", "misses"),
		tcfs_report_bytes((uint64_t)v[5], b, sizeof(b)),
		(long long)v[3], TCFS_NOUN((unsigned long long)v[3], "error"),
		(long long)v[4], (long long)v[8],
		tcfs_plural((unsigned long long)v[8], "miss", "misses"),
		breakers[st->breaker],
		(long long)v[9], TCFS_NOUN((unsigned long long)v[9], "time"));
	fprintf(out, "                 %lld published, %lld not (the publish "
		"queue full, or the remote not asked)\n", (long long)v[6],
		(long long)v[7]);
}

/* Every kind but the kernels' (the top object's own hits and misses),
 * where its row puts it. */
static void kinds_json(const struct stats *st, cJSON *o)
{
	for (int i = 1; i <= TCFS_PROBE_KINDS; i++) {
		const struct tcfs_probe_kind *k = tcfs_probe_kind(i);
		cJSON *in = o;

		if (!k->json)
			continue;
		if (k->json_group) {
			in = cJSON_GetObjectItemCaseSensitive(o, k->json_group);
			if (!in)
				in = cJSON_AddObjectToObject(o, k->json_group);
		}
		if (in)
			cJSON_AddItemToObject(in, k->json,
					      hit_miss(st->khits[i],
						       st->kmisses[i]));
	}
}

/* remote: the fleet tier's figures, or null when no mount had one. */
static void remote_json(const struct stats *st, cJSON *o)
{
	cJSON *k;

	if (!st->remote) {
		cJSON_AddNullToObject(o, "remote");
		return;
	}
	k = cJSON_AddObjectToObject(o, "remote");
	for (size_t i = 0; k && i < REMOTE_FIGS; i++)
		cJSON_AddNumberToObject(k, FIG_NAME(i), (double)st->rfig[i]);
	for (int i = 1; k && i <= TCFS_PROBE_KINDS; i++) {
		char name[64];

		if (!st->kfig[i])
			continue;
		snprintf(name, sizeof(name), "%s_hits", tcfs_probe_name(i));
		cJSON_AddNumberToObject(k, name, (double)st->khits_remote[i]);
	}
	if (k)
		cJSON_AddStringToObject(k, "breaker", breakers[st->breaker]);
}

/* users: [{uid, bytes, kernels}], uid null for the mount's owner. */
static void users_json(const struct stats *st, cJSON *o)
{
	cJSON *a = cJSON_AddArrayToObject(o, "users");

	for (size_t i = 0; a && i < st->nuser; i++) {
		cJSON *u = cJSON_CreateObject();

		if (st->user[i].uid >= 0)
			cJSON_AddNumberToObject(u, "uid",
						(double)st->user[i].uid);
		else
			cJSON_AddNullToObject(u, "uid");
		cJSON_AddNumberToObject(u, "bytes", (double)st->user[i].bytes);
		cJSON_AddNumberToObject(u, "kernels",
					(double)st->user[i].kernels);
		cJSON_AddItemToArray(a, u);
	}
}

/* A line per writer, with a share in the store (config user-max-size;
 * -o user_max_size is the mount's own). */
static void print_users(const struct stats *st, FILE *out)
{
	char a[32], b[32];

	if (!st->user_max_size)
		return;
	fprintf(out, "user share       %s of the kernels each user wrote "
		"(root and the mount's owner: none)\n",
		tcfs_report_bytes((uint64_t)st->user_max_size, a, sizeof(a)));
	for (size_t i = 0; i < st->nuser; i++) {
		const struct tcfs_kernel_user *u = &st->user[i];

		if (u->uid < 0)
			fprintf(out, "  the mount's owner: %s",
				tcfs_report_bytes(u->bytes, a, sizeof(a)));
		else
			fprintf(out, "  uid %lld: %s of %s", (long long)u->uid,
				tcfs_report_bytes(u->bytes, a, sizeof(a)),
				tcfs_report_bytes((uint64_t)st->user_max_size,
						  b, sizeof(b)));
		fprintf(out, ", %llu %s\n", (unsigned long long)u->kernels,
			TCFS_NOUN(u->kernels, "kernel"));
	}
}

/* log and eviction: the probe log's bounds and what the size limits
 * did. */
static void log_json(const struct stats *st, cJSON *o)
{
	cJSON *k = cJSON_AddObjectToObject(o, "log");

	cJSON_AddNumberToObject(k, "events", (double)st->log.events);
	cJSON_AddNumberToObject(k, "oldest", (double)st->log.oldest_ns / 1e9);
	cJSON_AddNumberToObject(k, "max_events", (double)st->max_events);
	cJSON_AddNumberToObject(k, "max_age_seconds", (double)st->max_age);
	cJSON_AddNumberToObject(k, "dropped", (double)st->log.dropped);
	k = cJSON_AddObjectToObject(o, "eviction");
	cJSON_AddNumberToObject(k, "max_size", (double)st->max_size);
	cJSON_AddNumberToObject(k, "evictions", (double)st->ev.evictions);
	cJSON_AddNumberToObject(k, "evicted_bytes",
				(double)st->ev.evicted_bytes);
	cJSON_AddNumberToObject(k, "evicted_requested",
				(double)st->ev.evicted_requested);
	cJSON_AddBoolToObject(k, "limit_too_small", too_small(st));
	cJSON_AddNumberToObject(k, "user_max_size", (double)st->user_max_size);
}

static int print_json(struct tcfs_store *s, const struct stats *st, FILE *out)
{
	cJSON *o = cJSON_CreateObject(), *a, *k;

	cJSON_AddStringToObject(o, "cache_dir", st->mount);
	cJSON_AddStringToObject(o, "store", tcfs_store_path(s));
	cJSON_AddNumberToObject(o, "hits", (double)st->hits);
	cJSON_AddNumberToObject(o, "misses", (double)st->misses);
	cJSON_AddNumberToObject(o, "hit_rate", rate(st->hits, st->misses));
	cJSON_AddNumberToObject(o, "new_kernels_count", (double)st->nfresh);
	a = cJSON_AddArrayToObject(o, "new_kernels");
	for (size_t i = 0; a && i < st->nfresh; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(st->fresh[i].key));
	cJSON_AddItemToObject(o, "new_kernels_why", why_json(s, st));
	k = cJSON_AddObjectToObject(o, "per_kernel");
	for (size_t i = 0; k && i < st->nkernel; i++)
		cJSON_AddItemToObject(k, st->kernel[i].name,
				      hit_miss(st->kernel[i].hits,
					       st->kernel[i].misses));
	a = cJSON_AddArrayToObject(o, "per_process");
	for (size_t i = 0; a && i < st->nproc; i++) {
		cJSON *p = hit_miss(st->proc[i].hits, st->proc[i].misses);

		cJSON_AddNumberToObject(p, "pid", st->proc[i].pid);
		cJSON_AddStringToObject(p, "comm", st->proc[i].comm);
		if (st->proc[i].uid >= 0)
			cJSON_AddNumberToObject(p, "uid",
						(double)st->proc[i].uid);
		else
			cJSON_AddNullToObject(p, "uid");
		cJSON_AddItemToArray(a, p);
	}
	kinds_json(st, o);
	log_json(st, o);
	users_json(st, o);
	remote_json(st, o);
	return tcfs_json_print(o, out);
}

/* "N hits, M misses", each noun as its count says. */
static void hits_misses(FILE *out, unsigned long long hits,
			unsigned long long misses)
{
	fprintf(out, "%llu %s, %llu %s", hits, TCFS_NOUN(hits, "hit"), misses,
		tcfs_plural(misses, "miss", "misses"));
}

static void print_proc(const struct tcfs_event_count *p, FILE *out)
{
	char c[TCFS_UTF8_SHOW_MAX];

	fprintf(out, "  %d %s", p->pid,
		tcfs_utf8_printable(p->comm, c, sizeof(c)));
	if (p->uid >= 0)
		fprintf(out, " (uid %lld)", (long long)p->uid);
	fputs(": ", out);
	hits_misses(out, p->hits, p->misses);
	fputc('\n', out);
}

/* The kinds above Triton's, each on a line of its own when it was
 * probed, with what the remote served of it. */
static void print_inductor(const struct stats *st, FILE *out)
{
	for (int k = TCFS_PROBE_MODULE + 1; k <= TCFS_PROBE_KINDS; k++) {
		const struct tcfs_probe_kind *row = tcfs_probe_kind(k);

		if (!(st->khits[k] + st->kmisses[k]))
			continue;
		fprintf(out, "%-16s ", row->label);
		hits_misses(out, st->khits[k], st->kmisses[k]);
		fprintf(out, " (%s", row->cache);
		if (st->khits_remote[k])
			fprintf(out, "; %lld from the remote",
				(long long)st->khits_remote[k]);
		fputs(")\n", out);
	}
}

static void print_probes(const struct stats *st, FILE *out)
{
	uint64_t fx = 0;

	for (int k = 1; k <= TCFS_PROBE_KINDS; k++)
		if (tcfs_probe_kind(k)->carries_kernels)
			fx += st->khits[k];

	/* No probe, no rate: 0.0% would read as a cold cache.  And an FX
	 * graph hit brings its Triton kernels along without a probe of
	 * Triton's cache: say so, rather than a rate of misses alone. */
	if (st->hits + st->misses == 0) {
		fprintf(out, "kernel probes    %s\n", fx ? "none: the kernels "
			"came with the FX graph hits below" : "no probes yet");
	} else if (fx && st->hits == 0) {
		fprintf(out, "kernel probes    %llu %s (compiled); every run "
			"after took its kernels from the FX graph cache (%llu "
			"%s below), not from Triton's\n",
			(unsigned long long)st->misses,
			tcfs_plural(st->misses, "miss", "misses"),
			(unsigned long long)fx, TCFS_NOUN(fx, "hit"));
	} else {
		fputs("kernel probes    ", out);
		hits_misses(out, st->hits, st->misses);
		fprintf(out, ", hit rate %.1f%%\n",
			100 * rate(st->hits, st->misses));
	}
	if (st->remote && st->rfig[0])
		fprintf(out, "                 %lld of the hits fetched from the "
			"remote\n", (long long)st->rfig[0]);
	fputs("module probes    ", out);
	hits_misses(out, st->mod_hits, st->mod_misses);
	fputc('\n', out);
	print_inductor(st, out);
}

static void print_text(struct tcfs_store *s, const struct stats *st,
		       FILE *out)
{
	char a[TCFS_UTF8_SHOW_MAX], b[TCFS_UTF8_SHOW_MAX];

	fprintf(out, "cache directory  %s\n", st->mount[0] ? st->mount
						     : "(not mounted)");
	fprintf(out, "store            %s\n", tcfs_store_path(s));
	print_probes(st, out);
	fprintf(out, "probe log        %llu %s",
		(unsigned long long)st->log.events,
		TCFS_NOUN(st->log.events, "event"));
	if (st->log.events)
		fprintf(out, " since %s", tcfs_report_time(st->log.oldest_ns, a, sizeof(a)));
	fprintf(out, " (keeps %lld, for %s)\n", (long long)st->max_events,
	       tcfs_config_show(tcfs_config_find(TCFS_CONFIG_LOG_MAX_AGE),
				st->max_age, b, sizeof(b)));
	if (st->log.dropped)
		fprintf(out, "                 %llu %s dropped while the disk "
		       "was nearly full (not in these counts)\n",
		       (unsigned long long)st->log.dropped,
		       TCFS_NOUN(st->log.dropped, "probe"));
	print_eviction(st, out);
	print_users(st, out);
	print_remote(st, out);
	fprintf(out, "new kernels      %zu\n", st->nfresh);
	for (size_t i = 0; i < st->nfresh; i++) {
		fprintf(out, "  - %s  %s",
		       tcfs_utf8_printable(st->fresh[i].key, a, sizeof(a)),
		       tcfs_utf8_printable(st->fresh[i].name, b, sizeof(b)));
		why_line(s, st->fresh[i].key, out);
	}
	if (st->nkernel)
		fprintf(out, "\nper kernel\n");
	for (size_t i = 0; i < st->nkernel; i++) {
		fprintf(out, "  %s: ",
		       tcfs_utf8_printable(st->kernel[i].name, a, sizeof(a)));
		hits_misses(out, st->kernel[i].hits, st->kernel[i].misses);
		fputc('\n', out);
	}
	if (st->nproc)
		fprintf(out, "\nper process\n");
	for (size_t i = 0; i < st->nproc; i++)
		print_proc(&st->proc[i], out);
}

static void stats_free(struct stats *st)
{
	free(st->kind);
	free(st->kernel);
	free(st->proc);
	free(st->fresh);
	free(st->user);
}

int tcfs_report_stats(struct tcfs_store *s, int64_t since_ns,
		      const char *mount, int64_t uid, int json, FILE *out,
		      uint64_t *misses)
{
	struct stats st = { 0 };
	int rc;

	st.mount = mount ? mount : "";
	rc = load(s, since_ns, uid, &st);
	if (rc == 0 && json)
		rc = print_json(s, &st, out);
	else if (rc == 0)
		print_text(s, &st, out);
	if (misses)
		*misses = st.misses;
	stats_free(&st);
	return rc;
}

/* A label value as the exposition format writes it.  The format is UTF-8
 * and one byte that is not fails the whole scrape, so such bytes (from a
 * damaged or hostile NAME.json) become the text \xNN, as
 * tcfs_utf8_printable shows them. */
static void label(FILE *out, const char *v)
{
	const unsigned char *p = (const unsigned char *)v;

	while (*p) {
		unsigned cp;
		size_t len = tcfs_utf8_next(p, &cp);

		if (len == 0)
			fprintf(out, "\\\\x%02x", *p);
		else if (*p == '\\' || *p == '"')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else
			fwrite(p, 1, len, out);
		p += len ? len : 1;
	}
}

static void head(FILE *out, const char *name, const char *type,
		 const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(FILE *out, const char *name, const char *help, double v)
{
	head(out, name, "gauge", help);
	fprintf(out, "%s %.17g\n", name, v);
}

static void counter(FILE *out, const char *name, const char *help,
		    uint64_t v)
{
	head(out, name, "counter", help);
	fprintf(out, "%s %llu\n", name, (unsigned long long)v);
}

static void remote_metrics(const struct stats *st, FILE *out)
{
	char name[64];

	for (size_t i = 0; i < REMOTE_FIGS; i++) {
		snprintf(name, sizeof(name), "tcfs_remote_%s_total",
			 FIG_NAME(i));
		counter(out, name, remote_help[i], (uint64_t)st->rfig[i]);
	}
	head(out, "tcfs_remote_hits_total", "counter",
	     "Inductor's and vLLM's entries the fleet tier served, by kind.");
	for (int k = 1; k <= TCFS_PROBE_KINDS; k++)
		if (st->kfig[k])
			fprintf(out, "tcfs_remote_hits_total{kind=\"%s\"} %lld\n",
				tcfs_probe_name(k),
				(long long)st->khits_remote[k]);
	gauge(out, "tcfs_remote_breaker_open",
	      "1 while the remote's circuit breaker is open (not asked).",
	      st->breaker == 1);
}

/* What the store holds, as gauges. */
static void store_metrics(const struct tcfs_info *info, FILE *out)
{
	gauge(out, "tcfs_kernels", "Compiled kernels in the cache.",
	      (double)info->kernels);
	gauge(out, "tcfs_modules", "Compiled modules (.so) in the cache.",
	      (double)info->modules);
	gauge(out, "tcfs_files", "Files in the cache.", (double)info->files);
	gauge(out, "tcfs_logical_bytes", "Bytes of the files as written.",
	      (double)info->logical_bytes);
	gauge(out, "tcfs_stored_bytes", "Bytes of the blobs that hold them.",
	      (double)info->stored_bytes);
	gauge(out, "tcfs_blobs", "Blobs in the store.", (double)info->blobs);
	head(out, "tcfs_kernels_by_target", "gauge",
	     "Kernels per target (BACKEND-ARCH).");
	for (size_t i = 0; i < info->ntargets; i++) {
		const struct tcfs_info_target *t = &info->targets[i];

		if (!t->backend[0])
			continue;
		fputs("tcfs_kernels_by_target{target=\"", out);
		label(out, t->backend);
		fputc('-', out);
		label(out, t->arch);
		fprintf(out, "\"} %llu\n", (unsigned long long)t->kernels);
	}
}

int tcfs_report_metrics(struct tcfs_store *s,
			const struct tcfs_report_daemon *d, FILE *out)
{
	struct stats st = { 0 };
	struct tcfs_info info = { 0 };
	int rc;

	st.mount = "";
	rc = load(s, 0, TCFS_EVENT_ALL_USERS, &st);
	if (rc == 0)
		rc = tcfs_info_get(s, &info);
	if (rc < 0)
		goto out;
	head(out, "tcfs_probes_total", "counter",
	     "Cache probes by kind (kernel: a group file, module: a .so or "
	     ".autotune.json; Inductor's and vLLM's: their entries) and "
	     "result.");
	for (int k = 1; k <= TCFS_PROBE_KINDS; k++)
		fprintf(out, "tcfs_probes_total{kind=\"%s\",result=\"hit\"} %llu\n"
			"tcfs_probes_total{kind=\"%s\",result=\"miss\"} %llu\n",
			tcfs_probe_name(k), (unsigned long long)st.khits[k],
			tcfs_probe_name(k), (unsigned long long)st.kmisses[k]);
	counter(out, "tcfs_probe_events_dropped_total",
		"Probe events not logged while the disk was nearly full.",
		st.log.dropped);
	counter(out, "tcfs_evictions_total", "Kernels the size limit evicted.",
		st.ev.evictions);
	counter(out, "tcfs_evicted_bytes_total",
		"Bytes freed by evicting kernels.", st.ev.evicted_bytes);
	counter(out, "tcfs_evicted_requested_total",
		"Kernel misses on keys the size limit had evicted.",
		st.ev.evicted_requested);
	gauge(out, "tcfs_max_size_bytes", "The size limit (0: none).",
	      (double)st.max_size);
	if (st.remote)
		remote_metrics(&st, out);
	store_metrics(&info, out);
	if (d) {
		head(out, "tcfs_requests_total", "counter",
		     "Requests the mount served.");
		fprintf(out, "tcfs_requests_total %llu\n",
			(unsigned long long)d->requests);
		counter(out, "tcfs_blob_opens_total",
			"Blobs the mount opened to read.",
			tcfs_cas_opens(tcfs_store_cas(s)));
		gauge(out, "tcfs_start_time_seconds",
		      "When the mount started, in seconds since the epoch.",
		      (double)d->start_ns / 1e9);
	}
out:
	tcfs_info_free(&info);
	stats_free(&st);
	return rc;
}
