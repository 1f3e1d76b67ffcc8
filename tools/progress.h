/*
 * progress: the one line a long command (import, export, pack, unpack,
 * prune, gc, fsck, remote) keeps redrawing on stderr while it works, and
 * the one rule for when it does: stderr is a terminal and -q was not
 * given.  It never goes to stdout, so --json output never holds it; it is
 * cleared before the command's own output and before every error line
 * (cli.h's cli_err clears it), and drawn again at the next tick.
 */
#ifndef TCFS_TOOLS_PROGRESS_H
#define TCFS_TOOLS_PROGRESS_H

#include <stdint.h>

#include "index/base/progress.h"

struct progress {
	const char *what;	/* leads the line: "exporting" (not owned) */
	const char *unit;	/* what progress_tick counts (not owned) */
	int on;			/* the rule said yes */
	int64_t last_ns;	/* when last drawn; 0: never, so the first
				 * tick draws at once */
};

/* Sets p up for a command whose line starts with what, counting unit
 * (both live as long as p); quiet is its -q. */
void progress_init(struct progress *p, const char *what, const char *unit,
		   int quiet);

/* 1 when p is on and its line is due: the first time, then at most every
 * 0.1 s, so drawing costs nothing next to the work. */
int progress_due(const struct progress *p);

/* Draws "WHAT: " and the rest now, when p is on. */
void progress_show(struct progress *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* When due: "WHAT: DONE/TOTAL UNIT", "WHAT: DONE UNIT" with total 0 (not
 * known), or "WHAT: UNIT" with both 0 (a step just begun). */
void progress_tick(struct progress *p, uint64_t done, uint64_t total);

/* A new step: unit becomes what p counts, drawn at once as "WHAT: UNIT". */
void progress_step(struct progress *p, const char *unit);

/* A struct tcfs_progress that ticks p, its step becoming p's unit. */
struct tcfs_progress progress_lib(struct progress *p);

/* Clears p's line for good: before the command's own output. */
void progress_end(struct progress *p);

/* Clears whatever line is drawn (there is one terminal, so at most one
 * line), before a line of other output. */
void progress_clear_line(void);

#endif
