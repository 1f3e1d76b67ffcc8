/* progress: the progress line of the long commands, and when it shows. */
#include "progress.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_EVERY_NS 100000000LL

/* Whether a line is on the terminal now: one process, one stderr. */
static int drawn;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void progress_init(struct progress *p, const char *what, const char *unit,
		   int quiet)
{
	assert(what && unit);
	p->what = what;
	p->unit = unit;
	p->on = !quiet && isatty(STDERR_FILENO);
	p->last_ns = 0;
}

int progress_due(const struct progress *p)
{
	return p->on &&
	       (p->last_ns == 0 || now_ns() - p->last_ns >= PROGRESS_EVERY_NS);
}

void progress_show(struct progress *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->on)
		return;
	p->last_ns = now_ns();
	/* \r and erase-line: each draw replaces the last. */
	fprintf(stderr, "\r\033[K%s: ", p->what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	drawn = 1;
}

void progress_tick(struct progress *p, uint64_t done, uint64_t total)
{
	if (!progress_due(p))
		return;
	if (total)
		progress_show(p, "%llu/%llu %s", (unsigned long long)done,
			      (unsigned long long)total, p->unit);
	else if (done)
		progress_show(p, "%llu %s", (unsigned long long)done, p->unit);
	else
		progress_show(p, "%s", p->unit);
}

void progress_step(struct progress *p, const char *unit)
{
	p->unit = unit;
	p->last_ns = 0;	/* a new step shows at once */
	progress_tick(p, 0, 0);
}

static void lib_tick(void *ctx, const char *step, uint64_t done,
		     uint64_t total)
{
	struct progress *p = ctx;

	if (step != p->unit) {
		p->unit = step;
		p->last_ns = 0;	/* a new step shows at once */
	}
	progress_tick(p, done, total);
}

struct tcfs_progress progress_lib(struct progress *p)
{
	return (struct tcfs_progress){ lib_tick, p };
}

void progress_end(struct progress *p)
{
	if (p->on)
		progress_clear_line();
	p->on = 0;
}

void progress_clear_line(void)
{
	if (!drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	drawn = 0;
}
